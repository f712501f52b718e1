package handlers_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/connseam"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/exitsig"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/test/testutil"
)

// startCapturing runs the test server behind tee, which copies every line
// the client writes to the returned file: proof of what was (not) sent.
func startCapturing(t *testing.T, ctx context.Context, cfg engine.Config) (*engine.Conn, string) {
	t.Helper()
	capture := filepath.Join(t.TempDir(), "stdin")
	cfg.Command = "sh"
	cfg.Args = []string{"-c", `tee "$0" | exec "$@"`, capture, testutil.ServerPath(t), quickEOF}
	var lent connseam.Lent
	cfg.Lend = &lent
	c, err := engine.Start(ctx, cfg)
	require.NoError(t, err)
	pid := lent.ProcessID
	t.Cleanup(func() {
		c.Close()
		waitDone(t, c)
		testutil.AssertReaped(t, pid, 10*time.Second)
	})
	return c, capture
}

var errTestReason = errors.New("test reason")

func TestStopCancelsHandlersAndNeverWaitsForThem(t *testing.T) {
	stops := []struct {
		name    string
		stop    func(c *engine.Conn, cancelOwner context.CancelFunc)
		reason  error
		capture bool // tee can't sit in front of a server that exits alone
	}{
		{"Close", func(c *engine.Conn, _ context.CancelFunc) {
			t0 := time.Now()
			c.Close()
			assert.Less(t, time.Since(t0), time.Second, "Close returns promptly")
		}, sentinel.ErrClosed, true},
		{"owner exit", func(_ *engine.Conn, cancel context.CancelFunc) { cancel() }, sentinel.ErrOwnerExited, true},
		{"Stop", func(c *engine.Conn, _ context.CancelFunc) { c.System().Root.Stop(c.PID()) }, sentinel.ErrActorStopped, true},
		{"Exit", func(c *engine.Conn, _ context.CancelFunc) {
			exitsig.Send(c.System(), c.PID(), errTestReason)
		}, errTestReason, true},
		{"server exit", func(c *engine.Conn, _ context.CancelFunc) {
			go c.Request(context.Background(), "test/exit", map[string]int{"code": 0}, nil) //nolint:errcheck // the server dies mid-answer
		}, sentinel.ErrServerExited, false},
	}
	for _, tc := range stops {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			var finished sync.WaitGroup
			started := make(chan struct{}, 2)
			release := make(chan struct{})
			ignorerSaw := make(chan error, 1)
			h := func(ctx context.Context, req *handlers.Request) (any, error) {
				finished.Add(1)
				defer finished.Done()
				started <- struct{}{}
				if calls.Add(1) == 1 {
					<-release // ignores its ctx
					ignorerSaw <- ctx.Err()
					return "late answer", nil
				}
				<-ctx.Done() // honours its ctx, but still returns a value
				return "prompt answer", nil
			}
			owner, cancelOwner := context.WithCancel(context.Background())
			defer cancelOwner()
			cfg := engine.Config{Handler: h}
			var c *engine.Conn
			var capture string
			if tc.capture {
				c, capture = startCapturing(t, owner, cfg)
			} else {
				cfg.OwnerContext = owner
				c = start(t, cfg)
			}
			answers := askAsync(t, c, map[string]any{"count": 2, "concurrent": true, "timeoutMs": 2000})
			testutil.Receive(t, started, 10*time.Second, "first handler")
			testutil.Receive(t, started, 10*time.Second, "second handler")

			tc.stop(c, cancelOwner)
			waitDone(t, c) // while one handler still blocks: the stop did not wait for it
			assert.ErrorIs(t, c.Err(), tc.reason)
			assert.Nil(t, testutil.Receive(t, answers, 10*time.Second, "test/serverRequest to fail"), "the waiting request fails")

			close(release)
			assert.ErrorIs(t, testutil.Receive(t, ignorerSaw, 10*time.Second, "ignoring handler"), context.Canceled, "its ctx was cancelled")
			finished.Wait()
			if tc.capture {
				sent, err := os.ReadFile(capture)
				require.NoError(t, err)
				require.Contains(t, string(sent), "test/serverRequest", "tee captured the client's lines")
				assert.NotContains(t, string(sent), `"id":"s`, "no answer to a server request was written")
			}
		})
	}
}

func TestServerCancelDropsTheAnswer(t *testing.T) {
	var sawCancel atomic.Int32
	h := func(ctx context.Context, req *handlers.Request) (any, error) {
		<-ctx.Done()
		sawCancel.Add(1)
		if strings.Contains(string(req.Params), "slow") {
			time.Sleep(100 * time.Millisecond) // within the server's grace for late answers
		}
		return "answer after the cancel", nil
	}
	c := start(t, engine.Config{Handler: h})
	for _, params := range []string{"prompt", "slow"} {
		rs := ask(t, c, map[string]any{"method": "elicitation/create", "params": map[string]string{"mode": params}, "cancelAfterMs": 100})
		require.Len(t, rs, 1)
		assert.True(t, rs[0].Cancelled, params)
		assert.JSONEq(t, `null`, string(rs[0].Late), "%s: no answer after the cancel", params)
	}
	assert.Equal(t, int32(2), sawCancel.Load())
	_, err := c.Request(context.Background(), "test/echo", map[string]int{"still": 1}, nil)
	require.NoError(t, err, "the connection carries on")
}

func TestCancelledHandlerKeepsItsSlotUntilItReturns(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	h := func(ctx context.Context, req *handlers.Request) (any, error) {
		if calls.Add(1) == 1 {
			<-release // ignores the server's cancel
		}
		return "ok", nil
	}
	c := start(t, engine.Config{Handler: h, MaxServerRequests: 1})
	rs := ask(t, c, map[string]any{"cancelAfterMs": 50})
	assert.True(t, rs[0].Cancelled)
	assert.JSONEq(t, `null`, string(rs[0].Late))
	rs = ask(t, c, map[string]any{})
	assert.Equal(t, jsonrpc.CodeInternalError, codeOf(rs[0]), "the cancelled handler still runs, so the bound is full")
	close(release)
	testutil.Eventually(t, func() bool { return codeOf(ask(t, c, map[string]any{})[0]) == 0 }, 5*time.Second, "slot freed once the handler returned")
}
