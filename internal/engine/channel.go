package engine

import (
	"fmt"
	"log/slog"
	"reflect"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/sentinel"
)

// What a connection over a Transport other than stdio does where a
// stdio connection reads stdout and waits on its child (reader.go): the
// Channel calls receive1 for each message, and its end is the exit.

// receive1 is Peer.Receive: one message from the server, traced, then
// routed as a line of stdout is. It waits for Start to have set the
// connection up (a transport may receive before Open returns).
func (c *Conn) receive1(msg []byte) {
	<-c.ready
	if c.received(msg) {
		c.route(msg, true)
	}
}

// answerScanned is callerrun.Request.Answer: the response to a request
// whose exchange ran on its caller's goroutine, which the transport has
// scanned (env) to check that it answers that request. It is routed as
// receive1 routes a message, without a second scan. Start has long set
// the connection up: the request was sent.
func (c *Conn) answerScanned(env jsonrpc.Envelope, msg []byte) {
	if c.received(msg) {
		c.routeResponse(&env, msg, true)
	}
}

// received counts and traces one message from the server; false when
// it is too long to take (then it is dropped, and logged).
func (c *Conn) received(msg []byte) bool {
	c.cfg.Metrics.Read(len(msg) + 1)
	if len(msg) > c.cfg.MaxLineBytes {
		c.serverLog(slog.LevelWarn, "snodo: discarded an overlong message from the server; the request it answered will time out",
			"bytes", len(msg), "max_line_bytes", c.cfg.MaxLineBytes)
		return false
	}
	if c.cfg.Trace != nil {
		c.cfg.Trace(connection.Received, msg)
	}
	return true
}

// failRequest is Peer.Fail: the transport knows request id will get no
// answer.
func (c *Conn) failRequest(id int64, err error) {
	<-c.ready
	if _, ok := err.(*jsonrpc.Error); !ok {
		err = jsonrpc.NewLocalError(jsonrpc.CodeInternalError, err.Error(), err)
	}
	c.table.complete(id, nil, err)
}

// channelFailed: the Channel refused a message (Send failed); it takes
// no more, so the connection stops.
func (c *Conn) channelFailed(err error) {
	c.terminate(&exitReason{what: "the transport failed to send: " + err.Error(), cause: err})
}

// waitChannel is waitProcess for a Channel: its end is the server's
// exit. Its Err, or snodo.ErrClosed when it ended because the connection
// closed it, is the stop reason; Done closes once it is over.
func (c *Conn) waitChannel() {
	<-c.ch.Done()
	reason := c.ch.Err()
	if reason == nil {
		reason = &exitReason{what: "the connection was closed", cause: sentinel.ErrClosed}
	}
	c.terminate(reason)
	if c.idle != nil {
		c.idle.CloseIdleConnections()
	}
	close(c.exited)
	close(c.gone)
	c.drained.Store(true)
	c.maybeDone()
}

// transportName names the server in log records: the transport's own
// name (a fmt.Stringer's: an HTTP transport's URL without credentials or
// query), else its type.
func transportName(t connection.Transport) string {
	if s, ok := t.(fmt.Stringer); ok {
		return s.String()
	}
	return reflect.TypeOf(t).String()
}
