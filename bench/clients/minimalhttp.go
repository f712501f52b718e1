package clients

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/snodo/snodo/bench/internal/wire"
)

// minimalHTTP is the ceiling over Streamable HTTP: the least a correct
// client on net/http does for a JSON-answered call — one POST per
// request through a transport that keeps 64 idle connections per host,
// the body built in a pooled buffer, the era's headers (the modern
// standard headers, or the legacy session's), the answer read whole and
// its top-level members found without decoding (package wire). It takes
// JSON answers only (no SSE), no listen stream and no server requests:
// what the fast HTTP server sends to calls.
type minimalHTTP struct {
	url     string
	client  *http.Client
	meta    string // modern: `"_meta":{…}`; "" in the legacy era
	version string
	session string
	nextID  atomic.Int64
	bufs    sync.Pool
}

func connectMinimalHTTP(ctx context.Context, o Options) (Client, error) {
	if o.OnEvent != nil {
		return nil, errors.New("n/a: the minimal HTTP client opens no listen stream")
	}
	m := &minimalHTTP{url: o.URL, client: PeerHTTPClient()}
	if o.Era == Modern {
		m.version = ModernVersion
		m.meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + ModernVersion +
			`","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"},` +
			`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
		if _, err := m.send(ctx, "server/discover", "", []byte("{"+m.meta+"}"), false); err != nil {
			return nil, err
		}
		return m, nil
	}
	if _, err := m.send(ctx, "initialize", "", []byte(`{"protocolVersion":"`+LegacyVersion+
		`","capabilities":{"elicitation":{}},"clientInfo":{"name":"bench","version":"1.0.0"}}`), false); err != nil {
		return nil, err
	}
	m.version = LegacyVersion
	if _, err := m.send(ctx, "notifications/initialized", "", nil, false); err != nil {
		return nil, err
	}
	return m, nil
}

// Request posts method with params (a JSON object), the era's _meta
// spliced in, and returns the raw result.
func (m *minimalHTTP) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	name := ""
	if method == "tools/call" {
		if n := jsonString(params, "name"); n != "" {
			name = n
		}
	}
	return m.send(ctx, method, name, params, true)
}

// jsonString is the string member key of a small object (no escapes).
func jsonString(obj []byte, key string) string {
	i := bytes.Index(obj, []byte(`"`+key+`":"`))
	if i < 0 {
		return ""
	}
	rest := obj[i+len(key)+4:]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// send posts one message: a request with params (its _meta added when
// addMeta), or a notification when method starts with "notifications/".
func (m *minimalHTTP) send(ctx context.Context, method, name string, params []byte, addMeta bool) (json.RawMessage, error) {
	notification := len(method) > 14 && method[:14] == "notifications/"
	bp, _ := m.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	b := append((*bp)[:0], `{"jsonrpc":"2.0",`...)
	if !notification {
		b = append(b, `"id":`...)
		b = strconv.AppendInt(b, m.nextID.Add(1), 10)
		b = append(b, ',')
	}
	b = append(b, `"method":"`...)
	b = append(b, method...)
	b = append(b, '"')
	if params != nil {
		b = append(b, `,"params":`...)
		if addMeta && m.meta != "" && len(params) > 2 && params[len(params)-1] == '}' {
			b = append(b, params[:len(params)-1]...)
			b = append(b, ',')
			b = append(b, m.meta...)
			b = append(b, '}')
		} else {
			b = append(b, params...)
		}
	}
	b = append(b, '}')
	defer func() { *bp = b; m.bufs.Put(bp) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h["Content-Type"] = jsonType
	h["Accept"] = acceptBoth
	if m.version != "" {
		h["Mcp-Protocol-Version"] = []string{m.version}
	}
	if m.session != "" {
		h["Mcp-Session-Id"] = []string{m.session}
	}
	if m.meta != "" && !notification {
		h["Mcp-Method"] = []string{method}
		if name != "" {
			h["Mcp-Name"] = []string{name}
		}
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if notification {
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode/100 != 2 {
			return nil, fmt.Errorf("%s: HTTP %s", method, resp.Status)
		}
		return nil, nil
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %s: %s", method, resp.Status, body)
	}
	if method == "initialize" {
		m.session = resp.Header.Get("Mcp-Session-Id")
	}
	top := wire.Top(body)
	if top.Error != nil {
		return nil, fmt.Errorf("%s: server error %s", method, top.Error)
	}
	if top.Result == nil {
		return nil, fmt.Errorf("%s: no result in %s", method, body)
	}
	return top.Result, nil
}

var (
	jsonType   = []string{"application/json"}
	acceptBoth = []string{"application/json, text/event-stream"}
)

func (m *minimalHTTP) Call(ctx context.Context, tool string, args json.RawMessage) (string, error) {
	params := `{"name":` + strconv.Quote(tool)
	if args != nil {
		params += `,"arguments":` + string(args)
	}
	raw, err := m.send(ctx, "tools/call", tool, []byte(params+"}"), true)
	if err != nil {
		return "", err
	}
	var res toolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("tool %s failed", tool)
	}
	if len(res.Content) == 0 {
		return "", errors.New("result has no content")
	}
	return res.Content[0].Text, nil
}

func (m *minimalHTTP) Close() error {
	m.client.CloseIdleConnections()
	return nil
}
