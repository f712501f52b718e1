package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/natsembed"
	"github.com/snodo/snodo/test/testutil"
)

// serverPID asks a host of c which test server answered.
func serverPID(t *testing.T, c *Client) int {
	t.Helper()
	raw, err := c.Request(ctxFor(t, 20*time.Second), "test/pid", nil)
	require.NoError(t, err)
	var v struct{ PID int }
	require.NoError(t, json.Unmarshal(raw, &v))
	return v.PID
}

// ownerOf maps each test server pid to its node.
func ownerOf(nodes ...*node) map[int]*node {
	m := map[int]*node{}
	for _, n := range nodes {
		for _, pid := range n.descendants() {
			m[pid] = n
		}
	}
	return m
}

// assertGone fails t unless pid has stopped running (exited; a zombie
// waiting for init counts as stopped) within d.
func assertGone(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	testutil.Eventually(t, func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
	}, d, "process "+strconv.Itoa(pid)+" still runs")
}

func TestNodesShareCalls(t *testing.T) {
	e := natsServer(t)
	cfg := writeConfig(t, "ts")
	a, b := startNode(t, e.URL(), cfg), startNode(t, e.URL(), cfg)
	c := client(t, e, "ts")
	owners := ownerOf(a, b)
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			_, err := c.Request(ctxFor(t, 30*time.Second), "test/sleep", map[string]any{"ms": 20})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	seen := map[*node]int{}
	for range 40 {
		n := owners[serverPID(t, c)]
		require.NotNil(t, n, "a pid of neither node")
		seen[n]++
	}
	assert.Len(t, seen, 2, "both hosts take calls: %v", seen)

	// snodo servers lists the name with both hosts.
	out, err := exec.Command(snodoBin(t), "--nats", e.URL(), "servers").Output()
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^ts\s+2 host\(s\): `, string(out))
	out, err = exec.Command(snodoBin(t), "--nats", e.URL(), "--server", "ts", "call", "echo", `{"message":"over NATS"}`).Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), "over NATS")
}

// The node prints its URL once every server serves, so a call made as
// soon as the URL is read finds a host, even with a server that takes
// 0.8 s to start.
func TestNodeEmbedsNATS(t *testing.T) {
	cmd := exec.Command(snodoBin(t), "node", "--config", writeConfig(t, "ts", "-discover-delay", "800ms"))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	waited := make(chan error, 1)
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		waited <- cmd.Wait()
	}()
	url := <-lines
	require.True(t, strings.HasPrefix(url, "nats://127.0.0.1:"), url)
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	c, err := NewClient(nc, "ts")
	require.NoError(t, err)
	_, err = c.Request(ctxFor(t, 20*time.Second), "test/echo", nil)
	require.NoError(t, err, "a call made as soon as the URL is printed")
	require.Equal(t, "serving ts", <-lines)
	require.NoError(t, c.Close())
	nc.Close()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-waited:
		require.NoError(t, err, "a drained node exits 0")
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the node did not exit within 30 s of SIGTERM")
	}
}

func TestKilledHostFailsItsCallsFast(t *testing.T) {
	e := natsServer(t)
	cfg := writeConfig(t, "ts")
	a, b := startNode(t, e.URL(), cfg), startNode(t, e.URL(), cfg)
	children := append(a.descendants(), b.descendants()...)
	c := client(t, e, "ts")

	const long = 16
	var started sync.WaitGroup
	type outcome struct {
		err error
		at  time.Time
	}
	results := make(chan outcome, long)
	for range long {
		started.Add(1)
		go func() {
			started.Done()
			_, err := c.Request(ctxFor(t, 60*time.Second), "test/sleep", map[string]any{"ms": 4000}, snodo.Timeout(30*time.Second))
			results <- outcome{err, time.Now()}
		}()
	}
	// Idempotent calls survive the kill: sent again to the survivor.
	idem := make(chan error, 8)
	for range 8 { // on 2 hosts: all 8 on the survivor has odds of 1 in 256
		started.Add(1)
		go func() {
			started.Done()
			_, err := c.Request(ctxFor(t, 60*time.Second), "test/sleep", map[string]any{"ms": 4000}, snodo.Timeout(30*time.Second), snodo.Idempotent())
			idem <- err
		}()
	}
	started.Wait()
	// Every long call is held by a host once both hosts' servers have
	// received as many test/sleep requests; poll the hosts' stats instead
	// of sleeping.
	testutil.Eventually(t, func() bool { return inFlight(t, e) >= long+8 }, 20*time.Second, "long calls held")

	// Subscriptions: keep opening until one is held by a and one by b.
	var onA, onB *snodo.Subscription
	for i := 0; i < 40 && (onA == nil || onB == nil); i++ {
		sub, err := c.Listen(ctxFor(t, 60*time.Second), snodo.Filter{ToolsListChanged: true})
		require.NoError(t, err)
		switch {
		case hostedOf(sub).Host() == a.hostID() && onA == nil:
			onA = sub
		case hostedOf(sub).Host() == b.hostID() && onB == nil:
			onB = sub
		default:
			require.NoError(t, sub.Close())
		}
	}
	require.NotNil(t, onA, "a subscription on the host to kill")
	require.NotNil(t, onB, "a subscription on the survivor")

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	subEnded := make(chan time.Time, 1)
	go func() {
		select {
		case <-onA.Done():
			subEnded <- time.Now()
		case <-time.After(10 * time.Second):
			close(subEnded)
		}
	}()
	<-a.waited

	// New calls go to the survivor at once.
	for range 10 {
		_, err := c.Request(ctxFor(t, 10*time.Second), "test/echo", map[string]any{"n": 1}, snodo.Timeout(3*time.Second))
		require.NoError(t, err)
	}
	var failed, ok int
	var slowest time.Duration
	for range long {
		r := <-results
		if r.err == nil {
			ok++
			continue
		}
		failed++
		var e *snodo.Error
		require.ErrorAs(t, r.err, &e)
		assert.Equal(t, snodo.CodeConnectionClosed, e.Code)
		assert.ErrorIs(t, r.err, ErrHostGone)
		assert.Less(t, r.at.Sub(killed), 2*time.Second, "failed within 2 s of the kill, not at its timeout")
		slowest = max(slowest, r.at.Sub(killed))
	}
	for range 8 {
		assert.NoError(t, <-idem, "an idempotent call is sent again to the survivor")
	}
	assert.Positive(t, failed, "calls on the killed host fail")
	t.Logf("%d calls on the killed host failed, the last %s after the kill", failed, slowest.Round(time.Millisecond))
	assert.Positive(t, ok, "calls on the survivor complete")
	if at, ok := <-subEnded; assert.True(t, ok, "the killed host's subscription ended") {
		assert.ErrorIs(t, onA.Err(), ErrHostGone)
		assert.Less(t, at.Sub(killed), 2*time.Second)
		t.Logf("the killed host's subscription ended %s after the kill", at.Sub(killed).Round(time.Millisecond))
	}
	assert.Nil(t, onB.Err(), "the survivor's subscription goes on")
	require.NoError(t, onB.Close())
	for _, pid := range children {
		if ownerOf(b)[pid] == nil {
			assertGone(t, pid, 15*time.Second) // the killed host's servers see EOF and exit
		}
	}
}

// inFlight sums the calls held by every host (micro stats).
func inFlight(t *testing.T, e *natsembed.Server) int { return inFlightOf(t, e, 2) }

// inFlightOf sums the calls held by the hosts of ts, of which there are
// hosts (each answers).
func inFlightOf(t *testing.T, e *natsembed.Server, hosts int) int {
	t.Helper()
	nc, err := nats.Connect(e.URL())
	require.NoError(t, err)
	defer nc.Close()
	inbox := nc.NewRespInbox()
	answers := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(inbox, answers)
	require.NoError(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	require.NoError(t, nc.PublishRequest("$SRV.STATS.ts", inbox, nil))
	var msgs [][]byte
	for len(msgs) < hosts {
		select {
		case m := <-answers:
			msgs = append(msgs, m.Data)
		case <-time.After(500 * time.Millisecond):
			return 0 // both hosts answer at once; try again
		}
	}
	total := 0
	for _, m := range msgs {
		var st struct {
			Endpoints []struct {
				Name string
				Data struct {
					InFlight int `json:"in_flight"`
				}
			}
		}
		if json.Unmarshal(m, &st) == nil {
			for _, ep := range st.Endpoints {
				if ep.Name == "call" {
					total += ep.Data.InFlight
				}
			}
		}
	}
	return total
}

func TestCancelReachesServer(t *testing.T) {
	e := natsServer(t)
	jpath := t.TempDir() + "/journal"
	startNode(t, e.URL(), writeConfig(t, "ts", "-journal", jpath))
	c := client(t, e, "ts")

	_, err := c.Request(ctxFor(t, 20*time.Second), "test/sleep", map[string]any{"ms": 20000, "honorCancel": true}, snodo.Timeout(300*time.Millisecond))
	require.ErrorIs(t, err, snodo.ErrTimeout)
	testutil.Eventually(t, func() bool { return count(journal(t, jpath), "notification", "notifications/cancelled") == 1 },
		10*time.Second, "the timeout's cancel reached the MCP server")

	ctx, cancel := context.WithCancel(bg())
	done := make(chan error, 1)
	go func() {
		_, err := c.Request(ctx, "test/sleep", map[string]any{"ms": 20000, "honorCancel": true})
		done <- err
	}()
	testutil.Eventually(t, func() bool { return count(journal(t, jpath), "request", "test/sleep") == 2 }, 10*time.Second, "second call arrived")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	testutil.Eventually(t, func() bool { return count(journal(t, jpath), "notification", "notifications/cancelled") == 2 },
		10*time.Second, "the ctx's cancel reached the MCP server")
}

func TestMultiRoundTripRetryOnOtherHost(t *testing.T) {
	e := natsServer(t)
	jpath := t.TempDir() + "/journal"
	cfg := writeConfig(t, "ts", "-journal", jpath)
	a, b := startNode(t, e.URL(), cfg), startNode(t, e.URL(), cfg)
	owners := ownerOf(a, b)
	var stopped atomic.Pointer[node]
	handler := func(ctx context.Context, req *snodo.ServerRequest) (any, error) {
		if stopped.Load() == nil {
			// Drain the host that took the first round: the retry must
			// land on the other one.
			lines := journal(t, jpath)
			var first *node
			for _, l := range lines {
				if l.Kind == "request" && l.Method == "tools/call" {
					first = owners[l.PID]
				}
			}
			if first == nil {
				return nil, errors.New("no tools/call in the journal")
			}
			stopped.Store(first)
			if err := first.signal(syscall.SIGTERM); err != nil {
				return nil, err
			}
		}
		return map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}, nil
	}
	c := client(t, e, "ts", WithConnectOptions(snodo.WithServerRequestHandler(handler)))
	res, err := c.CallTool(ctxFor(t, 60*time.Second), "ask", map[string]any{"rounds": 2})
	require.NoError(t, err)
	assert.Equal(t, "Hello, Ada!", res.Text())
	byNode := map[*node]int{}
	for _, l := range journal(t, jpath) {
		if l.Kind == "request" && l.Method == "tools/call" {
			byNode[owners[l.PID]]++
		}
	}
	assert.Len(t, byNode, 2, "the rounds ran on both hosts")
}

func TestSubscriptionCallerGoneCancelledOnServer(t *testing.T) {
	e := natsServer(t)
	jpath := t.TempDir() + "/journal"
	startNode(t, e.URL(), writeConfig(t, "ts", "-journal", jpath))
	// The caller is another process: `snodo listen` through the node.
	listener := exec.Command(snodoBin(t), "--nats", e.URL(), "--server", "ts", "listen", "--tools")
	require.NoError(t, listener.Start())
	waited := make(chan struct{})
	go func() { _ = listener.Wait(); close(waited) }()
	var listenID json.RawMessage
	testutil.Eventually(t, func() bool {
		for _, l := range journal(t, jpath) {
			if l.Kind == "request" && l.Method == "subscriptions/listen" {
				listenID = l.ID
				return true
			}
		}
		return false
	}, 30*time.Second, "the listen reached the MCP server")
	require.NoError(t, listener.Process.Signal(syscall.SIGKILL))
	<-waited
	testutil.Eventually(t, func() bool {
		for _, l := range journal(t, jpath) {
			if l.Kind == "notification" && l.Method == "notifications/cancelled" {
				var p struct{ RequestID json.RawMessage }
				_ = json.Unmarshal(l.Params, &p)
				if string(p.RequestID) == string(listenID) {
					return true
				}
			}
		}
		return false
	}, 10*time.Second, "the host cancelled the listen of a caller that went away")
}

func TestDrainLosesNoCall(t *testing.T) {
	e := natsServer(t)
	cfg := writeConfig(t, "ts")
	a, b := startNode(t, e.URL(), cfg), startNode(t, e.URL(), cfg)
	children := a.descendants()
	require.NotEmpty(t, b.descendants())
	c := client(t, e, "ts")
	sub, err := c.Listen(ctxFor(t, 60*time.Second), snodo.Filter{ToolsListChanged: true})
	require.NoError(t, err)

	ctx := ctxFor(t, 60*time.Second)
	stop := make(chan struct{})
	var calls, failures atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := c.Request(ctx, "test/sleep", map[string]any{"ms": 100})
				calls.Add(1)
				if err != nil {
					failures.Add(1)
					t.Errorf("call lost during drain: %v", err)
					return
				}
			}
		})
	}
	testutil.Eventually(t, func() bool { return calls.Load() > 50 }, 20*time.Second, "load running")
	require.NoError(t, a.signal(syscall.SIGTERM), "a drained node exits 0; stderr:\n%s", a.stderr.String())
	n := calls.Load()
	testutil.Eventually(t, func() bool { return calls.Load() > n+50 }, 20*time.Second, "load goes on on the survivor")
	close(stop)
	wg.Wait()
	assert.Zero(t, failures.Load())
	for _, pid := range children {
		assertGone(t, pid, 10*time.Second)
	}
	// A subscription held by the drained host ended with the host's reason.
	select {
	case <-sub.Done():
		assert.ErrorIs(t, sub.Err(), ErrHostEnded)
		assert.Contains(t, sub.Err().Error(), "draining")
	default:
		require.NoError(t, sub.Close()) // it was on the survivor
	}
}

func TestNodeWithCredentials(t *testing.T) {
	e, err := natsembed.Start(natsembed.Options{Token: "s3cret"})
	require.NoError(t, err)
	t.Cleanup(e.Shutdown)
	startNodeEnv(t, []string{"SNODO_NATS_TOKEN=s3cret"}, e.URL(), writeConfig(t, "ts"), "--prefix", "team1")

	_, err = nats.Connect(e.URL())
	require.Error(t, err, "the server wants the token")
	nc, err := nats.Connect(e.URL(), nats.Token("s3cret"))
	require.NoError(t, err)
	defer nc.Close()
	c, err := NewClient(nc, "ts", WithPrefix("team1"))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Request(ctxFor(t, 20*time.Second), "test/echo", nil)
	require.NoError(t, err)
	other, err := NewClient(nc, "ts") // the default prefix: nobody serves it there
	require.NoError(t, err)
	defer other.Close()
	_, err = other.Request(ctxFor(t, 20*time.Second), "test/echo", nil)
	require.ErrorIs(t, err, ErrNoHost)
}
