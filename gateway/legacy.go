package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/pin"
	"github.com/snodo/snodo/remote"
)

// Legacy sessions (protocol versions up to 2025-11-25): a client
// initializes, gets an Mcp-Session-Id, and keeps it on every request; the
// session stays on the member it was pinned to and ends (404) when that
// member's server restarts or leaves, when the client DELETEs it, or
// after it idled past the timeout.

// session is one legacy client's session.
type session struct {
	h       *Handler
	id      string
	backend snodo.Session
	cache   *ListCache // of the side the session is on; nil without
	alive   func() bool
	pin     *pin.Pin  // a remote name's: the session's calls go to one server (nil for others)
	whole   bool      // a stdio session: on the attached session as a whole
	era     snodo.Era // the backend's
	version string    // negotiated with the client
	caps    json.RawMessage
	info    json.RawMessage

	ctx    context.Context // ends with the session
	cancel context.CancelFunc

	mu       sync.Mutex
	level    string
	last     time.Time
	get      outlet // the open GET stream, if any (over stdio: stdout, always)
	streams  int    // open streams (GET and POST) keeping it from idling out
	queue    [][]byte
	subs     map[string]*snodo.Subscription // resources/subscribe, by URI
	pending  map[string]chan answer         // server requests sent to the client, by id
	inflight map[string]context.CancelFunc  // the client's requests, by raw id
	nextID   int64
}

// answer is a client's response to a server request.
type answer struct {
	result json.RawMessage
	err    *jsonrpc.Error
}

type sessionTable struct {
	h  *Handler
	mu sync.Mutex
	m  map[string]*session
}

func newSessionTable(h *Handler) *sessionTable {
	t := &sessionTable{h: h, m: map[string]*session{}}
	go t.reap()
	return t
}

// reap ends sessions idle past the timeout, checking at a tenth of it.
func (t *sessionTable) reap() {
	tick := time.NewTicker(max(t.h.cfg.idle/10, 50*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-t.h.ctx.Done():
			return
		case <-tick.C:
			t.expire()
		}
	}
}

// expire ends the sessions idle past the timeout or whose member died.
func (t *sessionTable) expire() {
	now := time.Now()
	for _, s := range t.all() {
		s.mu.Lock()
		idle := s.streams == 0 && now.Sub(s.last) > t.h.cfg.idle
		s.mu.Unlock()
		if idle || !s.alive() {
			t.remove(s)
		}
	}
}

func (t *sessionTable) all() []*session {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*session, 0, len(t.m))
	for _, s := range t.m {
		out = append(out, s)
	}
	return out
}

func (t *sessionTable) lookup(id string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}

// add registers s, or reports false when the table is full.
func (t *sessionTable) add(s *session) bool {
	t.mu.Lock()
	full := len(t.m) >= t.h.cfg.maxSessions
	t.mu.Unlock()
	if full {
		t.expire()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) >= t.h.cfg.maxSessions {
		return false
	}
	t.m[s.id] = s
	return true
}

func (t *sessionTable) remove(s *session) {
	t.mu.Lock()
	delete(t.m, s.id)
	t.mu.Unlock()
	s.close()
}

func (t *sessionTable) closeAll() {
	for _, s := range t.all() {
		t.remove(s)
	}
}

// Len is the number of legacy sessions alive.
func (t *sessionTable) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// initialize starts a legacy session: pinned to a member, answered with
// that member's server's own description.
func (h *Handler) initialize(w http.ResponseWriter, r *http.Request, env jsonrpc.Envelope) {
	s, result, status, e := h.openSession(r.Context(), env, false)
	if e != nil {
		if status == http.StatusServiceUnavailable && e.Code == jsonrpc.CodeInternalError {
			w.Header().Set("Retry-After", "5")
		}
		writeJSON(w, status, jsonrpc.AppendError(nil, env.ID, e))
		return
	}
	w.Header().Set(hdrSessionID, s.id)
	writeJSON(w, http.StatusOK, jsonrpc.AppendResult(nil, env.ID, result))
}

// openSession starts a legacy session for an initialize request and
// returns it with the initialize result, or the HTTP status and error the
// request is answered with. A session over HTTP is pinned to a pool
// member and ends with it (the client initializes again); one over stdio
// (whole) is on the session itself, since its client cannot initialize
// again, and lives as long as its connection.
func (h *Handler) openSession(ctx context.Context, env jsonrpc.Envelope, whole bool) (*session, json.RawMessage, int, *jsonrpc.Error) {
	var p struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}
	if err := json.Unmarshal(env.Params, &p); err != nil {
		return nil, nil, http.StatusBadRequest, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: initialize needs protocolVersion, capabilities and clientInfo"}
	}
	version := legacyVersions[0]
	if isLegacyVersion(p.ProtocolVersion) {
		version = p.ProtocolVersion
	}
	sd, lerr := h.legacyFor(ctx)
	if lerr != nil {
		return nil, nil, http.StatusServiceUnavailable, errorOf(lerr)
	}
	m := member{s: sd.s, alive: func() bool { return true }}
	if !whole {
		m = sd.info.pin()
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	desc, err := describe(dctx, m.s)
	if err == nil {
		// The session's list changes come from followLists: a change
		// right after initialize must find its subscription open.
		select {
		case <-sd.following:
		case <-dctx.Done():
		}
	}
	cancel()
	if err != nil {
		return nil, nil, http.StatusServiceUnavailable, errorOf(err)
	}
	sctx, scancel := context.WithCancel(h.ctx)
	s := &session{
		h: h, id: newSessionID(), backend: m.s, cache: sd.cache, alive: m.alive, whole: whole, era: desc.era, version: version,
		caps: p.Capabilities, info: p.ClientInfo, ctx: sctx, cancel: scancel, last: time.Now(),
		subs: map[string]*snodo.Subscription{}, pending: map[string]chan answer{}, inflight: map[string]context.CancelFunc{},
	}
	if _, ok := m.s.(*remote.Client); ok {
		s.pin = pin.New()
	}
	if !h.sessions.add(s) {
		scancel()
		return nil, nil, http.StatusServiceUnavailable, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "gateway: too many sessions; retry later"}
	}
	caps := desc.capabilities
	if _, remote := m.s.(*remote.Client); !remote {
		// Tasks are the backend's own: a task's later calls must reach the
		// server that holds it, which only a remote client routes.
		caps.Tasks = nil
	}
	result, _ := json.Marshal(map[string]any{
		"protocolVersion": version,
		"capabilities":    caps,
		"serverInfo":      desc.info,
		"instructions":    desc.instructions,
	})
	return s, result, http.StatusOK, nil
}

// legacyPost serves a message of a legacy session.
func (h *Handler) legacyPost(w http.ResponseWriter, r *http.Request, env jsonrpc.Envelope, sid string) {
	s := h.sessions.lookup(sid)
	if s != nil && !s.alive() {
		h.sessions.remove(s)
		s = nil
	}
	if s == nil {
		writeJSONError(w, http.StatusNotFound, env.ID, jsonrpc.CodeInvalidRequest, "gateway: unknown or ended session; initialize again", nil)
		return
	}
	s.touch(1)
	defer s.touch(-1)
	switch env.Kind {
	case jsonrpc.KindResponse:
		s.answered(env)
		w.WriteHeader(http.StatusAccepted)
		return
	case jsonrpc.KindNotification:
		s.notification(env)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	st := newStream(w, func(hd http.Header) { hd.Set(hdrSessionID, s.id) })
	defer st.end()
	s.serve(r.Context(), st, env)
}

// serve serves one request of the session, whatever the transport: its
// messages and its answer go out on st, and the client may cancel it
// (notifications/cancelled) while it runs.
func (s *session) serve(ctx context.Context, st outlet, env jsonrpc.Envelope) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := string(env.ID)
	s.mu.Lock()
	s.inflight[key] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.inflight, key)
		s.mu.Unlock()
	}()
	raw, err := s.pinnedRequest(ctx, st, env)
	if err != nil {
		if s.pin != nil && !s.whole && errors.Is(err, pin.ErrLost) {
			// The server the session was pinned to is gone, and its state
			// with it: the session ends (404), and its client initializes
			// again, landing on a live server.
			s.h.sessions.remove(s)
			st.final(http.StatusNotFound, jsonrpc.AppendError(nil, env.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: "gateway: the session ended: " + strings.TrimPrefix(errorOf(err).Message, "gateway: ") + "; initialize again"}))
			return
		}
		st.final(http.StatusOK, jsonrpc.AppendError(nil, env.ID, errorOf(err)))
		return
	}
	st.final(http.StatusOK, jsonrpc.AppendResult(nil, env.ID, raw))
}

// pinnedRequest serves one request of the session, with the session's
// pin when it has one (a remote name): every call of the session then
// goes to one server (internal/pin). A stdio session whose server is
// gone cannot initialize again: it starts afresh on a live server, the
// call (which did not run) sent again once.
func (s *session) pinnedRequest(ctx context.Context, st outlet, env jsonrpc.Envelope) (json.RawMessage, error) {
	if s.pin == nil {
		return s.request(ctx, st, env.MethodName(), env.Params)
	}
	pctx := s.pinned(ctx)
	raw, err := s.request(pctx, st, env.MethodName(), env.Params)
	if err != nil && s.whole && errors.Is(err, pin.ErrLost) && ctx.Err() == nil {
		s.h.cfg.logger.Info("gateway: the stdio session's server is gone; its calls go to a live one from now on", "error", errorOf(err).Message)
		s.pin.Repin()
		raw, err = s.request(pctx, st, env.MethodName(), env.Params)
	}
	return raw, err
}

// pinned is ctx with the session's pin, if it has one.
func (s *session) pinned(ctx context.Context) context.Context {
	if s.pin == nil {
		return ctx
	}
	return pin.With(ctx, s.pin)
}

// touch counts a request or stream opening (+1) or closing (-1).
func (s *session) touch(d int) {
	s.mu.Lock()
	s.streams += d
	s.last = time.Now()
	s.mu.Unlock()
}

// request serves one request of the session.
func (s *session) request(ctx context.Context, st outlet, method string, params []byte) (json.RawMessage, error) {
	switch method {
	case "ping":
		return json.RawMessage(`{}`), nil
	case "initialize":
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the session is already initialized"}
	case "logging/setLevel":
		var p struct {
			Level string `json:"level"`
		}
		if err := json.Unmarshal(params, &p); err != nil || p.Level == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: logging/setLevel needs a level"}
		}
		if s.era != snodo.EraModern {
			if _, err := s.h.forward(ctx, s.backend, &call{st: st, sess: s}, method, params); err != nil {
				return nil, err
			}
		}
		s.mu.Lock()
		s.level = p.Level
		s.mu.Unlock()
		return json.RawMessage(`{}`), nil
	case "resources/subscribe", "resources/unsubscribe":
		var p struct {
			URI string `json:"uri"`
		}
		if err := json.Unmarshal(params, &p); err != nil || p.URI == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + method + " needs a uri"}
		}
		if method == "resources/unsubscribe" {
			s.unsubscribe(p.URI)
			return json.RawMessage(`{}`), nil
		}
		if err := s.subscribe(ctx, p.URI); err != nil {
			return nil, err
		}
		return json.RawMessage(`{}`), nil
	}
	c := &call{st: st, sess: s}
	s.mu.Lock()
	c.logs = s.level != ""
	level := s.level
	s.mu.Unlock()
	if s.era == snodo.EraModern {
		members := map[string]json.RawMessage{}
		if len(s.caps) > 0 {
			members[metaClientCapabilities] = s.caps
		}
		if len(s.info) > 0 {
			members[metaClientInfo] = s.info
		}
		if level != "" {
			members[metaLogLevel] = jsonrpc.AppendString(nil, level)
		}
		if len(params) == 0 {
			params = []byte("{}")
		}
		params = addMeta(params, members)
	}
	if s.cache != nil && isListMethod(method) {
		return s.cache.list(ctx, method, params, func(ctx context.Context) (json.RawMessage, error) {
			return s.h.forward(ctx, s.backend, c, method, params)
		})
	}
	return s.h.rounds(ctx, s, c, method, params)
}

// notification takes a notification the client sent.
func (s *session) notification(env jsonrpc.Envelope) {
	switch env.MethodName() {
	case "notifications/cancelled":
		id, _ := jsonrpc.Member(env.Params, "requestId")
		s.mu.Lock()
		cancel := s.inflight[string(id)]
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	case "notifications/initialized":
	default:
		if s.era != snodo.EraModern {
			ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
			defer cancel()
			var p any
			if env.Params != nil {
				p = json.RawMessage(env.Params)
			}
			_ = s.backend.Notify(ctx, env.MethodName(), p)
		}
	}
}

// answered takes the client's response to a server request.
func (s *session) answered(env jsonrpc.Envelope) {
	s.mu.Lock()
	ch := s.pending[string(env.ID)]
	delete(s.pending, string(env.ID))
	s.mu.Unlock()
	if ch == nil {
		return
	}
	a := answer{result: append(json.RawMessage(nil), env.Result...)}
	if env.Error != nil {
		a.err = &jsonrpc.Error{}
		if json.Unmarshal(env.Error, a.err) != nil {
			a.err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the client answered a malformed error"}
		}
	}
	ch <- a
}

// ask sends a server request to the client, on st (the stream of the
// call it belongs to) or, without one, on the session's GET stream, and
// waits for the client's answer while ctx lasts; when ctx ends first the
// client is told with notifications/cancelled.
func (s *session) ask(ctx context.Context, st outlet, method string, params json.RawMessage) (json.RawMessage, error) {
	s.mu.Lock()
	s.nextID++
	id := []byte(strconv.Quote("gw-" + strconv.FormatInt(s.nextID, 10)))
	ch := make(chan answer, 1)
	s.pending[string(id)] = ch
	s.mu.Unlock()
	line := appendRequestRawID(nil, id, method, params)
	sent := false
	if st != nil {
		sent = st.event(line)
	}
	if !sent {
		s.deliver(line)
	}
	select {
	case a := <-ch:
		if a.err != nil {
			return nil, a.err
		}
		return a.result, nil
	case <-ctx.Done():
	case <-s.ctx.Done():
	}
	s.mu.Lock()
	delete(s.pending, string(id))
	s.mu.Unlock()
	cancelled := jsonrpc.AppendNotification(nil, "notifications/cancelled", append(append([]byte(`{"requestId":`), id...), '}'))
	if st == nil || !st.event(cancelled) {
		s.deliver(cancelled)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, jsonrpc.ClosedError(context.Canceled)
}

// appendRequestRawID is a request line with a raw (string) id.
func appendRequestRawID(buf, id []byte, method string, params []byte) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"method":`...)
	buf = jsonrpc.AppendString(buf, method)
	if len(params) > 0 {
		buf = append(buf, `,"params":`...)
		buf = append(buf, params...)
	}
	return append(buf, "}\n"...)
}

// deliver sends a message on the session's GET stream, or queues it
// (at most 256; the oldest dropped) until one opens.
func (s *session) deliver(line []byte) {
	s.mu.Lock()
	st := s.get
	s.mu.Unlock()
	if st != nil && st.event(line) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) >= maxQueued {
		s.queue = s.queue[1:]
	}
	s.queue = append(s.queue, line)
}

// subscribe follows uri for the session: a subscription on its member,
// renewed by the supervisor after a restart, whose updates go out on the
// GET stream.
func (s *session) subscribe(ctx context.Context, uri string) error {
	s.mu.Lock()
	_, dup := s.subs[uri]
	s.mu.Unlock()
	if dup {
		return nil
	}
	sub, err := s.backend.Listen(s.pinned(s.ctx), snodo.Filter{ResourceSubscriptions: []string{uri}})
	if err != nil {
		return err
	}
	s.mu.Lock()
	if _, dup := s.subs[uri]; dup || s.ctx.Err() != nil {
		s.mu.Unlock()
		sub.Close()
		return nil
	}
	s.subs[uri] = sub
	s.mu.Unlock()
	go s.followResource(uri, sub)
	return nil
}

func (s *session) unsubscribe(uri string) {
	s.mu.Lock()
	sub := s.subs[uri]
	delete(s.subs, uri)
	s.mu.Unlock()
	if sub != nil {
		sub.Close()
	}
}

// close ends the session: its subscriptions, its streams, its requests.
func (s *session) close() {
	s.cancel()
	s.mu.Lock()
	subs := s.subs
	s.subs = map[string]*snodo.Subscription{}
	// Copied under the lock: a request that ends meanwhile deletes its
	// entry from the map.
	inflight := make([]context.CancelFunc, 0, len(s.inflight))
	for _, c := range s.inflight {
		inflight = append(inflight, c)
	}
	s.mu.Unlock()
	for _, sub := range subs {
		sub.Close()
	}
	for _, c := range inflight {
		c()
	}
}

// get serves a legacy session's GET stream: messages not tied to a call
// (list changes, resource updates, logs, server requests without a call)
// until the client closes it or the session ends. One at a time: a
// second GET replaces the first.
func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get(hdrSessionID)
	if sid == "" {
		// The modern era has no GET stream; a legacy client needs its session.
		w.Header().Set("Allow", "POST")
		writeJSONError(w, http.StatusMethodNotAllowed, nil, jsonrpc.CodeInvalidRequest, "gateway: GET needs an Mcp-Session-Id", nil)
		return
	}
	s := h.sessions.lookup(sid)
	if s == nil || !s.alive() {
		writeJSONError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, "gateway: unknown or ended session; initialize again", nil)
		return
	}
	s.touch(1)
	defer s.touch(-1)
	st := newStream(w, func(hd http.Header) { hd.Set(hdrSessionID, s.id) })
	st.open()
	defer st.end()
	s.mu.Lock()
	s.get = st
	queued := s.queue
	s.queue = nil
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.get == st {
			s.get = nil
		}
		s.mu.Unlock()
	}()
	for _, line := range queued {
		if !st.event(line) {
			return
		}
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		case <-tick.C:
			if !st.comment() || !s.alive() {
				return
			}
		}
	}
}

// delete ends a legacy session at its client's request.
func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	s := h.sessions.lookup(r.Header.Get(hdrSessionID))
	if s == nil {
		writeJSONError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, "gateway: unknown or ended session", nil)
		return
	}
	h.sessions.remove(s)
	w.WriteHeader(http.StatusOK)
}
