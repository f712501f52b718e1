package remote

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/pin"
	"github.com/snodo/snodo/internal/telemetry"
)

// The wire. A call is one NATS request whose payload is the JSON-RPC
// request; the host answers on the request's reply subject with any
// number of heartbeats and progress updates, then one final message whose
// payload is the JSON-RPC response. Everything else about a call travels
// in NATS headers, never in the JSON-RPC bytes.
const (
	// defaultPrefix is the first token of every subject snodo uses.
	defaultPrefix = "snodo"

	// defaultHeartbeat is how often a host tells a caller that a call or
	// subscription is still alive, and how often a subscriber tells the
	// host that it is still listening. Missed beats end a subscription,
	// and make a caller suspect a call's host (detector.go).
	defaultHeartbeat = 500 * time.Millisecond

	// missedBeats is how many heartbeat intervals of silence (plus half
	// of one) end a subscription or a caller's call on the host; a caller
	// suspects a silent host after at most that many (detector.go).
	missedBeats = 3
)

// Header names.
const (
	hdrKind      = "Snodo-Kind"      // beat, progress, ack, event, end; absent on a final reply
	hdrTimeout   = "Snodo-Timeout"   // the caller's remaining timeout, in milliseconds
	hdrBeat      = "Snodo-Heartbeat" // the heartbeat interval the caller wants, in milliseconds
	hdrProgress  = "Snodo-Progress"  // "1": forward progress updates
	hdrReset     = "Snodo-Reset"     // "1": progress restarts the timeout (ResetTimeoutOnProgress)
	hdrTotal     = "Snodo-Total"     // MaxTotalTimeout, in milliseconds
	hdrNotRun    = "Snodo-Not-Run"   // on a final error: the call never reached the MCP server (why)
	hdrLocal     = "Snodo-Local"     // on a final error: raised by the host, not sent by the MCP server
	hdrHost      = "Snodo-Host"      // the host's id
	hdrTeardown  = "Snodo-Teardown"  // "1" on a subscription's end: the MCP server tore it down (notifications/cancelled)
	hdrControl   = "Snodo-Control"   // on an ack: where the subscriber sends keep-alives and its close
	hdrSub       = "Snodo-Sub"       // a subscription's id on control messages
	hdrCall      = "Snodo-Call"      // a call's reply subject on a caller's keep-alive
	hdrAlive     = "Snodo-Alive"     // "1" on a call: its caller answers beats with keep-alives
	hdrOp        = "Snodo-Op"        // on control messages: keepalive or close
	hdrMethod    = "Snodo-Method"    // an event's notification method
	hdrEra       = "Snodo-Era"       // on a final reply: the era of the server that answered
	hdrStatus    = "Status"          // set by the NATS server: 503 means no responders
	noResponders = "503"
)

// Message kinds (hdrKind).
const (
	kindBeat     = "beat"
	kindProgress = "progress"
	kindAck      = "ack"
	kindEvent    = "event"
	kindEnd      = "end"
	kindRequest  = "request" // a request a legacy server sent during the call, for the caller to answer (hostlegacy.go)
	kindLog      = "log"     // a log message (notifications/message params) the call's server sent (hostlegacy.go)
)

// Control operations (hdrOp).
const (
	opKeepalive = "keepalive"
	opClose     = "close"
	opPing      = "ping" // on a host's control subject: a caller asks whether the host lives (detector.go)
)

// subjects are the subjects of one served name. Besides the call
// endpoint every host serves in a queue group (call), each host takes
// calls meant for it alone on call.HOSTID (a caller sends a refused call
// there, to a host with room, and a task's later calls to the host that
// holds the task), and answers hosts (every host: its id and free slots).
type subjects struct {
	call, listen, cancel, info, hosts string
}

func subjectsOf(prefix, name string) subjects {
	base := prefix + "." + name
	return subjects{call: base + ".call", listen: base + ".listen", cancel: base + ".cancel", info: base + ".info", hosts: base + ".hosts"}
}

// callTo is the subject on which only host id takes calls of the name.
func (s subjects) callTo(id string) string { return s.call + "." + id }

// controlSubject is a host's own subject for subscription keep-alives.
func controlSubject(prefix, hostID string) string { return prefix + "._host." + hostID }

// headerCarrier adapts NATS headers to the OpenTelemetry propagation API.
type headerCarrier nats.Header

func (h headerCarrier) Get(key string) string { return nats.Header(h).Get(key) }
func (h headerCarrier) Set(key, value string) { nats.Header(h).Set(key, value) }
func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// injectTrace puts ctx's trace context, if any, into h, with the
// propagator the whole library uses (telemetry.Propagator: the global one
// once the program sets it, so baggage crosses too; W3C trace context
// otherwise).
func injectTrace(ctx context.Context, h nats.Header) {
	telemetry.Propagator().Inject(ctx, headerCarrier(h))
}

// extractTrace returns ctx carrying the trace context found in h.
func extractTrace(ctx context.Context, h nats.Header) context.Context {
	if h == nil {
		return ctx
	}
	return telemetry.Propagator().Extract(ctx, headerCarrier(h))
}

func millis(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

// headerMillis reads a duration header in milliseconds; 0 when absent or
// not a positive number. A value past what a time.Duration holds (about
// 292 years) reads as the longest one, never as a wrapped-around number.
func headerMillis(h nats.Header, key string) time.Duration { return parseMillis(h.Get(key)) }

// parseMillis reads a duration in milliseconds as headerMillis does.
func parseMillis(v string) time.Duration {
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || n <= 0 {
		return 0
	}
	if n > int64(math.MaxInt64/time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(n) * time.Millisecond
}

// hdrOpts carries a call's settings in one header (one header is what a
// call costs NATS to encode and a host to decode): space-separated
// fields, each a name or name=milliseconds:
//
//	beat=500 timeout=60000 total=120000 alive progress reset era legacy log=debug
//
// beat is the heartbeat interval the caller wants, timeout its remaining
// timeout, total its MaxTotalTimeout; alive says it answers beats with
// keep-alives, progress that it wants progress updates, reset that
// progress restarts the timeout, era that it has not learnt the era yet
// (the final reply then carries Snodo-Era), legacy that the caller
// wants the name's legacy-era connection (ServeLegacy), log the least
// severe log level it wants log messages of (legacy calls), pin a
// session's pin key and pinnew that this call makes the pin (pin.go). A
// call without it is read
// from the one-header-per-setting form of earlier callers (Snodo-Timeout,
// Snodo-Heartbeat, Snodo-Alive, Snodo-Progress, Snodo-Reset,
// Snodo-Total), whose final replies always carry Snodo-Era.
const hdrOpts = "Snodo-Opts"

// callOpts are a call's settings as they travel in hdrOpts.
type callOpts struct {
	beat, timeout, total        time.Duration
	alive, progress, reset, era bool
	legacy                      bool   // served by the name's legacy-era connection (ServeLegacy)
	log                         string // a logging level: the call's log messages go to its caller
	pin                         string // a session's pin key (pin.go); pinnew: this call makes the pin
	pinNew                      bool
}

// appendOpts appends o's hdrOpts value.
func appendOpts(b []byte, o callOpts) []byte {
	field := func(name string, d time.Duration) {
		if d > 0 {
			if len(b) > 0 {
				b = append(b, ' ')
			}
			b = append(b, name...)
			b = append(b, '=')
			b = strconv.AppendInt(b, max(d.Milliseconds(), 1), 10)
		}
	}
	flag := func(name string, on bool) {
		if on {
			if len(b) > 0 {
				b = append(b, ' ')
			}
			b = append(b, name...)
		}
	}
	field("beat", o.beat)
	field("timeout", o.timeout)
	field("total", o.total)
	flag("alive", o.alive)
	flag("progress", o.progress)
	flag("reset", o.reset)
	flag("era", o.era)
	flag("legacy", o.legacy)
	if o.log != "" {
		flag("log=", true)
		b = append(b, o.log...)
	}
	if o.pin != "" { // a session's pin (pin.go)
		flag("pin=", true)
		b = append(b, o.pin...)
		flag("pinnew", o.pinNew)
	}
	return b
}

// optsValue is o's hdrOpts value; the client keeps the last one made, so
// that calls with the same settings (the common case) share one string.
func (c *Client) optsValue(o callOpts) string {
	var buf [96]byte
	b := appendOpts(buf[:0], o)
	if last := c.lastOpts.Load(); last != nil && *last == string(b) {
		return *last
	}
	v := string(b)
	c.lastOpts.Store(&v)
	return v
}

// envOptsPrefix opens a call whose settings travel in its payload rather
// than in hdrOpts: the JSON-RPC request with a first member, "_snodo",
// whose string is hdrOpts's value. A call with no header at all spares
// nats.go encoding a header on the caller and decoding it on the host,
// and the NATS server a header message: 4.5–5 µs a call at 1 in flight,
// a third of what a remote call costs over bare request/reply and its
// pool call (bench/notes/remote.md). The value must be plainOpts, so that
// it needs no escaping. Hosts that read it say so in their hosts answer
// (hostRoom.Opts), and a client sends it only while every host it last
// heard from does (and no trace context needs a header anyway): a host
// of an earlier version skips the member, as JSON-RPC's unknown members
// are, and would run the call as an earlier caller's without a header
// (no host-side timeout, no keep-alives awaited).
const envOptsPrefix = `{"_snodo":"`

// plainOpts reports whether v, a hdrOpts value, can travel in the
// envOptsPrefix member as it is: lower-case letters, digits, '=' and
// spaces, as appendOpts writes them.
func plainOpts[T string | []byte](v T) bool {
	for i := range len(v) {
		c := v[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '=' && c != ' ' {
			return false
		}
	}
	return true
}

// appendEnvRequest appends the JSON-RPC request of id, method and params
// with opts (plainOpts) as its first member, "_snodo".
func appendEnvRequest(b []byte, opts string, id int64, method string, params []byte) []byte {
	b = append(b, envOptsPrefix...)
	b = append(b, opts...)
	b = append(b, '"', ',')
	at := len(b)
	b = jsonrpc.AppendRequest(b, id, method, params)
	return append(b[:at], b[at+1:]...) // the request's own '{' goes: its members follow ours
}

// envOptsOf returns the settings a call carries in its payload
// (envOptsPrefix), or ok false when it carries none there.
func envOptsOf(data []byte) (opts []byte, ok bool) {
	rest, ok := bytes.CutPrefix(data, []byte(envOptsPrefix))
	if !ok {
		return nil, false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || !plainOpts(rest[:end]) {
		return nil, false
	}
	return rest[:end], true
}

// callOptsOf reads a call's settings from its headers: hdrOpts, or the
// one-header-per-setting form of earlier callers.
func callOptsOf(hdr nats.Header) callOpts {
	v := hdr.Get(hdrOpts)
	if v == "" {
		return callOpts{
			beat: headerMillis(hdr, hdrBeat), timeout: headerMillis(hdr, hdrTimeout), total: headerMillis(hdr, hdrTotal),
			alive: hdr.Get(hdrAlive) == "1", progress: hdr.Get(hdrProgress) == "1", reset: hdr.Get(hdrReset) == "1",
			era: true,
		}
	}
	return parseOpts(v)
}

// parseOpts reads a hdrOpts value.
func parseOpts(v string) callOpts {
	var o callOpts
	for v != "" {
		var f string
		f, v, _ = strings.Cut(v, " ")
		name, ms, _ := strings.Cut(f, "=")
		switch name {
		case "beat":
			o.beat = parseMillis(ms)
		case "timeout":
			o.timeout = parseMillis(ms)
		case "total":
			o.total = parseMillis(ms)
		case "alive":
			o.alive = true
		case "progress":
			o.progress = true
		case "reset":
			o.reset = true
		case "era":
			o.era = true
		case "legacy":
			o.legacy = true
		case "log":
			if logRank(ms) >= 0 {
				o.log = ms
			}
		case "pin": // a session's pin (pin.go)
			if pin.ValidKey(ms) {
				o.pin = ms
			}
		case "pinnew":
			o.pinNew = true
		}
	}
	return o
}

// logLevels are the logging levels, least severe first.
var logLevels = [...]string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// logRank is level's place in logLevels, or -1 for no level.
func logRank(level string) int {
	for i, l := range logLevels {
		if l == level {
			return i
		}
	}
	return -1
}
