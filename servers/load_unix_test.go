//go:build unix

package servers_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/servers"
)

// loadPromptly is servers.Load(path), failing the test if it does not
// return within 5 s; a FIFO left blocked is given a writer, so that the
// goroutine ends.
func loadPromptly(t *testing.T, path string, unblock func()) (*servers.File, error) {
	t.Helper()
	type result struct {
		f   *servers.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := servers.Load(path)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-time.After(5 * time.Second):
		if unblock != nil {
			unblock()
		}
		<-done
		t.Fatalf("Load(%s) blocked", path)
		return nil, nil
	}
}

// Load refuses what is not a regular file, after following symbolic
// links, without reading it: a named pipe with no writer would block the
// caller for ever, and /dev/zero would be read up to the 1 MiB bound. The
// error says what the path is and what to pass.
func TestLoadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "mcp.fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	unblock := func() { // a writer that lets a blocked open return
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = w.Close()
		}
	}
	linkToFifo := filepath.Join(dir, "link-to-fifo.json")
	require.NoError(t, os.Symlink(fifo, linkToFifo))
	linkToZero := filepath.Join(dir, "link-to-zero.json")
	require.NoError(t, os.Symlink("/dev/zero", linkToZero))

	for path, what := range map[string]string{
		fifo:        "a named pipe (FIFO)",
		linkToFifo:  "a named pipe (FIFO)",
		"/dev/zero": "a character device",
		linkToZero:  "a character device",
		dir:         "a directory",
	} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, err := loadPromptly(t, path, unblock)
			require.Error(t, err)
			assert.True(t, errors.Is(err, servers.ErrNotRegularFile), "%v", err)
			var fe *servers.FileError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, path, fe.File)
			assert.ErrorContains(t, err, path+": "+what+", not a regular file: give the path of the JSON file itself")
		})
	}

	// A symbolic link to a regular file is read through.
	real := filepath.Join(dir, "real.json")
	require.NoError(t, os.WriteFile(real, []byte(`{"mcpServers": {"a": {"command": "x"}}}`), 0o600))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(real, link))
	f, err := loadPromptly(t, link, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, names(f))
}
