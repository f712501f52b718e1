package snodo

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/snodo/snodo/connection"
)

// fallBackToSSE is the fallback to the HTTP+SSE transport of protocol
// version 2024-11-05 that the Streamable HTTP transport's
// backwards-compatibility rules give a client: when the POST of
// initialize to a ConnectHTTP URL was refused with 400, 404 or 405, the
// URL may be the SSE stream of an older server. The Streamable HTTP
// connection is closed and a connection over the old transport is
// opened at the same URL (its Open GETs the stream and waits for the
// endpoint event). It reports whether the connection now runs there, so
// initialize is to be sent again; when the GET brings no SSE stream with
// an endpoint event, *err is kept and names both attempts.
func (c *Client) fallBackToSSE(ctx context.Context, cfg *config, err *error) bool {
	var status *connection.HTTPStatusError
	if cfg.conn.URL == "" || cfg.conn.SSE || !errors.As(*err, &status) {
		return false
	}
	switch status.StatusCode {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
	default:
		return false
	}
	c.kill()
	cfg.conn.SSE = true
	conn, openErr := c.startConn(ctx, cfg)
	if openErr != nil {
		cfg.conn.SSE = false
		*err = fmt.Errorf("%w; nor is it a server of the HTTP+SSE transport (2024-11-05): %v", *err, openErr)
		return false
	}
	c.conn = conn
	if l := cfg.conn.Logger; l != nil {
		l.Info("snodo: the server speaks the HTTP+SSE transport of 2024-11-05; the connection runs over it", "url", cfg.name())
	}
	return true
}
