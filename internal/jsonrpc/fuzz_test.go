package jsonrpc

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// FuzzScan checks the line classifier against encoding/json: it never
// panics, every line gets a kind or an error, the members it reports are
// slices of the line, and on any line that encoding/json accepts as an
// object it agrees with a classification built from encoding/json.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"s1","method":"roots/list","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3,"progress":1}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`,
		`{"id":1,"result":null,"error":null}`,
		`{"id":1,"id":null,"method":"m"}`,
		`{"i\u0064":1,"result":1}`,
		`{"\u0069d":7,"r\u0065sult":{}}`,
		`{"id":7,"\u0072esult":{},"re\u0073ult":1}`,
		`{"id":1,"result":"\x"}`, `{"id":1,"result":"\u12"}`, `{"id":1,"result":1.}`, `{"id":1,"result":-}`, `{"id":1,"result":1e}`, `{"id":1-2,"result":1}`,
		`{"method":"a\"b\\c\u00e9","params":[1,-2.5e+3,true,false,null,{"k":[]}]}`,
		` { "id" : 12 , "result" : "x" } `,
		`{"id":1,"result":"` + strings.Repeat(`\\`, 5) + `"}`,
		`{"id":1,"result":[[[[[[[[[[]]]]]]]]]]}`,
		`{"id":1,"method":5}`, `{"jsonrpc":"2.0","id":1}`, `{"id":"x","params":{}}`, `{"id":null}`,
		`{}`, `[]`, `"s"`, `null`, ``, `{`, `{"id"`, `{"id":}`, `{"id":1,}`, `{"a":1}x`,
		"{\"method\":\"m\",\"params\":\"\x01\"}",
		"{\"method\":\"m\xff\xfe\"}",
		`{"id":-`, `{"id":01,"result":1}`, `{"id":1e5,"result":1}`, `{"id":123456789012345678901,"result":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		orig := bytes.Clone(line)
		env, err := Scan(line)
		if !bytes.Equal(line, orig) {
			t.Fatal("Scan modified its input")
		}
		if err == nil {
			checkEnvelope(t, line, &env)
		} else if env.Kind != KindInvalid {
			t.Fatalf("error %v with kind %v", err, env.Kind)
		}
		_ = env.MethodName()
		if id, ok := env.IntID(); ok && id < 0 {
			t.Fatalf("IntID %d < 0", id)
		}

		ref, ok := reference(line)
		if !ok {
			return // not a JSON object, or one the reference cannot judge
		}
		if err != nil && err != errShape && err != ErrNoOutcome {
			t.Fatalf("encoding/json accepts %q but Scan says %v", line, err)
		}
		// An id without a method, a result or an error: an answer that
		// carries none, which the reader fails its request with.
		if noOutcome := ref.Kind == KindInvalid && ref.ID != nil; (err == ErrNoOutcome) != noOutcome {
			t.Fatalf("%q: Scan says %v; reference: an id and no outcome %v", line, err, noOutcome)
		} else if noOutcome && !bytes.Equal(env.ID, ref.ID) {
			t.Fatalf("%q: id %q with no outcome, reference %q", line, env.ID, ref.ID)
		}
		if err == nil && !json.Valid(line) {
			t.Fatalf("Scan accepts %q, which json.Valid rejects", line)
		}
		if got := env.Kind; got != ref.Kind {
			t.Fatalf("%q: Scan says %v, encoding/json-based reference says %v", line, got, ref.Kind)
		}
		if err == nil {
			for _, m := range []struct {
				name      string
				got, want []byte
			}{{"id", env.ID, ref.ID}, {"method", env.Method, ref.Method}, {"params", env.Params, ref.Params}, {"result", env.Result, ref.Result}, {"error", env.Error, ref.Error}} {
				if !bytes.Equal(m.got, m.want) || (m.got == nil) != (m.want == nil) {
					t.Fatalf("%q: member %s: Scan %q, reference %q", line, m.name, m.got, m.want)
				}
			}
		}
	})
}

// checkEnvelope checks the invariants of an accepted line.
func checkEnvelope(t *testing.T, line []byte, env *Envelope) {
	t.Helper()
	for _, m := range [][]byte{env.ID, env.Method, env.Params, env.Result, env.Error} {
		if m != nil && !within(line, m) && !bytes.Equal(m, nullLit) {
			t.Fatalf("member %q is not a slice of the line %q", m, line)
		}
		if m != nil && len(m) == 0 {
			t.Fatalf("empty member in %q", line)
		}
	}
	switch env.Kind {
	case KindRequest:
		if env.Method == nil || env.ID == nil {
			t.Fatalf("request without method or id: %q", line)
		}
	case KindNotification:
		if env.Method == nil || env.ID != nil {
			t.Fatalf("bad notification: %q", line)
		}
	case KindResponse:
		if env.Method != nil || env.ID == nil || (env.Result == nil && env.Error == nil) {
			t.Fatalf("bad response: %q", line)
		}
	default:
		t.Fatalf("accepted %q with kind %v", line, env.Kind)
	}
	if env.Method != nil && (len(env.Method) < 2 || env.Method[0] != '"' || env.Method[len(env.Method)-1] != '"') {
		t.Fatalf("method %q is not a string", env.Method)
	}
}

// within reports whether sub is a subslice of b's memory.
func within(b, sub []byte) bool {
	if len(b) == 0 || len(sub) == 0 {
		return false
	}
	bs, be := &b[0], &b[len(b)-1]
	ss, se := &sub[0], &sub[len(sub)-1]
	return uintptrOf(ss) >= uintptrOf(bs) && uintptrOf(se) <= uintptrOf(be)
}

// reference classifies line with encoding/json, reading the top-level
// members in order by their decoded names (a name written with escapes,
// "\u0069d", is "id", as for any JSON reader). It declines (ok false) on anything that is not a
// JSON object and on duplicate members Scan interprets, whose meaning
// JSON leaves open.
func reference(line []byte) (env Envelope, ok bool) {
	if !json.Valid(line) {
		return env, false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return env, false
	}
	seen := map[string]bool{}
	var nullID bool
	for dec.More() {
		before := int(dec.InputOffset())
		if _, err := dec.Token(); err != nil {
			return env, false
		}
		after := int(dec.InputOffset())
		var name string
		if json.Unmarshal(bytes.TrimLeft(line[before:after], " \t\r\n,"), &name) != nil {
			return env, false
		}
		rawKey := strconv.Quote(name)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return env, false
		}
		end := int(dec.InputOffset())
		raw := bytes.TrimLeft(line[after:end], " \t\r\n:")
		if !bytes.Equal(raw, val) {
			return env, false // the decoder's offsets are not what this reference assumes
		}
		switch rawKey {
		case `"id"`, `"method"`, `"params"`, `"result"`, `"error"`:
			if seen[rawKey] {
				return env, false
			}
			seen[rawKey] = true
		}
		switch rawKey {
		case `"id"`:
			if string(raw) == "null" {
				nullID = true
			} else {
				env.ID = raw
			}
		case `"method"`:
			if raw[0] != '"' {
				return Envelope{}, true // not JSON-RPC: invalid
			}
			env.Method = raw
		case `"params"`:
			env.Params = raw
		case `"result"`:
			env.Result = raw
		case `"error"`:
			env.Error = raw
		}
	}
	if _, err := dec.Token(); err != nil {
		return env, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return env, false
	}
	switch {
	case env.Method != nil && nullID:
		env.ID, env.Kind = nullLit, KindRequest
	case env.Method != nil && env.ID != nil:
		env.Kind = KindRequest
	case env.Method != nil:
		env.Kind = KindNotification
	case env.ID != nil && (env.Result != nil || env.Error != nil):
		env.Kind = KindResponse
	default:
		return Envelope{ID: env.ID}, true // invalid; an id says it answers one
	}
	return env, true
}

func uintptrOf(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }

// FuzzValue checks what reaches the wire from callers: Valid agrees with
// json.Valid on any input, and OneLine (params, error data) returns
// exactly one valid JSON value with no line break, the same value as its
// input, or an error exactly when the input is not valid JSON. It also
// builds the lines a caller's value ends up in and checks each is one
// JSON value on one line.
func FuzzValue(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, "{\n \"a\": 1\n}", "[1,\r\n2]", `{"a":`, `{} {}`, `not json`, `"x"`, `42`, `-0.5e+7`, `01`, `1.`,
		"{}}\n{\"jsonrpc\":\"2.0\",\"id\":424242,\"method\":\"exit\"}", `"\u00e9\n"`, `"a\qb"`, "\"\x01\"", ` true `, "\t null\n",
		`[[[[[[[[[[]]]]]]]]]]`, `{"\u005fmeta":{}}`, "\"\xff\"", `{"a":{"_meta":1}}`, `{"_meta":null}`, `{"b":"\u0041"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if got, want := Valid(raw), json.Valid(raw); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", raw, got, want)
		}
		out, err := OneLine(raw)
		if (err == nil) != json.Valid(raw) {
			t.Fatalf("OneLine(%q): error %v, json.Valid %v", raw, err, json.Valid(raw))
		}
		if err != nil {
			return
		}
		checkWireValue(t, out)
		var a, b bytes.Buffer
		_ = json.Compact(&a, raw)
		_ = json.Compact(&b, out)
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("OneLine changed the value: %q → %q", raw, out)
		}
		checkLine(t, AppendRequest(nil, 7, "m", out))
		checkLine(t, AppendNotification(nil, "n\n", out))
		checkLine(t, AppendResult(nil, []byte(`"s1"`), out))
		checkLine(t, AppendError(nil, []byte(`1`), &Error{Code: 1, Message: "m\n", Data: out}))
		if CanSpliceMeta(out) {
			checkLine(t, AppendRequestMeta(nil, 8, "m", out, []byte(`{"k":1}`), []byte(`"traceparent":"00-x"`)))
			checkLine(t, AppendNotificationMeta(nil, "m", out, []byte(`"traceparent":"00-x"`)))
		}
		// The scan's own verdict on splicing (what requests use) is safe:
		// spliced params keep every member and gain exactly one _meta.
		if p, splice, err := MarshalParamsSplice("m", json.RawMessage(raw), ""); err != nil {
			t.Fatalf("MarshalParamsSplice(%q): %v, yet OneLine took it", raw, err)
		} else if splice {
			line := AppendRequestMeta(nil, 9, "m", p, []byte(`{"k":1}`), nil)
			checkLine(t, line)
			var msg struct {
				Params map[string]json.RawMessage `json:"params"`
			}
			if err := json.Unmarshal(line, &msg); err != nil {
				t.Fatalf("spliced %q: %v", raw, err)
			}
			var orig map[string]json.RawMessage
			_ = json.Unmarshal(raw, &orig)
			if len(msg.Params) != len(orig)+1 || string(msg.Params["_meta"]) != `{"k":1}` {
				t.Fatalf("splicing into %q lost or doubled a member: %s", raw, line)
			}
		}
		if merged, err := MergeMeta(out, map[string]json.RawMessage{"progressToken": json.RawMessage(`3`)}); err == nil {
			checkWireValue(t, merged)
		} else if e, ok := err.(*Error); !ok || !e.Local() {
			t.Fatalf("MergeMeta(%q): error %v is not a local *Error", out, err)
		}
	})
}

// checkWireValue: one valid JSON value, no line break.
func checkWireValue(t *testing.T, v []byte) {
	t.Helper()
	if !json.Valid(v) || bytes.ContainsAny(v, "\r\n") {
		t.Fatalf("not one JSON value on one line: %q", v)
	}
}

// checkLine: a written line is one JSON value, one newline, at the end.
func checkLine(t *testing.T, line []byte) {
	t.Helper()
	body, ok := bytes.CutSuffix(line, []byte("\n"))
	if !ok {
		t.Fatalf("line without its newline: %q", line)
	}
	checkWireValue(t, body)
}

// FuzzMergeMetaObject: whatever the params and the members' object,
// MergeMetaObject answers as MergeMeta does for the same members decoded.
func FuzzMergeMetaObject(f *testing.F) {
	f.Add([]byte(`{"_meta":{"a":1},"x":2}`), []byte(`{"b":2,"a":3}`))
	f.Add([]byte(`{"name":"t"}`), []byte(`{"progressToken":1}`))
	f.Add([]byte(`{"_meta":{}}`), []byte(`{"k\n":1}`))
	f.Fuzz(func(t *testing.T, params, obj []byte) {
		members := map[string]json.RawMessage{}
		if json.Unmarshal(obj, &members) != nil {
			return
		}
		members["progressToken"] = json.RawMessage(`5`)
		want, werr := MergeMeta(params, members)
		got, gerr := MergeMetaObject(params, obj, "progressToken", []byte(`5`))
		if string(got) != string(want) || (werr == nil) != (gerr == nil) {
			t.Fatalf("params %q, obj %q: got %q (%v), want %q (%v)", params, obj, got, gerr, want, werr)
		}
	})
}
