package snodo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/calls"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/mcpmethod"
	"github.com/snodo/snodo/internal/recovered"
)

// Tasks: a tool call the server runs in the background and the client
// polls. Two wire forms, one Task:
//
//   - legacy (2025-11-25 core tasks): tools/call carries a "task" param
//     and the server answers {"task": {…}}; tasks/get polls the status,
//     tasks/result fetches the result once the status is terminal (and,
//     at input_required, carries the server's requests, which the
//     server-request handler answers as any other); tasks/cancel.
//   - modern (the io.modelcontextprotocol/tasks extension): every
//     request declares the extension in its _meta capabilities when the
//     server advertised it; the server alone decides to answer a
//     tools/call with resultType "task"; tasks/get carries the result,
//     the error or the input requests inline; tasks/update answers the
//     input requests; tasks/cancel.
//
// One goroutine per task polls until the task ends, honouring the
// server's poll interval (never sooner, spread by a random quarter so
// that tasks created together do not poll together), bounded by the
// task's owner ctx, its TTL and its client's life.

// Task statuses (TaskStatus.Status, as the specification spells them).
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// Poll interval bounds.
const (
	// defaultTaskPollInterval is how often a task is polled when the
	// server suggests no interval.
	defaultTaskPollInterval = time.Second
	// minTaskPollInterval is the shortest interval a task is polled at,
	// whatever the server suggests: 1,000 tasks poll at most 10,000 times
	// a second between them.
	minTaskPollInterval = 100 * time.Millisecond
)

// Errors of a task, for errors.Is.
var (
	// ErrTaskCancelled: the task was cancelled (Cancel, or the server
	// reports it cancelled).
	ErrTaskCancelled = errors.New("snodo: the task was cancelled")
	// ErrTaskExpired: the task was not done when its TTL, counted from
	// its creation, ran out; the server may have discarded it. Ask for a
	// longer one with TaskTTL (legacy era).
	ErrTaskExpired = errors.New("snodo: the task outlived its TTL")
	// ErrTaskLost: the server that held the task went away (a supervised
	// client restarted it, a pool member left); the task went with it.
	ErrTaskLost = errors.New("snodo: the task was lost with its server")
)

// TaskStatus is what the server last said about a task.
type TaskStatus struct {
	TaskID        string
	Status        string // "working", "input_required", "completed", "failed" or "cancelled"
	StatusMessage string // the server's words, for display
	CreatedAt     string // ISO 8601, as the server sent it
	LastUpdatedAt string
	TTL           time.Duration // from creation; 0 unlimited or not said
	PollInterval  time.Duration // suggested; 0 not said
}

// Terminal reports whether the status is final: completed, failed or
// cancelled.
func (s TaskStatus) Terminal() bool {
	return s.Status == taskCompleted || s.Status == taskFailed || s.Status == taskCancelled
}

// TaskTTL asks the server to keep a task (and its result) for d after
// its creation (legacy era: the task param's ttl; the server may choose
// another). The TTL the server grants also bounds the wait: a task not
// done by then fails with ErrTaskExpired. Other calls ignore it.
func TaskTTL(d time.Duration) RequestOption {
	return calls.Duration[Progress, TaskStatus](calls.KeyTaskTTL, d)
}

// OnTaskStatus runs fn for each new status of a task (a status or status
// message that changed), in order, on the task's own goroutine; the final
// status comes once the result is settled, so Wait returns at once by
// then. A panic in fn is logged and fn is not called again. CallTool
// honours it too when it runs a tool as a task. Other calls ignore it.
func OnTaskStatus(fn func(TaskStatus)) RequestOption {
	return calls.OnTaskStatus[Progress](fn)
}

// Task is a tool call the server runs as a task. Its methods are safe for
// concurrent use.
type Task struct {
	id    string
	tool  string
	calls Calls
	era   Era
	get   json.RawMessage // {"taskId": …}, the params of tasks/get, tasks/result and tasks/cancel

	onStatus func(TaskStatus) // nil once it panicked
	ctx      context.Context  // the owner's, ended by finish
	stop     context.CancelFunc
	owner    context.Context
	born     time.Time // when the client learnt of the task: the TTL counts from here

	done   chan struct{}
	exited chan struct{} // closed once the final status was emitted
	once   sync.Once
	result *CallToolResult
	err    error

	mu       sync.Mutex
	status   TaskStatus
	answered map[string]bool // modern: input requests already answered
}

// ID is the task's ID on the server; "" when the server answered the
// call at once instead of creating a task (Wait then returns that
// result).
func (t *Task) ID() string { return t.id }

// Status is the task's latest known status.
func (t *Task) Status() TaskStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status
}

// Done is closed once the task's outcome is settled (Wait returns at
// once).
func (t *Task) Done() <-chan struct{} { return t.done }

// Wait waits until the task ends and returns what the tool call
// returned: the tool's result (a tool that failed is a result with
// IsError set), or the error: the server's *Error for a failed task, one
// wrapping ErrTaskCancelled, ErrTaskExpired or ErrTaskLost, a -32000
// when the server went away, or, when the ctx that owns the task
// (CallToolAsTask's) ended, one wrapping both ErrTaskCancelled and the
// ctx's error. When ctx ends first Wait returns ctx's error and
// the task goes on.
func (t *Task) Wait(ctx context.Context) (*CallToolResult, error) {
	select {
	case <-t.done:
		return t.result, t.err
	case <-ctx.Done():
		select {
		case <-t.done:
			return t.result, t.err
		default:
		}
		return nil, fmt.Errorf("snodo: waiting for task %s of tool %s: %w", t.id, t.tool, ctx.Err())
	}
}

// Cancel asks the server to cancel the task (tasks/cancel) and ends it:
// Wait returns an error wrapping ErrTaskCancelled. A task already done
// is left as it is (nil). If the server refuses (the task ended
// meanwhile, say), Cancel returns its error and the task goes on to its
// outcome.
func (t *Task) Cancel(ctx context.Context) error {
	select {
	case <-t.done:
		return nil
	default:
	}
	if _, err := t.calls.requester().Request(ctx, "tasks/cancel", t.get); err != nil {
		select {
		case <-t.done:
			return nil
		default:
		}
		return fmt.Errorf("snodo: cancelling task %s of tool %s: %w", t.id, t.tool, err)
	}
	t.finish(nil, fmt.Errorf("%w: task %s of tool %s, by Cancel", ErrTaskCancelled, t.id, t.tool), taskCancelled, "")
	return nil
}

// CallToolAsTask calls the tool name with args (as CallTool takes them)
// as a task and returns once the server has created it; Wait gives the
// result. Legacy era: the call asks for a task (TaskTTL sets its TTL)
// when the server declared that it runs tools/call as tasks; modern era:
// the server alone decides. A call answered at once (no task) gives a
// Task already done, with ID "". Input the task needs is
// answered by the server-request handler on the one bounded handler
// path (legacy: the server's own requests; modern: the task's
// inputRequests, answered with tasks/update). OnTaskStatus receives each
// status.
//
// ctx bounds the call that creates the task and owns the task: when it
// is done the task is cancelled on the server and Wait fails with ctx's
// error. Bound a wait alone with Wait's own ctx.
func (c Calls) CallToolAsTask(ctx context.Context, name string, args any, opts ...RequestOption) (*Task, error) {
	params, err := callToolParams(name, args)
	if err != nil {
		return nil, err
	}
	if c, err = c.forTask(ctx); err != nil {
		return nil, err
	}
	return c.createTask(ctx, name, params, opts)
}

// createTask sends tools/call asking for a task (legacy era: the task
// param) and starts the task from the answer.
func (c Calls) createTask(ctx context.Context, name string, params json.RawMessage, opts []RequestOption) (*Task, error) {
	if c.requester().Era() == EraLegacy && tasksForToolCalls(c.requester()) {
		params = withTaskParam(params, settingsOf(opts...).TaskTTL)
	}
	raw, err := c.requestWithInput(ctx, "tools/call", params, opts)
	if err != nil {
		return nil, err
	}
	return c.startTask(ctx, name, raw, opts)
}

// tasksForToolCalls reports whether a legacy server declared that it
// runs tools/call as tasks (capabilities.tasks.requests.tools.call); a
// client must not ask one that did not. A requester that cannot tell is
// asked.
func tasksForToolCalls(r requester) bool {
	caps, ok := r.(interface{ Capabilities() ServerCapabilities })
	if !ok {
		return true
	}
	t := caps.Capabilities().Tasks
	if t == nil {
		return false
	}
	var req struct {
		Tools *struct {
			Call json.RawMessage `json:"call"`
		} `json:"tools"`
	}
	return json.Unmarshal(t.Requests, &req) == nil && req.Tools != nil && req.Tools.Call != nil
}

// withTaskParam adds "task": {"ttl": ms} (or {}) to tools/call params.
func withTaskParam(params json.RawMessage, ttl time.Duration) json.RawMessage {
	p := make(json.RawMessage, 0, len(params)+32)
	p = append(p, params[:len(params)-1]...)
	p = append(p, `,"task":{`...)
	if ttl > 0 {
		p = append(p, `"ttl":`...)
		p = strconv.AppendInt(p, ttl.Milliseconds(), 10)
	}
	return append(p, "}}"...)
}

// wireTask is a task as either era sends it.
type wireTask struct {
	TaskID         string                  `json:"taskId"`
	Status         string                  `json:"status"`
	StatusMessage  string                  `json:"statusMessage"`
	CreatedAt      string                  `json:"createdAt"`
	LastUpdatedAt  string                  `json:"lastUpdatedAt"`
	TTL            *float64                `json:"ttl"`
	TTLMs          *float64                `json:"ttlMs"`
	PollInterval   *float64                `json:"pollInterval"`
	PollIntervalMs *float64                `json:"pollIntervalMs"`
	Result         json.RawMessage         `json:"result"`
	Error          json.RawMessage         `json:"error"`
	InputRequests  map[string]inputRequest `json:"inputRequests"`
}

func millis(ms ...*float64) time.Duration {
	for _, v := range ms {
		if v != nil && *v > 0 {
			return time.Duration(*v * float64(time.Millisecond))
		}
	}
	return 0
}

func (w *wireTask) status() TaskStatus {
	return TaskStatus{
		TaskID: w.TaskID, Status: w.Status, StatusMessage: w.StatusMessage,
		CreatedAt: w.CreatedAt, LastUpdatedAt: w.LastUpdatedAt,
		TTL: millis(w.TTL, w.TTLMs), PollInterval: millis(w.PollInterval, w.PollIntervalMs),
	}
}

// createdTask reads a tools/call answer: the task it created (legacy:
// the "task" member; modern: resultType "task"), or nil for a result
// given at once.
func createdTask(raw json.RawMessage) (*wireTask, error) {
	member, err := jsonrpc.Member(raw, "task")
	if err != nil {
		return nil, err
	}
	if len(member) == 0 {
		if rt, _ := jsonrpc.Member(raw, "resultType"); string(rt) != `"`+resultTask+`"` {
			return nil, nil
		}
		member = raw
	}
	w := new(wireTask)
	if err := json.Unmarshal(member, w); err != nil {
		return nil, err
	}
	if w.TaskID == "" {
		return nil, errors.New("the task has no taskId")
	}
	return w, nil
}

// startTask starts the task a tools/call answer created, or a Task
// already done with the result given at once.
func (c Calls) startTask(ctx context.Context, name string, raw json.RawMessage, opts []RequestOption) (*Task, error) {
	w, err := createdTask(raw)
	if err != nil {
		return nil, fmt.Errorf("snodo: tools/call %s: malformed task: %w", name, err)
	}
	s := settingsOf(opts...)
	t := &Task{tool: name, calls: c, era: c.requester().Era(), onStatus: s.OnTaskStatus, owner: ctx,
		born: time.Now(), done: make(chan struct{}), exited: make(chan struct{})}
	if w == nil {
		res := new(CallToolResult)
		if err := decodeCallTool(raw, res, nil); err != nil {
			return nil, malformedResult("tools/call "+name, err)
		}
		t.status = TaskStatus{Status: taskCompleted}
		t.finish(res, nil, taskCompleted, "")
		t.emit(t.status)
		close(t.exited)
		return t, nil
	}
	t.id, t.status = w.TaskID, w.status()
	t.get = jsonrpc.AppendString([]byte(`{"taskId":`), t.id)
	t.get = append(t.get, '}')
	t.ctx, t.stop = context.WithCancel(ctx)
	t.emit(t.status)
	go t.run(w)
	return t, nil
}

// finish settles the outcome once; the first wins.
func (t *Task) finish(res *CallToolResult, err error, status, message string) {
	t.once.Do(func() {
		t.mu.Lock()
		if status != "" {
			t.status.Status = status
			if message != "" {
				t.status.StatusMessage = message
			}
		}
		t.mu.Unlock()
		t.result, t.err = res, err
		close(t.done) // before the ctx ends: the poller then sees it done, not abandoned
		if t.stop != nil {
			t.stop()
		}
	})
}

// emit hands a status to OnTaskStatus, on the task's goroutine.
func (t *Task) emit(s TaskStatus) {
	if t.onStatus == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			t.onStatus = nil
			recovered.Log(slog.Default(), "snodo: an OnTaskStatus function panicked; it is not called again for this task", r,
				"task", t.id, "tool", t.tool)
		}
	}()
	t.onStatus(s)
}

// declareTasks adds the tasks extension to the client capabilities of a
// modern _meta (for a server that advertised it), keeping what the
// caller declared.
func declareTasks(meta map[string]json.RawMessage, cfg *mcpConfig) {
	caps := cfg.capabilities
	caps.Extensions = maps.Clone(caps.Extensions)
	if caps.Extensions == nil {
		caps.Extensions = map[string]json.RawMessage{}
	}
	if _, ok := caps.Extensions[mcpmethod.TasksExtension]; !ok {
		caps.Extensions[mcpmethod.TasksExtension] = json.RawMessage("{}")
	}
	meta[metaClientCapabilities], _ = json.Marshal(caps) // as buildMeta: cannot fail
}

// notificationTaskStatus is the legacy server's push of a task's status.
const notificationTaskStatus = "notifications/tasks/status"

// taskRegistry routes legacy notifications/tasks/status to the tasks a
// connection polls: a notification stands for a poll (its status is
// taken in at once, and a terminal one settles the task) without waiting
// for the interval. The notification still reaches the notification
// handler.
type taskRegistry struct {
	mu sync.Mutex
	m  map[string]chan *wireTask
}

// add registers a task; the channel holds the latest status pushed.
func (r *taskRegistry) add(id string) chan *wireTask {
	ch := make(chan *wireTask, 1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]chan *wireTask{}
	}
	r.m[id] = ch
	return ch
}

func (r *taskRegistry) remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, id)
}

// push hands a status to its task, replacing one not yet taken; never
// blocks (the reader calls it).
func (r *taskRegistry) push(params json.RawMessage) {
	r.mu.Lock()
	n := len(r.m)
	r.mu.Unlock()
	if n == 0 {
		return
	}
	w := new(wireTask)
	if json.Unmarshal(params, w) != nil || w.TaskID == "" || w.Status == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := r.m[w.TaskID]
	if ch == nil {
		return
	}
	select {
	case <-ch: // an older status not taken yet: the newer wins
	default:
	}
	ch <- w // room for one: only push sends, under mu
}

// onNotification is the connection's notification hook: a task's status
// to its task, a list change or resource update to the legacy-era
// subscriptions that want it, then everything they did not claim to the
// notifier.
func (c *Client) onNotification(ctx context.Context, method string, params json.RawMessage) {
	if method == notificationTaskStatus {
		c.tasks.push(params)
	}
	if c.listens.claim(method, params) {
		return
	}
	c.notes.push(ctx, method, params)
}

// registryOf is the registry of the connection r sends to, if any.
func registryOf(r requester) *taskRegistry {
	switch r := r.(type) {
	case *Client:
		return &r.tasks
	case pinned:
		return &r.conn.tasks
	}
	return nil
}

// liveness is what a requester that can stop offers (Client, supervised
// clients, pools): a task stops waiting as soon as its requester is
// gone.
type liveness interface {
	Done() <-chan struct{}
	Err() error
}

// run polls the task until it ends, then emits its final status.
func (t *Task) run(w *wireTask) {
	defer func() {
		t.emit(t.Status())
		close(t.exited)
	}()
	var gone <-chan struct{}
	l, canEnd := t.calls.requester().(liveness)
	if canEnd {
		gone = l.Done()
	}
	var pushed chan *wireTask // statuses the server pushes (legacy)
	if reg := registryOf(t.calls.requester()); reg != nil && t.era == EraLegacy {
		pushed = reg.add(t.id)
		defer reg.remove(t.id)
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for first := true; ; first = false {
		// A task created in a terminal status carries no outcome: poll
		// for it at once.
		early := first && w.status().Terminal()
		if !early && t.step(w) {
			return
		}
		wait, expired := t.nextPoll(first)
		if early {
			wait = 0
		}
		if expired {
			t.expire()
			return
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case w = <-pushed:
			timer.Stop() // no stale tick after Stop (Go 1.23 timers)
			continue     // taken in as a poll's answer would be
		case <-t.ctx.Done():
			t.ended()
			return
		case <-gone:
			t.finish(nil, fmt.Errorf("snodo: task %s of tool %s: %w", t.id, t.tool, jsonrpc.ClosedError(l.Err())), "", "")
			return
		}
		var err error
		if w, err = t.poll(); err != nil {
			if t.ctx.Err() != nil {
				t.ended()
				return
			}
			t.finish(nil, fmt.Errorf("snodo: polling task %s of tool %s: %w", t.id, t.tool, err), "", "")
			return
		}
	}
}

// ended handles the task's ctx ending: by finish (Cancel), or by its
// owner, which cancels the task on the server.
func (t *Task) ended() {
	select {
	case <-t.done:
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.owner), cancelGrace)
	defer cancel()
	_, _ = t.calls.requester().Request(ctx, "tasks/cancel", t.get) // best effort: the owner has left
	t.finish(nil, fmt.Errorf("%w: task %s of tool %s, as its owner ended: %w", ErrTaskCancelled, t.id, t.tool, t.owner.Err()), taskCancelled, "")
}

// cancelGrace bounds the tasks/cancel sent when a task's owner leaves.
const cancelGrace = 5 * time.Second

// nextPoll is how long to wait before the next poll: the server's
// interval (at least minTaskPollInterval; defaultTaskPollInterval when it
// gives none) plus up to a quarter more at random (half on the first
// poll), cut short by the TTL. expired is true once the TTL is out.
func (t *Task) nextPoll(first bool) (wait time.Duration, expired bool) {
	s := t.Status()
	interval := s.PollInterval
	if interval == 0 {
		interval = defaultTaskPollInterval
	}
	interval = max(interval, minTaskPollInterval)
	spread := interval / 4
	if first {
		spread = interval / 2
	}
	wait = interval + rand.N(spread+1)
	if s.TTL > 0 {
		left := time.Until(t.born.Add(s.TTL))
		if left <= 0 {
			return 0, true
		}
		wait = min(wait, left)
	}
	return wait, false
}

// poll asks for the task's status (tasks/get).
func (t *Task) poll() (*wireTask, error) {
	raw, err := t.calls.requester().Request(t.ctx, "tasks/get", t.get)
	if err != nil {
		return nil, err
	}
	w := new(wireTask)
	if err := json.Unmarshal(raw, w); err != nil {
		return nil, fmt.Errorf("malformed tasks/get result: %w", err)
	}
	if w.Status == "" {
		return nil, errors.New("the tasks/get result has no status")
	}
	return w, nil
}

// step takes in one status; true once the task is over.
func (t *Task) step(w *wireTask) bool {
	s := w.status()
	if s.TaskID == "" {
		s.TaskID = t.id
	}
	t.mu.Lock()
	changed := s.Status != t.status.Status || s.StatusMessage != t.status.StatusMessage
	if s.TTL == 0 && w.TTL == nil && w.TTLMs == nil {
		s.TTL = t.status.TTL // not said again: unchanged
	}
	t.status = s
	t.mu.Unlock()
	if changed && !s.Terminal() {
		t.emit(s)
	}
	switch {
	case s.Terminal():
		t.settle(w)
		return true
	case s.Status == taskInputRequired && t.era == EraLegacy:
		t.legacyResult() // the server's requests come while tasks/result waits
		return true
	case s.Status == taskInputRequired:
		if err := t.answer(w.InputRequests); err != nil {
			if t.ctx.Err() != nil {
				t.ended()
			} else {
				t.finish(nil, fmt.Errorf("snodo: task %s of tool %s: %w", t.id, t.tool, err), "", "")
			}
			return true
		}
	}
	return false
}

// settle fetches or reads the outcome of a task in a terminal status.
func (t *Task) settle(w *wireTask) {
	switch {
	case w.Status == taskCancelled:
		t.finish(nil, fmt.Errorf("%w: task %s of tool %s, by the server: %s", ErrTaskCancelled, t.id, t.tool, w.StatusMessage), "", "")
	case t.era == EraLegacy:
		t.legacyResult()
	case w.Status == taskCompleted:
		t.complete(w.Result)
	default: // failed: the JSON-RPC error the call would have answered
		e := new(Error)
		if err := json.Unmarshal(w.Error, e); err != nil || len(w.Error) == 0 {
			e = &Error{Code: CodeInternalError, Message: "the task failed: " + w.StatusMessage}
		}
		t.finish(nil, e, "", "")
	}
}

// complete settles the task with the tool result raw; a malformed one
// fails it. The final status is the era's: a tool that failed (IsError)
// is a failed task in the legacy era, a completed one in the modern era.
func (t *Task) complete(raw json.RawMessage) {
	res := new(CallToolResult)
	if err := decodeCallTool(raw, res, nil); err != nil {
		t.finish(nil, malformedResult("task "+t.id+" of tool "+t.tool, err), "", "")
		return
	}
	status := taskCompleted
	if res.IsError && t.era == EraLegacy {
		status = taskFailed
	}
	t.finish(res, nil, status, "")
}

// expire ends a task its TTL outlived.
func (t *Task) expire() {
	t.finish(nil, fmt.Errorf("%w: task %s of tool %s was not done %s after its creation",
		ErrTaskExpired, t.id, t.tool, t.Status().TTL), "", "")
}

// legacyResult waits on tasks/result (legacy), which answers once the
// task is over with what the call would have answered; meanwhile the
// server may send its requests, answered by the handler. The TTL bounds
// the wait.
func (t *Task) legacyResult() {
	ctx := t.ctx
	if ttl := t.Status().TTL; ttl > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, t.born.Add(ttl))
		defer cancel()
	}
	raw, err := t.calls.requester().Request(ctx, "tasks/result", t.get, Timeout(-1))
	switch {
	case err == nil:
		t.complete(raw)
	case t.ctx.Err() != nil:
		t.ended()
	case ctx.Err() != nil:
		t.expire()
	default:
		var e *Error
		if errors.As(err, &e) && !e.Local() {
			t.finish(nil, err, taskFailed, "") // the call's own error
			return
		}
		t.finish(nil, fmt.Errorf("snodo: task %s of tool %s: tasks/result: %w", t.id, t.tool, err), "", "")
	}
}

// maxAnswered bounds the input request keys a task remembers answering.
const maxAnswered = 1024

// answer fulfils the input requests (modern) not answered yet with the
// calls' input handling — for a Client, the one handler path under
// WithMaxServerRequests — and sends the answers with tasks/update.
func (t *Task) answer(reqs map[string]inputRequest) error {
	t.mu.Lock()
	fresh := make(map[string]inputRequest, len(reqs))
	for k, r := range reqs {
		if !t.answered[k] {
			fresh[k] = r
		}
	}
	t.mu.Unlock()
	if len(fresh) == 0 {
		return nil // answered already; the server has not caught up yet
	}
	responses, err := fulfil(t.ctx, t.calls.inputHandling(), "tasks/get", fresh, nil)
	if err != nil {
		return err
	}
	params := map[string]any{"taskId": t.id, "inputResponses": responses}
	if _, err := t.calls.requester().Request(t.ctx, "tasks/update", params); err != nil {
		return fmt.Errorf("tasks/update: %w", err)
	}
	t.mu.Lock()
	if t.answered == nil || len(t.answered)+len(fresh) > maxAnswered {
		t.answered = make(map[string]bool, len(fresh))
	}
	for k := range fresh {
		t.answered[k] = true
	}
	t.mu.Unlock()
	return nil
}

// waitOwned waits for a task whose owner is ctx (CallTool's), and for
// its last status to be handed to OnTaskStatus, so that nothing of the
// task outlives the call: when ctx ends the task is being cancelled on
// the server, which cancelGrace bounds.
func (t *Task) waitOwned() (*CallToolResult, error) {
	<-t.exited
	return t.result, t.err
}

// refusedForTask reports whether the outcome of a plain tools/call may be
// a legacy server's refusal to run a tool that requires a task: the
// -32601 (or -32600) the spec prescribes, or that error turned into a
// tool result with IsError (TypeScript SDK v1 servers), on a server that
// offers tasks. It only decides whether to look at the tool's
// taskSupport (toolRequiresTask).
func (c Calls) refusedForTask(res *CallToolResult, err error) bool {
	if c.requester().Era() != EraLegacy {
		return false
	}
	if caps, ok := c.requester().(interface{ Capabilities() ServerCapabilities }); ok && caps.Capabilities().Tasks == nil {
		return false
	}
	var e *Error
	if err != nil {
		return errors.As(err, &e) && !e.Local() && (e.Code == CodeMethodNotFound || e.Code == codeInvalidRequest)
	}
	return res.IsError && strings.Contains(strings.ToLower(res.Text()), "task")
}

// toolRequiresTask reports whether the server lists the tool name with
// taskSupport "required".
func (c Calls) toolRequiresTask(ctx context.Context, name string, opts []RequestOption) bool {
	for tool, err := range pages[Tool](ctx, c, "tools/list", "tools", opts) {
		if err != nil {
			return false
		}
		if tool.Name == name {
			return tool.Execution != nil && tool.Execution.TaskSupport == taskRequired
		}
	}
	return false
}
