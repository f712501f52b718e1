package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/gateway"
	"github.com/snodo/snodo/remote"
	"github.com/snodo/snodo/supervisor"
)

// runServe is `snodo serve`: MCP servers served over Streamable HTTP by
// the gateway, until SIGINT or SIGTERM:
//
//	serve --http ADDR -- CMD ARGS...              one supervised server at /mcp
//	serve --http ADDR --config FILE               every server of the file at /mcp/NAME
//	serve --http ADDR --nats URL --server NAME... names served by nodes, at /mcp/NAME
//
// GET /healthz answers 200 while every name can take a call, else 503
// with the names that cannot.
func runServe(cfg *config, sio stdio) int {
	fail := func(err error) int {
		fmt.Fprintf(sio.err, "snodo serve: %v\n", err)
		return exitFailure
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.DiscardHandler)
	if cfg.verbose {
		logger = slog.New(slog.NewTextHandler(sio.err, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	// The backends' owner: they live until serve returns.
	owner, closeAll := context.WithCancel(context.Background())
	defer closeAll()
	var routes []*route
	defer func() {
		for _, r := range routes {
			_ = r.h.Close() // a twin's start under way ends first
			_ = r.s.Close()
			if l := r.twin(); l != nil {
				_ = l.Close()
			}
		}
		wait := time.NewTimer(10 * time.Second)
		defer wait.Stop()
		for _, r := range routes {
			for _, s := range []snodo.Session{r.s, r.twin()} {
				if d, ok := s.(interface{ Done() <-chan struct{} }); ok {
					select {
					case <-d.Done():
					case <-wait.C:
						return
					}
				}
			}
		}
	}()
	// add serves one name. A server that speaks the modern era gets a
	// twin connected in the legacy era (twin true), for legacy clients,
	// so that each client meets the server in its own era.
	add := func(name string, connect func(opts []snodo.Option) (snodo.Session, error), twin bool) error {
		h, err := gateway.New(gateway.WithLogger(logger), gateway.WithAllowedOrigins(cfg.allowOrigins...), gateway.WithAllowedHosts(cfg.allowHosts...))
		if err != nil {
			return err
		}
		s, err := connect(h.ConnectOptions())
		if err != nil {
			return err
		}
		rt := &route{name: name, s: s, h: h}
		routes = append(routes, rt)
		if err := h.Attach(s); err != nil {
			return err
		}
		// A remote name's twin is a legacy-era caller whatever the hosts'
		// pools speak: its calls go to their legacy-era connections, which
		// relay server requests and logs to it (natsleg). One remote client
		// serves every legacy session of the name; the gateway gives each
		// session a pin that keeps its calls and subscriptions on one host
		// and one member of that host's legacy-era pool (internal/pin).
		// The twin is connected when the first legacy client comes.
		if twin && (cfg.natsURL != "" || s.Era() == snodo.EraModern) {
			return h.AttachLegacy(func(context.Context) (snodo.Session, error) {
				l, err := connect(append(h.ConnectOptions(), snodo.WithEra(snodo.EraLegacy)))
				if err != nil {
					logger.Warn("snodo serve: the legacy-era twin did not start", "name", name, "error", err)
					return nil, err
				}
				rt.setLegacy(l)
				return l, nil
			})
		}
		return nil
	}
	var err error
	switch {
	case len(cfg.server) > 0:
		t := snodo.Command(cfg.server[0], cfg.server[1:]...)
		err = add("", func(opts []snodo.Option) (snodo.Session, error) {
			sopts := []supervisor.Option{supervisor.WithConnectOptions(append(opts, serverOptions(cfg)...)...)}
			if cfg.pool > 1 {
				return supervisor.NewPool(owner, t, cfg.pool, sopts...)
			}
			return supervisor.Connect(owner, t, sopts...)
		}, cfg.era == "")
	case cfg.configFile != "":
		file, ferr := loadFile(cfg.configFile, sio.err)
		if ferr != nil {
			return fail(ferr)
		}
		if len(file.Servers) == 0 {
			return fail(noUsableServer(file))
		}
		for _, srv := range file.Servers {
			size := srv.Pool
			if cfg.pool > 0 {
				size = cfg.pool
			}
			if err = add(srv.Name, func(opts []snodo.Option) (snodo.Session, error) {
				return supervisor.NewPool(owner, srv.Target, size, append(slices.Clone(srv.Options), supervisor.WithConnectOptions(opts...))...)
			}, true); err != nil {
				err = fmt.Errorf("server %q: %w", srv.Name, err)
				break
			}
		}
	default:
		for _, name := range serveNames(cfg) {
			if err = add(name, func(opts []snodo.Option) (snodo.Session, error) {
				ropts := []remote.ClientOption{remote.WithNATSOptions(natsOptions(cfg)...), remote.WithConnectOptions(opts...)}
				if cfg.prefix != "" {
					ropts = append(ropts, remote.WithPrefix(cfg.prefix))
				}
				return remote.Dial(ctx, cfg.natsURL, name, ropts...)
			}, true); err != nil {
				err = fmt.Errorf("--server %s: %w", name, err)
				break
			}
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(sio.err, "snodo serve: interrupted while starting")
			return exitInterrupted
		}
		return fail(err)
	}
	mux := http.NewServeMux()
	for _, r := range routes {
		path := "/mcp"
		if r.name != "" {
			path += "/" + r.name
		}
		mux.Handle(path, r.h)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, req *http.Request) { healthz(w, req, routes) })
	var handler http.Handler = mux
	if cfg.authIssuer != "" {
		auth, aerr := newAuth(ctx, cfg.authIssuer, cfg.authAudience, cfg.httpAddr, mux)
		if aerr != nil {
			return fail(aerr)
		}
		handler = auth
	}
	ln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return fail(fmt.Errorf("--http %s: %w", cfg.httpAddr, err))
	}
	srv := gateway.NewServer(cfg.httpAddr, handler)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	var paths []string
	for _, r := range routes {
		paths = append(paths, "http://"+ln.Addr().String()+strings.TrimSuffix("/mcp/"+r.name, "/"))
	}
	fmt.Fprintf(sio.out, "serving %s\n", strings.Join(paths, " "))
	select {
	case <-ctx.Done():
	case err := <-served:
		return fail(err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, r := range routes {
		_ = r.h.Close() // ends the streams Shutdown would wait for
	}
	_ = srv.Shutdown(sctx)
	return exitOK
}

// route is one served name.
type route struct {
	name   string
	s      snodo.Session
	h      *gateway.Handler
	mu     sync.Mutex
	legacy snodo.Session // the legacy-era twin, once the first legacy client made it; guarded by mu
}

func (r *route) setLegacy(l snodo.Session) {
	r.mu.Lock()
	r.legacy = l
	r.mu.Unlock()
}

// twin is the legacy-era twin, nil before it was made.
func (r *route) twin() snodo.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.legacy
}

// serverOptions are the command line's settings of a server process.
func serverOptions(cfg *config) []snodo.Option {
	var opts []snodo.Option
	for _, kv := range cfg.env {
		k, v, _ := strings.Cut(kv, "=")
		opts = append(opts, snodo.WithEnv(k, v))
	}
	for _, k := range cfg.unset {
		opts = append(opts, snodo.WithoutEnv(k))
	}
	if cfg.dir != "" {
		opts = append(opts, snodo.WithDir(cfg.dir))
	}
	switch cfg.era {
	case "modern":
		opts = append(opts, snodo.WithEra(snodo.EraModern))
	case "legacy":
		opts = append(opts, snodo.WithEra(snodo.EraLegacy))
	}
	return append(opts, snodo.WithTimeout(cfg.timeout), snodo.WithMaxLineBytes(cfg.maxLineBytes))
}

// serveNames are the names of --server (comma-separated, and any further
// arguments).
func serveNames(cfg *config) []string {
	var out []string
	for _, s := range append([]string{cfg.serverName}, cfg.args...) {
		for _, n := range strings.Split(s, ",") {
			if n = strings.TrimSpace(n); n != "" && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// healthz answers 200 while every route can take a call (its legacy-era
// twin too, if it has one), else 503 with the names that cannot.
func healthz(w http.ResponseWriter, r *http.Request, routes []*route) {
	var down []string
	for _, rt := range routes {
		if l := rt.twin(); !canServe(r.Context(), rt.s) || (l != nil && !canServe(r.Context(), l)) {
			down = append(down, cmpName(rt.name))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if len(down) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "unavailable", "down": down})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "ok"})
}

func cmpName(n string) string {
	if n == "" {
		return "mcp"
	}
	return n
}

// canServe reports whether s can take a call now: a server up (a pool:
// one member up), or for a remote name a host that answers.
func canServe(ctx context.Context, s snodo.Session) bool {
	switch x := s.(type) {
	case *supervisor.Pool:
		for _, m := range x.Members() {
			if m.Current() != nil {
				return true
			}
		}
		return false
	case *supervisor.Client:
		return x.Current() != nil
	case *remote.Client:
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := x.Info(ctx)
		return err == nil
	}
	return true
}

// validateServe checks serve's flags.
func (cfg *config) validateServe() error {
	if cfg.httpAddr == "" {
		return usagef("serve: give --http ADDR (%s)", commandSyntax["serve"])
	}
	ways := 0
	for _, b := range []bool{len(cfg.server) > 0, cfg.configFile != "", cfg.natsURL != ""} {
		if b {
			ways++
		}
	}
	if ways != 1 {
		return usagef("serve: give one of -- CMD ARGS, --config FILE or --nats URL --server NAME (%s)", commandSyntax["serve"])
	}
	if cfg.natsURL != "" && len(serveNames(cfg)) == 0 {
		return usagef("serve --nats: name the servers with --server NAME")
	}
	if cfg.natsURL == "" && (cfg.serverName != "" || len(cfg.args) > 0) {
		return usagef("serve: --server NAME goes with --nats; --config serves every server of its file")
	}
	if cfg.pool < 0 || cfg.pool > 64 {
		return usagef("--pool %d: give 1 to 64", cfg.pool)
	}
	if cfg.pool > 0 && cfg.natsURL != "" {
		return usagef("--pool does not go with --nats: the hosts size their pools")
	}
	if (cfg.authIssuer == "") != (cfg.authAudience == "") {
		return usagef("--auth-issuer and --auth-audience go together")
	}
	if cfg.timeout == 0 {
		return usagef("--timeout 0s: give a positive duration (or a negative one for no timeout)")
	}
	for _, o := range cfg.allowOrigins {
		if u, err := url.Parse(o); o != "*" && (err != nil || u.Scheme == "" || u.Host == "") {
			return usagef("--allow-origin %q: give an origin such as https://app.example, or *", o)
		}
	}
	return nil
}

// newAuth puts the bearer check of --auth-issuer/--auth-audience in
// front of next.
func newAuth(_ context.Context, issuer, audience, _ string, next http.Handler) (http.Handler, error) {
	return gateway.RequireBearer(issuer, audience, next)
}
