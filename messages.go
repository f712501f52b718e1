package snodo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/snodo/snodo/internal/calls"
	"github.com/snodo/snodo/internal/connopts"
	"github.com/snodo/snodo/internal/origins"

	"github.com/snodo/snodo/internal/jsonrpc"

	protoactor "github.com/asynkron/protoactor-go/actor"

	snodoactor "github.com/snodo/snodo/actor"
	"github.com/snodo/snodo/internal/listening"
)

// Calls as actor messages. An actor sends a *Call (or a *ToolCall) with
// ctx.Request to the PID of a *Client, a supervisor.Client or a
// supervisor.Pool, and later receives exactly one *Reply (*ToolReply)
// carrying the call's Tag: also when the connection is gone, as a -32000.
// The actor behind the PID never blocks on the call: the request runs on
// a goroutine of its own, bounded by the call's Timeout option (default:
// the connection's timeout), and nothing uses protoactor futures. A call
// lives no longer than its reply target: when that actor terminates, the
// call is cancelled (see callHandler).

// Call is a raw request as a message: the answer to Request(ctx, Method,
// Params, Options...) comes back as a *Reply with the same Tag. Params
// takes the same forms as Request's. Like Request it is raw: a result
// that asks for input ("resultType":"input_required") is returned as it
// is; send a *ToolCall to have those rounds completed.
type Call struct {
	quiet
	Method  string
	Params  any
	Tag     any             // returned in the Reply, to match it to the call
	Options []RequestOption // Timeout, Idempotent…; OnProgress is replaced when Progress is set
	// Progress asks the server for progress updates and sends each to the
	// reply target as a *Progress, in order, before the Reply.
	Progress bool
	// ReplyTo receives the Reply (and progress) instead of the sender;
	// set it when sending with Send, or from code that is not an actor.
	// The call is cancelled when its reply target (ReplyTo, else the
	// sender) terminates, or at once if it does not exist: nobody could
	// receive its reply. Keep the target alive for as long as the call
	// should run.
	ReplyTo *protoactor.PID
}

// Reply answers a *Call: Result on success, Err otherwise (a *Error from
// the server or a local one, as Request returns).
type Reply struct {
	quiet
	Tag    any
	Result json.RawMessage
	Err    error
	Origin // the server that answered (for a pool, the member that ran it last)
}

// ToolCall is CallTool as a message: the answer comes back as a
// *ToolReply with the same Tag, after every input_required round has been
// completed with the server-request handler.
type ToolCall struct {
	quiet
	Name     string
	Args     any // nil, a json.RawMessage or []byte of JSON, or anything that marshals to a JSON object
	Tag      any
	Options  []RequestOption
	Progress bool            // as for Call
	ReplyTo  *protoactor.PID // as for Call
}

// ToolReply answers a *ToolCall: Result on success (a tool that failed is
// a Result with IsError set), Err otherwise.
type ToolReply struct {
	quiet
	Tag    any
	Result *CallToolResult
	Err    error
	Origin // as for Reply
}

// Closed tells the owner actor (WithOwner, ConnectTo) that a connection
// it owns has stopped, and why (Err, as Client.Err). It matches
// *Connected: every connection Connect returned sends one as its actor
// stops, once every caller has been answered; its stdin is closed right
// after, and the server may still be exiting (Client.Done).
type Closed struct {
	quiet
	Client *Client
	Err    error
	Origin // the client's (WithOrigin)
}

// defaultMaxCallMessages is how many call messages one actor runs at once
// unless its callHandler says otherwise.
const defaultMaxCallMessages = 1024

// ErrTooManyCalls: a call message came while its actor already ran its
// bound of them (1024); it was answered at once with a -32603 wrapping
// this, without reaching the server. Send fewer at once.
var ErrTooManyCalls = errors.New("snodo: too many call messages in flight")

// callHandler answers the call messages (*Call, *ToolCall) an actor
// receives by running them on R, off the actor's mailbox. The connection,
// supervisor and pool actors each have one (the supervisor's through
// internal/connopts). The zero
// Max means 1024 at once; a call over it is answered at once
// with a -32603 wrapping ErrTooManyCalls; a call that panics (its own
// OnProgress option, say) is answered with a -32603 saying so, and the
// panic is logged. Replies and progress go to the
// message's ReplyTo, else its sender, with the actor the call was sent to
// as their sender; a call with neither is not run, and a warning goes to
// the actor system's logger.
//
// A call lives no longer than its reply target. The running calls of one
// target share one watch of it (a tiny watcher actor, actor.WatchOwner,
// started with the target's first running call and stopped with its
// last); when the target terminates, every call still running for it is
// cancelled: its ctx is done, so a connection tells the server
// (notifications/cancelled) and the slot is freed at once. Its reply then
// goes nowhere: a dead letter, kept out of the log. A target that does
// not exist when the call comes (a ReplyTo that never lived, or already
// stopped) cancels the call at once, for the same reason. A protoactor
// future (RequestFuture) is not watched, since a watch would complete
// it: such a call runs to its end as before. The zero callHandler (Calls
// aside) is ready to use; Handle is safe from several actors at once.
type callHandler struct {
	Calls Calls // the typed calls of the client, supervisor or pool the actor serves
	Max   int
	// Listen runs the *ListenCall messages (the connection, supervisor
	// and pool actors set their own Listen); nil answers them with a
	// -32601 error.
	Listen listenFunc
	// Origin is put on the replies and progress of calls that no client
	// with an Origin of its own served (one refused before reaching a
	// server, say); a client records its own on the calls it serves.
	Origin Origin

	running atomic.Int64

	mu      sync.Mutex
	targets map[targetKey]*replyWatch // the watched reply targets; made on first use
}

// targetKey names a reply target: its PID's Address and Id (a PID has
// other fields, and PIDs are compared by these two).
type targetKey struct{ address, id string }

// replyWatch is one watched reply target: the calls running for it share ctx,
// cancelled when it terminates.
type replyWatch struct {
	key    targetKey
	ctx    context.Context
	cancel context.CancelFunc
	calls  int    // running calls registered here; guarded by callHandler.mu
	stop   func() // ends the watch
}

// nilCall answers a nil call message's sender, if any, with reply.
func nilCall(ctx protoactor.Context, reply any) {
	if ctx.Sender() == nil {
		ctx.Logger().Warn("snodo: a nil call message with no sender was dropped", "type", fmt.Sprintf("%T", ctx.Message()))
		return
	}
	ctx.Respond(reply)
}

// Handle answers ctx's message if it is a call message, and reports
// whether it was. Call it from the actor's Receive.
func (h *callHandler) Handle(ctx protoactor.Context) bool {
	sys, self := ctx.ActorSystem(), ctx.Self() // the goroutines must not touch ctx
	var (
		to     *protoactor.PID
		refuse func(error) any
		run    func(context.Context) any // runs the call and returns its reply
	)
	switch msg := ctx.Message().(type) {
	case *Call:
		if msg == nil { // a typed nil: nothing to run, nobody but the sender to tell
			nilCall(ctx, &Reply{Err: jsonrpc.NewLocalError(CodeInvalidParams, "a nil *snodo.Call was sent: send &snodo.Call{Method: …}")})
			return true
		}
		to = replyTarget(ctx, msg.ReplyTo, "Call", msg.Method)
		refuse = func(err error) any { return &Reply{Tag: msg.Tag, Err: err} }
		run = func(c context.Context) any { return runCall(c, sys, self, to, msg, h.Calls.requester()) }
	case *ToolCall:
		if msg == nil {
			nilCall(ctx, &ToolReply{Err: jsonrpc.NewLocalError(CodeInvalidParams, "a nil *snodo.ToolCall was sent: send &snodo.ToolCall{Name: …}")})
			return true
		}
		to = replyTarget(ctx, msg.ReplyTo, "ToolCall", msg.Name)
		refuse = func(err error) any { return &ToolReply{Tag: msg.Tag, Err: err} }
		run = func(c context.Context) any { return runToolCall(c, sys, self, to, msg, h.Calls) }
	case *ListenCall:
		if msg == nil {
			nilCall(ctx, &ListenReply{Err: jsonrpc.NewLocalError(CodeInvalidParams, "a nil *snodo.ListenCall was sent: send &snodo.ListenCall{Filter: …}")})
			return true
		}
		to = replyTarget(ctx, msg.ReplyTo, "ListenCall", "subscriptions/listen")
		refuse = func(err error) any { return &ListenReply{Tag: msg.Tag, Err: err} }
		listen := h.Listen
		if listen == nil {
			listen = func(context.Context, Filter, ...ListenOption) error {
				return jsonrpc.NewLocalError(CodeMethodNotFound, "this actor takes no ListenCall (its call handler has no Listen)")
			}
		}
		run = func(context.Context) any { return runListenCall(msg, to, listen) }
	default:
		return false
	}
	if to == nil {
		return true
	}
	if calls.Calls[RequestOption, Era](h.Calls).Requester() == nil {
		sendFrom(sys, self, to, refuse(jsonrpc.NewLocalError(CodeInternalError,
			"the callHandler of this actor has no client; set callHandler.Calls", errNoRequester)))
		return true
	}
	if err := h.admit(); err != nil {
		sendFrom(sys, self, to, refuse(err))
		return true
	}
	callCtx, t := h.watch(sys, to)
	logger := ctx.Logger()
	go func() {
		var reply any
		defer func() {
			// A panic (the call's own OnProgress, a requester of the
			// user's) must neither take the program down nor leave the
			// call unanswered.
			if r := recover(); r != nil {
				logger.Error("snodo: a call message panicked; answering it with -32603", "to", self, "panic", r,
					"stack", string(debug.Stack()))
				reply = refuse(jsonrpc.NewLocalError(CodeInternalError, fmt.Sprintf("the call panicked: %v", r)))
			}
			// The slot is free before the reply goes: a sender that
			// calls again as soon as it is answered is never refused.
			h.running.Add(-1)
			h.release(t)
			if reply != nil { // nil: sent already (a ListenCall's ListenReply)
				sendFrom(sys, self, to, reply)
			}
		}()
		c, slot := withOriginSlot(callCtx, h.Origin)
		reply = withOrigin(run(c), slot.get())
	}()
	return true
}

// watch registers one running call for its reply target to and returns
// the context it runs under: the target's, cancelled when to terminates.
// The first call of a target starts its watch; release ends it with the
// last. A protoactor future is not watched (t is nil): a Watch would be
// taken for its result.
func (h *callHandler) watch(sys *protoactor.ActorSystem, to *protoactor.PID) (context.Context, *replyWatch) {
	if isFuture(sys, to) {
		return context.Background(), nil
	}
	key := targetKey{to.Address, to.Id}
	h.mu.Lock()
	defer h.mu.Unlock()
	if t := h.targets[key]; t != nil {
		t.calls++
		return t.ctx, t
	}
	if h.targets == nil {
		h.targets = make(map[targetKey]*replyWatch)
	}
	t := &replyWatch{key: key, calls: 1}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	h.targets[key] = t
	// Under h.mu: the watcher's onExit takes it too, so it sees t set up.
	// WatchOwner only spawns; onExit runs later, on the watcher.
	t.stop = snodoactor.WatchOwner(sys, to, func() { h.gone(t) })
	return t.ctx, t
}

// gone cancels the calls of a target that terminated. The target leaves
// the table, so a call that comes later starts a watch of its own (which
// finds the target gone, and cancels it at once); the watcher itself is
// stopped by release, with the last call.
func (h *callHandler) gone(t *replyWatch) {
	h.mu.Lock()
	if h.targets[t.key] == t {
		delete(h.targets, t.key)
	}
	h.mu.Unlock()
	t.cancel()
}

// release ends one call of t; the last one ends the watch.
func (h *callHandler) release(t *replyWatch) {
	if t == nil {
		return
	}
	h.mu.Lock()
	t.calls--
	last := t.calls == 0
	if last && h.targets[t.key] == t {
		delete(h.targets, t.key)
	}
	h.mu.Unlock()
	if last {
		t.stop()
		t.cancel()
	}
}

// watchedTargets is how many reply targets have a watch (for tests).
func (h *callHandler) watchedTargets() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.targets)
}

// isFuture says whether pid is a protoactor future (RequestFuture's
// sender), which takes any system message, a Watch included, as its
// result. Futures are registered as "future$…"; an actor spawned under
// that prefix is still watched.
func isFuture(sys *protoactor.ActorSystem, pid *protoactor.PID) bool {
	if !strings.HasPrefix(pid.Id, "future$") {
		return false
	}
	p, ok := sys.ProcessRegistry.Get(pid)
	if !ok {
		return false // gone: watching it cancels the call at once
	}
	_, isActor := p.(*protoactor.ActorProcess)
	return !isActor
}

// admit takes a slot for one call, or says why there is none.
func (h *callHandler) admit() error {
	limit := int64(cmp.Or(h.Max, defaultMaxCallMessages))
	if h.running.Add(1) > limit {
		h.running.Add(-1)
		return jsonrpc.NewLocalError(CodeInternalError,
			fmt.Sprintf("%d call messages already running on this actor; send fewer at once or raise callHandler.Max", limit),
			ErrTooManyCalls)
	}
	return nil
}

func replyTarget(ctx protoactor.Context, replyTo *protoactor.PID, kind, name string) *protoactor.PID {
	if replyTo != nil {
		return replyTo
	}
	if s := ctx.Sender(); s != nil {
		return s
	}
	ctx.Logger().Warn("snodo: a *snodo."+kind+" with no sender and no ReplyTo was not run: send it with ctx.Request, or set ReplyTo",
		"call", name, "to", ctx.Self())
	return nil
}

// sendFrom sends msg to to with from, the actor the call was sent to, as
// its sender.
func sendFrom(sys *protoactor.ActorSystem, from, to *protoactor.PID, msg any) {
	sys.Root.RequestWithCustomSender(to, msg, from)
}

func callOptions(ctx context.Context, sys *protoactor.ActorSystem, from, to *protoactor.PID, tag any, opts []RequestOption, progress bool) []RequestOption {
	if !progress {
		return opts
	}
	return append(append([]RequestOption(nil), opts...), OnProgress(func(p Progress) {
		p.Tag, p.Origin = tag, originFrom(ctx)
		sendFrom(sys, from, to, &p)
	}))
}

func runCall(ctx context.Context, sys *protoactor.ActorSystem, from, to *protoactor.PID, msg *Call, r requester) *Reply {
	res, err := r.Request(ctx, msg.Method, msg.Params,
		callOptions(ctx, sys, from, to, msg.Tag, msg.Options, msg.Progress)...)
	return &Reply{Tag: msg.Tag, Result: res, Err: err}
}

func runToolCall(ctx context.Context, sys *protoactor.ActorSystem, from, to *protoactor.PID, msg *ToolCall, calls Calls) *ToolReply {
	res, err := calls.CallTool(ctx, msg.Name, msg.Args,
		callOptions(ctx, sys, from, to, msg.Tag, msg.Options, msg.Progress)...)
	return &ToolReply{Tag: msg.Tag, Result: res, Err: err}
}

// answered holds the actor systems whose dead letters answerDeadCalls
// watches, so each is watched once. Its keys are weak: a system that is
// shut down and dropped is collected, and its entry removed.
var answered sync.Map // weak.Pointer[protoactor.ActorSystem] → *unwrapper

// unwrapper finds the call message inside a message that carries one (a
// servers.To: a router registers it for its system) and the server it
// names; nil until one is registered.
type unwrapper = atomic.Pointer[func(msg any) (call any, server string, ok bool)]

// answerDeadCalls makes sure a call message sent to an actor of sys that
// has stopped still gets its one reply: a -32000 *Error wrapping
// ErrConnectionClosed. It answers the dead letters of sys; an actor of
// yours that takes call messages must make the ones still in its mailbox
// when it stops dead letters too (protoactor-go drops them): spawn it
// with life.Life (internal/life), as snodo's actors are. (protoactor-go also sends the sender an
// *actor.DeadLetterResponse; ignore it.) Connect and the supervisor
// package call it for the systems they use (through internal/connopts).
// Idempotent.
func answerDeadCalls(sys *protoactor.ActorSystem) { answerDeadCallsIn(sys, nil) }

// answerDeadCallsIn is answerDeadCalls, finding a call message inside
// another with unwrap (nil: none) from now on.
func answerDeadCallsIn(sys *protoactor.ActorSystem, unwrap func(msg any) (call any, server string, ok bool)) {
	if sys == nil {
		return // no system, no dead letters
	}
	key := weak.Make(sys)
	v, loaded := answered.LoadOrStore(key, new(unwrapper))
	wrapped := v.(*unwrapper)
	if unwrap != nil {
		wrapped.Store(&unwrap)
	}
	if loaded {
		return
	}
	runtime.AddCleanup(sys, func(key weak.Pointer[protoactor.ActorSystem]) { answered.Delete(key) }, key)
	sys.EventStream.Subscribe(func(ev any) {
		dl, ok := ev.(*protoactor.DeadLetterEvent)
		if !ok {
			return
		}
		gone := func() error {
			return jsonrpc.ClosedError(fmt.Errorf("actor %s has stopped", dl.PID.GetId()))
		}
		msg := dl.Message
		// The stopped actor's Origin, as on its live replies; a
		// servers.To to a router names its server.
		origin := origins.Dead(sys, dl.PID)
		if unwrap := wrapped.Load(); unwrap != nil {
			if inner, server, ok := (*unwrap)(msg); ok {
				msg, origin = inner, Origin{Server: server}
			}
		}
		switch m := msg.(type) {
		case *Call:
			if to := cmpPID(m.ReplyTo, dl.Sender); to != nil {
				sendFrom(sys, dl.PID, to, &Reply{Tag: m.Tag, Err: gone(), Origin: origin})
			}
		case *ToolCall:
			if to := cmpPID(m.ReplyTo, dl.Sender); to != nil {
				sendFrom(sys, dl.PID, to, &ToolReply{Tag: m.Tag, Err: gone(), Origin: origin})
			}
		case *ListenCall:
			if to := cmpPID(m.ReplyTo, dl.Sender); to != nil {
				sendFrom(sys, dl.PID, to, &ListenReply{Tag: m.Tag, Err: gone(), Origin: origin})
			}
		}
	})
}

func cmpPID(a, b *protoactor.PID) *protoactor.PID {
	if a != nil {
		return a
	}
	return b
}

// quiet, embedded in a message type, keeps that message out of
// protoactor's dead-letter log when its receiver is gone: the methods
// protoactor looks for are plumbing, not part of the message's API.
type quiet struct{}

// IgnoreDeadLetterLogging marks the message for protoactor.
func (quiet) IgnoreDeadLetterLogging() {}

// ListenCall is Listen as a message: sent with ctx.Request (or with
// ReplyTo) to the PID of a *Client, a supervisor.Client or a
// supervisor.Pool, it opens a subscription without blocking any mailbox
// while the server acknowledges it. The reply target (ReplyTo, else the
// sender) receives exactly one *ListenReply first, then, if it opened,
// the subscription's events as ListenTo delivers them: a
// *SubscriptionEvent per event, in order (restart markers included on a
// supervised client or pool), then one *SubscriptionEnded. The
// subscription watches the reply target and is cancelled on the server
// when it terminates; Close the ListenReply's Subscription to end it
// sooner.
type ListenCall struct {
	quiet
	Filter  Filter
	Tag     any            // returned in the ListenReply
	Options []ListenOption // MaxQueued; the events go to the reply target
	ReplyTo *protoactor.PID
}

// ListenReply answers a *ListenCall, before any of its events.
// Subscription is what was opened (a supervised client's or a pool's
// follows restarts): Close it to cancel the subscription. Err says why it could not be opened, as Listen would
// return it; then no event and no SubscriptionEnded follow.
type ListenReply struct {
	quiet
	Tag          any
	Subscription *Subscription
	Err          error
	Origin       // the server that holds the subscription (see Origin)
}

// listenOpened has the subscription send the reply target its
// ListenReply once it is open, before its first event: sent after Listen
// returned, the reply could come after events already posted.
func listenOpened(tag any) ListenOption {
	return listening.NewOption(func(o *listening.Settings) error {
		o.Opened = func(sub *listening.Sub, origin Origin) listening.Message {
			return &ListenReply{Tag: tag, Subscription: (*Subscription)(sub), Origin: origin}
		}
		return nil
	})
}

func runListenCall(msg *ListenCall, to *protoactor.PID, listen listenFunc) any {
	opts := append(append([]ListenOption(nil), msg.Options...), ListenTo(to), listenOpened(msg.Tag))
	// The subscription outlives the call: its owner is the reply target
	// (ListenTo watches it), not the call's ctx, which ends with the call.
	if err := listen(context.Background(), msg.Filter, opts...); err != nil {
		return &ListenReply{Tag: msg.Tag, Err: err}
	}
	return nil // the subscription sent the ListenReply before its events
}

// listenFunc opens a subscription, as Client.Listen does; see
// callHandler.Listen. It must honour ListenTo and
// the ListenReply the call's option asks for, which send the
// subscription's messages.
type listenFunc func(ctx context.Context, f Filter, opts ...ListenOption) error

// SubscriptionEvent is the message an actor given to ListenTo receives
// for each event, in order. It is not a second name for Event: it holds
// the Event and what a reader of Subscription.Events knows already but
// one mailbox does not, the subscription it came on (an actor may hold
// several) and the server that sent it.
type SubscriptionEvent struct {
	quiet
	Subscription *Subscription
	Event
	Origin // the server that sent it (see Origin)
}

// SubscriptionEnded is the last message an actor given to ListenTo
// receives from a subscription, after its last event: Err is
// Subscription.Err() (nil after a graceful end). It is not sent when
// Listen failed.
type SubscriptionEnded struct {
	quiet
	Subscription *Subscription
	Err          error
	Origin       // the server that held it (see Origin)
}

// subscriptionMessage builds the ListenTo actor's messages.
func subscriptionMessage(s *Subscription, ev *Event, err error, origin Origin) any {
	if ev != nil {
		return &SubscriptionEvent{Subscription: s, Event: *ev, Origin: origin}
	}
	return &SubscriptionEnded{Subscription: s, Err: err, Origin: origin}
}

// NotificationsTo returns a notification handler that posts each
// notification to the actor pid as a *Notification of its own, in order,
// with its Origin set to the server that sent it. It
// does not wait for the actor: with an ordinary (unbounded) mailbox an
// actor that falls behind grows its mailbox; give the actor a bounded
// mailbox (protoactor's mailbox.Bounded) to make delivery wait for room,
// so that the notification queue's bound holds end to end. Messages to a
// pid that is not running go to the system's dead letters.
//
// To tell several clients apart, give each its own actor, or wrap the
// returned handler. With a nil system or pid it returns nil, which
// WithNotificationHandler refuses.
func NotificationsTo(system *protoactor.ActorSystem, pid *protoactor.PID) func(ctx context.Context, n *Notification) {
	if system == nil || pid == nil {
		return nil
	}
	return func(ctx context.Context, n *Notification) {
		m := *n
		m.Origin = originOf(ctx)
		system.Root.Send(pid, &m)
	}
}

// TaskStatusTo is an OnTaskStatus function that sends each status to pid
// as a *TaskStatus (a copy of its own). A nil system or pid gives nil (no
// updates).
func TaskStatusTo(system *protoactor.ActorSystem, pid *protoactor.PID) func(TaskStatus) {
	if system == nil || pid == nil {
		return nil
	}
	return func(s TaskStatus) { system.Root.Send(pid, &s) }
}

// Connected is the message ConnectTo sends when Connect has finished:
// Client is set on success, Err otherwise.
type Connected struct {
	quiet
	Client *Client
	Err    error
}

// CallHandler returns the Handle of a new call-message handler, lent to
// package supervisor through internal/connopts' CallHandler (a config
// does no work of its own here: its type is how connopts reaches the
// root, typed).
func (*config) CallHandler(calls Calls, origin Origin, listen func(context.Context, Filter, ...ListenOption) error) func(protoactor.Context) bool {
	h := &callHandler{Calls: calls, Origin: origin, Listen: listen}
	return h.Handle
}

// AnswerDeadCalls is answerDeadCallsIn, lent to package supervisor and
// servers through internal/connopts' AnswerDeadCalls.
func (*config) AnswerDeadCalls(sys *protoactor.ActorSystem, unwrap func(msg any) (call any, server string, ok bool)) {
	answerDeadCallsIn(sys, unwrap)
}

var (
	_ connopts.CallServer[Calls, ListenOption] = (*config)(nil)
	_ connopts.DeadCalls                       = (*config)(nil)
)
