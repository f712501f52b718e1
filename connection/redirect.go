package connection

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/snodo/snodo/internal/weborigin"
)

// httpMaxRedirects bounds the redirects one request follows: more is a
// loop or a chain no MCP endpoint needs.
const httpMaxRedirects = 10

// redirectKeeps lists the headers a request keeps when it is redirected
// to another origin: what says how the body is framed, and the headers
// that only repeat what the body itself says (its method, the name it
// calls, the arguments a tool mirrors). Everything else stays behind:
// Authorization, DPoP, cookies, Mcp-Session-Id, MCP-Protocol-Version,
// Last-Event-ID and every header the user gave (WithHTTPHeader, a
// servers file's "headers").
var redirectKeeps = map[string]bool{
	"Accept":         true,
	"Content-Type":   true,
	"User-Agent":     true,
	"Mcp-Method":     true,
	"Mcp-Name":       true,
	"Content-Length": true,
}

// checkRedirect is the one decision about a redirect of a request to the
// MCP endpoint at endpoint: req is the request about to be sent to the
// redirect's target (Go has copied the first request's headers onto
// it), via the requests made so far, the first one first.
//
//   - Past httpMaxRedirects it fails: a loop, or too long a chain.
//   - A POST that the redirect would turn into a GET (301, 302 and 303
//     do, and drop the body) fails, naming the URL to use instead: the
//     message would be lost.
//   - A redirect from https to http fails: the body would travel in the
//     clear.
//   - Within the endpoint's origin (scheme, host and port) every header
//     is kept; to another origin only redirectKeeps are.
//   - Referer is never sent: the endpoint's URL may carry a key in its
//     query.
//
// It returns crossed == true when req goes to another origin.
func checkRedirect(endpoint *url.URL, req *http.Request, via []*http.Request) (crossed bool, err error) {
	to := safeURL(req.URL.String())
	if len(via) > httpMaxRedirects {
		return false, fmt.Errorf("stopped after %d redirects, the last to %s: a redirect loop, or too long a chain; give the endpoint's final URL", httpMaxRedirects, to)
	}
	first, prev := via[0], via[len(via)-1]
	code := 0
	if req.Response != nil {
		code = req.Response.StatusCode
	}
	if first.Method == http.MethodPost && req.Method != http.MethodPost {
		return false, fmt.Errorf("the MCP endpoint answered a POST with redirect %d to %s, which would resend it as a %s without its message (only 307 and 308 keep a POST); if that is the endpoint, use that URL", code, to, req.Method)
	}
	if strings.EqualFold(prev.URL.Scheme, "https") && !strings.EqualFold(req.URL.Scheme, "https") {
		return false, fmt.Errorf("the MCP endpoint redirected from https to %s: refusing to send the request in the clear", to)
	}
	req.Header.Del("Referer")
	if weborigin.Same(endpoint, req.URL) {
		return false, nil
	}
	for k := range req.Header {
		if !redirectKeeps[k] && !strings.HasPrefix(k, headerParam) {
			delete(req.Header, k)
		}
	}
	return true, nil
}

// withRedirectPolicy returns a copy of client whose redirects
// checkRedirect decides, then the client's own CheckRedirect (a client
// the caller gave with WithHTTPClient keeps its policy, under ours). A
// redirect to another origin is logged once per peer: its credentials
// and session did not follow, so the server there will likely refuse.
func (p *httpPeer) withRedirectPolicy(client *http.Client) *http.Client {
	c := *client
	next := client.CheckRedirect
	var warned bool // under p.mu
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		crossed, err := checkRedirect(p.u, req, via)
		if err != nil {
			return err
		}
		if crossed && p.logger != nil {
			p.mu.Lock()
			first := !warned
			warned = true
			p.mu.Unlock()
			if first {
				p.logger.Warn("snodo: the MCP endpoint redirected to another origin; its credentials, session and headers were not sent there (if that is the server's endpoint, use its URL)",
					"endpoint", safeURL(p.url), "to", safeURL(req.URL.String()))
			}
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	return &c
}
