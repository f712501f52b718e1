package seam

import (
	"context"
	"encoding/json"
	"time"

	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/handlers"
)

// InputHandling is how a requester's typed calls (snodo.Calls) complete
// multi-round-trip (input_required) results. Serve answers the input
// requests of one round and returns their results in the same order; its
// first failure ends the round. ctx and timeout (the call's Timeout
// option: 0 the default, negative none) bound the wait. A nil Serve
// answers every request with -32601, so the call fails with
// snodo.ErrInputRequest. MaxRounds bounds the rounds of one call; 0 means
// snodo's default (10). Each round is a new request, so the rounds of one
// call may reach different servers of a pool: modern servers keep no
// state between rounds (it travels in requestState).
type InputHandling struct {
	Serve     func(ctx context.Context, reqs []*handlers.Request, timeout time.Duration) ([]json.RawMessage, error)
	MaxRounds int
}

// RequestSettings are the values of a request's options
// (snodo.Timeout, OnProgress, ResetTimeoutOnProgress, MaxTotalTimeout,
// Idempotent) that a requester serving snodo's typed calls some other way
// (a pool, a remote client) must honour. The zero value means the
// defaults: Timeout 0 the requester's own, negative for ever;
// MaxTotalTimeout 0 none.
type RequestSettings struct {
	Timeout                time.Duration
	OnProgress             func(connection.Progress)
	ResetTimeoutOnProgress bool
	MaxTotalTimeout        time.Duration
	Idempotent             bool
}

// Set by package snodo's init (RegisterCalls); each holds a func of
// snodo's types, asserted by the generic functions below, so that
// calling them boxes nothing.
var newCalls, settingsOf, inputOf any

// RegisterCalls is called once, by package snodo's init: nc is a
// func(r any, in func() InputHandling) snodo.Calls, so a
// func(any, func() InputHandling) C for C snodo.Calls; so is a
// func([]snodo.RequestOption) RequestSettings; io a
// func(snodo.Calls) func() InputHandling.
func RegisterCalls(nc, so, io any) { newCalls, settingsOf, inputOf = nc, so, io }

// NewCalls returns the typed calls (C is snodo.Calls) over r, which has
// snodo.Client's Request and Era methods; in (nil: none) says how they
// complete input_required rounds. The contract of r's Request: it sends
// one JSON-RPC request and returns its raw result (an input_required
// result as it is: the typed calls complete it); params may be nil, a
// json.RawMessage, or anything json.Marshal accepts; it honours the
// RequestSettings of opts (SettingsOf), runs OnProgress on the caller's
// goroutine before it returns, and is safe for concurrent use.
func NewCalls[C any](r any, in func() InputHandling) C {
	return newCalls.(func(any, func() InputHandling) C)(r, in)
}

// SettingsOf applies opts (O is snodo.RequestOption) in order and returns
// what a requester must honour. It allocates nothing.
func SettingsOf[O any](opts []O) RequestSettings {
	return settingsOf.(func([]O) RequestSettings)(opts)
}

// InputOf is how calls (C is snodo.Calls) complete input_required rounds:
// a supervisor answers a round on its current connection's handler, a
// bridge on its remote client's.
func InputOf[C any](calls C) func() InputHandling {
	return inputOf.(func(C) func() InputHandling)(calls)
}
