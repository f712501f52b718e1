package connection

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckRedirect is the table of redirect variants: each status a
// server may redirect a POST with, to the endpoint's origin, to another
// port of the same host, to another host and to another scheme, and
// the loop.
func TestCheckRedirect(t *testing.T) {
	endpoint, _ := url.Parse("http://127.0.0.1:8080/mcp?key=k")
	sent := http.Header{
		"Authorization":        {"Bearer secret"},
		"Mcp-Session-Id":       {"sid"},
		"Mcp-Protocol-Version": {"2025-11-25"},
		"X-Api-Key":            {"user-key"},
		"Cookie":               {"c=1"},
		"Referer":              {"http://127.0.0.1:8080/mcp?key=k"},
		"Last-Event-Id":        {"7"},
		"Accept":               {"application/json, text/event-stream"},
		"Content-Type":         {"application/json"},
		"Mcp-Method":           {"tools/call"},
		"Mcp-Name":             {"echo"},
		"Mcp-Param-Region":     {"eu"},
	}
	kept := []string{"Accept", "Content-Type", "Mcp-Method", "Mcp-Name", "Mcp-Param-Region"}
	type variant struct {
		name    string
		method  string // of the first request
		code    int
		to      string
		hops    int    // requests made before this one
		crossed bool   // to another origin
		err     string // the redirect fails with this
	}
	var cases []variant
	for _, code := range []int{301, 302, 307, 308} {
		after := http.MethodPost
		if code < 307 {
			after = http.MethodGet
		}
		for _, to := range []struct {
			name, url string
			crossed   bool
		}{
			{"same origin", "http://127.0.0.1:8080/v2/mcp", false},
			{"same origin, other path", "http://127.0.0.1:8080/mcp/", false},
			{"other port", "http://127.0.0.1:9090/mcp", true},
			{"other host", "http://evil.example:8080/mcp", true},
			{"other scheme", "https://127.0.0.1:8080/mcp", true},
		} {
			v := variant{name: to.name, method: http.MethodPost, code: code, to: to.url, hops: 1, crossed: to.crossed}
			if after != http.MethodPost {
				v.err = "would resend it as a GET without its message"
			}
			cases = append(cases, v)
			// A GET (the listen stream, a resumption) stays a GET.
			cases = append(cases, variant{name: to.name + " GET", method: http.MethodGet, code: code, to: to.url, hops: 1, crossed: to.crossed})
		}
	}
	cases = append(cases,
		variant{name: "loop", method: http.MethodPost, code: 307, to: "http://127.0.0.1:8080/mcp", hops: httpMaxRedirects + 1, err: "stopped after 10 redirects"},
		variant{name: "chain at the limit", method: http.MethodPost, code: 307, to: "http://127.0.0.1:8080/mcp", hops: httpMaxRedirects},
	)
	for _, tc := range cases {
		t.Run(tc.name+"-"+http.StatusText(tc.code), func(t *testing.T) {
			to, err := url.Parse(tc.to)
			require.NoError(t, err)
			method := tc.method
			if method == http.MethodPost && tc.code < 307 {
				method = http.MethodGet // what Go does to a POST on 301, 302 and 303
			}
			req := &http.Request{Method: method, URL: to, Header: sent.Clone(), Response: &http.Response{StatusCode: tc.code}}
			via := make([]*http.Request, tc.hops)
			for i := range via {
				via[i] = &http.Request{Method: tc.method, URL: endpoint}
			}
			crossed, err := checkRedirect(endpoint, req, via)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.NotContains(t, err.Error(), "key=k", "the endpoint's query may hold a key")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.crossed, crossed)
			assert.Empty(t, req.Header.Get("Referer"), "no Referer")
			if !tc.crossed {
				for k := range sent {
					if k != "Referer" {
						assert.Equal(t, sent[k], req.Header[k], "%s kept within the origin", k)
					}
				}
				return
			}
			var left []string
			for k := range req.Header {
				left = append(left, k)
			}
			assert.ElementsMatch(t, kept, left, "only the framing and the body's mirrors go to another origin")
		})
	}
}

func TestCheckRedirectRefusesHTTPSDowngrade(t *testing.T) {
	endpoint, _ := url.Parse("https://example.com/mcp")
	to, _ := url.Parse("http://example.com/mcp")
	req := &http.Request{Method: http.MethodPost, URL: to, Header: http.Header{}, Response: &http.Response{StatusCode: 308}}
	_, err := checkRedirect(endpoint, req, []*http.Request{{Method: http.MethodPost, URL: endpoint}})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "in the clear"), err.Error())
}
