package connection

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/snodo/snodo/internal/jsonrpc"
)

// HTTP headers of the Streamable HTTP transport.
const (
	headerSession = "Mcp-Session-Id"
	headerVersion = "Mcp-Protocol-Version"
	headerMethod  = "Mcp-Method"
	headerName    = "Mcp-Name"
	headerParam   = "Mcp-Param-"
	// metaVersionKey is the _meta member of a modern request that names
	// its protocol version.
	metaVersionKey = "io.modelcontextprotocol/protocolVersion"
)

var jsonUnmarshal = json.Unmarshal

// modernVersion is the modern era's protocol version, whose header value
// is made once (modernVersionValue).
const modernVersion = "2026-07-28"

// Header values made once, shared by every request (the transport only
// reads them): the modern version and the common methods' Mcp-Method.
var (
	modernVersionValue = []string{modernVersion}
	methodValues       = func() map[string][]string {
		m := map[string][]string{}
		for _, method := range []string{"tools/call", "tools/list", "resources/read", "resources/list",
			"prompts/get", "prompts/list", "ping", "subscriptions/listen", "completion/complete", "server/discover"} {
			m[method] = []string{method}
		}
		return m
	}()
)

// messageHeaders are the headers that mirror a message's body: the
// protocol version its _meta names and, for a request that names one
// (modern requests alone do), Mcp-Method, Mcp-Name for the
// calls that name a tool, a resource, a prompt or a task (tasks/get,
// tasks/update and tasks/cancel: its taskId), and a tool call's
// Mcp-Param-* headers from the tool's x-mcp-header annotations.
func (p *httpPeer) messageHeaders(env *jsonrpc.Envelope) http.Header {
	params := env.Params
	if len(params) == 0 || params[0] != '{' {
		params = nil
	}
	var meta []byte
	if params != nil {
		meta, _ = jsonrpc.Member(params, "_meta")
	}
	return p.headersOf(env.Kind == jsonrpc.KindRequest, env.MethodName(), params, meta)
}

// lineHeaders is messageHeaders of a line the connection wrote.
func (p *httpPeer) lineHeaders(line []byte) http.Header {
	env, err := jsonrpc.Scan(line)
	if err != nil {
		return http.Header{}
	}
	return p.messageHeaders(&env)
}

// headersOf is messageHeaders of a message whose parts are known: its
// params object (nil: none, or not an object) and their _meta (nil:
// none).
func (p *httpPeer) headersOf(request bool, method string, params, meta []byte) http.Header {
	h := http.Header{}
	if v := p.versionOf(meta); v != nil {
		h[headerVersion] = v
	}
	if !request || h[headerVersion] == nil {
		// The headers that mirror a request's body are the modern
		// era's (2026-07-28): a legacy request's _meta names no version,
		// and the legacy transport has none of them.
		return h
	}
	if v := methodValues[method]; v != nil {
		h[headerMethod] = v
	} else {
		h.Set(headerMethod, method)
	}
	if params == nil {
		return h
	}
	key := ""
	switch method {
	case "tools/call", "prompts/get":
		key = "name"
	case "resources/read":
		key = "uri"
	case "tasks/get", "tasks/update", "tasks/cancel":
		// The tasks extension routes a task's later requests by its id,
		// so an intermediary can send them to the instance holding it.
		// Each id is asked about a few times only: not kept.
		if raw, _ := jsonrpc.Member(params, "taskId"); len(raw) > 0 && raw[0] == '"' {
			h[headerName] = []string{headerValue(jsonrpc.Unquote(raw))}
		}
		return h
	}
	if key == "" {
		return h
	}
	raw, _ := jsonrpc.Member(params, key)
	if len(raw) == 0 || raw[0] != '"' {
		return h
	}
	p.mu.Lock()
	nv, ok := p.names[string(raw)]
	if !ok {
		name := jsonrpc.Unquote(raw)
		nv = nameValue{name: name, value: []string{headerValue(name)}}
		if len(p.names) >= maxNameValues {
			clear(p.names)
		}
		p.names[string(raw)] = nv
	}
	specs := p.tools[nv.name]
	p.mu.Unlock()
	h[headerName] = nv.value
	if method != "tools/call" {
		return h
	}
	if len(specs) == 0 {
		return h
	}
	args, _ := jsonrpc.Member(params, "arguments")
	for _, s := range specs {
		if v, ok := s.value(args); ok {
			h.Set(headerParam+s.name, headerValue(v))
		}
	}
	return h
}

// versionOf is the MCP-Protocol-Version header value of the version a
// message's _meta object names; nil for none. The last _meta seen and
// its value are kept: every request of a session carries the same.
func (p *httpPeer) versionOf(meta []byte) []string {
	if len(meta) == 0 || meta[0] != '{' {
		return nil
	}
	if k := p.metaSeen.Load(); k != nil && bytes.Equal(k.meta, meta) {
		return k.value
	}
	v, _ := jsonrpc.Member(meta, metaVersionKey)
	var value []string
	switch {
	case len(v) == 0 || v[0] != '"':
	case string(v) == `"`+modernVersion+`"`:
		value = modernVersionValue
	default:
		value = []string{jsonrpc.Unquote(v)}
	}
	if len(meta) <= maxKeptMeta {
		p.metaSeen.Store(&metaVersion{meta: bytes.Clone(meta), value: value})
	}
	return value
}

// metaVersion is a _meta object and the version header value it names.
type metaVersion struct {
	meta  []byte
	value []string
}

// maxKeptMeta bounds the _meta object kept by versionOf.
const maxKeptMeta = 4 << 10

// nameValue is a name a message's params give (a tool's, a prompt's, a
// resource's URI) and its Mcp-Name header value, kept by the raw JSON
// string they were read from so that calling the same tool again makes
// neither anew.
type nameValue struct {
	name  string
	value []string
}

// maxNameValues bounds the names kept (then they are all forgotten).
const maxNameValues = 256

// headerValue encodes v for a header: as it is when it is plain visible
// ASCII (spaces inside allowed), else as =?base64?…?=, as is a plain
// value that looks like that form.
func headerValue(v string) string {
	plain := v == strings.TrimSpace(v) && !(strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?="))
	for i := 0; plain && i < len(v); i++ {
		if c := v[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			plain = false
		}
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// paramHeader is one x-mcp-header annotation of a tool's inputSchema:
// the header's name part and the property path of the argument it mirrors.
type paramHeader struct {
	name string
	path []string
}

// value is the argument at the annotation's path as a header value;
// false when it is absent, null or not a primitive.
func (s paramHeader) value(args []byte) (string, bool) {
	v := args
	for _, k := range s.path {
		if len(v) == 0 || v[0] != '{' {
			return "", false
		}
		v, _ = jsonrpc.Member(v, k)
	}
	v = bytes.TrimSpace(v)
	switch {
	case len(v) == 0 || string(v) == "null":
		return "", false
	case v[0] == '"':
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", false
		}
		return s, true
	case string(v) == "true" || string(v) == "false":
		return string(v), true
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		if n, err := strconv.ParseFloat(string(v), 64); err == nil && n == float64(int64(n)) {
			return strconv.FormatInt(int64(n), 10), true
		}
	}
	return "", false
}

// sniff looks at the response to one of the requests whose answer the
// transport itself needs: initialize (the legacy version every later
// request names in MCP-Protocol-Version) and tools/list (the tools'
// x-mcp-header annotations; a tool whose annotations break the rules is
// left out of the result, as the transport requires). It returns the
// message to deliver, and whether that is a new one.
func (p *httpPeer) sniff(method string, id int64, env *jsonrpc.Envelope, msg []byte) ([]byte, bool) {
	if env.Result == nil || env.Result[0] != '{' {
		return msg, false
	}
	switch method {
	case "initialize":
		if v, _ := jsonrpc.Member(env.Result, "protocolVersion"); len(v) > 0 && v[0] == '"' {
			p.mu.Lock()
			p.version = jsonrpc.Unquote(v)
			p.versionValue = []string{p.version}
			p.mu.Unlock()
		}
	case "tools/list":
		if result, changed := p.checkTools(env.Result); changed {
			return bytes.TrimSpace(jsonrpc.AppendResult(nil, []byte(strconv.FormatInt(id, 10)), result)), true
		}
	}
	return msg, false
}

// checkTools records the x-mcp-header annotations of the tools listed in
// result and returns result without the tools whose annotations are
// invalid (changed reports whether any was left out).
func (p *httpPeer) checkTools(result []byte) (json.RawMessage, bool) {
	var r map[string]json.RawMessage
	var tools []json.RawMessage
	if json.Unmarshal(result, &r) != nil || json.Unmarshal(r["tools"], &tools) != nil {
		return nil, false
	}
	kept := tools[:0:0]
	for _, t := range tools {
		var tool struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if json.Unmarshal(t, &tool) != nil {
			kept = append(kept, t)
			continue
		}
		specs, why := headerSpecs(tool.InputSchema)
		if why != "" {
			p.logger.Warn("snodo: left a tool out of tools/list: its x-mcp-header annotations break the Streamable HTTP rules", "tool", sampleString(tool.Name), "reason", sampleString(why))
			continue
		}
		p.mu.Lock()
		if len(specs) > 0 {
			p.tools[tool.Name] = specs
		} else {
			delete(p.tools, tool.Name)
		}
		p.mu.Unlock()
		kept = append(kept, t)
	}
	if len(kept) == len(tools) {
		return nil, false
	}
	r["tools"], _ = json.Marshal(kept)
	out, err := json.Marshal(r)
	if err != nil {
		return nil, false
	}
	return out, true
}

// headerSpecs finds the x-mcp-header annotations of an inputSchema, or
// says why they are invalid: each must name a header token, unique
// (ignoring case), on a string, integer or boolean property reached from
// the root through properties alone.
func headerSpecs(schema json.RawMessage) ([]paramHeader, string) {
	if len(schema) == 0 {
		return nil, ""
	}
	var root any
	d := json.NewDecoder(bytes.NewReader(schema))
	d.UseNumber()
	if d.Decode(&root) != nil {
		return nil, ""
	}
	var specs []paramHeader
	seen := map[string]bool{}
	why := ""
	var walk func(node any, path []string, static bool)
	walk = func(node any, path []string, static bool) {
		if why != "" {
			return
		}
		switch n := node.(type) {
		case []any:
			for _, e := range n {
				walk(e, path, false)
			}
		case map[string]any:
			if v, ok := n["x-mcp-header"]; ok {
				name, _ := v.(string)
				typ, _ := n["type"].(string)
				switch {
				case !static || len(path) == 0:
					why = "x-mcp-header on a property not reached from the root through properties alone"
				case !isToken(name):
					why = "x-mcp-header " + strconv.Quote(name) + " is not an HTTP header token"
				case seen[strings.ToLower(name)]:
					why = "x-mcp-header " + strconv.Quote(name) + " is used twice"
				case typ != "string" && typ != "integer" && typ != "boolean":
					why = "x-mcp-header " + strconv.Quote(name) + " is on a property of type " + strconv.Quote(typ) + ", not string, integer or boolean"
				default:
					seen[strings.ToLower(name)] = true
					specs = append(specs, paramHeader{name: name, path: append([]string(nil), path...)})
				}
			}
			for k, v := range n {
				if k == "properties" {
					if props, ok := v.(map[string]any); ok {
						for name, prop := range props {
							walk(prop, append(path[:len(path):len(path)], name), static)
						}
						continue
					}
				}
				walk(v, path, false)
			}
		}
	}
	walk(root, nil, true)
	if why != "" {
		return nil, why
	}
	return specs, ""
}

// isToken reports whether s is an HTTP field-name token (RFC 9110 tchar).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// httpMaxSessionID bounds an Mcp-Session-Id the client keeps: it goes
// back on every request.
const httpMaxSessionID = 1024

// checkSessionID refuses an Mcp-Session-Id that the Streamable HTTP
// transport forbids (it must be visible ASCII, 0x21 to 0x7E: no space,
// tab, non-ASCII, or folded header) or that is longer than
// httpMaxSessionID, rather than echo it on every later request.
func checkSessionID(sid string) error {
	if len(sid) > httpMaxSessionID {
		return fmt.Errorf("the server's Mcp-Session-Id is %d bytes long, more than the %d snodo accepts", len(sid), httpMaxSessionID)
	}
	for i := 0; i < len(sid); i++ {
		if c := sid[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("the server's Mcp-Session-Id \"%s\" has a byte 0x%02x outside visible ASCII (0x21 to 0x7E), which the transport forbids", sampleString(sid), c)
		}
	}
	return nil
}
