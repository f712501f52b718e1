package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// AppendRequest appends one request line (with its newline) to buf.
// params must be a JSON value or nil (omitted).
func AppendRequest(buf []byte, id int64, method string, params []byte) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = strconv.AppendInt(buf, id, 10)
	return appendTail(buf, method, params)
}

// AppendRequestMeta is AppendRequest with a _meta object spliced into
// params: meta (an encoded JSON object, or nil) plus extra (encoded
// members without braces, such as `"traceparent":"00-…"`, or nil).
// params must then satisfy CanSpliceMeta.
func AppendRequestMeta(buf []byte, id int64, method string, params, meta, extra []byte) []byte {
	if meta == nil && len(extra) == 0 {
		return AppendRequest(buf, id, method, params)
	}
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = strconv.AppendInt(buf, id, 10)
	buf = append(buf, `,"method":`...)
	buf = AppendString(buf, method)
	buf = append(buf, `,"params":`...)
	buf = appendWithMeta(buf, params, meta, extra)
	return append(buf, "}\n"...)
}

// CanSpliceMeta reports whether params (nil, null, or a JSON object with
// no "_meta" member) can take a _meta member by splicing.
func CanSpliceMeta(params []byte) bool {
	t := bytes.TrimSpace(params)
	if len(t) == 0 || bytes.Equal(t, nullLit) {
		return true
	}
	// A member name written with escapes ("\u005fmeta") could be a _meta
	// too: such params take the member-by-member merge.
	return t[0] == '{' && len(bytes.TrimSpace(t[1:])) > 0 && !bytes.Contains(t, metaKey) && !bytes.Contains(t, escapeU)
}

var escapeU = []byte(`\u`)

// sample shortens a value for an error message.
func sample(b []byte) string {
	const n = 40
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// appendWithMeta appends params with meta (and extra's members) spliced
// in as its first member, "_meta"; params must satisfy CanSpliceMeta.
func appendWithMeta(buf, params, meta, extra []byte) []byte {
	buf = append(buf, `{"_meta":`...)
	buf = appendMetaObject(buf, meta, extra)
	rest := bytes.TrimSpace(params)
	if len(rest) == 0 || bytes.Equal(rest, nullLit) {
		return append(buf, '}')
	}
	rest = bytes.TrimSpace(rest[1:]) // after the object's '{'
	if rest[0] != '}' {
		buf = append(buf, ',')
	}
	return append(buf, rest...)
}

// AppendRequestMetaObject appends the _meta object AppendRequestMeta
// splices in: meta (an encoded object, or nil) with extra's members.
func AppendRequestMetaObject(buf, meta, extra []byte) []byte {
	if meta == nil && len(extra) == 0 {
		return append(buf, "{}"...)
	}
	return appendMetaObject(buf, meta, extra)
}

// appendMetaObject appends the object meta (nil: {}) with extra's
// members added after its own.
func appendMetaObject(buf, meta, extra []byte) []byte {
	if len(extra) == 0 {
		return append(buf, meta...)
	}
	body := bytes.TrimSpace(meta)
	if len(body) >= 2 {
		body = bytes.TrimSpace(body[1 : len(body)-1]) // between the braces
	} else {
		body = nil
	}
	buf = append(buf, '{')
	if len(body) > 0 {
		buf = append(buf, body...)
		buf = append(buf, ',')
	}
	buf = append(buf, extra...)
	return append(buf, '}')
}

// AppendNotification appends one notification line to buf.
func AppendNotification(buf []byte, method string, params []byte) []byte {
	buf = append(buf, `{"jsonrpc":"2.0"`...)
	return appendTail(buf, method, params)
}

// AppendNotificationMeta is AppendNotification with extra (encoded members
// without braces, or nil) spliced in as params._meta; with extra, params
// must satisfy CanSpliceMeta.
func AppendNotificationMeta(buf []byte, method string, params, extra []byte) []byte {
	if len(extra) == 0 {
		return AppendNotification(buf, method, params)
	}
	buf = append(buf, `{"jsonrpc":"2.0","method":`...)
	buf = AppendString(buf, method)
	buf = append(buf, `,"params":`...)
	buf = appendWithMeta(buf, params, nil, extra)
	return append(buf, "}\n"...)
}

func appendTail(buf []byte, method string, params []byte) []byte {
	buf = append(buf, `,"method":`...)
	buf = AppendString(buf, method)
	if len(params) > 0 {
		buf = append(buf, `,"params":`...)
		buf = append(buf, params...)
	}
	return append(buf, "}\n"...)
}

// AppendResult appends a response line carrying result (nil means null).
func AppendResult(buf []byte, id []byte, result []byte) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"result":`...)
	if len(result) == 0 {
		result = nullLit
	}
	buf = append(buf, result...)
	return append(buf, "}\n"...)
}

// AppendError appends an error response line. id may be nil (null).
func AppendError(buf []byte, id []byte, e *Error) []byte {
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	if len(id) == 0 {
		id = nullLit
	}
	buf = append(buf, id...)
	buf = append(buf, `,"error":{"code":`...)
	buf = strconv.AppendInt(buf, int64(e.Code), 10)
	buf = append(buf, `,"message":`...)
	buf = AppendString(buf, e.Message)
	if len(e.Data) > 0 {
		buf = append(buf, `,"data":`...)
		buf = append(buf, e.Data...)
	}
	return append(buf, "}}\n"...)
}

// AppendString appends s as a JSON string.
func AppendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			b, _ := json.Marshal(s)
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// Marshal turns params into one JSON value on one line, ready for the
// wire: nil, and an empty json.RawMessage or []byte, stay nil (no params);
// a json.RawMessage (or a pointer to one) or []byte is checked and, when it spans several lines,
// compacted (OneLine); anything else goes through json.Marshal, whose
// output is always compact.
func Marshal(v any) ([]byte, error) {
	p, _, err := marshal(v, false)
	return p, err
}

// marshal is Marshal, also reporting, when asked, whether _meta can be
// spliced into the result (CanSpliceMeta): for raw values from the scan
// that checks them, at no extra cost.
func marshal(v any, splice bool) ([]byte, bool, error) {
	var raw []byte
	switch p := v.(type) {
	case nil:
		return nil, true, nil
	case json.RawMessage:
		raw = p
	case *json.RawMessage: // a caller's way to pass raw params without boxing a slice
		if p != nil {
			raw = *p
		}
	case []byte:
		raw = p
	default:
		b, err := json.Marshal(v)
		return b, err == nil && splice && CanSpliceMeta(b), err
	}
	if len(raw) == 0 {
		return nil, true, nil
	}
	return oneLine(raw)
}

// OneLine returns raw as one JSON value on one line: raw itself when it
// is valid and holds no line break (the common case: no allocation), a
// compacted copy when it is valid but spans lines, or an error saying
// where it is not valid JSON. Every caller-supplied raw value goes through
// it before it reaches the wire, so nothing a caller passes can split a
// message or smuggle in another.
func OneLine(raw []byte) ([]byte, error) {
	out, _, err := oneLine(raw)
	return out, err
}

// oneLine is OneLine, also reporting whether _meta can be spliced into the
// value (CanSpliceMeta), found by the same scan.
func oneLine(raw []byte) ([]byte, bool, error) {
	v := valid(raw)
	if !v.ok {
		var out bytes.Buffer
		err := json.Compact(&out, raw) // says where; Valid already said whether
		if err == nil {
			err = errors.New("not one JSON value")
		}
		return nil, false, fmt.Errorf("not valid JSON (%w)", err)
	}
	splice := v.null || (v.object && !v.topMeta)
	if !v.multiline {
		return raw, splice, nil
	}
	out := bytes.NewBuffer(make([]byte, 0, len(raw)))
	if err := json.Compact(out, raw); err != nil {
		return nil, false, fmt.Errorf("not valid JSON (%w)", err)
	}
	return out.Bytes(), splice, nil
}

// RequireObject is the one check that params (encoded, one JSON value)
// are a JSON object, or absent or null, as the modern era's requests
// (to carry _meta) and notifications need: anything else is a local
// -32602 saying why (the reason is added to the message) and that
// nothing was sent.
func RequireObject(params []byte, why string) error {
	t := bytes.TrimSpace(params)
	if len(t) == 0 || t[0] == '{' || bytes.Equal(t, nullLit) {
		return nil
	}
	return NewLocalError(CodeInvalidParams, "params must be a JSON object "+why+", got "+sample(t)+"; nothing was sent: pass an object (a struct, a map, or json.RawMessage(`{…}`))", ErrInvalidParams)
}

// MergeMeta returns params (a JSON object, or nil) with the given members
// added to its "_meta" object. Members the caller already put in "_meta"
// win over the ones given here, so nothing the caller set is lost.
// The fast path splices into params without decoding it.
func MergeMeta(params []byte, members map[string]json.RawMessage) ([]byte, error) {
	if len(members) == 0 {
		return params, nil
	}
	if CanSpliceMeta(params) {
		meta, err := json.Marshal(members)
		if err != nil {
			return nil, err
		}
		out, _ := SpliceMeta(params, meta)
		return out, nil
	}
	var kb [8]string
	var vb [8][]byte
	keys, vals := kb[:0], vb[:0]
	for k, v := range members {
		keys, vals = append(keys, k), append(vals, v)
	}
	if out, ok := addToMeta(params, keys, vals); ok {
		return out, nil
	}
	return mergeDecoded(params, members)
}

// MergeMetaObject is MergeMeta with the members given as one encoded JSON
// object (obj, as jsonrpc.AppendRequestMetaObject makes it) and an extra
// member, key extraKey (none when ""): into params that already carry a
// "_meta" object (a request forwarded as its client sent it) the members
// it lacks are appended without decoding obj or params, and params are
// returned as they are when it has them all. Whatever that cannot vouch
// for (escapes, a key twice, params to splice into) takes MergeMeta's
// decoding way, with the same result.
func MergeMetaObject(params, obj []byte, extraKey string, extraVal []byte) ([]byte, error) {
	var kb [8]string
	var vb [8][]byte
	keys, vals := kb[:0], vb[:0]
	simple := !bytes.ContainsRune(obj, '\\') && !CanSpliceMeta(params)
	if simple && len(obj) > 0 {
		simple = eachMember(obj, func(k, v []byte) error {
			if slices.Contains(keys, string(k)) {
				return errSyntax // a key twice: the map's last-wins, decoded
			}
			keys, vals = append(keys, string(k)), append(vals, v)
			return nil
		}) == nil
	}
	if simple && extraKey != "" {
		if slices.Contains(keys, extraKey) {
			simple = false
		} else {
			keys, vals = append(keys, extraKey), append(vals, extraVal)
		}
	}
	if simple {
		if len(keys) == 0 {
			return params, nil
		}
		if out, ok := addToMeta(params, keys, vals); ok {
			return out, nil
		}
	}
	members := map[string]json.RawMessage{}
	if len(obj) > 0 {
		if err := json.Unmarshal(obj, &members); err != nil {
			return nil, err
		}
	}
	if extraKey != "" {
		members[extraKey] = extraVal
	}
	return MergeMeta(params, members)
}

// mergeDecoded is MergeMeta's way for params it cannot splice into
// without decoding them.
func mergeDecoded(params []byte, members map[string]json.RawMessage) ([]byte, error) {
	if err := RequireObject(params, "to carry _meta"); err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(params)
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return nil, NewLocalError(CodeInvalidParams, "params are not a valid JSON object ("+err.Error()+"); nothing was sent", ErrInvalidParams, err)
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := obj["_meta"]; ok && !bytes.Equal(bytes.TrimSpace(raw), nullLit) {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, NewLocalError(CodeInvalidParams, "params._meta must be a JSON object, got "+sample(raw)+"; nothing was sent", ErrInvalidParams)
		}
	}
	for k, v := range members {
		if _, set := meta[k]; !set {
			meta[k] = v
		}
	}
	m, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	obj["_meta"] = m
	return json.Marshal(obj)
}

var metaKey = []byte(`"_meta"`)

// addToMeta is MergeMeta for params that already carry a "_meta" object
// (a request forwarded as a client sent it): the members it lacks are
// appended inside that object, without decoding params; params are
// returned as they are when it has them all. ok is false when it cannot
// tell (escapes in member names, a second "_meta", a _meta that is no
// object, malformed params): MergeMeta then decodes and merges.
func addToMeta(params []byte, keys []string, vals [][]byte) (out []byte, ok bool) {
	if bytes.Contains(params, escapeU) {
		return nil, false
	}
	var meta []byte
	n := 0
	if eachMember(params, func(key, val []byte) error {
		if string(key) == "_meta" {
			meta = val
			n++
		}
		return nil
	}) != nil || n != 1 || len(meta) < 2 || meta[0] != '{' {
		return nil, false
	}
	var buf [8][]byte
	have := buf[:0] // _meta's member names (a handful: a slice beats a map)
	if eachMember(meta, func(key, _ []byte) error {
		have = append(have, key)
		return nil
	}) != nil {
		return nil, false
	}
	var ab [8]int
	add := ab[:0] // indexes into keys of the members _meta lacks
	for i, k := range keys {
		if !slices.ContainsFunc(have, func(h []byte) bool { return string(h) == k }) {
			if !Valid(vals[i]) || bytes.ContainsAny(vals[i], "\r\n") {
				return nil, false // json.Marshal's checks and compaction
			}
			add = append(add, i)
		}
	}
	if len(add) == 0 {
		return params, true
	}
	// In the order json.Marshal gives a map's keys.
	slices.SortFunc(add, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	end := cap(params) - cap(meta) + len(meta) - 1 // the offset of _meta's closing brace
	empty := len(bytes.TrimSpace(meta[1:len(meta)-1])) == 0
	out = make([]byte, 0, len(params)+64*len(add))
	out = append(out, params[:end]...)
	for i, j := range add {
		if i > 0 || !empty {
			out = append(out, ',')
		}
		out = AppendString(out, keys[j])
		out = append(out, ':')
		out = append(out, vals[j]...)
	}
	return append(out, params[end:]...), true
}

// SpliceMeta returns params (a JSON object, or nil or null) with meta, an
// encoded JSON object, as its "_meta" member, without decoding params: one
// allocation. ok is false when params may already have a "_meta" member or
// is not an object; MergeMeta then merges member by member (or reports the
// error).
func SpliceMeta(params, meta []byte) (out []byte, ok bool) {
	if !CanSpliceMeta(params) {
		return nil, false
	}
	return appendWithMeta(make([]byte, 0, len(params)+len(meta)+len(`{"_meta":,}`)), params, meta, nil), true
}

// ParamsError is the local -32602 for params of method that cannot go on
// the wire: err's own message when it is already a local error that says
// what to do, prefixed with method.
func ParamsError(method string, err error) error {
	var e *Error
	if errors.As(err, &e) && e.Local() { // already says what to do
		return NewLocalError(e.Code, method+": "+e.Message, e.Unwrap()...)
	}
	return NewLocalError(CodeInvalidParams,
		fmt.Sprintf("%s: params %v; nothing was sent: pass one JSON value (json.RawMessage, []byte) or a Go value json.Marshal accepts", method, err),
		ErrInvalidParams, err)
}

// MarshalParams is Marshal for the params of method, failing with
// ParamsError; a non-empty object also requires them to be a JSON object
// (RequireObject), object saying why.
func MarshalParams(method string, params any, object string) ([]byte, error) {
	p, _, err := MarshalParamsSplice(method, params, object)
	return p, err
}

// MarshalParamsSplice is MarshalParams, also reporting whether a _meta
// member can be spliced into the params (CanSpliceMeta); for raw params
// the check that they are one JSON value finds that out on the way.
func MarshalParamsSplice(method string, params any, object string) ([]byte, bool, error) {
	p, splice, err := marshal(params, true)
	if err == nil && object != "" {
		err = RequireObject(p, object)
	}
	if err != nil {
		return nil, false, ParamsError(method, err)
	}
	return p, splice, nil
}
