package testutil

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// throttlerFuncs are the names protoactor-go's dead-letter throttle timer
// goroutine may carry, depending on inlining (NewThrottle is inlined into
// NewDeadLetter by current compilers).
var throttlerFuncs = []string{
	"github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1",
	"github.com/asynkron/protoactor-go/actor.NewThrottle.func1.1",
	"github.com/asynkron/protoactor-go/actor.NewThrottleWithLogger.func1.1",
}

// throttlerFile identifies frames inside protoactor-go's throttler.
const (
	protoactorPath = "github.com/asynkron/protoactor-go"
	throttlerFile  = "/actor/throttler.go"
)

// leakOptions returns the goleak options used by VerifyNone and
// VerifyTestMain: the fixed throttler names plus the top function of every
// goroutine currently running inside protoactor-go's throttler.go.
func leakOptions() []goleak.Option {
	opts := make([]goleak.Option, 0, len(throttlerFuncs)+2)
	for _, f := range throttlerFuncs {
		opts = append(opts, goleak.IgnoreAnyFunction(f))
	}
	for _, f := range throttlerTops() {
		opts = append(opts, goleak.IgnoreTopFunction(f))
	}
	return opts
}

// throttlerTops scans the current goroutine dump for goroutines whose stack
// passes through protoactor-go's throttler.go and returns their top
// function names.
func throttlerTops() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var tops []string
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		text := string(g)
		if !strings.Contains(text, protoactorPath) || !strings.Contains(text, throttlerFile) {
			continue
		}
		lines := strings.Split(text, "\n")
		if len(lines) < 2 {
			continue
		}
		fn := lines[1] // lines[0] is the "goroutine N [state]:" header
		if i := strings.LastIndexByte(fn, '('); i > 0 {
			fn = fn[:i]
		}
		if strings.Contains(fn, protoactorPath) {
			tops = append(tops, fn)
		}
	}
	return tops
}

// VerifyNone fails tb if goroutines other than the testing package's and
// protoactor-go's dead-letter throttle timer are still running (after
// goleak's retries).
func VerifyNone(tb testing.TB) {
	tb.Helper()
	goleak.VerifyNone(tb, leakOptions()...)
}

// VerifyTestMain runs the package's tests, then the cleanups (in
// order), and then, if the tests passed, checks for leaked goroutines
// like VerifyNone, and exits. Use it as the body of TestMain.
func VerifyTestMain(m *testing.M, cleanups ...func()) {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	if code == 0 {
		if err := goleak.Find(leakOptions()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
