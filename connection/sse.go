package connection

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/snodo/snodo/internal/framer"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/sentinel"
)

// Bounds on what a server's SSE stream may make the client do.
const (
	// httpMinRetry is the floor under a server's retry field and under
	// every back-off: a server cannot make the client reconnect more
	// often than four times a second, whatever it sends.
	httpMinRetry = 250 * time.Millisecond
	// httpMaxRetry is the ceiling of a retry field and of the back-off.
	httpMaxRetry = 30 * time.Second
	// httpMaxEventID bounds an SSE event id kept for Last-Event-ID; a
	// longer one is ignored.
	httpMaxEventID = 1024
)

// errTooLarge: an SSE event went past MaxLineBytes.
var errTooLarge = errors.New("message too large")

// endpointEvent is why readSSE stopped at an SSE event of type
// "endpoint": the stream is an old HTTP+SSE server's (the 2024-11-05
// transport), which snodo does not speak; data is the event's data, the
// URL that server wants messages posted to.
type endpointEvent struct{ data string }

func (e *endpointEvent) Error() string { return "an SSE endpoint event" }

// sseRetry reads an SSE retry field: ASCII digits, a wait in
// milliseconds, clamped to [httpMinRetry, httpMaxRetry]; a value too
// large for any integer is the ceiling, never a wrapped number. false:
// not a retry value (the field is ignored, as the SSE standard says).
func sseRetry(value []byte) (time.Duration, bool) {
	if len(value) == 0 {
		return 0, false
	}
	ms := int64(0)
	for _, c := range value {
		if c < '0' || c > '9' {
			return 0, false
		}
		if ms <= httpMaxRetry.Milliseconds() {
			ms = ms*10 + int64(c-'0')
		}
	}
	return clampRetry(time.Duration(ms) * time.Millisecond), true
}

// clampRetry bounds a wait to [httpMinRetry, httpMaxRetry].
func clampRetry(d time.Duration) time.Duration {
	return min(max(d, httpMinRetry), httpMaxRetry)
}

// backoff is the wait before reconnecting when the failures attempts in
// a row before it brought nothing (no event, an error, a 5xx): the
// server's retry (clamped) doubled for each, at most httpMaxRetry. It
// grows from the floor, so a retry of 0 still backs off: 250 ms,
// 500 ms, 1 s, …
func backoff(retry time.Duration, failures int) time.Duration {
	d := clampRetry(retry)
	for i := 0; i < failures && d < httpMaxRetry; i++ {
		d *= 2
	}
	return min(d, httpMaxRetry)
}

// sseEvent is one event of an SSE stream.
type sseEvent struct {
	name     string // the event field; "" is "message"
	data     []byte // the data lines joined by "\n" (reused by the next event)
	hasData  bool   // it had a data field (its data may still be empty)
	overlong bool   // a line or the data went past the limit: data is incomplete
}

// sseReader reads the events of an SSE stream, the one parser of both
// HTTP transports: a Streamable HTTP response or GET stream (readSSE) and
// the stream of an old HTTP+SSE server (ssetransport.go). Lines end with
// CRLF, LF or a lone CR, as the SSE standard has it; comments are
// skipped. It keeps the last event ID that may go back in a
// Last-Event-ID header and the server's retry (clamped: sseRetry).
type sseReader struct {
	fr   *framer.Framer
	max  int    // bound on an event's data
	rest []byte // what followed a lone CR in the framer's line
	ev   sseEvent

	// stop, when set, ends the stream as soon as a line or an event's
	// data passes max (next returns it), without reading the rest;
	// otherwise the event is returned marked overlong, its data dropped.
	stop error
	// owned: each event's data is a buffer of its own, which the caller
	// keeps (the old transport hands it to Peer.Receive, which owns what
	// it is given); otherwise it is reused by the next event.
	owned bool

	lastID string
	retry  time.Duration
}

// newSSEReader reads body's events, each bounded to max bytes of data;
// stop: see sseReader.stop.
func newSSEReader(body io.Reader, max int, stop error) *sseReader {
	r := &sseReader{stop: stop}
	r.fr = framer.New(body, 0, func(int) { r.ev.overlong = true })
	r.fr.Stop = stop
	r.setMax(max)
	return r
}

// setMax bounds the data of the events after the next one to max bytes.
func (r *sseReader) setMax(max int) {
	r.max, r.fr.Max = max, max+len("data: ")
}

// next returns the next event that has data or a name; its data is
// valid until the following call unless r.owned. It returns io.EOF (or the read error,
// or stop) at the end of the stream.
func (r *sseReader) next() (sseEvent, error) {
	if r.owned {
		r.ev = sseEvent{}
	} else {
		r.ev = sseEvent{data: r.ev.data[:0]}
	}
	seen := false
	for {
		line := r.rest
		if line == nil {
			var err error
			if line, err = r.fr.Next(); err != nil {
				return r.ev, err
			}
		}
		// A lone CR ends a line too: the framer split on LF (and CRLF)
		// only.
		r.rest = nil
		if i := bytes.IndexByte(line, '\r'); i >= 0 {
			line, r.rest = line[:i], line[i+1:]
		}
		if len(line) == 0 { // the end of an event
			if seen {
				return r.ev, nil
			}
			continue
		}
		if line[0] == ':' {
			continue // a comment: a keep-alive
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			r.ev.name, seen = string(value), true
		case "data":
			seen = true
			if r.ev.overlong {
				continue
			}
			if r.ev.hasData {
				r.ev.data = append(r.ev.data, '\n')
			}
			if len(r.ev.data)+len(value) > r.max {
				if r.stop != nil {
					return r.ev, r.stop
				}
				r.ev.overlong, r.ev.data = true, r.ev.data[:0]
				continue
			}
			r.ev.data, r.ev.hasData = append(r.ev.data, value...), true
		case "id":
			// An id that cannot go back in a Last-Event-ID header (a
			// control character, too long) is ignored.
			if len(value) <= httpMaxEventID && visibleHeaderValue(value) {
				r.lastID = string(value)
			}
		case "retry":
			if d, ok := sseRetry(value); ok {
				r.retry = d
			}
		}
	}
}

// readSSE reads a Streamable HTTP stream, calling deliver with the data
// of each message event, keeping the last event ID and the server's
// retry. It returns the number of events with data and why reading
// stopped (nil at the end of the stream). A line or an event's data past
// p.max ends it with errTooLarge as soon as it passes, without reading
// the rest; an event of type "endpoint" ends it with an *endpointEvent.
func (p *httpPeer) readSSE(body io.Reader, deliver func([]byte), lastID *string, retry *time.Duration) (int, error) {
	r := newSSEReader(body, p.max, errTooLarge)
	r.lastID, r.retry = *lastID, *retry
	defer func() { *lastID, *retry = r.lastID, r.retry }()
	events := 0
	for {
		ev, err := r.next()
		switch {
		case err == io.EOF:
			return events, nil
		case err != nil:
			return events, err
		case ev.name == "endpoint":
			return events, &endpointEvent{data: string(ev.data)}
		case ev.hasData && len(bytes.TrimSpace(ev.data)) > 0:
			events++
			deliver(ev.data)
		}
	}
}

// visibleHeaderValue reports whether v may be sent as a header value as
// it is: no control characters (tab and space allowed), no DEL.
func visibleHeaderValue(v []byte) bool {
	for _, c := range v {
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// isEndpointEvent reports whether readSSE stopped at an endpoint event.
func isEndpointEvent(err error) bool {
	var e *endpointEvent
	return errors.As(err, &e)
}

// oldSSEError is a request's error when its POST was answered with an
// old HTTP+SSE server's event stream (err holds the *endpointEvent).
func oldSSEError(method, url string, err error) error {
	var e *endpointEvent
	errors.As(err, &e)
	return httpError(jsonrpc.CodeInternalError, fmt.Sprintf("%s: %s is the event stream of an old HTTP+SSE server (the 2024-11-05 transport: it sent an endpoint event naming %s), not a Streamable HTTP endpoint; %s",
		method, safeURL(url), sampleString(e.data), suggestEndpoint(url)), sentinel.ErrNotJSONRPC)
}
