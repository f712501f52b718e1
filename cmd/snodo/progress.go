package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/snodo/snodo"
)

// barCells is the width of the bar itself, in characters.
const barCells = 24

// progressBar shows a request's progress: a bar redrawn in place on a
// terminal, a plain line per update anywhere else (a log, a pipe). Its
// methods run on the goroutine making the request (OnProgress runs there),
// so it needs no lock.
type progressBar struct {
	w      io.Writer
	tty    bool
	fd     int    // the terminal, for its width
	prefix string // before each line: "snodo: " or the demo's indent
	off    bool   // --quiet
	keep   bool   // leave the last bar on screen (the demo)
	drawn  int    // runes of the bar now on screen; 0 when none
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
		opts = append(opts, snodo.OnProgress(b.update))
	}
	return opts
}

// update shows one progress notification.
func (b *progressBar) update(p snodo.Progress) {
	count := number(p.Progress)
	if p.Total > 0 {
		count += "/" + number(p.Total)
	}
	if !b.tty {
		line := b.prefix + "progress " + count
		if p.Message != "" {
			line += ": " + p.Message
		}
		fmt.Fprintln(b.w, line)
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

// finish ends the display once the request returned: the bar is erased
// (or, with keep, left in place and the line ended).
func (b *progressBar) finish() {
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
