package snodo

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/snodo/snodo/internal/recovered"
	"github.com/snodo/snodo/internal/telemetry"
)

// Notification is a notification the server sent that no request or
// subscription claimed: log messages, legacy-era list_changed and
// resources/updated notifications no Listen asked for,
// elicitation/complete, and any other method. Params is raw JSON (nil
// when absent) and the handler's to keep: decode the common ones with
// json.Unmarshal into a LogMessage (Method "notifications/message") or an
// ElicitationComplete ("notifications/elicitation/complete").
//
// The same type is what an actor receives through NotificationsTo, with
// Origin set to the server that sent it (WithOrigin; a supervisor's
// names); a handler's ctx carries that too, and Origin is left empty
// there.
type Notification struct {
	Method string
	Params json.RawMessage
	Origin // the sender, on what NotificationsTo delivers
}

// Notification methods a server sends outside any request or
// subscription.
const (
	methodLogMessage           = "notifications/message"
	methodToolsListChanged     = "notifications/tools/list_changed"
	methodPromptsListChanged   = "notifications/prompts/list_changed"
	methodResourcesListChanged = "notifications/resources/list_changed"
	methodResourceUpdated      = "notifications/resources/updated"
	methodElicitationComplete  = "notifications/elicitation/complete"
)

// notificationHandler receives the notifications no request or
// subscription claims; see WithNotificationHandler.
type notificationHandler func(ctx context.Context, n *Notification)

// LogMessage is a server log message, sent at the level SetLoggingLevel
// asked for and above: the params of a notifications/message Notification
// (decode its Params into one with json.Unmarshal). Data is any JSON
// value: a JSON string for most servers (json.Unmarshal it into a string
// to print it), any other value as the server logged it.
type LogMessage struct {
	Level  LoggingLevel    `json:"level"`
	Logger string          `json:"logger,omitempty"`
	Data   json.RawMessage `json:"data"`
}

// ResourceUpdated says the resource at URI changed: the params of
// notifications/resources/updated, which a subscription with
// Filter.ResourceSubscriptions delivers as an Event in both eras (decode
// its Params into one with json.Unmarshal). Read the resource again with
// ReadResource.
type ResourceUpdated struct {
	URI string `json:"uri"`
}

// ElicitationComplete says the URL-mode elicitation ElicitationID
// finished out of band: the params of a
// notifications/elicitation/complete Notification (decode its Params
// into one with json.Unmarshal).
type ElicitationComplete struct {
	ElicitationID string `json:"elicitationId"`
}

// Defaults of the notification queue (WithNotificationQueue).
const (
	defaultNotificationQueueItems = 1024
	defaultNotificationQueueBytes = 8 << 20
)

// WithNotificationHandler receives every notification the server sends
// that no request (progress) or subscription (Listen) claims: log
// messages, legacy-era list_changed and resources/updated notifications
// no Listen asked for, elicitation/complete, and any other method. Without it they are
// dropped (debug log).
//
// Delivery is in the order the server sent them, one at a time, on a
// goroutine of its own, never on the connection's reader: a slow handler
// never delays responses, progress or subscriptions. Between the reader
// and the handler sits a bounded queue (WithNotificationQueue; default
// 1024 notifications and 8 MiB
// of params). When it is full, the
// notification that arrives is dropped: it is counted (the metric
// snodo.client.notifications.dropped, reason "queue_full") and logged to
// WithLogger at warn level,
// once when dropping starts and once with the count when delivery
// resumes. So memory stays bounded whatever the server sends.
//
// ctx is done once the connection stops; notifications already queued
// are still delivered after that, with ctx done. With tracing on, ctx
// carries the span of the handler's run (docs/observability.md). A
// handler that panics is
// logged and the next notification is delivered. To handle them in an
// actor, pass NotificationsTo.
//
// In the modern era, list_changed and resources/updated notifications
// belong to a subscription (Listen) and must carry its id; one that does
// not (mcp-go v1.2.1 sends such) is dropped, with one warning per
// connection.
func WithNotificationHandler(h func(ctx context.Context, n *Notification)) Option {
	return func(c *config) error {
		if h == nil {
			return fmt.Errorf("WithNotificationHandler: nil handler (NotificationsTo makes none without an actor system and a PID)")
		}
		c.mcp.notify = h
		return nil
	}
}

// WithNotificationQueue bounds the notifications waiting for the
// WithNotificationHandler handler: at most items of them, holding at
// most bytes of params between them (one larger notification is still
// taken when the queue is empty). Past either bound new notifications are
// dropped, counted and logged.
func WithNotificationQueue(items, bytes int) Option {
	return func(c *config) error {
		if items < 1 || bytes < 1 {
			return fmt.Errorf("WithNotificationQueue: %d items and %d bytes must both be at least 1", items, bytes)
		}
		c.mcp.notifyItems, c.mcp.notifyBytes = items, bytes
		return nil
	}
}

// notifier is the client's notification path: the connection's
// OnNotification hook pushes, one drain goroutine (started when the queue
// fills from empty, gone when it empties) delivers.
type notifier struct {
	origin   Origin // the client's, for NotificationsTo
	handler  notificationHandler
	logger   *slog.Logger
	maxItems int
	maxBytes int
	meters   *telemetry.Conn // counts drops by reason; nil when metrics are off
	// observe traces and times a handler run (Client.notificationReceived):
	// ctx for the handler, and the function that ends it (nil: nothing
	// to end).
	observe func(context.Context, *Notification) (context.Context, func(panicked bool))

	modern     atomic.Bool // the settled era is EraModern; false while negotiating
	warnedTags atomic.Bool // warned about untagged subscription notifications

	mu       sync.Mutex
	queue    []*Notification // oldest first
	ctxs     []context.Context
	bytes    int
	draining bool
	idle     []chan struct{} // flush callers, closed when the queue empties
	dropped  uint64          // since the client started
	dropRun  uint64          // since the last delivery resumed
}

func newNotifier(cfg *mcpConfig, logger *slog.Logger) *notifier {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &notifier{
		handler:  cfg.notify,
		logger:   logger,
		maxItems: cmp.Or(cfg.notifyItems, defaultNotificationQueueItems),
		maxBytes: cmp.Or(cfg.notifyBytes, defaultNotificationQueueBytes),
	}
}

// subscriptionOnly: in the modern era these arrive only on a
// subscriptions/listen stream, tagged with its id.
func subscriptionOnly(method string) bool {
	switch method {
	case methodToolsListChanged, methodPromptsListChanged,
		methodResourcesListChanged, methodResourceUpdated:
		return true
	}
	return false
}

// push is the connection's OnNotification hook: it runs on the reader
// goroutine and never blocks.
func (q *notifier) push(ctx context.Context, method string, params json.RawMessage) {
	if q.modern.Load() && subscriptionOnly(method) {
		q.meters.Dropped("untagged")
		if q.warnedTags.CompareAndSwap(false, true) {
			q.logger.Warn("snodo: dropped a subscription notification without the io.modelcontextprotocol/subscriptionId _meta the protocol requires; the server does not tag its subscriptions/listen events (further ones are dropped without a warning)",
				"method", method)
		} else {
			q.logger.Debug("snodo: dropped an untagged subscription notification", "method", method)
		}
		return
	}
	if q.handler == nil {
		q.meters.Dropped("unclaimed")
		q.logger.Debug("snodo: dropped a server notification (no WithNotificationHandler)", "method", method)
		return
	}
	size := len(params)
	q.mu.Lock()
	if len(q.queue) >= q.maxItems || (len(q.queue) > 0 && q.bytes+size > q.maxBytes) {
		q.dropped++
		q.dropRun++
		first := q.dropRun == 1
		q.mu.Unlock()
		q.meters.Dropped("queue_full")
		if first {
			q.logger.Warn("snodo: the notification handler fell behind and its queue is full; dropping notifications until it catches up",
				"method", method, "max_items", q.maxItems, "max_bytes", q.maxBytes)
		}
		return
	}
	resumed := q.dropRun
	q.dropRun = 0
	q.queue = append(q.queue, &Notification{Method: method, Params: params})
	q.ctxs = append(q.ctxs, ctx)
	q.bytes += size
	start := !q.draining
	q.draining = true
	q.mu.Unlock()
	if resumed > 0 {
		q.logger.Warn("snodo: the notification handler caught up; notifications were dropped while its queue was full",
			"dropped", resumed)
	}
	if start {
		go q.drain()
	}
}

// drain delivers queued notifications in order until the queue is empty.
func (q *notifier) drain() {
	for {
		q.mu.Lock()
		if len(q.queue) == 0 {
			q.queue, q.ctxs = nil, nil // let the backing arrays go
			q.draining = false
			for _, ch := range q.idle {
				close(ch)
			}
			q.idle = nil
			q.mu.Unlock()
			return
		}
		n, ctx := q.queue[0], q.ctxs[0]
		q.queue[0], q.ctxs[0] = nil, nil
		q.queue, q.ctxs = q.queue[1:], q.ctxs[1:]
		q.bytes -= len(n.Params)
		q.mu.Unlock()
		q.deliver(ctx, n)
	}
}

func (q *notifier) deliver(ctx context.Context, n *Notification) {
	var end func(panicked bool)
	if q.observe != nil {
		ctx, end = q.observe(ctx, n)
	}
	if q.origin != (Origin{}) {
		ctx = context.WithValue(ctx, notifyOriginKey{}, q.origin)
	}
	defer func() {
		r := recover()
		if r != nil {
			recovered.Log(q.logger, "snodo: the notification handler panicked; delivering the next one", r, "method", n.Method)
		}
		if end != nil {
			end(r != nil)
		}
	}()
	q.handler(ctx, n)
}

// flush waits until the queue is empty and no handler runs.
func (q *notifier) flush(ctx context.Context) error {
	q.mu.Lock()
	if !q.draining {
		q.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	q.idle = append(q.idle, ch)
	q.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (q *notifier) droppedCount() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}
