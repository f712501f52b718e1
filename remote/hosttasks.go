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
)

// Tasks over NATS. A task belongs to the MCP server process that created
// it, so a host runs a tools/call that may create one on the one pool
// member the pool chooses for tasks (supervisor.Pool.Await) and
// remembers which member holds each task it created; the task's later
// calls (tasks/get, tasks/result, tasks/cancel, tasks/update) go to that
// member. The caller remembers which host answered, and sends those later
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

// taskTable is a served name's tasks: task id → the member's connection
// that holds it.
type taskTable struct {
	mu    sync.Mutex
	conns map[string]*snodo.Client
	order []string // oldest first
}

func (t *taskTable) put(id string, conn *snodo.Client) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.conns == nil {
		t.conns = map[string]*snodo.Client{}
	}
	if _, ok := t.conns[id]; !ok {
		if len(t.order) >= maxHostTasks {
			for _, old := range t.order[:maxHostTasks/2] {
				delete(t.conns, old)
			}
			t.order = append(t.order[:0], t.order[maxHostTasks/2:]...)
		}
		t.order = append(t.order, id)
	}
	t.conns[id] = conn
}

func (t *taskTable) get(id string) *snodo.Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.conns[id]
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
	if s.pool.Era() == snodo.EraLegacy {
		if !bytes.Contains(params, []byte(`"task"`)) {
			return false
		}
		m, err := jsonrpc.Member(params, "task")
		return err == nil && len(m) > 0 && string(m) != "null"
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
func (h *Host) request(ctx context.Context, s *served, method string, raw json.RawMessage, ro []snodo.RequestOption) (_ json.RawMessage, created bool, _ error) {
	var params any
	if raw != nil {
		params = raw
	}
	switch {
	case taskMethods[method]:
		id := taskIDOf(raw)
		if id == "" {
			break
		}
		conn := s.tasks.get(id)
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
	case method == "tools/call" && s.mayCreateTask(raw):
		conn, err := s.pool.Await(ctx)
		if err != nil {
			return nil, false, err
		}
		res, err := conn.Request(ctx, method, params, ro...)
		if err == nil {
			if id := createdTaskID(res); id != "" {
				s.tasks.put(id, conn)
				created = true
			}
		}
		return res, created, err
	}
	res, err := s.pool.Request(ctx, method, params, ro...)
	return res, false, err
}

// taskHosts is a Client's tasks: task id → the id of the host that holds
// it, bounded as a host's table is.
type taskHosts struct {
	mu    sync.Mutex
	hosts map[string]string
	order []string // oldest first
}

func (t *taskHosts) put(id, host string) {
	if !validName.MatchString(host) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hosts == nil {
		t.hosts = map[string]string{}
	}
	if _, ok := t.hosts[id]; !ok {
		if len(t.order) >= maxHostTasks {
			for _, old := range t.order[:maxHostTasks/2] {
				delete(t.hosts, old)
			}
			t.order = append(t.order[:0], t.order[maxHostTasks/2:]...)
		}
		t.order = append(t.order, id)
	}
	t.hosts[id] = host
}

func (t *taskHosts) get(id string) string {
	if id == "" {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hosts[id]
}
