// Package telemetry holds snodo's OpenTelemetry plumbing: the names of the
// MCP semantic conventions, the choice of providers (the ones given, or
// the global ones), the instruments, and trace-context propagation through
// params._meta. It imports only the OpenTelemetry API, never the SDK.
//
// Everything here is built so that the default — no provider configured,
// the global no-op ones in place — costs no allocation: Tracing and
// Metering say whether anything would be recorded, and callers build
// spans and attributes only when they say yes.
package telemetry
