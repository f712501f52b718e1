package snodo

import (
	"context"
	"errors"
	"net/url"
)

// Target is how to reach a server, for whatever connects to one more
// than once (a supervisor restarting it, a pool's members): a command to
// start (Command) or a Streamable HTTP endpoint (HTTP). The zero Target
// names nothing and cannot be connected. A Target is a value: copy it
// freely.
type Target struct {
	command string
	args    []string
	url     string
}

// Command is the Target of a server started as name with args (no
// shell), reached over its stdio, as Connect does.
func Command(name string, args ...string) Target {
	return Target{command: name, args: append([]string(nil), args...)}
}

// HTTP is the Target of a server reached at a Streamable HTTP endpoint
// url, as ConnectHTTP does.
func HTTP(url string) Target {
	return Target{url: url}
}

// String names the target in logs, events and metrics: the command name
// (not its arguments, which may carry secrets), or the URL with any
// password and query left out.
func (t Target) String() string {
	if t.url == "" {
		return t.command
	}
	u, err := url.Parse(t.url)
	if err != nil {
		return "(unparsable URL)"
	}
	u.RawQuery, u.Fragment = "", ""
	return u.Redacted()
}

// Connect connects to the target once, as Connect or ConnectHTTP would,
// with opts.
func (t Target) Connect(ctx context.Context, opts ...Option) (*Client, error) {
	switch {
	case t.url != "":
		return connectHTTPTarget(ctx, t.url, opts)
	case t.command != "":
		return Connect(ctx, t.command, t.args, opts...)
	}
	return nil, errors.New("snodo: empty Target: make one with snodo.Command(name, args...) or snodo.HTTP(url)")
}

// connectHTTPTarget is the one place an HTTP Target is connected: each
// connect opens a new session.
func connectHTTPTarget(ctx context.Context, url string, opts []Option) (*Client, error) {
	return ConnectHTTP(ctx, url, opts...)
}
