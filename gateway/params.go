package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/supervisor"
)

// Mcp-Param-* headers: a tool's inputSchema may name arguments
// (x-mcp-header) that the client mirrors into headers; a server must
// check each against the body. The gateway reads the annotations from the
// backend's tool list (through the list cache).

// paramSpec is one annotated argument: its header name and the chain of
// properties keys leading to it.
type paramSpec struct {
	header string
	path   []string
}

// specsOf collects the x-mcp-header annotations of a schema, following
// properties keys only.
func specsOf(schema json.RawMessage, path []string, out []paramSpec) []paramSpec {
	var s struct {
		Header     *string                    `json:"x-mcp-header"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return out
	}
	if s.Header != nil && len(path) > 0 {
		out = append(out, paramSpec{header: *s.Header, path: append([]string(nil), path...)})
	}
	for k, v := range s.Properties {
		out = specsOf(v, append(path, k), out)
	}
	return out
}

// checkParamHeaders compares every annotated argument of the called tool
// with its Mcp-Param header.
func (h *Handler) checkParamHeaders(r *http.Request, params []byte) string {
	name := jsonrpc.Unquote(mustMember(params, "name"))
	args := mustMember(params, "arguments")
	specs := h.toolParamSpecs(r.Context(), name)
	for _, sp := range specs {
		val := args
		for _, k := range sp.path {
			val = mustMember(val, k)
		}
		hv, present := r.Header[http.CanonicalHeaderKey(hdrParamPrefix+sp.header)]
		absent := len(val) == 0 || bytes.Equal(val, []byte("null"))
		if absent {
			continue
		}
		if !present || len(hv) == 0 {
			return "Header mismatch: the " + hdrParamPrefix + sp.header + " header is missing for an argument the body carries"
		}
		got, ok := decodeHeaderValue(strings.TrimSpace(hv[0]))
		if !ok {
			return "Header mismatch: the " + hdrParamPrefix + sp.header + " header is not valid Base64"
		}
		if !sameValue(got, val) {
			return "Header mismatch: the " + hdrParamPrefix + sp.header + " header does not match the body's value"
		}
	}
	return ""
}

// sameValue compares a header's text with a JSON primitive: strings as
// they are, numbers numerically, booleans as true/false.
func sameValue(header string, val []byte) bool {
	switch {
	case val[0] == '"':
		return header == jsonrpc.Unquote(val)
	case bytes.Equal(val, []byte("true")) || bytes.Equal(val, []byte("false")):
		return header == string(val)
	default:
		a, ok1 := new(big.Float).SetString(header)
		b, ok2 := new(big.Float).SetString(string(val))
		return ok1 && ok2 && a.Cmp(b) == 0
	}
}

// toolParamSpecs are the x-mcp-header annotations of the tool name, from
// the backend's tool list (cached); none when it cannot be read.
func (h *Handler) toolParamSpecs(ctx context.Context, name string) []paramSpec {
	s := h.session()
	if s == nil {
		return nil
	}
	if cache := h.listCache(); cache != nil {
		if specs, ok := cache.specs(name); ok {
			return specs
		}
		gen := cache.generation("tools/list")
		specs := h.readParamSpecs(ctx, s, name)
		cache.keepSpecs(name, specs, gen)
		return specs
	}
	return h.readParamSpecs(ctx, s, name)
}

// readParamSpecs reads name's annotations from the tool list's pages.
func (h *Handler) readParamSpecs(ctx context.Context, s snodo.Session, name string) []paramSpec {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var cursor []byte
	for range 100 {
		params := []byte("{}")
		if cursor != nil {
			params = append(append([]byte(`{"cursor":`), cursor...), '}')
		}
		fetch := func(ctx context.Context) (json.RawMessage, error) {
			return s.Request(ctx, "tools/list", json.RawMessage(params))
		}
		var raw json.RawMessage
		var err error
		if cache := h.listCache(); cache != nil {
			raw, err = cache.list(ctx, "tools/list", params, fetch)
		} else {
			raw, err = fetch(ctx)
		}
		if err != nil {
			return nil
		}
		var page struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
			NextCursor json.RawMessage `json:"nextCursor"`
		}
		if json.Unmarshal(raw, &page) != nil {
			return nil
		}
		for _, t := range page.Tools {
			if t.Name == name {
				return specsOf(t.InputSchema, nil, nil)
			}
		}
		if len(page.NextCursor) == 0 || bytes.Equal(page.NextCursor, []byte("null")) {
			return nil
		}
		cursor = page.NextCursor
	}
	return nil
}

func base64Std(s string) ([]byte, error) { return base64.StdEncoding.Strict().DecodeString(s) }

func newTicker(d time.Duration) *time.Ticker { return time.NewTicker(d) }

func isResubscribed(method string) bool { return method == supervisor.ResubscribedMethod }

// resubscribedMethod is the supervisor's marker event for a renewed
// subscription; the gateway also uses it for one it reopened itself.
const resubscribedMethod = supervisor.ResubscribedMethod
