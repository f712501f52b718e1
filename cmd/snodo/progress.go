package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/snodo/snodo"
)

// barCells is the width of the bar itself, in characters.
const barCells = 24

// lineEvery is how often, at most, progress is written as plain lines
// (not a terminal): a server may report a hundred updates a second.
const lineEvery = 500 * time.Millisecond

// progressBar shows a request's progress: a bar redrawn in place on a
// terminal, plain lines anywhere else (a log, a pipe) — at most one per
// lineEvery, always the latest update, and the last one when the request
// ends. update and finish run on the goroutine making the request
// (OnProgress runs there); mu guards the plain lines against the timer
// that writes a held-back update.
type progressBar struct {
	w      io.Writer
	tty    bool
	fd     int    // the terminal, for its width
	prefix string // before each line: "snodo: " or the demo's indent
	off    bool   // --quiet
	keep   bool   // leave the last bar on screen (the demo)
	drawn  int    // runes of the bar now on screen; 0 when none
	// every writes every update as a plain line, unthrottled: the demo,
	// whose few updates show that each notification arrives.
	every bool

	mu      sync.Mutex
	written time.Time   // when the last plain line was written
	held    string      // the latest plain line not yet written
	timer   *time.Timer // writes held once lineEvery has passed
	ended   bool        // finish ran: the timer writes nothing more
}

// progress is the progress display for one request of the session.
func (s *session) progress() *progressBar {
	return &progressBar{w: s.io.err, tty: s.io.errTTY, fd: s.io.errFd, prefix: "snodo: ", off: s.cfg.quiet}
}

// options are the request options that feed the bar. Progress also
// restarts the request's timeout: work that reports progress is alive.
func (b *progressBar) options() []snodo.RequestOption {
	opts := []snodo.RequestOption{snodo.ResetTimeoutOnProgress()}
	if !b.off {
		opts = append(opts, snodo.OnProgress(b.update), snodo.OnTaskStatus(b.task))
	}
	return opts
}

// task shows a task's status (a tool run as a task) on the progress
// line. The call waits for the last status before it returns, so the
// line is done with by finish.
func (b *progressBar) task(st snodo.TaskStatus) {
	line := b.prefix + "task " + st.Status
	if m := oneLine(st.StatusMessage); m != "" { // the server's words: no control characters
		line += ": " + m
	}
	if !b.tty {
		b.line(line)
		return
	}
	line = cut(line, width(b.fd)-1)
	n := utf8.RuneCountInString(line)
	fmt.Fprint(b.w, "\r"+line+strings.Repeat(" ", max(0, b.drawn-n)))
	b.drawn = n
}

// update shows one progress notification.
func (b *progressBar) update(p snodo.Progress) {
	p.Message = oneLine(p.Message) // the server's words: no control characters
	count := number(p.Progress)
	if p.Total > 0 {
		count += "/" + number(p.Total)
	}
	if !b.tty {
		line := b.prefix + "progress " + count
		if p.Message != "" {
			line += ": " + p.Message
		}
		b.line(line)
		return
	}
	line := b.prefix + bar(p.Progress, p.Total) + " " + count
	if p.Message != "" {
		line += "  " + p.Message
	}
	line = cut(line, width(b.fd)-1)
	n := utf8.RuneCountInString(line)
	// Overwrite the previous bar: back to the line's start, then pad
	// with spaces over whatever the longer previous line left behind.
	fmt.Fprint(b.w, "\r"+line+strings.Repeat(" ", max(0, b.drawn-n)))
	b.drawn = n
}

// line writes a plain progress line now if lineEvery has passed since
// the last one, else holds it (replacing any held before) for the timer.
func (b *progressBar) line(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	wait := lineEvery - time.Since(b.written)
	if b.every || b.written.IsZero() || wait <= 0 {
		b.held = ""
		b.writeLocked(line)
		return
	}
	b.held = line
	if b.timer == nil {
		b.timer = time.AfterFunc(wait, b.flush)
	}
}

// flush writes the held line, if any (the timer). A line written since
// the timer was set (an update that came after lineEvery had passed,
// while the timer was late on a busy machine) holds the held one back
// for lineEvery again.
func (b *progressBar) flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.timer = nil
	if b.held == "" || b.ended {
		return
	}
	if wait := lineEvery - time.Since(b.written); wait > 0 {
		b.timer = time.AfterFunc(wait, b.flush)
		return
	}
	b.writeLocked(b.held)
	b.held = ""
}

func (b *progressBar) writeLocked(line string) {
	fmt.Fprintln(b.w, line)
	b.written = time.Now()
}

// finish ends the display once the request returned: a held plain line
// is written (the last update is always shown), and the bar is erased
// (or, with keep, left in place and the line ended).
func (b *progressBar) finish() {
	b.mu.Lock()
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if b.held != "" {
		b.writeLocked(b.held)
		b.held = ""
	}
	b.ended = true
	b.mu.Unlock()
	if b.drawn == 0 {
		return
	}
	if b.keep {
		fmt.Fprintln(b.w)
	} else {
		fmt.Fprint(b.w, "\r"+strings.Repeat(" ", b.drawn)+"\r")
	}
	b.drawn = 0
}

// bar draws the filled part of total; with no total, an open bracket.
func bar(progress, total float64) string {
	if total <= 0 {
		return "[" + strings.Repeat("·", barCells) + "]"
	}
	filled := min(barCells, max(0, int(progress/total*barCells+0.5)))
	return "[" + strings.Repeat("█", filled) + strings.Repeat("░", barCells-filled) + "]"
}

// number formats a progress value: 3, not 3.000000.
func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
