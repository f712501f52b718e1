package snodo

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/test/testutil"
)

func TestTargetNamesWithoutSecrets(t *testing.T) {
	require.Equal(t, "my-server", Command("my-server", "--token", "s3cret").String())
	require.Equal(t, "https://user:xxxxx@example.com/mcp", HTTP("https://user:pw@example.com/mcp?key=s3cret#x").String())
	require.Equal(t, "", Target{}.String())
}

func TestTargetConnects(t *testing.T) {
	_, err := Target{}.Connect(t.Context())
	require.ErrorContains(t, err, "snodo.Command")

	c := testutil.Start(t, func(command string, args []string) (*Client, error) {
		return Command(command, args...).Connect(t.Context())
	})
	_, err = c.ListTools(t.Context())
	require.NoError(t, err)
}

func TestTargetKeepsItsArgs(t *testing.T) {
	args := []string{"a", "b"}
	tg := Command("x", args...)
	args[0] = "changed"
	require.Equal(t, []string{"a", "b"}, tg.args)
}
