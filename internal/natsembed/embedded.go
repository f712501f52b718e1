// Package natsembed runs a NATS server inside the process, so that one
// machine (snodo node without --nats) or a test needs no NATS setup:
// hosts and callers of this machine connect to its URL. It is kept apart
// from package remote so that programs that only call or serve over an
// existing NATS system do not link the server (about 16 MB of binary on
// linux/amd64). A program of a user's that wants the same calls the
// nats-server module itself (server.NewServer, Start,
// ReadyForConnections).
package natsembed

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is a NATS server running inside this process, for one
// machine (or a test) that needs no NATS setup: hosts and callers of
// this machine connect to its URL. For several machines, run a NATS
// cluster instead and give every node its URLs.
type Server struct {
	srv *server.Server
}

// Options tune Start. The zero value listens on
// 127.0.0.1 on a free port, with no authentication.
type Options struct {
	// Host to listen on; default 127.0.0.1 (this machine only).
	Host string
	// Port to listen on; 0 picks a free one.
	Port int
	// Token, when set, is required from every client (nats.Token).
	Token string
}

// Start starts a NATS server in this process and returns once it
// accepts connections. It fails when the NATS server refuses the options,
// or does not accept connections within 10 s.
func Start(o Options) (*Server, error) {
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	port := o.Port
	if port == 0 {
		port = server.RANDOM_PORT
	}
	srv, err := server.NewServer(&server.Options{
		ServerName:    "snodo-embedded",
		Host:          o.Host,
		Port:          port,
		Authorization: o.Token,
		NoLog:         true,
		NoSigs:        true,
		MaxPayload:    8 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, errors.New("the embedded NATS server did not accept connections within 10 s")
	}
	return &Server{srv: srv}, nil
}

// URL is the nats:// URL clients connect to.
func (e *Server) URL() string { return e.srv.ClientURL() }

// Shutdown stops the server and returns once it has: connected clients
// see their connection close. Idempotent.
func (e *Server) Shutdown() {
	e.srv.Shutdown()
	e.srv.WaitForShutdown()
}
