package chaos_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/exitsig"
	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/test/testutil"
)

// errChaos is the reason the Exit case stops the connection with.
var errChaos = errors.New("chaos: stopped by the supervisor")

// fatal is one fault that ends the connection while callers wait.
type fatal struct {
	name  string
	flags []string
	// setup may change the config (an owner, say) and returns the
	// function that injects the fault once the callers wait.
	setup  func(t *testing.T, cfg *engine.Config) func(t *testing.T, r *rig)
	reason error    // every caller's -32000 wraps it
	text   []string // and its message says this
	after  func(t *testing.T, r *rig)
}

// crash has the server die through test/crash with params; that request
// is one more caller, which must get the same answer as the others.
func crash(params map[string]any) func(*testing.T, *engine.Config) func(*testing.T, *rig) {
	return func(*testing.T, *engine.Config) func(*testing.T, *rig) {
		return func(t *testing.T, r *rig) {
			cr := call(r.c, 1, "test/crash", params, nil)
			a := cr.collect(t, 10*time.Second)[0]
			checkClosed(t, a, sentinel.ErrServerExited)
		}
	}
}

// killGrandchild kills the grandchild whose "grandchild-pid=N" the server
// printed on stderr and waits until it is gone: no process is left.
func killGrandchild(t *testing.T, stderr string) {
	t.Helper()
	_, rest, ok := strings.Cut(stderr, "grandchild-pid=")
	if !ok {
		t.Fatalf("no grandchild pid on stderr: %q", stderr)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	if err != nil {
		t.Fatalf("grandchild pid: %v", err)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	testutil.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, "grandchild gone")
}

func checkClosed(t *testing.T, a answer, reason error) {
	t.Helper()
	if !isClosed(a.err, reason) {
		t.Errorf("caller %d got %v (result %s), want -32000 wrapping %v", a.caller, a.err, a.result, reason)
	}
}

func TestFatalFaults(t *testing.T) {
	faults := []fatal{
		{
			name:   "crash/exit status",
			setup:  crash(map[string]any{"code": 3, "stderr": "fatal: disk on fire"}),
			reason: sentinel.ErrServerExited,
			text:   []string{"server exited with status 3", "last stderr: fatal: disk on fire"},
		},
		{
			// The exit is seen on the process, not on stdout's EOF: the
			// grandchild keeps stdout and stderr open for an hour.
			name: "exit while a grandchild holds stdout",
			setup: func(*testing.T, *engine.Config) func(*testing.T, *rig) {
				return func(t *testing.T, r *rig) {
					began := time.Now()
					a := call(r.c, 1, "test/orphanExit", map[string]any{"code": 3}, nil).collect(t, 10*time.Second)[0]
					checkClosed(t, a, sentinel.ErrServerExited)
					t.Logf("exit with stdout held by a grandchild: -32000 after %v", time.Since(began).Round(time.Millisecond))
					if took := time.Since(began); took > 2*time.Second {
						t.Errorf("-32000 after %v, want it at once", took)
					}
				}
			},
			reason: sentinel.ErrServerExited,
			text:   []string{"server exited with status 3"},
			after: func(t *testing.T, r *rig) {
				testutil.AssertReaped(t, r.pid, 2*time.Second) // reaped at once, not a zombie
				killGrandchild(t, r.stderr.String())
			},
		},
		{
			name:   "crash/SIGKILL",
			setup:  crash(map[string]any{"signal": "SIGKILL"}),
			reason: sentinel.ErrServerExited,
			text:   []string{"killed by signal 9 (killed)"},
		},
		{
			name:   "crash/SIGSEGV",
			setup:  crash(map[string]any{"signal": "SIGSEGV"}),
			reason: sentinel.ErrServerExited,
			text:   []string{"killed by signal 11 (segmentation fault)"},
		},
		{
			name: "stdin closed",
			setup: func(*testing.T, *engine.Config) func(*testing.T, *rig) {
				return func(t *testing.T, r *rig) {
					if _, err := r.c.Request(context.Background(), "test/closeStdin", nil, nil); err != nil {
						t.Fatalf("test/closeStdin: %v", err)
					}
					// Only a write notices: the next request's write fails.
					testutil.Eventually(t, func() bool {
						_, err := r.c.Request(context.Background(), "test/echo", nil, &engine.CallOptions{Timeout: time.Second})
						return isClosed(err, sentinel.ErrStdinClosed)
					}, 10*time.Second, "a write to the closed stdin fails")
				}
			},
			reason: sentinel.ErrStdinClosed,
			text:   []string{"server closed its stdin (write failed:", "broken pipe"},
			after: func(t *testing.T, r *rig) { // it lingers 30 s after closing stdin
				if err := syscall.Kill(r.pid, syscall.SIGKILL); err != nil {
					t.Errorf("kill: %v", err)
				}
			},
		},
		{
			name: "stdout closed, process alive",
			setup: func(*testing.T, *engine.Config) func(*testing.T, *rig) {
				return func(t *testing.T, r *rig) {
					a := call(r.c, 1, "test/closeStdout", nil, nil).collect(t, 10*time.Second)[0]
					checkClosed(t, a, sentinel.ErrStdoutClosed)
				}
			},
			reason: sentinel.ErrStdoutClosed,
			text:   []string{"server closed its stdout but is still running"},
		},
		{
			name: "owner context done",
			setup: func(t *testing.T, cfg *engine.Config) func(*testing.T, *rig) {
				ctx, cancel := context.WithCancel(context.Background())
				t.Cleanup(cancel)
				cfg.OwnerContext = ctx
				return func(*testing.T, *rig) { cancel() }
			},
			reason: sentinel.ErrOwnerExited,
			text:   []string{"owner exited", "context canceled"},
		},
		{
			name: "owner actor dies",
			setup: func(t *testing.T, cfg *engine.Config) func(*testing.T, *rig) {
				sys := snodoactor.Shared()
				owner := sys.Root.Spawn(protoactor.PropsFromFunc(func(protoactor.Context) {}))
				cfg.Owner = owner
				return func(t *testing.T, _ *rig) {
					testutil.StopActor(t, sys, owner, 10*time.Second)
				}
			},
			reason: sentinel.ErrOwnerExited,
			text:   []string{"owner exited: actor", "terminated"},
		},
		{
			name: "Stop mid-call",
			setup: func(*testing.T, *engine.Config) func(*testing.T, *rig) {
				return func(_ *testing.T, r *rig) { r.c.System().Root.Stop(r.c.PID()) }
			},
			reason: sentinel.ErrActorStopped,
			text:   []string{"connection closed: actor stopped"},
		},
		{
			name: "Poison mid-call",
			setup: func(*testing.T, *engine.Config) func(*testing.T, *rig) {
				return func(_ *testing.T, r *rig) { r.c.System().Root.Poison(r.c.PID()) }
			},
			reason: sentinel.ErrActorStopped,
			text:   []string{"connection closed: actor stopped"},
		},
		{
			name: "Exit with a reason mid-call",
			setup: func(*testing.T, *engine.Config) func(*testing.T, *rig) {
				return func(_ *testing.T, r *rig) { exitsig.Send(r.c.System(), r.c.PID(), errChaos) }
			},
			reason: errChaos,
			text:   []string{"connection closed: chaos: stopped by the supervisor"},
		},
		{
			name: "Close mid-call",
			setup: func(*testing.T, *engine.Config) func(*testing.T, *rig) {
				return func(t *testing.T, r *rig) {
					if err := r.c.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				}
			},
			reason: sentinel.ErrClosed,
			text:   []string{"connection closed: connection closed by the client"},
		},
	}
	const callers = 8
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			var cfg engine.Config
			inject := f.setup(t, &cfg)
			r := dial(t, cfg, append([]string{quickEOF}, f.flags...)...)
			waiting := call(r.c, callers, "test/sleep", map[string]int{"ms": 30000}, nil)
			waitInFlight(t, r, callers)
			inject(t, r)
			for _, a := range waiting.collect(t, 10*time.Second) {
				checkClosed(t, a, f.reason)
				for _, s := range f.text {
					if !strings.Contains(a.err.Error(), s) {
						t.Errorf("caller %d: %q does not say %q", a.caller, a.err, s)
					}
				}
			}
			if n := r.lent.InFlight(); n != 0 {
				t.Errorf("InFlight() = %d once every caller has its answer", n)
			}
			if f.after != nil {
				f.after(t, r)
			}
			r.finish(f.reason)
		})
	}
}
