package remote

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
	"github.com/snodo/snodo/test/testutil"
)

// cluster3 starts three NATS servers clustered on localhost and returns
// their client URLs once each has routes to the other two.
func cluster3(t *testing.T) []string {
	t.Helper()
	var urls []string
	var seed string
	var srvs []*server.Server
	for i := range 3 {
		o := &server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
			ServerName: fmt.Sprintf("n%d", i+1),
			Cluster:    server.ClusterOpts{Name: "snodo", Host: "127.0.0.1", Port: server.RANDOM_PORT}}
		if seed != "" {
			o.Routes = server.RoutesFromStr(seed)
		}
		srv, err := server.NewServer(o)
		require.NoError(t, err)
		srv.Start()
		require.True(t, srv.ReadyForConnections(10*time.Second))
		t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
		if seed == "" {
			seed = "nats-route://" + srv.ClusterAddr().String()
		}
		srvs = append(srvs, srv)
		urls = append(urls, srv.ClientURL())
	}
	testutil.Eventually(t, func() bool {
		for _, s := range srvs {
			if s.NumRoutes() < 2 {
				return false
			}
		}
		return true
	}, 20*time.Second, "the three nodes route to each other")
	return urls
}

// On a 3-node cluster, as a platform would run it: host A (a held-call
// bound of 2) on node 1, host B (no bound) on node 2, the caller on node
// 3. 200 calls of 1 s made at once all succeed, and the calls A refused
// go to B (on B's own subject, across the cluster's routes), not back
// to A.
func TestClusterRefusedCallsGoToAHostWithRoom(t *testing.T) {
	urls := cluster3(t)
	cmd, args := testutil.Server(t)
	pa, err := supervisor.NewPool(bg(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	a, err := NewHost(bg(), urls[0], Serve("ts", pa), WithMaxHeld(2))
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	pb, err := supervisor.NewPool(bg(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	b, err := NewHost(bg(), urls[1], Serve("ts", pb))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	nc, err := nats.Connect(urls[2])
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	c, err := NewClient(nc, "ts", WithHeartbeat(2*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	// Both hosts' interest has reached node 3.
	testutil.Eventually(t, func() bool { return len(c.askHosts(ctxFor(t, 5*time.Second))) == 2 }, 20*time.Second, "both hosts answer from node 3")

	require.Zero(t, burst(t, c, 200), "calls lost")
	st := a.served[0].callStats.snapshot("call", "", "", nil)
	t.Logf("host A: %d requests, %d refused", st.NumRequests, st.NumErrors)
	assert.Less(t, st.NumErrors, 150, "retries went back to the full host")
}

// Tasks across a 3-node cluster: two hosts (pools of 2) on nodes 1 and
// 2, the caller on node 3; each task's later calls reach its host and
// member over the routes.
func TestClusterTasksStayOnTheirHost(t *testing.T) {
	urls := cluster3(t)
	cmd, args := testutil.Server(t, "-tasks")
	for _, u := range urls[:2] {
		p, err := supervisor.NewPool(bg(), snodo.Command(cmd, args...), 2)
		require.NoError(t, err)
		h, err := NewHost(bg(), u, Serve("tasks", p))
		require.NoError(t, err)
		t.Cleanup(func() { _ = h.Close() })
	}
	c, err := Dial(ctxFor(t, 20*time.Second), urls[2], "tasks")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	testutil.Eventually(t, func() bool { return len(c.askHosts(ctxFor(t, 5*time.Second))) == 2 }, 20*time.Second, "both hosts answer from node 3")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			task, err := c.CallToolAsTask(ctxFor(t, 60*time.Second), "research", map[string]any{"topic": fmt.Sprint(i), "ms": 200, "pollMs": 20})
			if !assert.NoError(t, err) {
				return
			}
			res, err := task.Wait(ctxFor(t, 60*time.Second))
			if assert.NoError(t, err, "task %d", i) {
				assert.Equal(t, fmt.Sprint("Report on ", i), res.Text())
			}
		})
	}
	wg.Wait()
}
