package safetext

import (
	"strings"
	"testing"
)

func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, tab\tand\nnewline":        "plain text, tab\tand\nnewline",
		"\x1b]0;pwned\x07\x1b[31mred\x1b[0m":   `\x1b]0;pwned\x07\x1b[31mred\x1b[0m`,
		"csi \u009b2J del \x7f cr \r nul \x00": `csi \x9b2J del \x7f cr \x0d nul \x00`,
		"bad \xff\xfe utf-8, é kept":           "bad \ufffd\ufffd utf-8, é kept",
		"":                                     "",
	} {
		if got := Visible(in); got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVisibleKeepsCleanTextWithoutAllocating(t *testing.T) {
	s := "server exited with status 1 (last stderr: fatal: disk on fire)"
	if n := testing.AllocsPerRun(100, func() { _ = Visible(s) }); n != 0 {
		t.Errorf("%v allocations for clean text", n)
	}
}

func TestLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":                         "plain text",
		"two\nlines\r\nand\ttab":             `two\x0alines\x0d\x0aand\x09tab`,
		"\x1b[2J\x1b]0;title\x07 \u009b\xff": `\x1b[2J\x1b]0;title\x07 \x9b` + "\ufffd",
		strings.Repeat("a", LineMax+10):      strings.Repeat("a", LineMax) + "…",
		strings.Repeat("é", LineMax):         strings.Repeat("é", LineMax/2) + "…",
		strings.Repeat("\n", LineMax+1):      strings.Repeat(`\x0a`, LineMax) + "…",
		"":                                   "",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
	s := "HTTP 502 Bad Gateway: upstream is down"
	if n := testing.AllocsPerRun(100, func() { _ = Line(s) }); n != 0 {
		t.Errorf("%v allocations for clean text", n)
	}
}
