package recovered

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestLogCarriesThePanicAndItsStack(t *testing.T) {
	var out bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&out, nil))
	func() {
		defer func() {
			if r := recover(); r != nil {
				Log(logger, "the hook panicked", r, "method", "m/x")
			}
		}()
		panicHere()
	}()
	got := out.String()
	for _, want := range []string{"level=ERROR", `msg="the hook panicked"`, "method=m/x", "panic=boom", "panicHere"} {
		if !strings.Contains(got, want) {
			t.Errorf("record %q lacks %q", got, want)
		}
	}
}

func panicHere() { panic("boom") }
