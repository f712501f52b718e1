package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/snodo/snodo/connection"
)

// transportOf is the one place that decides which transport a
// connection runs on: the one Config.Transport gives, else stdio for
// Config.Command, Streamable HTTP for Config.URL, or HTTP+SSE (2024-11-05)
// for Config.URL with Config.SSE (connection.HTTP and connection.SSE). It
// gives stdioTransport for stdio, which the connection runs itself (the child process is its
// actor's, with every rule of docs/seed-rules.md).
func transportOf(cfg *Config) (connection.Transport, error) {
	switch {
	case cfg.Transport != nil && (cfg.Command != "" || cfg.URL != ""):
		return nil, errors.New("snodo: Config.Transport given with a Command or URL; a connection reaches one server")
	case cfg.Transport != nil:
		return cfg.Transport, nil
	case cfg.URL != "" && cfg.Command != "":
		return nil, errors.New("snodo: both a server command and a URL given; a connection reaches one server")
	case cfg.URL != "":
		return urlTransport(cfg, cfg.HTTPClient), nil
	case cfg.SSE:
		return nil, errors.New("snodo: Config.SSE given without a URL; set the URL of the server's SSE stream")
	case cfg.Command != "":
		return stdioTransport{}, nil
	}
	return nil, errors.New("snodo: no server command, URL or transport given")
}

// stdioTransport stands for the stdio transport in transportOf: the
// connection starts and owns the child process itself (startProcess).
type stdioTransport struct{}

// urlTransport is the transport of Config.URL, whose requests client
// makes: HTTP+SSE (2024-11-05) when Config.SSE is set, else Streamable
// HTTP.
func urlTransport(cfg *Config, client *http.Client) connection.Transport {
	if cfg.SSE {
		return connection.SSE(cfg.URL, client, cfg.Header)
	}
	return connection.HTTP(cfg.URL, client, cfg.Header)
}

// maxIdlePerHost is how many idle connections to the endpoint the
// connection's own HTTP client keeps (http.DefaultTransport's
// MaxIdleConns): every call in flight is a POST of its own, and with the
// default 2, 64 calls in flight would dial a new connection for most
// requests.
const maxIdlePerHost = 100

// wrappedClient is the client of a URL connection whose RoundTripper
// Config.WrapTransport wraps (authorization does): Config.HTTPClient's,
// or one of the connection's own, idle, whose idle connections the
// connection closes as it ends (waitChannel).
func wrappedClient(cfg *Config) (client *http.Client, idle *http.Transport, err error) {
	client = cfg.HTTPClient
	if client == nil {
		idle = http.DefaultTransport.(*http.Transport).Clone()
		idle.MaxIdleConnsPerHost = maxIdlePerHost
		client = &http.Client{Transport: idle}
	}
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	rt, err := cfg.WrapTransport(base)
	if err != nil {
		if idle != nil {
			idle.CloseIdleConnections()
		}
		return nil, nil, fmt.Errorf("snodo: %w", err)
	}
	wrapped := *client
	wrapped.Transport = rt
	return &wrapped, idle, nil
}

// Open is never called: Start runs stdio itself.
func (stdioTransport) Open(context.Context, connection.Peer) (connection.Channel, error) {
	return nil, fmt.Errorf("snodo: the stdio transport is started by the connection")
}
