package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

type resourceKey struct{}

// withResource tells the authorization server transport which resource
// the token requests made with ctx are for.
func withResource(ctx context.Context, resource string) context.Context {
	return context.WithValue(ctx, resourceKey{}, resource)
}

// asTransport carries the requests to authorization servers. On every
// token request (a form POST with a grant_type) it makes sure the
// resource is named (RFC 8707: x/oauth2's refresh cannot add it) and,
// with DPoP, adds a proof and answers a use_dpop_nonce challenge once
// with the server's nonce (RFC 9449 section 8).
type asTransport struct {
	t    *Transport
	base http.RoundTripper
}

func (a *asTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := a.base
	if base == nil {
		base = http.DefaultTransport
	}
	if req.Method != http.MethodPost || !strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") || req.Body == nil {
		return base.RoundTrip(req)
	}
	raw, err := io.ReadAll(io.LimitReader(req.Body, maxMetadataBytes+1))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(raw))
	if err != nil || form.Get("grant_type") == "" {
		return a.send(base, req, raw, "")
	}
	if r, _ := req.Context().Value(resourceKey{}).(string); r != "" && form.Get("resource") == "" {
		form.Set("resource", r)
		raw = []byte(form.Encode())
	}
	if a.t.dpop == nil {
		return a.send(base, req, raw, "")
	}
	nonce := ""
	for attempt := 0; ; attempt++ {
		proof, err := a.t.dpop.proof(http.MethodPost, req.URL, nonce, "")
		if err != nil {
			return nil, err
		}
		resp, err := a.send(base, req, raw, proof)
		if err != nil || resp.StatusCode != http.StatusBadRequest || attempt > 0 || resp.Header.Get("DPoP-Nonce") == "" {
			return resp, err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the token endpoint's answer: %w", err)
		}
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) != nil || e.Error != "use_dpop_nonce" {
			resp.Body = io.NopCloser(bytes.NewReader(body))
			return resp, nil
		}
		nonce = resp.Header.Get("DPoP-Nonce")
	}
}

// send posts raw as req's body, with a DPoP proof when one is given.
func (a *asTransport) send(base http.RoundTripper, req *http.Request, raw []byte, proof string) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(raw))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
	r.ContentLength = int64(len(raw))
	if proof != "" {
		r.Header.Set("DPoP", proof)
	}
	return base.RoundTrip(r)
}

// CloseIdleConnections closes the idle connections of the base
// transport.
func (a *asTransport) CloseIdleConnections() {
	if c, ok := a.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
