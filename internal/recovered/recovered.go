// Package recovered logs a panic of the user's code that snodo runs on a
// goroutine of its own — a hook or callback called from a connection's
// reader or writer, a notification handler — once it has been recovered,
// so that one bad callback neither ends the program nor wedges a
// connection, and every such record has the same shape (leaf).
package recovered

import (
	"log/slog"
	"runtime/debug"
)

// Log records, at Error, that the user's code panicked with r. msg says
// whose code it was and what happens next; args follow, then the panic
// value ("panic") and the goroutine's stack ("stack"). Call it from the
// deferred function that recovered r, so that the stack is the panic's:
//
//	defer func() {
//		if r := recover(); r != nil {
//			recovered.Log(logger, "snodo: the X hook panicked; the line goes on", r, "method", method)
//		}
//	}()
//
// recover stops a panic only when the deferred function calls it itself,
// so that much stays at each call site; it costs no allocation while
// nothing panics.
func Log(logger *slog.Logger, msg string, r any, args ...any) {
	logger.Error(msg, Args(r, args...)...)
}

// Args is args followed by the panic value r and the stack, the
// attributes of Log's record, for a caller that logs through its own
// limiter (a connection's reader, which bounds its records a second
// whatever the server sends). Call it from the deferred function that
// recovered r, as Log.
func Args(r any, args ...any) []any {
	return append(args, "panic", r, "stack", string(debug.Stack()))
}
