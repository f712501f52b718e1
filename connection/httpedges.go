package connection

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/internal/sentinel"
)

// sample is a message the server sent as it may go into a log record
// or an error: shortened and made safe (safetext.Sample).
func sample(b []byte) string { return safetext.Sample(b) }

// sampleMax is how much of a server's text sampleString needs: Line
// keeps safetext.LineMax bytes, and one more tells it to mark the cut.
const sampleMax = safetext.LineMax + 1

// sampleString is s, which a server chose, as it may go into an error
// or a log: one line, escaped, bounded (safetext.Line).
func sampleString(s string) string {
	if len(s) > sampleMax {
		s = s[:sampleMax] // Line cuts it (and marks the cut); no need to copy the rest
	}
	return safetext.Line(s)
}

// maxCause bounds the text of an HTTP client's error in a request's
// error: Go's own errors quote what the server sent (a malformed header
// line, escaped, up to the whole header).
const maxCause = 2048

// boundedCause is an HTTP client error's text as it goes into an error
// or a log: one line, escaped, at most maxCause bytes.
func boundedCause(s string) string {
	if len(s) > maxCause+1 {
		s = s[:maxCause+1]
	}
	return safetext.LineN(s, maxCause)
}

// suggestEndpoint is the advice for a URL that is not a Streamable HTTP
// endpoint: the URL to try when the path says which (an old HTTP+SSE
// server's /sse or /message(s) path, whose server may serve Streamable
// HTTP at /mcp), else where such endpoints usually are.
func suggestEndpoint(rawURL string) string {
	if s := endpointFromPath(rawURL); s != "" {
		return s
	}
	return "give the server's Streamable HTTP endpoint (often its /mcp path)"
}

// endpointFromPath is the advice to try the same server's /mcp when the
// URL's path is an old HTTP+SSE server's; "" otherwise.
func endpointFromPath(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err == nil {
		path := strings.TrimSuffix(u.Path, "/")
		for _, old := range []string{"/sse", "/message", "/messages"} {
			if base, ok := strings.CutSuffix(path, old); ok {
				v := *u
				v.Path, v.RawPath, v.RawQuery = base+"/mcp", "", ""
				return "if the server also speaks Streamable HTTP, try " + safeURL(v.String())
			}
		}
	}
	return ""
}

// isHTML reports whether an answer is a web page: its Content-Type, or
// a body that starts as one.
func isHTML(resp *http.Response, head []byte) bool {
	if mediaType(resp.Header) == "text/html" {
		return true
	}
	t := bytes.ToLower(bytes.TrimSpace(head[:min(len(head), 64)]))
	return bytes.HasPrefix(t, []byte("<!doctype html")) || bytes.HasPrefix(t, []byte("<html"))
}

// bodyNote is what an error status's error says of its body: the start
// of it, made safe, or, for a web page (an error page of a site, not of
// an MCP endpoint), that it is one and where the endpoint may be.
func bodyNote(resp *http.Response, body []byte, rawURL string) string {
	t := bytes.TrimSpace(body)
	switch {
	case len(t) == 0:
		return ""
	case isHTML(resp, t):
		note := ": a web page (text/html), not JSON-RPC: a site's or a proxy's error page"
		if s := endpointFromPath(rawURL); s != "" {
			note += "; " + s
		}
		return note
	}
	return ": " + sample(t)
}

// retryNote is what a 429 or 503's error adds about Retry-After, given
// the retries the request made: how often it was retried, or why it was
// not.
func retryNote(resp *http.Response, retries int) string {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return ""
	}
	wait, retryable := retryAfter(resp)
	switch {
	case retryable && retries > 0:
		return fmt.Sprintf(" (still so after %d retries honouring Retry-After)", retries)
	case retryable:
		return " (Retry-After was not waited for: the request's stream asked for it; try again later)"
	case wait > 0:
		return fmt.Sprintf(" (Retry-After asks for %s, longer than the %s a request waits; not retried: try again later)",
			wait.Round(time.Second), httpMaxRetryAfter)
	default:
		return " (no usable Retry-After; not retried: try again later)"
	}
}

// unexpectedAnswer is the error of a 2xx answer to a request that is
// neither JSON nor an SSE stream: a web page (the URL is a site's, not
// an MCP endpoint), a 202 without an answer (an old HTTP+SSE server's
// message URL, which sends its answers on its event stream), or another
// type. It names what came and, when it can tell, the URL to use.
func unexpectedAnswer(method, rawURL string, resp *http.Response) error {
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	var msg string
	switch {
	case isHTML(resp, head):
		msg = fmt.Sprintf("%s: %s answered %s with a web page (text/html), not JSON-RPC: it is not an MCP endpoint; %s",
			method, safeURL(rawURL), sampleString(resp.Status), suggestEndpoint(rawURL))
	case resp.StatusCode == http.StatusAccepted:
		msg = fmt.Sprintf("%s: %s accepted the request (202) without answering it: this is how the message URL of an old HTTP+SSE server (the 2024-11-05 transport) answers, which sends its answers on its event stream; snodo speaks Streamable HTTP: %s",
			method, safeURL(rawURL), suggestEndpoint(rawURL))
	default:
		msg = fmt.Sprintf("%s: the MCP endpoint answered %s with Content-Type %s, neither application/json nor text/event-stream",
			method, sampleString(resp.Status), sampleString(strings.TrimSpace(resp.Header.Get("Content-Type"))))
		if t := bytes.TrimSpace(head); len(t) > 0 {
			msg += ": " + sampleString(string(t))
		}
	}
	return httpError(jsonrpc.CodeInternalError, msg, sentinel.ErrNotJSONRPC)
}
