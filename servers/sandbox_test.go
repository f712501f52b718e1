package servers_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/servers"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

func TestParseSandbox(t *testing.T) {
	f, err := servers.Parse("mcp.json", []byte(`{"mcpServers": {
		"boxed": {"command": "x", "sandbox": {"memory": "256MiB", "cpuTime": "1m", "maxProcesses": 32,
			"maxOpenFiles": 256, "readOnly": ["/usr"], "readWrite": ["/var/lib/x"], "noNetwork": true, "colour": "red"}},
		"bytes": {"command": "x", "sandbox": {"memory": 1048576}},
		"decimal": {"command": "x", "sandbox": {"memory": "1.5GB"}},
		"empty": {"command": "x", "sandbox": {}}
	}}`))
	require.NoError(t, err)
	boxed, err := f.Lookup("boxed")
	require.NoError(t, err)
	assert.Equal(t, &snodo.Sandbox{MemoryBytes: 256 << 20, CPUTime: time.Minute, MaxProcesses: 32, MaxOpenFiles: 256,
		ReadOnly: []string{"/usr"}, ReadWrite: []string{"/var/lib/x"}, NoNetwork: true}, boxed.Sandbox)
	assert.Equal(t, []string{`mcp.json: server "boxed": "sandbox.colour": unknown key, ignored`}, f.Warnings)
	for name, want := range map[string]int64{"bytes": 1 << 20, "decimal": 1_500_000_000} {
		s, err := f.Lookup(name)
		require.NoError(t, err)
		assert.Equal(t, want, s.Sandbox.MemoryBytes, name)
	}
	empty, err := f.Lookup("empty")
	require.NoError(t, err)
	assert.Nil(t, empty.Sandbox, "an empty object sets no sandbox")

	for entry, want := range map[string]string{
		`{"command": "x", "sandbox": {"readOnly": ["usr"]}}`:                 `"sandbox.readOnly": "usr" is not an absolute path`,
		`{"command": "x", "sandbox": {"memory": "lots"}}`:                    `"sandbox.memory": "lots" is not a size`,
		`{"command": "x", "sandbox": {"memory": -5}}`:                        `"sandbox.memory": -5 must be at least 1 byte`,
		`{"command": "x", "sandbox": {"maxProcesses": 0}}`:                   `"sandbox.maxProcesses": 0 must be at least 1`,
		`{"command": "x", "sandbox": {"cpuTime": "soon"}}`:                   `"sandbox.cpuTime": "soon" is not a duration`,
		`{"command": "x", "sandbox": {"noNetwork": "yes"}}`:                  `"sandbox.noNetwork": want true or false, got a string`,
		`{"command": "x", "sandbox": []}`:                                    `"sandbox": want an object`,
		`{"url": "https://example.com/mcp", "sandbox": {"noNetwork": true}}`: `"sandbox": an http server runs elsewhere`,
		`{"command": "x", "sandbox": {"readWrite": ["/a", ""]}}`:             `"" is not an absolute path`,
		`{"command": "x", "sandbox": {"maxOpenFiles": 1.5}}`:                 `want a whole number`,
	} {
		_, err := servers.Parse("mcp.json", []byte(`{"mcpServers": {"s": `+entry+`}}`))
		assert.ErrorContains(t, err, want, entry)
	}
}

// A server of the file starts inside its sandbox: the supervisor's
// server runs under no_new_privs with the file's open-files limit.
func TestFileSandboxApplies(t *testing.T) {
	command, args := testutil.Server(t)
	f, err := servers.Parse("mcp.json", fmt.Appendf(nil, `{"mcpServers": {"boxed": {"command": %q, "args": %q, "sandbox": {"maxOpenFiles": 77}}}}`, command, args))
	require.NoError(t, err)
	s, err := f.Lookup("boxed")
	require.NoError(t, err)
	c, err := supervisor.Connect(t.Context(), s.Target, s.Options...)
	var se *snodo.SandboxError
	if errors.As(err, &se) && se.Err != nil {
		t.Skipf("this machine cannot set up the sandbox: %v", err)
	}
	require.NoError(t, err)
	defer c.Close()
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", c.Current().ServerPID()))
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("no /proc here")
	}
	require.NoError(t, err)
	var line string
	for _, l := range strings.Split(string(limits), "\n") {
		if strings.HasPrefix(l, "Max open files") {
			line = l
		}
	}
	assert.Equal(t, []string{"Max", "open", "files", "77", "77", "files"}, strings.Fields(line))
}
