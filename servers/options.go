package servers

import (
	"slices"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
)

// ConnectOptions are the snodo.Connect options the file gives this
// server: its environment, working directory, headers (an http server),
// timeout, shutdown grace and era. Connect with them through its Target:
//
//	c, err := s.Target().Connect(ctx, s.ConnectOptions()...)
func (s *Server) ConnectOptions() []snodo.Option {
	var opts []snodo.Option
	names := make([]string, 0, len(s.Env))
	for k := range s.Env {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		opts = append(opts, snodo.WithEnv(k, s.Env[k]))
	}
	if s.Cwd != "" {
		opts = append(opts, snodo.WithDir(s.Cwd))
	}
	headers := make([]string, 0, len(s.Headers))
	for k := range s.Headers {
		headers = append(headers, k)
	}
	slices.Sort(headers)
	for _, k := range headers {
		opts = append(opts, snodo.WithHTTPHeader(k, s.Headers[k]))
	}
	if s.Timeout != 0 {
		opts = append(opts, snodo.WithTimeout(s.Timeout))
	}
	if s.ShutdownGrace > 0 {
		opts = append(opts, snodo.WithShutdownGrace(s.ShutdownGrace))
	}
	switch s.Era {
	case "modern":
		opts = append(opts, snodo.WithEra(snodo.EraModern))
	case "legacy":
		opts = append(opts, snodo.WithEra(snodo.EraLegacy))
	}
	return opts
}

// The supervisor's restart intensity defaults (supervisor.WithIntensity),
// for a file that gives one of maxRestarts and window only.
const (
	defaultMaxRestarts = 5
	defaultWindow      = 30 * time.Second
)

// SupervisorOptions are the supervisor options of this server: the
// file's (its name, restart intensity, fail-fast and wait bound, and its
// ConnectOptions), then the program's own (Options). Start it with its
// Target, supervised or as a pool of Pool members:
//
//	p, err := supervisor.NewPool(ctx, s.Target(), s.Pool, s.SupervisorOptions()...)
func (s *Server) SupervisorOptions() []supervisor.Option {
	return append(s.fileOptions(), s.Options...)
}

// fileOptions are the supervisor options the file gives this server.
func (s *Server) fileOptions() []supervisor.Option {
	opts := []supervisor.Option{
		supervisor.WithConnectOptions(append(s.ConnectOptions(), snodo.WithOrigin(snodo.Origin{Server: s.Name}))...),
	}
	if s.MaxRestarts != nil || s.Window != 0 {
		n, w := defaultMaxRestarts, defaultWindow
		if s.MaxRestarts != nil {
			n = *s.MaxRestarts
		}
		if s.Window != 0 {
			w = s.Window
		}
		opts = append(opts, supervisor.WithIntensity(n, w))
	}
	if s.FailFast {
		opts = append(opts, supervisor.FailFast())
	}
	if s.MaxWait > 0 {
		opts = append(opts, supervisor.WithMaxWait(s.MaxWait))
	}
	return opts
}

// Target is how to reach the server: snodo.HTTP(URL) for an http
// server, else snodo.Command(Command, Args...).
func (s *Server) Target() snodo.Target {
	if s.URL != "" {
		return snodo.HTTP(s.URL)
	}
	return snodo.Command(s.Command, s.Args...)
}
