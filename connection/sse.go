package connection

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/snodo/snodo/internal/jsonrpc"
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

// readSSE reads an SSE stream, calling deliver with the data of each
// event (messages), keeping the last event ID and the server's retry
// (clamped: sseRetry). It returns the number of events with data and why
// reading stopped (nil at the end of the stream). A line or an event's
// data past p.max ends it with errTooLarge as soon as it passes, without
// reading the rest; an event of type "endpoint" ends it with an
// *endpointEvent. Lines end with CRLF, LF or a lone CR, as the SSE
// standard has it.
func (p *httpPeer) readSSE(body io.Reader, deliver func([]byte), lastID *string, retry *time.Duration) (int, error) {
	fr := newFramer(body, p.max+len("data: "), func(int) {})
	fr.stop = errTooLarge
	var data []byte
	event := ""
	has, events := false, 0
	for {
		line, err := fr.next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return events, err
		}
		for more := true; more; {
			// A lone CR ends a line too: the framer split on LF (and
			// CRLF) only.
			part := line
			if i := bytes.IndexByte(line, '\r'); i >= 0 {
				part, line = line[:i], line[i+1:]
			} else {
				more = false
			}
			if len(part) == 0 { // the end of an event
				if event == "endpoint" {
					return events, &endpointEvent{data: string(data)}
				}
				if has && len(bytes.TrimSpace(data)) > 0 {
					events++
					deliver(data)
				}
				data, has, event = data[:0], false, ""
				continue
			}
			if part[0] == ':' {
				continue // a comment: a keep-alive
			}
			field, value := part, []byte(nil)
			if i := bytes.IndexByte(part, ':'); i >= 0 {
				field, value = part[:i], part[i+1:]
				if len(value) > 0 && value[0] == ' ' {
					value = value[1:]
				}
			}
			switch string(field) {
			case "data":
				if has {
					data = append(data, '\n')
				}
				data, has = append(data, value...), true
				if len(data) > p.max {
					return events, errTooLarge
				}
			case "event":
				event = string(value)
			case "id":
				// An id that cannot go back in a Last-Event-ID header
				// (a control character, too long) is ignored.
				if len(value) <= httpMaxEventID && visibleHeaderValue(value) {
					*lastID = string(value)
				}
			case "retry":
				if d, ok := sseRetry(value); ok {
					*retry = d
				}
			}
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
		method, safeURL(url), sampleString(e.data), suggestEndpoint(url)), ErrNotJSONRPC)
}
