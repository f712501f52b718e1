package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/snodo/snodo"
)

// notes prints the server's notifications on stderr: log messages unless
// --quiet ("snodo: server log LEVEL [LOGGER]: DATA"), and with --verbose
// every other notification no request or subscription claimed.
type notes struct {
	mu             sync.Mutex
	w              io.Writer
	quiet, verbose bool
}

func newNotes(w io.Writer, quiet, verbose bool) *notes {
	return &notes{w: w, quiet: quiet, verbose: verbose}
}

func (n *notes) handle(_ context.Context, note *snodo.Notification) {
	if n.quiet {
		return
	}
	var line string
	if m, err := note.LogMessage(); err == nil {
		logger := ""
		if m.Logger != "" {
			logger = " [" + oneLine(m.Logger) + "]"
		}
		line = fmt.Sprintf("snodo: server log %s%s: %s\n", m.Level, logger, oneLine(m.Text()))
	} else if n.verbose {
		line = fmt.Sprintf("snodo: server notification %s %s\n", note.Method, oneLine(string(note.Params)))
	} else {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	_, _ = io.WriteString(n.w, line)
}
