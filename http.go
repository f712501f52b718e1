package snodo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ConnectHTTP connects to the MCP server at a Streamable HTTP endpoint
// (an http:// or https:// URL) and returns the same *Client Connect
// returns: every call, Listen, notifications, input rounds, progress,
// cancellation, telemetry and call messages work as they do over stdio.
// ctx is the connection's owner, as for Connect. The era is settled as
// over stdio: a server/discover probe (modern, stateless POSTs), else
// initialize (legacy: a session with Mcp-Session-Id, the optional GET
// stream, resumable streams). docs/http.md says what goes on the wire.
//
// The options that start a process (WithEnv, WithDir, WithStderr, …) do
// nothing here; WithHTTPClient and WithHTTPHeader are HTTP's own. Close
// ends a legacy session with a DELETE. A server that ends the session
// (404) or cannot be reached stops the client, with
// connection.ErrSessionExpired or connection.ErrServerUnreachable as its
// Err: a supervised client then connects
// again, opening a new session.
func ConnectHTTP(ctx context.Context, url string, opts ...Option) (*Client, error) {
	if ctx == nil {
		return nil, errors.New("snodo: ConnectHTTP: nil context.Context; pass context.Background() or a ctx that bounds the connect (it also owns the connection)")
	}
	var cfg config
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("snodo: ConnectHTTP: option %d is nil; leave it out of the list instead", i+1)
		}
		if err := opt(&cfg); err != nil {
			return nil, fmt.Errorf("snodo: %w", err)
		}
	}
	if url == "" {
		return nil, errors.New("snodo: ConnectHTTP: empty URL; pass the MCP endpoint, such as https://example.com/mcp")
	}
	cfg.conn.URL = url
	if cfg.oauth != nil {
		cfg.conn.WrapTransport = func(base http.RoundTripper) (http.RoundTripper, error) { return cfg.authorized(url, base) }
	}
	c := &Client{}
	c.Calls = NewCalls(c)
	if err := c.start(ctx, &cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// WithHTTPClient makes every HTTP request of ConnectHTTP with client: its
// Transport (proxy, TLS, a RoundTripper that adds authorization),
// redirect policy and cookie jar. Every request body can be replayed
// (GetBody is set), so a RoundTripper may retry. Leave client.Timeout
// zero: SSE streams last as long as their request, and each request has
// its own timeout (WithTimeout). Default: a client of the connection's
// own (a clone of http.DefaultTransport keeping up to 100 idle
// connections to the endpoint, so that many calls in flight reuse
// theirs), whose idle connections Close closes; a client given here is left as it is.
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) error {
		if client == nil {
			return errors.New("WithHTTPClient: nil *http.Client; leave the option out for the default")
		}
		c.conn.HTTPClient = client
		return nil
	}
}

// WithHTTPHeader adds a header to every HTTP request of ConnectHTTP (an
// API key, say). The headers the transport sets itself (Content-Type,
// Accept, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name,
// Mcp-Param-*) win over one given here. A value is never logged.
func WithHTTPHeader(name, value string) Option {
	return func(c *config) error {
		if name == "" || strings.ContainsAny(name, " \t\r\n:") {
			return fmt.Errorf("WithHTTPHeader: %q is not a header name", name)
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			return fmt.Errorf("WithHTTPHeader: the value of %s contains a line break or NUL", name)
		}
		if c.conn.Header == nil {
			c.conn.Header = http.Header{}
		}
		c.conn.Header.Add(name, value)
		return nil
	}
}
