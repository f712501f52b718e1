package testserver

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
)

// Keys of the modern request _meta object.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// request is one client request being handled.
type request struct {
	ctx    context.Context
	id     json.RawMessage
	method string
	params json.RawMessage
	meta   reqMeta
	modern bool
}

// reqMeta is what the server reads from params._meta.
type reqMeta struct {
	present         bool
	protocolVersion *string
	capabilities    json.RawMessage
	progressToken   json.RawMessage
}

func parseMeta(params json.RawMessage) reqMeta {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var m reqMeta
	if json.Unmarshal(params, &p) != nil || p.Meta == nil {
		return m
	}
	m.present = true
	if raw, ok := p.Meta[metaProtocolVersion]; ok {
		var v string
		if json.Unmarshal(raw, &v) == nil {
			m.protocolVersion = &v
		}
	}
	m.capabilities = p.Meta[metaClientCapabilities]
	m.progressToken = p.Meta["progressToken"]
	return m
}

// allowsModern reports whether the era lets the server answer modern requests.
func (s *server) allowsModern() bool { return s.cfg.era != EraLegacy }

// allowsLegacy reports whether the era lets the server answer initialize.
func (s *server) allowsLegacy() bool { return s.cfg.era != EraModern }

func (s *server) isModern(req *request) bool {
	switch s.cfg.era {
	case EraModern:
		return true
	case EraLegacy:
		return false
	}
	return req.meta.protocolVersion != nil
}

// handler handles one request; it returns a result, noAnswer, or an error.
type handler func(s *server, req *request) (any, *rpcError)

var handlers map[string]handler

func init() {
	handlers = map[string]handler{
		"server/discover":          (*server).discover,
		"initialize":               (*server).initialize,
		"ping":                     legacyEmpty,
		"logging/setLevel":         legacyEmpty,
		"resources/subscribe":      (*server).resourcesSubscribe,
		"resources/unsubscribe":    (*server).resourcesUnsubscribe,
		"subscriptions/listen":     (*server).listen,
		"tools/list":               (*server).toolsList,
		"tools/call":               (*server).toolsCall,
		"resources/list":           (*server).resourcesList,
		"resources/templates/list": (*server).templatesList,
		"resources/read":           (*server).resourcesRead,
		"prompts/list":             (*server).promptsList,
		"prompts/get":              (*server).promptsGet,
		"completion/complete":      (*server).complete,
		"test/echo":                (*server).echo,
		"test/sleep":               (*server).sleep,
		"test/progress":            (*server).progress,
		"test/crash":               (*server).crash,
		"test/closeStdout":         (*server).closeStdoutMethod,
		"test/overlong":            (*server).overlong,
		"test/garbage":             (*server).garbage,
		"test/junk":                (*server).junk,
		"test/split":               (*server).split,
		"test/rawAnswer":           (*server).rawAnswer,
		"test/orphanExit":          (*server).orphanExit,
		"test/duplicate":           (*server).duplicate,
		"test/stderr":              (*server).stderrMethod,
		"test/flood":               (*server).flood,
		"test/notify":              (*server).notifyMethod,
		"test/touch":               (*server).touch,
		"test/error":               (*server).errorMethod,
		"test/env":                 (*server).env,
		"test/cwd":                 (*server).cwd,
		"test/pid":                 (*server).pid,
		"test/received":            (*server).received,
		"test/waitNotification":    (*server).waitNotification,
		"test/requests":            (*server).requests,
		"test/exit":                (*server).exitMethod,
		"test/serverRequest":       (*server).serverRequest,
		"test/emit":                (*server).emit,
		"test/endSubscription":     (*server).endSubscription,
		"test/subscriptions":       (*server).subscriptionsMethod,
		"tasks/get":                (*server).tasksGet,
		"tasks/result":             (*server).tasksResult,
		"tasks/cancel":             (*server).tasksCancel,
		"tasks/update":             (*server).tasksUpdate,
		"tasks/list":               (*server).tasksList,
	}
}

// listFields names the items member of each list method's result.
var listFields = map[string]string{
	"tools/list": "tools", "resources/list": "resources",
	"resources/templates/list": "resourceTemplates", "prompts/list": "prompts",
}

// dispatch applies era and version checks, then runs the handler.
func (s *server) dispatch(req *request) (any, *rpcError) {
	if field, ok := listFields[req.method]; ok && s.cfg.endlessPages != "" {
		cursor := "same"
		if s.cfg.endlessPages == "fresh" {
			cursor = "page-" + strconv.FormatInt(s.pages.Add(1), 10)
		}
		return obj{field: []obj{}, "nextCursor": cursor}, nil
	}
	if field, ok := listFields[req.method]; ok && s.cfg.emptyLists {
		return obj{field: []obj{}}, nil
	}
	if s.cfg.refuse && (req.method == "server/discover" || req.method == "initialize") {
		return nil, &rpcError{Code: -32603, Message: "refused: this start is numbered above -refuse-after"}
	}
	if req.method == "server/discover" {
		if s.cfg.exitOnDiscover {
			if s.cfg.stateFile != "" {
				_ = os.WriteFile(s.cfg.stateFile, []byte("discovered\n"), 0o644)
			}
			s.flush()
			s.exit(1)
			return noAnswer, nil
		}
		if s.cfg.closeOnDiscover {
			s.closeStdout()
			return noAnswer, nil
		}
		if s.cfg.silentDiscover {
			return noAnswer, nil
		}
		if s.cfg.discoverDelay > 0 && !pause(req, s.cfg.discoverDelay, true) {
			return noAnswer, nil // cancelled: the client gave up on it
		}
		if s.cfg.discoverError != 0 {
			return nil, &rpcError{Code: s.cfg.discoverError, Message: "no"}
		}
		if s.cfg.discoverJunk {
			return obj{"hello": "world"}, nil
		}
		if !s.allowsModern() {
			return nil, errMethodNotFound(req.method)
		}
	}
	if s.allowsModern() && req.meta.protocolVersion != nil && *req.meta.protocolVersion != s.cfg.discoverVersion {
		data := encode(obj{"supported": []string{s.cfg.discoverVersion}, "requested": *req.meta.protocolVersion})
		return nil, &rpcError{Code: -32022, Message: "unsupported protocol version", Data: data}
	}
	h, ok := handlers[req.method]
	if !ok || (!s.cfg.tasks && strings.HasPrefix(req.method, "tasks/")) {
		return nil, errMethodNotFound(req.method)
	}
	return h(s, req)
}

// unmarshalParams decodes params into v; absent params leave v unchanged.
func unmarshalParams(req *request, v any) *rpcError {
	if len(req.params) == 0 || string(req.params) == "null" {
		return nil
	}
	if err := json.Unmarshal(req.params, v); err != nil {
		return errInvalidParams("invalid params: " + err.Error())
	}
	return nil
}

func serverInfo() obj { return obj{"name": "snodo-testserver", "version": "1.0.0"} }

func (s *server) discover(req *request) (any, *rpcError) {
	if req.meta.protocolVersion == nil {
		return nil, errMethodNotFound(req.method)
	}
	if req.meta.capabilities == nil {
		return nil, errInvalidParams("missing " + metaClientCapabilities)
	}
	caps := obj{
		"tools":       obj{"listChanged": true},
		"resources":   obj{"subscribe": true, "listChanged": true},
		"prompts":     obj{"listChanged": true},
		"completions": obj{},
	}
	if s.cfg.tasks {
		caps["extensions"] = obj{tasksExtension: obj{}}
	}
	return obj{
		"supportedVersions": []string{s.cfg.discoverVersion},
		"capabilities":      caps,
		"serverInfo":        serverInfo(),
		"instructions":      "test server",
		"ttlMs":             0,
		"cacheScope":        "public",
		"_meta":             obj{metaServerInfo: serverInfo()},
	}, nil
}

// legacyVersions are the protocol versions initialize accepts as requested.
var legacyVersions = map[string]bool{
	"2025-11-25": true, "2025-06-18": true, "2025-03-26": true, "2024-11-05": true,
}

func (s *server) initialize(req *request) (any, *rpcError) {
	if !s.allowsLegacy() {
		return nil, errMethodNotFound(req.method)
	}
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	version := "2025-11-25"
	if legacyVersions[p.ProtocolVersion] {
		version = p.ProtocolVersion
	}
	if s.cfg.initVersion != "" {
		version = s.cfg.initVersion
	}
	caps := obj{
		"tools":       obj{"listChanged": true},
		"resources":   obj{"subscribe": true, "listChanged": true},
		"prompts":     obj{"listChanged": true},
		"logging":     obj{},
		"completions": obj{},
	}
	if s.cfg.tasks {
		caps["tasks"] = obj{"list": obj{}, "cancel": obj{}, "requests": obj{"tools": obj{"call": obj{}}}}
	}
	return obj{
		"protocolVersion": version,
		"serverInfo":      serverInfo(),
		"capabilities":    caps,
		"instructions":    "test server",
	}, nil
}

// legacyEmpty answers {} to legacy requests and -32601 to modern ones.
func legacyEmpty(s *server, req *request) (any, *rpcError) {
	if req.meta.protocolVersion != nil && s.allowsModern() {
		return nil, errMethodNotFound(req.method)
	}
	return obj{}, nil
}
