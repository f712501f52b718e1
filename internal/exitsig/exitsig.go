// Package exitsig is the exit signal of snodo's actors, like an Erlang
// exit signal: an actor under an life.Life (internal/life) (a connection, a supervised
// client, a pool, a router) records the signal's reason and stops; others
// ignore it. Users send one with snodo.Exit; snodo's own packages and
// tests with Send.
package exitsig

import protoactor "github.com/asynkron/protoactor-go/actor"

// Signal asks an actor to stop with Reason (nil: snodo.ErrActorStopped).
type Signal struct {
	Reason error
}

// IgnoreDeadLetterLogging keeps a signal to an actor that is gone out of
// protoactor's dead-letter log.
func (*Signal) IgnoreDeadLetterLogging() {}

// Send sends pid an exit signal with reason (nil: snodo.ErrActorStopped). It
// returns at once; an actor that has already stopped ignores it, and a
// nil system or pid means no actor: nothing is sent.
func Send(system *protoactor.ActorSystem, pid *protoactor.PID, reason error) {
	if system == nil || pid == nil {
		return
	}
	system.Root.Send(pid, &Signal{Reason: reason})
}
