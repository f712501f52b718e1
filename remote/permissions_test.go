package remote

import (
	"os"
	"os/exec"
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

// permServer is a NATS server with users (password "pw" each):
//   - full: may do anything;
//   - srvonly: may subscribe only to $SRV.> (a host cannot serve);
//   - othername: may publish only to snodo.other.> and
//     $SRV.>, and subscribe to _INBOX.> (a caller of another name);
//   - nosrv: may publish to snodo.> only (no $SRV.>), and subscribe to
//     _INBOX.> (cannot discover);
//   - nolisten: a caller of test that may call but not listen (no
//     publish to snodo.test.listen).
func permServer(t *testing.T) string {
	t.Helper()
	perms := func(pub, sub []string) *server.Permissions {
		p := &server.Permissions{}
		if pub != nil {
			p.Publish = &server.SubjectPermission{Allow: pub}
		}
		if sub != nil {
			p.Subscribe = &server.SubjectPermission{Allow: sub}
		}
		return p
	}
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		Users: []*server.User{
			{Username: "full", Password: "pw"},
			{Username: "srvonly", Password: "pw", Permissions: perms(nil, []string{"$SRV.>"})},
			{Username: "othername", Password: "pw", Permissions: perms([]string{"snodo.other.>", "$SRV.>"}, []string{"_INBOX.>"})},
			{Username: "nosrv", Password: "pw", Permissions: perms([]string{"snodo.>"}, []string{"_INBOX.>"})},
			{Username: "nolisten", Password: "pw", Permissions: perms([]string{"snodo.test.call", "snodo.test.call.>", "snodo.test.hosts",
				"snodo.test.info", "snodo.test.cancel", "snodo._host.>"}, []string{"_INBOX.>"})},
		},
	})
	require.NoError(t, err)
	srv.Start()
	require.True(t, srv.ReadyForConnections(10*time.Second))
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	return srv.ClientURL()
}

func TestHostWithoutSubscribePermissionFails(t *testing.T) {
	url := permServer(t)
	cmd, args := testutil.Server(t)
	p, err := supervisor.NewPool(bg(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	_, err = NewHost(ctxFor(t, 20*time.Second), url, Serve("test", p),
		WithNATSOptions(nats.UserInfo("srvonly", "pw")))
	require.ErrorIs(t, err, nats.ErrPermissionViolation)
	assert.Contains(t, err.Error(), "Subscription to")
	assert.Contains(t, err.Error(), "snodo.")
	testutil.Receive(t, p.Done(), 20*time.Second, "the pool closed with the failed host")
}

func TestNodeWithoutSubscribePermissionExitsNonZero(t *testing.T) {
	url := permServer(t)
	cmd := exec.Command(snodoBin(t), "node", "--config", writeConfig(t, "test"), "--nats", url, "--nats-user", "srvonly")
	cmd.Env = append(os.Environ(), "SNODO_NATS_PASSWORD=pw")
	var stdout, stderr testutil.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		require.Error(t, err, "stderr:\n%s", stderr.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-waited
		t.Fatalf("the node did not exit; stderr:\n%s", stderr.String())
	}
	assert.NotContains(t, stdout.String(), "serving")
	assert.Contains(t, stderr.String(), "Permissions Violation for Subscription")
}

// A caller that may not publish to the name's subject is told so at
// once, naming the violation, rather than after its heartbeat watch.
func TestCallerWithoutPublishPermissionIsToldAtOnce(t *testing.T) {
	url := permServer(t)
	cmd, args := testutil.Server(t)
	p, err := supervisor.NewPool(bg(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	h, err := NewHost(ctxFor(t, 20*time.Second), url, Serve("test", p), WithNATSOptions(nats.UserInfo("full", "pw")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	c, err := Dial(ctxFor(t, 20*time.Second), url, "test", WithNATSOptions(nats.UserInfo("othername", "pw")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	for range 3 {
		t0 := time.Now()
		_, err = c.Request(ctxFor(t, 20*time.Second), "test/echo", nil)
		require.ErrorIs(t, err, nats.ErrPermissionViolation)
		assert.Contains(t, err.Error(), `Publish to "snodo.test.call"`)
		assert.Less(t, time.Since(t0), time.Second, "at once, not after the heartbeat watch")
	}
}

// A Listen whose publish the NATS server refuses fails at once, naming
// the violation; before, it waited for the heartbeat watch (1.75 s) and
// blamed the host.
func TestListenWithoutPublishPermissionIsToldAtOnce(t *testing.T) {
	url := permServer(t)
	cmd, args := testutil.Server(t)
	p, err := supervisor.NewPool(bg(), snodo.Command(cmd, args...), 1)
	require.NoError(t, err)
	h, err := NewHost(ctxFor(t, 20*time.Second), url, Serve("test", p), WithNATSOptions(nats.UserInfo("full", "pw")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	c, err := Dial(ctxFor(t, 20*time.Second), url, "test", WithNATSOptions(nats.UserInfo("nolisten", "pw")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Request(ctxFor(t, 20*time.Second), "test/echo", nil)
	require.NoError(t, err, "calls are allowed")
	for range 3 {
		t0 := time.Now()
		_, err = c.Listen(ctxFor(t, 20*time.Second), snodo.Filter{ToolsListChanged: true})
		require.ErrorIs(t, err, nats.ErrPermissionViolation)
		assert.Contains(t, err.Error(), `Publish to "snodo.test.listen"`)
		assert.NotErrorIs(t, err, ErrHostGone)
		assert.Less(t, time.Since(t0), time.Second, "at once, not after the heartbeat watch")
	}
}

func TestServersWithoutSRVPermissionFails(t *testing.T) {
	url := permServer(t)
	cmd := exec.Command(snodoBin(t), "--nats", url, "--nats-user", "nosrv", "servers")
	cmd.Env = append(os.Environ(), "SNODO_NATS_PASSWORD=pw")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), `Publish to "$SRV.INFO"`)
	assert.NotContains(t, string(out), "no served names")
}
