package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/mcpmethod"
	"github.com/snodo/snodo/supervisor"
)

// Tasks over NATS. A task belongs to the MCP server process that created
// it, so a host runs a tools/call that may create one on the one pool
// member the pool chooses for tasks (supervisor.Pool.Await) and
// remembers which member holds each task it created; the task's later
// calls (tasks/get, tasks/result, tasks/cancel, tasks/update) go to that
// member (on the legacy-era pool of ServeLegacy, for its callers, the
// same way). The caller remembers which host answered, and sends those later
// calls to that host's own call subject (call.HOSTID), not to the queue
// group. A task whose member is gone (its server restarted, or it left
// the pool) is lost with it: its later calls fail with a -32000 saying
// so.

// maxHostTasks bounds the tasks one served name remembers; past it the
// oldest are forgotten (their later calls then go to any member, whose
// server answers that it has no such task).
const maxHostTasks = 4096

// taskMethods are the calls that name a task by its taskId, in both eras.
var taskMethods = map[string]bool{"tasks/get": true, "tasks/result": true, "tasks/cancel": true, "tasks/update": true}

// taskTable is a table of tasks by id, bounded at maxHostTasks (past it
// the older half is forgotten): on a host, task id → the member's
// connection that holds it; on a Client, task id → the id of the host
// that holds it.
type taskTable[V comparable] struct {
	mu    sync.Mutex
	byID  map[string]V
	order []string // oldest first
}

func (t *taskTable[V]) put(id string, v V) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID == nil {
		t.byID = map[string]V{}
	}
	if _, ok := t.byID[id]; !ok {
		if len(t.order) >= maxHostTasks {
			for _, old := range t.order[:maxHostTasks/2] {
				delete(t.byID, old)
			}
			t.order = append(t.order[:0], t.order[maxHostTasks/2:]...)
		}
		t.order = append(t.order, id)
	}
	t.byID[id] = v
}

// get is the value filed under id; the zero value when none (or id is "").
func (t *taskTable[V]) get(id string) V {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// taskIDOf is the taskId member of a request's params, or "".
func taskIDOf(params []byte) string {
	if !bytes.Contains(params, []byte(`"taskId"`)) {
		return ""
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	return p.TaskID
}

// createdTaskID is the id of the task a tools/call result created
// (legacy: the "task" member; modern: resultType "task"), or "".
func createdTaskID(result []byte) string {
	if !bytes.Contains(result, []byte(`"taskId"`)) {
		return ""
	}
	var r struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		Task       *struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if json.Unmarshal(result, &r) != nil {
		return ""
	}
	if r.Task != nil {
		return r.Task.TaskID
	}
	if r.ResultType == "task" {
		return r.TaskID
	}
	return ""
}

// mayCreateTask reports whether a tools/call may create a task: it asks
// for one (legacy: a "task" param), or its server offers the tasks
// extension (modern: the server may answer any tools/call with a task).
func (s *served) mayCreateTask(params []byte) bool {
	if s.poolEra() == snodo.EraLegacy {
		return asksForTask(params)
	}
	switch s.taskExt.Load() {
	case taskExtNo:
		return false
	case taskExtYes:
		return true
	}
	for _, m := range s.pool.Members() {
		if c := m.Current(); c != nil {
			_, ok := c.Capabilities().Extensions[mcpmethod.TasksExtension]
			if ok {
				s.taskExt.Store(taskExtYes)
			} else {
				s.taskExt.Store(taskExtNo)
			}
			return ok
		}
	}
	return false
}

// asksForTask reports whether a legacy tools/call's params ask for a
// task (a "task" member, not null).
func asksForTask(params []byte) bool {
	if !bytes.Contains(params, []byte(`"task"`)) {
		return false
	}
	m, err := jsonrpc.Member(params, "task")
	return err == nil && len(m) > 0 && string(m) != "null"
}

// What a served name's server offers of the tasks extension (modern),
// learnt from the first member connected (served.taskExt).
const (
	taskExtUnknown = iota
	taskExtNo
	taskExtYes
)

// request runs one call on the pool: a task's later calls on the member
// that holds the task, a tools/call that may create a task on the member
// the pool chooses for tasks (remembering the task it created), anything
// else as the pool chooses.
// created reports a task the call created: its answer must name this
// host (Snodo-Host), for the caller to send the task's later calls here.
//
// rawp points to the params (nil inside: none), which stay the caller's:
// a pointer in params is no allocation where the slice itself would be.
func (h *Host) request(ctx context.Context, s *served, method string, rawp *json.RawMessage, ro []snodo.RequestOption) (_ json.RawMessage, created bool, _ error) {
	return h.requestOn(ctx, s.pool, &s.tasks, nil, method == "tools/call" && s.mayCreateTask(*rawp), method, rawp, ro)
}

// requestOn is request on pool p, whose tasks are filed in tasks; mayCreate
// says the call is a tools/call that may create a task (the legacy-era
// pool of ServeLegacy runs its callers' calls through it too). pinned,
// when not nil, is the member's connection a pinned call runs on (pin.go):
// every call but a task's later one (which goes to the member holding the
// task) runs there, and a task it creates is filed with it.
func (h *Host) requestOn(ctx context.Context, p *supervisor.Pool, tasks *taskTable[*snodo.Client], pinned *snodo.Client, mayCreate bool, method string, rawp *json.RawMessage, ro []snodo.RequestOption) (_ json.RawMessage, created bool, _ error) {
	raw := *rawp
	var params any
	if raw != nil {
		params = rawp
	}
	switch {
	case taskMethods[method]:
		id := taskIDOf(raw)
		if id == "" {
			break
		}
		conn := tasks.get(id)
		if conn == nil {
			break // not a task of this host's: the server says so
		}
		select {
		case <-conn.Done():
			return nil, false, jsonrpc.NewLocalError(jsonrpc.CodeConnectionClosed,
				fmt.Sprintf("host %s: task %s was lost with its server (it stopped: %v)", h.label, id, conn.Err()),
				jsonrpc.ErrConnectionClosed, snodo.ErrTaskLost)
		default:
		}
		res, err := conn.Request(ctx, method, params, ro...)
		return res, false, err
	case pinned != nil || mayCreate:
		conn := pinned
		if conn == nil {
			c, err := p.Await(ctx)
			if err != nil {
				return nil, false, err
			}
			conn = c
		}
		res, err := conn.Request(ctx, method, params, ro...)
		if err == nil && method == "tools/call" {
			if id := createdTaskID(res); id != "" {
				tasks.put(id, conn)
				created = true
			}
		}
		return res, created, err
	}
	res, err := p.Request(ctx, method, params, ro...)
	return res, false, err
}
