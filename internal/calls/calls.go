// Package calls holds what snodo's typed calls stand on, typed for every
// package that builds or serves them (the root's Client, package
// supervisor's Client and Pool, package remote's Client, the bridge of
// the snodo command): a request's options and the one settings type they
// give, the requester a Calls runs on, and how input_required rounds are
// completed.
//
// This package sits below the root and cannot import it, so its types
// take snodo's own as type parameters: P is snodo.Progress, S
// snodo.TaskStatus, O snodo.RequestOption (Option[P, S]) and E snodo.Era.
// The root declares RequestOption as an alias of Option[Progress,
// TaskStatus] and Calls as a defined type over Calls[RequestOption, Era],
// so a sibling builds one with snodo.Calls(calls.New[snodo.RequestOption,
// snodo.Era](r, in)): every such call is checked by the compiler.
package calls

import (
	"context"
	"encoding/json"
	"time"

	"github.com/snodo/snodo/handlers"
)

// Key names the setting an Option sets.
type Key uint8

// The settings an Option can set, one for each of snodo's request
// options.
const (
	KeyNone                   Key = iota
	KeyTimeout                    // snodo.Timeout: Duration
	KeyMaxTotalTimeout            // snodo.MaxTotalTimeout: Duration
	KeyOnProgress                 // snodo.OnProgress: OnProgress
	KeyResetTimeoutOnProgress     // snodo.ResetTimeoutOnProgress: Flag
	KeyIdempotent                 // snodo.Idempotent: Flag
	KeyMaxPages                   // snodo.MaxPages: Count
	KeyTaskTTL                    // snodo.TaskTTL: Duration
	KeyOnTaskStatus               // snodo.OnTaskStatus: OnTaskStatus
	KeyRetryURLElicitation        // snodo.RetryURLElicitation: Flag
)

// Option is one request option (snodo.RequestOption is Option[Progress,
// TaskStatus]): a plain value, one encoding for every setting, which one
// it sets (its key) and the value in the field of its type. Making one
// and reading a list of them allocate nothing. The zero Option sets
// nothing.
type Option[P, S any] struct {
	key      Key
	d        time.Duration // KeyTimeout, KeyMaxTotalTimeout, KeyTaskTTL
	n        int           // KeyMaxPages
	progress func(P)       // KeyOnProgress
	status   func(S)       // KeyOnTaskStatus
}

// Duration is the option k (a duration's: KeyTimeout, KeyMaxTotalTimeout,
// KeyTaskTTL) set to d.
func Duration[P, S any](k Key, d time.Duration) Option[P, S] { return Option[P, S]{key: k, d: d} }

// Count is the option k (KeyMaxPages) set to n.
func Count[P, S any](k Key, n int) Option[P, S] { return Option[P, S]{key: k, n: n} }

// Flag is the option k (one without a value: KeyResetTimeoutOnProgress,
// KeyIdempotent, KeyRetryURLElicitation).
func Flag[P, S any](k Key) Option[P, S] { return Option[P, S]{key: k} }

// OnProgress is the option KeyOnProgress running fn.
func OnProgress[P, S any](fn func(P)) Option[P, S] {
	return Option[P, S]{key: KeyOnProgress, progress: fn}
}

// OnTaskStatus is the option KeyOnTaskStatus running fn.
func OnTaskStatus[P, S any](fn func(S)) Option[P, S] {
	return Option[P, S]{key: KeyOnTaskStatus, status: fn}
}

// Settings are the values a request's options set: the one type every
// requester (a Client, a supervised client, a pool, a remote client)
// reads them as, so that each honours them alike. The zero value means
// the defaults.
type Settings[P, S any] struct {
	Timeout                time.Duration // Timeout: 0 the requester's own, negative for ever
	OnProgress             func(P)       // OnProgress: nil asks for none
	ResetTimeoutOnProgress bool          // ResetTimeoutOnProgress
	MaxTotalTimeout        time.Duration // MaxTotalTimeout: 0 none
	Idempotent             bool          // Idempotent
	MaxPages               int           // MaxPages: 0 the default (1000)
	TaskTTL                time.Duration // TaskTTL: 0 the server's
	OnTaskStatus           func(S)       // OnTaskStatus: nil asks for none
	RetryURLElicitation    bool          // RetryURLElicitation
}

// Of applies opts in order (a later option of the same setting wins) and
// returns what they set. It allocates nothing.
func Of[P, S any](opts []Option[P, S]) Settings[P, S] {
	var s Settings[P, S]
	for i := range opts {
		o := &opts[i]
		switch o.key {
		case KeyTimeout:
			s.Timeout = o.d
		case KeyMaxTotalTimeout:
			s.MaxTotalTimeout = o.d
		case KeyOnProgress:
			s.OnProgress = o.progress
		case KeyResetTimeoutOnProgress:
			s.ResetTimeoutOnProgress = true
		case KeyIdempotent:
			s.Idempotent = true
		case KeyMaxPages:
			s.MaxPages = o.n
		case KeyTaskTTL:
			s.TaskTTL = o.d
		case KeyOnTaskStatus:
			s.OnTaskStatus = o.status
		case KeyRetryURLElicitation:
			s.RetryURLElicitation = true
		}
	}
	return s
}

// InputHandling is how a requester's typed calls complete
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

// Requester is the raw-request side of an MCP client (O is
// snodo.RequestOption, E snodo.Era): the one part that differs between a
// connection, a supervised connection, a pool and a client on another
// machine. Request sends one JSON-RPC request and returns its raw result
// (an input_required result as it is: the typed calls complete it);
// params may be nil, a json.RawMessage, or anything json.Marshal accepts;
// it honours the Settings of opts, runs OnProgress on the caller's
// goroutine before it returns, and is safe for concurrent use. Era picks
// the method a ping sends.
type Requester[O, E any] interface {
	Request(ctx context.Context, method string, params any, opts ...O) (json.RawMessage, error)
	Era() E
}

// Calls is what snodo.Calls holds: the requester its typed calls send
// through and how they complete input_required rounds.
type Calls[O, E any] struct {
	r  Requester[O, E]
	in func() InputHandling // nil: input requests are answered -32601
}

// New returns the calls over r (nil: every call fails), completing
// input_required rounds as in says (nil: none are answered).
func New[O, E any](r Requester[O, E], in func() InputHandling) Calls[O, E] {
	return Calls[O, E]{r: r, in: in}
}

// Requester is what c's calls send through: nil for a zero Calls.
func (c Calls[O, E]) Requester() Requester[O, E] { return c.r }

// Input is how c's calls complete input_required rounds: nil when they
// answer none.
func (c Calls[O, E]) Input() func() InputHandling { return c.in }
