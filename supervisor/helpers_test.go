package supervisor

import (
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/listening"
	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

// fast keeps restarts quick in tests.
var fast = WithBackoff(Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Multiplier: 2, Jitter: 0.2})

// events collects a supervisor's events.
type events chan LifecycleEvent

func newEvents() events { return make(events, 256) }

func (e events) option() Option { return WithEventHandler(func(ev LifecycleEvent) { e <- ev }) }

// waitFor returns the next event of kind (skipping others), failing t
// after within.
func (e events) waitFor(t *testing.T, kind string, within time.Duration) LifecycleEvent {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev := <-e:
			if ev.Kind == kind {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s event within %s", kind, within)
		}
	}
}

// kill sends SIGKILL to a server.
func kill(t *testing.T, pid int) {
	t.Helper()
	require.NotZero(t, pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
}

// sleepCalls are the test/sleep requests a server received, by their k.
func sleepCalls(t *testing.T, raw json.RawMessage) []int {
	t.Helper()
	var got struct {
		Requests []struct {
			Params struct {
				K int `json:"k"`
			} `json:"params"`
		} `json:"requests"`
	}
	require.NoError(t, json.Unmarshal(raw, &got))
	ks := make([]int, 0, len(got.Requests))
	for _, r := range got.Requests {
		ks = append(ks, r.Params.K)
	}
	return ks
}

// supervisedOf is what serves a supervised or pooled subscription, for
// the tests that look at its member and re-subscriptions.
func supervisedOf(sub *snodo.Subscription) *supervised {
	return listening.ImplOf((*listening.Sub)(sub)).(*supervised)
}

// serverPID is the current server's process id, 0 while none is up.
func (c *Client) serverPID() int {
	if cur := c.Current(); cur != nil {
		return cur.ServerPID()
	}
	return 0
}
