// Package clients puts each MCP client of the comparison behind one small
// interface: connect to a stdio server in a given era, call a tool, close.
package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
)

// Eras.
const (
	Modern = "modern" // 2026-07-28: server/discover, _meta on every request
	Legacy = "legacy" // 2025-11-25: initialize handshake
)

// Versions the adapters ask for.
const (
	ModernVersion = "2026-07-28"
	LegacyVersion = "2025-11-25"
)

// Options describe one connection.
type Options struct {
	Command string
	Args    []string
	// URL, when set, connects over Streamable HTTP to this endpoint
	// instead of starting Command. The peers get PeerHTTPClient.
	URL string
	Era string // Modern or Legacy; the adapter must end up in it
	// OnEvent, when set, opens a subscription for tools list changes
	// (subscriptions/listen, modern era) before Connect returns... or as
	// near to that as the client allows; it runs once per event.
	OnEvent func()
}

// Client is one connected MCP client.
type Client interface {
	// Call calls tool with args (a JSON object or nil), answering any
	// elicitation the server asks for with "decline", and returns the text
	// of the first content block of the result.
	Call(ctx context.Context, tool string, args json.RawMessage) (string, error)
	// Close closes the connection as the client's API does.
	Close() error
}

// Requester is a client that also sends a request with params encoded
// beforehand and hands back the raw result: its transport without a typed
// layer. In the modern era it adds the era's _meta to params itself.
type Requester interface {
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// Connector connects a client.
type Connector func(ctx context.Context, o Options) (Client, error)

var registry = map[string]Connector{}

func register(name string, c Connector) { registry[name] = c }

// Names lists the clients, the ceiling ("minimal") last.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		if n != "minimal" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return append(names, "minimal")
}

// Connect connects the client called name.
func Connect(ctx context.Context, name string, o Options) (Client, error) {
	c, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown client %q", name)
	}
	if o.Era != Modern && o.Era != Legacy {
		return nil, fmt.Errorf("unknown era %q", o.Era)
	}
	return c(ctx, o)
}

// PeerHTTPClient is the *http.Client the other clients get over HTTP: a
// clone of http.DefaultTransport that keeps up to 64 idle connections per
// host, as snodo's own default does, so that 64 calls in flight reuse
// their connections instead of dialling anew (the default keeps 2).
func PeerHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: t}
}

// firstText returns the text of the first content block, or an error when
// the result has none.
func firstText(texts []string) (string, error) {
	if len(texts) == 0 {
		return "", fmt.Errorf("result has no text content")
	}
	return texts[0], nil
}
