package connection

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSSERetryIsClampedNeverWrapped(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"0":                     httpMinRetry,
		"1":                     httpMinRetry,
		"500":                   500 * time.Millisecond,
		"30000":                 30 * time.Second,
		"9223372036854775":      httpMaxRetry, // ms*1e6 overflows an int64
		"99999999999999999999":  httpMaxRetry, // overflows any integer
		"184467440737095516160": httpMaxRetry,
	} {
		got, ok := sseRetry([]byte(in))
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "-1", "+5", "1.5", "10ms", " 5"} {
		_, ok := sseRetry([]byte(in))
		assert.False(t, ok, "%q is no retry value", in)
	}
}

func TestBackoffGrowsFromTheFloor(t *testing.T) {
	var got []time.Duration
	for f := range 10 {
		got = append(got, backoff(0, f))
	}
	assert.Equal(t, []time.Duration{
		250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second,
	}, got)
	assert.Equal(t, httpMaxRetry, backoff(time.Hour, 0))
	assert.Equal(t, httpMaxRetry, backoff(httpMaxRetry, 1<<30))
}

// readSSEAll runs readSSE over stream with a limit of max bytes.
func readSSEAll(t *testing.T, stream string, max int) (msgs []string, lastID string, retry time.Duration, err error) {
	t.Helper()
	p := &httpPeer{max: max}
	retry = httpDefaultRetry
	_, err = p.readSSE(strings.NewReader(stream), func(b []byte) { msgs = append(msgs, string(b)) }, &lastID, &retry)
	return msgs, lastID, retry, err
}

func TestReadSSELineEndings(t *testing.T) {
	// A lone CR ends a line, as LF and CRLF do: "id: 7\rdata: …" is two
	// fields, not an id with a CR in it.
	msgs, id, retry, err := readSSEAll(t, "id: 7\rdata: {\"a\":1}\r\n\r\nretry: 0\rid: 8\r\rdata: {\"b\":2}\n\n", 1<<10)
	require.NoError(t, err)
	assert.Equal(t, []string{`{"a":1}`, `{"b":2}`}, msgs)
	assert.Equal(t, "8", id)
	assert.Equal(t, httpMinRetry, retry)
}

func TestReadSSEIgnoresIDsThatCannotGoBack(t *testing.T) {
	_, id, _, err := readSSEAll(t, "id: good\n\nid: bad\x01id\n\nid: "+strings.Repeat("x", httpMaxEventID+1)+"\n\n", 1<<20)
	require.NoError(t, err)
	assert.Equal(t, "good", id)
}

// endless is a stream that never ends: a data line whose newline never
// comes, counting what was read of it.
type endless struct{ read int }

func (e *endless) Read(p []byte) (int, error) {
	if e.read == 0 && len(p) >= 6 {
		e.read = copy(p, "data: ")
		return e.read, nil
	}
	for i := range p {
		p[i] = 'x'
	}
	e.read += len(p)
	return len(p), nil
}

func TestReadSSEStopsAsALinePassesTheLimit(t *testing.T) {
	const max = 64 << 10
	body := &endless{}
	p := &httpPeer{max: max}
	var id string
	retry := httpDefaultRetry
	_, err := p.readSSE(body, func([]byte) { t.Error("delivered") }, &id, &retry)
	require.ErrorIs(t, err, errTooLarge)
	assert.Less(t, body.read, 4*max, "read on past the limit")
}

func TestReadSSEStopsAtAnEndpointEvent(t *testing.T) {
	_, _, _, err := readSSEAll(t, ": hi\n\nevent: endpoint\ndata: /message?sessionId=abc\n\ndata: {}\n\n", 1<<10)
	var e *endpointEvent
	require.True(t, errors.As(err, &e), "%v", err)
	assert.Equal(t, "/message?sessionId=abc", e.data)
}

var _ io.Reader = (*endless)(nil)

// The old HTTP+SSE transport reads its stream with the same parser, but
// an overlong event is dropped and the stream goes on: the stream is the
// session, and one message too large must not end it.
func TestSSEReaderSkipsAnOverlongEventAndGoesOn(t *testing.T) {
	stream := "event: message\ndata: " + strings.Repeat("x", 100) + "\n\n" +
		"data:{\rdata:1}\n\n" + // a lone CR ends a line here too
		"data: 12345\ndata: 678\n\n" + // 9 bytes of data with its "\n": past 8
		": keep-alive\n\nevent: message\ndata: {}\n\n"
	r := newSSEReader(strings.NewReader(stream), 8, nil)
	r.owned = true
	var got []string
	for {
		ev, err := r.next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if ev.overlong {
			got = append(got, "overlong")
			continue
		}
		got = append(got, ev.name+"|"+string(ev.data))
	}
	assert.Equal(t, []string{"overlong", "|{\n1}", "overlong", "message|{}"}, got)
}
