package servers

import (
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/supervisor"
)

// entry is one server as its file writes it, once checked: the parser's
// working copy. server turns it into a Server, and nothing else reads
// it: the file's keys become options in that one place.
type entry struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string // on top of the inherited environment
	Cwd     string
	URL     string // an http server's endpoint; Command, Args, Env, Cwd and ShutdownGrace are then absent
	Headers map[string]string
	OAuth   *snodo.OAuth   // the "oauth" object: ClientID and Scopes
	Sandbox *snodo.Sandbox // the "sandbox" object; nil: none
	SSE     bool           // "type": "sse": URL is the SSE stream of an HTTP+SSE server (2024-11-05)

	// The snodo block; zero values mean the library's defaults.
	Pool          int
	Timeout       time.Duration
	ShutdownGrace time.Duration
	Era           string // "modern" or "legacy"
	MaxRestarts   *int
	Window        time.Duration
	FailFast      bool
	MaxWait       time.Duration
}

// The supervisor's restart intensity defaults (supervisor.WithIntensity),
// for a file that gives one of maxRestarts and window only.
const (
	defaultMaxRestarts = 5
	defaultWindow      = 30 * time.Second
)

// server builds the Server e describes, its keys turned into options (the
// list is Server.Options' doc); a relative cwd is resolved against dir
// when dir is not empty.
func (e *entry) server(dir string) *Server {
	s := &Server{Name: e.Name, Pool: e.Pool, OAuth: e.OAuth, Sandbox: e.Sandbox, SSE: e.SSE, Target: snodo.Command(e.Command, e.Args...)}
	var header http.Header // an sse entry's headers go with its transport
	switch {
	case e.SSE:
		header = http.Header{}
		for k, v := range e.Headers {
			header.Set(k, v)
		}
		s.Target = snodo.TransportTarget(connection.SSE(e.URL, nil, header))
	case e.URL != "":
		s.Target = snodo.HTTP(e.URL)
	}
	var conn []snodo.Option
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		conn = append(conn, snodo.WithEnv(k, e.Env[k]))
	}
	if cwd := e.Cwd; cwd != "" {
		if dir != "" && !filepath.IsAbs(cwd) {
			cwd = filepath.Join(dir, cwd)
		}
		conn = append(conn, snodo.WithDir(cwd))
	}
	if !e.SSE {
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			conn = append(conn, snodo.WithHTTPHeader(k, e.Headers[k]))
		}
	}
	if e.Timeout != 0 {
		conn = append(conn, snodo.WithTimeout(e.Timeout))
	}
	if e.ShutdownGrace > 0 {
		conn = append(conn, snodo.WithShutdownGrace(e.ShutdownGrace))
	}
	switch e.Era {
	case "modern":
		conn = append(conn, snodo.WithEra(snodo.EraModern))
	case "legacy":
		conn = append(conn, snodo.WithEra(snodo.EraLegacy))
	}
	if e.Sandbox != nil {
		conn = append(conn, snodo.WithSandbox(*e.Sandbox))
	}
	conn = append(conn, snodo.WithOrigin(snodo.Origin{Server: e.Name}))
	opts := []supervisor.Option{supervisor.WithConnectOptions(conn...)}
	if e.MaxRestarts != nil || e.Window != 0 {
		n, w := defaultMaxRestarts, defaultWindow
		if e.MaxRestarts != nil {
			n = *e.MaxRestarts
		}
		if e.Window != 0 {
			w = e.Window
		}
		opts = append(opts, supervisor.WithIntensity(n, w))
	}
	if e.FailFast {
		opts = append(opts, supervisor.FailFast())
	}
	if e.MaxWait > 0 {
		opts = append(opts, supervisor.WithMaxWait(e.MaxWait))
	}
	// Full: an append of the program's copies, and never writes past
	// the file's.
	s.Options, s.fromFile = slices.Clip(opts), len(opts)
	return s
}
