package main

import (
	"context"
	"encoding/json"
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
	var m snodo.LogMessage
	if note.Method == "notifications/message" && json.Unmarshal(note.Params, &m) == nil {
		logger := ""
		if m.Logger != "" {
			logger = " [" + oneLine(m.Logger) + "]"
		}
		line = fmt.Sprintf("snodo: server log %s%s: %s\n", m.Level, logger, oneLine(logText(m.Data)))
	} else if n.verbose {
		line = fmt.Sprintf("snodo: server notification %s %s\n", note.Method, oneLine(string(note.Params)))
	} else {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	_, _ = io.WriteString(n.w, line)
}

// logText is a log message's data for display: a JSON string's text, any
// other value as JSON.
func logText(data json.RawMessage) string {
	var s string
	if json.Unmarshal(data, &s) == nil {
		return s
	}
	return string(data)
}
