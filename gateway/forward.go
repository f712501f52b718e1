package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/safetext"
)

// The forwarding core: one client request becomes one Session.Request
// with its params as the client sent them (less the progress token,
// which is mapped), and its answer goes back as it came: a result raw,
// an error with its code, message and data. Progress goes out on the
// call's own stream before the result, because OnProgress runs on the
// requesting goroutine before Request returns.

// call is one client request in flight through the gateway: where its
// messages go (its stream), and whom it belongs to, so that a server
// request or a log the backend sends while it runs can be given to the
// client that made it (relay.go).
type call struct {
	seq    uint64
	st     outlet
	sess   *session // nil for a modern client
	modern bool
	logs   bool // the client asked for logs (setLevel, or a logLevel in _meta)
}

// callTable holds the calls in flight, in start order.
type callTable struct {
	mu    sync.Mutex
	seq   atomic.Uint64
	calls []*call
}

func (t *callTable) add(c *call) {
	c.seq = t.seq.Add(1)
	t.mu.Lock()
	t.calls = append(t.calls, c)
	t.mu.Unlock()
}

// remove takes c out of the table once it has ended.
func (t *callTable) remove(c *call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, x := range t.calls {
		if x == c {
			t.calls = append(t.calls[:i], t.calls[i+1:]...)
			return
		}
	}
}

// latest is the most recently started call that match accepts.
func (t *callTable) latest(match func(*call) bool) *call {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.calls) - 1; i >= 0; i-- {
		if match(t.calls[i]) {
			return t.calls[i]
		}
	}
	return nil
}

// forward sends method with params to s for c and returns the raw result
// or the error, sending the client's progress updates on c's stream.
func (h *Handler) forward(ctx context.Context, s snodo.Session, c *call, method string, params []byte) (json.RawMessage, error) {
	h.calls.add(c)
	defer h.calls.remove(c)
	params, token := takeProgressToken(params)
	var p any
	if params != nil {
		p = json.RawMessage(params)
	}
	if token == nil {
		// No progress asked for: none requested of the server either (a
		// progress token costs the connection a _meta merge).
		return s.Request(ctx, method, p)
	}
	return s.Request(ctx, method, p, snodo.ResetTimeoutOnProgress(), snodo.OnProgress(func(p snodo.Progress) {
		c.st.event(progressLine(token, p))
	}))
}

// progressLine is the notifications/progress for the client's token.
func progressLine(token []byte, p snodo.Progress) []byte {
	b := []byte(`{"progressToken":`)
	b = append(b, token...)
	b = append(b, `,"progress":`...)
	b = strconv.AppendFloat(b, p.Progress, 'g', -1, 64)
	if p.Total != 0 {
		b = append(b, `,"total":`...)
		b = strconv.AppendFloat(b, p.Total, 'g', -1, 64)
	}
	if p.Message != "" {
		b = append(b, `,"message":`...)
		b = jsonrpc.AppendString(b, p.Message)
	}
	b = append(b, '}')
	return jsonrpc.AppendNotification(nil, "notifications/progress", b)
}

// takeProgressToken removes params._meta.progressToken and returns it
// (raw JSON), so that the backend's progress comes to the gateway's own
// token and goes back to the client under the client's.
func takeProgressToken(params []byte) ([]byte, []byte) {
	if !bytes.Contains(params, []byte(`"progressToken"`)) {
		return params, nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) != nil {
		return params, nil
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(obj["_meta"], &meta) != nil {
		return params, nil
	}
	token, ok := meta["progressToken"]
	if !ok {
		return params, nil
	}
	delete(meta, "progressToken")
	if len(meta) == 0 {
		delete(obj, "_meta")
	} else {
		obj["_meta"], _ = json.Marshal(meta)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return params, nil
	}
	return out, token
}

// addMeta returns params with members added to _meta where the client
// did not set them.
func addMeta(params []byte, members map[string]json.RawMessage) []byte {
	out, err := jsonrpc.MergeMeta(params, members)
	if err != nil {
		return params
	}
	return out
}

// errorOf is the JSON-RPC error object err goes back to the client as: a
// server's error as it came; a local one with its code and a message that
// says it came from the gateway; anything else -32603.
func errorOf(err error) *jsonrpc.Error {
	var e *jsonrpc.Error
	if errors.As(err, &e) {
		if !e.Local() {
			return e
		}
		return &jsonrpc.Error{Code: e.Code, Message: "gateway: " + safetext.Visible(e.Message)}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &jsonrpc.Error{Code: jsonrpc.CodeConnectionClosed, Message: "gateway: request cancelled"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "gateway: " + safetext.Visible(err.Error())}
}

func quoteSafe(s string) string { return strconv.Quote(safetext.Visible(s)) }
