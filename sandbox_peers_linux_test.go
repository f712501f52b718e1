package snodo

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/test/testutil"
)

// Real servers nobody here wrote start and answer inside a full sandbox:
// the Go reference server, and the TypeScript one on node (more threads,
// a module tree behind a symbolic link, a runtime that reserves large
// address ranges).
func TestSandboxRealServers(t *testing.T) {
	for name, p := range map[string]peer{"go": goEverything(t), "node": tsEverything(t)} {
		t.Run(name, func(t *testing.T) {
			readOnly := []string{"/usr", "/etc/ssl", filepath.Dir(p.command)} // node reads /etc/ssl/openssl.cnf
			// node: its modules too, where the link to them leads.
			if name == "node" {
				modules, err := filepath.EvalSymlinks(peerPath(t, "node_modules"))
				require.NoError(t, err)
				readOnly = append(readOnly, modules)
			}
			c, err := Connect(t.Context(), p.command, p.args, WithSandbox(Sandbox{
				MemoryBytes: 512 << 20, CPUTime: time.Minute, MaxProcesses: 64, MaxOpenFiles: 256,
				ReadOnly: readOnly, ReadWrite: []string{"/dev/null"}, NoNetwork: true,
			}))
			var se *SandboxError
			if errors.As(err, &se) && se.Err != nil {
				t.Skipf("this machine cannot set up the sandbox: %v", err)
			}
			require.NoError(t, err)
			testutil.CloseAtEnd(t, c)
			tools, err := c.ListTools(t.Context())
			require.NoError(t, err)
			assert.NotEmpty(t, tools)
			if name == "node" {
				res, err := c.CallTool(t.Context(), "echo", map[string]string{"message": "boxed"})
				require.NoError(t, err)
				assert.Contains(t, res.Text(), "boxed")
			}
		})
	}
}
