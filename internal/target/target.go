// Package target is what a snodo.Target holds (snodo.Target is a defined
// type over Target), readable by the packages above the root that must
// tell a server snodo starts as a command from one that runs elsewhere
// (a supervisor stops only the processes it started; the snodo command
// gives only those its environment flags). Its methods are read by the
// compiler-checked conversion target.Target(t) of a snodo.Target t.
package target

import "github.com/snodo/snodo/connection"

// Target names one server: a command, a Streamable HTTP URL, or a
// Transport. The zero Target names none.
type Target struct {
	command   string
	args      []string
	url       string
	transport connection.Transport
}

// Command is the target of a server started as name with args (copied).
func Command(name string, args []string) Target {
	return Target{command: name, args: append([]string(nil), args...)}
}

// URL is the target of a server reached at a Streamable HTTP endpoint.
func URL(u string) Target { return Target{url: u} }

// Transport is the target of a server reached through t.
func Transport(t connection.Transport) Target { return Target{transport: t} }

// Command is the command and its arguments; "" for another kind.
func (t Target) Command() (string, []string) { return t.command, t.args }

// URL is the Streamable HTTP endpoint; "" for another kind.
func (t Target) URL() string { return t.url }

// Transport is the transport; nil for another kind.
func (t Target) Transport() connection.Transport { return t.transport }

// IsCommand reports whether t names a server snodo starts as a command
// (a process of its own to stop), rather than one that runs elsewhere.
func (t Target) IsCommand() bool { return t.transport == nil && t.url == "" }
