package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/framer"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/recovered"
	"github.com/snodo/snodo/internal/safetext"
	"github.com/snodo/snodo/internal/sentinel"
	"github.com/snodo/snodo/internal/telemetry"
)

// readerLogsPerSecond bounds the records the reader logs a second about
// what the server sends (lines that are not JSON-RPC, answers to no
// request, notifications nobody takes): a server writing junk as fast as
// it can must not turn every short line into a log record. Past it the
// records are counted, and the count goes with the next record logged
// ("suppressed") and into one record when the reader ends.
const readerLogsPerSecond = 100

// logLimit is the reader's count of its records in the current second.
// Only the reader goroutine uses it.
type logLimit struct {
	window     time.Time // when the current second began
	n          int       // records logged in it
	suppressed int       // records left out since the last one logged
}

// serverLog logs a record about the server's output at level, within
// readerLogsPerSecond. Only the reader goroutine calls it.
func (c *Conn) serverLog(level slog.Level, msg string, args ...any) {
	ctx := context.Background()
	if !c.cfg.Logger.Enabled(ctx, level) {
		return // a record nobody sees costs nothing and counts for nothing
	}
	l := &c.readLog
	if now := time.Now(); now.Sub(l.window) >= time.Second {
		l.window, l.n = now, 0
	}
	if l.n >= readerLogsPerSecond {
		l.suppressed++
		return
	}
	l.n++
	if l.suppressed > 0 {
		args = append(args, "suppressed", l.suppressed)
		l.suppressed = 0
	}
	c.cfg.Logger.Log(ctx, level, msg, args...)
}

// exitGrace is how long the reader waits, after stdout's EOF, for the
// process to exit before it reports "stdout closed" instead of the exit.
const exitGrace = 200 * time.Millisecond

// drainGrace is how long stdout and stderr are still read after the
// server has exited, when something else (a grandchild it started) holds
// them open: then snodo closes its read ends.
const drainGrace = time.Second

// readLoop reads the server's stdout until EOF — also after Close, so the
// server can finish its admitted requests instead of dying of a broken
// pipe. Each line is traced before it is routed. EOF while the process
// lives on means the server closed its stdout. The exit itself is seen by
// waitProcess, not here: a grandchild holding stdout cannot hide it.
func (c *Conn) readLoop() {
	defer close(c.readerDone)
	var stdout io.Reader = c.proc.stdout
	// An idle connection holds no read buffer: the reader waits on the
	// pipe (non-blocking, from os.Pipe) before it takes one, and counts
	// the bytes itself.
	raw, err := c.proc.stdout.SyscallConn()
	lend := err == nil && framer.CanLend
	if c.cfg.Metrics != nil && !lend {
		stdout = &countingReader{r: stdout, m: c.cfg.Metrics}
	}
	fr := framer.New(stdout, c.cfg.MaxLineBytes, func(n int) {
		c.cfg.Logger.Warn("snodo: discarded an overlong line from the server; the request it answered will time out",
			"bytes", n, "max_line_bytes", c.cfg.MaxLineBytes)
	})
	if lend {
		fr.Lend(raw, c.cfg.Metrics)
	}
	for {
		line, err := fr.Next()
		if err != nil {
			c.readEOF = err == io.EOF
			break
		}
		if c.cfg.Trace != nil {
			c.cfg.Trace(connection.Received, line)
		}
		if c.route(line, false) {
			fr.Detach()
		}
	}
	c.proc.stdout.Close()
	if n := c.readLog.suppressed; n > 0 {
		c.cfg.Logger.Warn("snodo: left out records about the server's output, past the records logged a second",
			"suppressed", n, "per_second", readerLogsPerSecond)
	}
	select {
	case <-c.exited: // waitProcess has recorded the exit (the first reason wins)
	case <-time.After(exitGrace):
		c.noteUnread()
		c.terminate(&exitReason{what: "server closed its stdout but is still running", stderr: c.proc.stderr.lastLines(stderrTailLine), cause: sentinel.ErrStdoutClosed})
	}
}

// waitProcess waits on the server process itself, from Start on, so its
// exit is seen when it happens — whoever else holds its pipes — and it is
// reaped at once: every caller gets -32000 with the exit status. Then
// stdout and stderr are drained until EOF, for at most drainGrace.
func (c *Conn) waitProcess() {
	awaitExit(c.proc.cmd.Process.Pid) // no thread held while the server runs
	// With a sandbox: which limit stopped it, if one did; cgroups removed.
	err := c.proc.box.Exit(c.proc.cmd.Wait())
	c.noteUnread()
	c.terminate(c.exitReason(err, sentinel.ErrServerExited)) // before exited: the exit status says most
	c.exitErr = err
	close(c.exited)
	expired := make(chan struct{})
	grace := time.AfterFunc(drainGrace, func() { close(expired) })
	defer grace.Stop()
	select {
	case <-c.readerDone:
	case <-expired: // a grandchild holds stdout open
		c.proc.stdout.Close()
		<-c.readerDone
	}
	if t := c.proc.stderr; t != nil {
		select {
		case <-t.done:
		case <-expired: // … or stderr
			t.r.Close()
			<-t.done
		}
	}
	if c.readEOF {
		close(c.gone) // nobody holds stdout any more
	}
	c.drained.Store(true)
	c.maybeDone()
}

func (c *Conn) exitReason(waitErr error, cause error) error {
	if t := c.proc.stderr; t != nil {
		select { // let the last stderr lines arrive
		case <-t.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
	return &exitReason{what: describeExit(waitErr), stderr: c.proc.stderr.lastLines(stderrTailLine), cause: cause, wait: waitErr}
}

// zeroCopyBytes is the result size from which an answer keeps the
// reader's buffer instead of a copy: one copy of a 16 MiB answer fewer.
const zeroCopyBytes = 256 << 10

// route classifies one line and hands it to whoever waits for it. It never
// blocks: answers go to the request table, server requests to the actor's
// mailbox, stream notifications to sinks that queue them. It reports
// whether the line's buffer was handed over (the reader must detach it);
// owned says the line is the connection's already (a Channel's message),
// so an answer keeps it without a copy.
func (c *Conn) route(line []byte, owned bool) (handedOver bool) {
	env, err := jsonrpc.Scan(line)
	if err == jsonrpc.ErrNoOutcome {
		// An answer without an answer: fail its request now rather than
		// leave it to its timeout (or, with none, for ever).
		return c.routeResponse(&env, line, owned)
	}
	if err != nil {
		if len(bytes.TrimSpace(line)) > 0 {
			c.serverLog(slog.LevelWarn, "snodo: ignored a line from the server that is not JSON-RPC", "error", err, "line", sample(line))
		}
		return false
	}
	switch env.Kind {
	case jsonrpc.KindResponse:
		return c.routeResponse(&env, line, owned)
	case jsonrpc.KindRequest:
		c.routeServerRequest(&env)
	case jsonrpc.KindNotification:
		c.routeNotification(&env)
	}
	return false
}

func (c *Conn) routeResponse(env *jsonrpc.Envelope, line []byte, owned bool) (handedOver bool) {
	id, ok := env.IntID()
	var delivered bool
	if ok {
		// "error":null beside a result (JSON-RPC 1.0 style) is a success.
		if env.Result == nil && env.Error == nil {
			delivered = c.table.complete(id, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: "server sent a response with neither a result nor an error: " + sample(line)})
		} else if env.Error != nil && (env.Result == nil || !bytes.Equal(env.Error, []byte("null"))) {
			e := new(jsonrpc.Error)
			if env.Error[0] != '{' || json.Unmarshal(env.Error, e) != nil || (e.Code == 0 && e.Message == "") {
				e = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "server sent a malformed error object: " + sample(env.Error)}
			}
			delivered = c.table.complete(id, nil, e)
		} else if owned || (len(env.Result) >= zeroCopyBytes && cap(line) <= 2*len(line)) {
			// The line fills at least half of what is left of the buffer,
			// so handing it over keeps little besides the answer alive.
			// Full slice expression: the caller cannot append into the
			// bytes that follow the result in the buffer.
			delivered = c.table.complete(id, env.Result[:len(env.Result):len(env.Result)], nil)
			handedOver = delivered
		} else {
			delivered = c.table.complete(id, bytes.Clone(env.Result), nil)
		}
	}
	if !delivered {
		if state := c.lifeState(); ok && c.table.gaveUpOn(id) {
			// The answer crossed the client's cancel: expected, and
			// ignored as the protocol asks.
			c.serverLog(slog.LevelDebug, "snodo: dropped the late answer to a request the client gave up on",
				"id", id, "state", state)
		} else if state == stateRunning {
			c.serverLog(slog.LevelWarn, "snodo: ignored a response to no request in flight (unknown, or a duplicate)",
				"id", string(env.ID), "line", sample(line))
		} else {
			c.serverLog(slog.LevelDebug, "snodo: discarded a response that came after the connection stopped",
				"id", string(env.ID), "state", state)
		}
	}
	return handedOver
}

func (c *Conn) routeServerRequest(env *jsonrpc.Envelope) {
	id := env.ID
	if compact, err := jsonrpc.OneLine(id); err == nil { // the answer echoes it: no '\r' inside
		id = compact
	}
	req := &handlers.Request{
		ID:     bytes.Clone(id),
		Method: env.MethodName(),
		Params: bytes.Clone(env.Params),
	}
	c.system.Root.Send(c.pid, &serverRequestMsg{req: req})
}

// routeNotification hands a notification to whoever it concerns: the
// request named by a progress token, a stream named by _meta's
// subscriptionId, a stream or a server request named by a cancellation,
// or else OnNotification. Only those members are read, by their exact
// names and only where they matter: every other member, whatever its
// type, belongs to the notification, and params that are no object (an
// array, by position) go to OnNotification as they are.
func (c *Conn) routeNotification(env *jsonrpc.Envelope) {
	method := env.MethodName()
	if method == "notifications/progress" {
		c.routeProgress(env.Params)
		return
	}
	var meta, requestID []byte
	if len(env.Params) > 0 && env.Params[0] == '{' {
		_ = jsonrpc.EachMember(env.Params, func(key, val []byte) error { // valid: Scan checked it
			switch string(key) {
			case "_meta":
				meta = val
			case "requestId":
				requestID = val
			}
			return nil
		})
	}
	if len(meta) > 0 && meta[0] == '{' {
		if sub, _ := jsonrpc.Member(meta, subscriptionIDKey); sub != nil {
			if id, ok := jsonrpc.ParseIntID(sub); ok {
				sink, ended := c.table.streamOf(id)
				if sink != nil {
					if err := c.toStream(sink, id, method, bytes.Clone(env.Params)); err != nil {
						c.table.fail(id, err) // its caller gives it up and tells the server
					}
					return
				}
				if ended { // the server had not yet seen the cancel the client sent
					c.cfg.Metrics.Dropped(dropEndedByClient)
					return
				}
			}
			c.cfg.Metrics.Dropped("unknown_subscription")
			c.serverLog(slog.LevelDebug, "snodo: dropped a notification for an unknown subscription", "method", method, "subscription", string(sub))
			return
		}
	}
	if method == "notifications/cancelled" && requestID != nil {
		if id, ok := jsonrpc.ParseIntID(requestID); ok {
			if sink := c.table.endStream(id); sink != nil { // the server tears a stream down
				err := c.toStream(sink, id, method, bytes.Clone(env.Params))
				if err == nil {
					err = errStreamCancelled
				}
				// The server has ended the request: complete it so that
				// no notifications/cancelled goes back for it.
				c.table.complete(id, nil, err)
				return
			}
		}
		c.system.Root.Send(c.pid, &serverCancelMsg{id: bytes.Clone(requestID)})
		return
	}
	if c.cfg.OnNotification != nil {
		c.toHook(method, bytes.Clone(env.Params))
		return
	}
	c.cfg.Metrics.Dropped("unclaimed")
	c.serverLog(slog.LevelDebug, "snodo: dropped a server notification", "method", method)
}

// toHook hands a notification to OnNotification. A panic in the hook is
// recovered and logged (within the reader's records a second: the server
// chooses how often it runs), the notification is lost, and the reader
// goes on with the next line.
func (c *Conn) toHook(method string, params json.RawMessage) {
	defer func() {
		if r := recover(); r != nil {
			c.serverLog(slog.LevelError, "snodo: the OnNotification hook panicked; the notification is lost and the connection goes on",
				recovered.Args(r, "method", method)...)
		}
	}()
	c.cfg.OnNotification(c.notifyCtx, method, params)
}

// toStream hands a notification to the stream sink of request id. A
// panic in the sink is recovered and logged as toHook's, and returned as
// the local error the request ends with; nil when the sink returned.
func (c *Conn) toStream(sink func(string, json.RawMessage), id int64, method string, params json.RawMessage) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.serverLog(slog.LevelError, "snodo: a request's Stream callback panicked; the request ends and the server is told",
				recovered.Args(r, "id", id, "method", method)...)
			err = jsonrpc.NewLocalError(jsonrpc.CodeInternalError,
				fmt.Sprintf("the Stream callback (CallOptions.Stream) panicked on a %s notification: %v; the request has ended", method, r),
				errStreamPanicked)
		}
	}()
	sink(method, params)
	return nil
}

// dropEndedByClient is the drop reason of a notification for a request
// the client itself ended (gave up on, or whose Stream callback
// panicked): the server sent it before it saw the client's cancel, so it
// is counted but not logged.
const dropEndedByClient = "ended_by_client"

// subscriptionIDKey is the _meta member naming the subscription a
// notification belongs to.
const subscriptionIDKey = "io.modelcontextprotocol/subscriptionId"

// progressParams are the members of notifications/progress.
type progressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         float64         `json:"total"`
	Message       string          `json:"message"`
}

// routeProgress queues a progress update for the request whose ID is its
// token; progress for no request that asked for it, or malformed, is
// dropped.
func (c *Conn) routeProgress(params []byte) {
	var p progressParams
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			c.cfg.Metrics.Dropped("unmatched_progress")
			c.serverLog(slog.LevelWarn, "snodo: ignored a progress notification with malformed params", "error", err)
			return
		}
	}
	id, ok := jsonrpc.ParseIntID(p.ProgressToken)
	if ok && c.table.progress(id, Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}) {
		return
	}
	if ok && c.table.gaveUpOn(id) { // sent before the server saw the cancel
		c.cfg.Metrics.Dropped(dropEndedByClient)
		return
	}
	c.cfg.Metrics.Dropped("unmatched_progress")
	c.serverLog(slog.LevelDebug, "snodo: dropped progress for no request that asked for it", "token", string(p.ProgressToken))
}

// countingReader counts the bytes read from the server's stdout.
type countingReader struct {
	r io.Reader
	m *telemetry.Conn
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.m.Read(n)
	return n, err
}

// sample is a line the server sent as it may go into a log record or an
// error: shortened and made safe (safetext.Sample).
func sample(b []byte) string { return safetext.Sample(b) }
