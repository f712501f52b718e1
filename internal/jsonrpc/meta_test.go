package jsonrpc

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SpliceMeta and MergeMeta's fast path: a _meta object spliced into
// params without decoding them; anything that may already carry _meta, or
// is not a complete object, is left to MergeMeta's merge.
func TestSpliceMeta(t *testing.T) {
	meta := []byte(`{"k":1}`)
	for _, tc := range []struct {
		params, want string
		ok           bool
	}{
		{"", `{"_meta":{"k":1}}`, true},
		{"null", `{"_meta":{"k":1}}`, true},
		{" {} ", `{"_meta":{"k":1}}`, true},
		{`{"name":"echo"}`, `{"_meta":{"k":1},"name":"echo"}`, true},
		{`{ "a" : [1] }`, `{"_meta":{"k":1},"a" : [1] }`, true},
		{`{"_meta":{"x":2}}`, "", false},
		{`{"a":"_meta"}`, "", false},
		{`[1]`, "", false},
		{`{`, "", false},
	} {
		out, ok := SpliceMeta([]byte(tc.params), meta)
		if ok != tc.ok || string(out) != tc.want {
			t.Errorf("SpliceMeta(%q) = %q, %v; want %q, %v", tc.params, out, ok, tc.want, tc.ok)
		}
		if ok && !json.Valid(out) {
			t.Errorf("SpliceMeta(%q) = %q: not JSON", tc.params, out)
		}
	}
	// A truncated object is an error from MergeMeta, not a panic.
	if _, err := MergeMeta([]byte(`{`), map[string]json.RawMessage{"k": json.RawMessage(`1`)}); err == nil {
		t.Error("MergeMeta accepted params {")
	}
}

func TestAppendRequestMeta(t *testing.T) {
	meta := []byte(`{"v":1}`)
	for params, want := range map[string]string{
		``:             `{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":{"v":1}}}`,
		`null`:         `{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":{"v":1}}}`,
		`{}`:           `{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":{"v":1}}}`,
		` { "a" : 1 }`: `{"jsonrpc":"2.0","id":7,"method":"m","params":{"_meta":{"v":1},"a" : 1 }}`,
	} {
		require.True(t, CanSpliceMeta([]byte(params)), params)
		line := AppendRequestMeta(nil, 7, "m", []byte(params), meta, nil)
		assert.Equal(t, want+"\n", string(line), params)
		assert.True(t, json.Valid(line), params)
	}
	for _, params := range []string{`[1]`, `{`, `{"_meta":{}}`, `"x"`} {
		assert.False(t, CanSpliceMeta([]byte(params)), params)
	}
}

func TestMember(t *testing.T) {
	obj := []byte(` {"a":{"resultType":"nested"},"resultType" : "input_required","z":[1,"}"]} `)
	m, err := Member(obj, "resultType")
	require.NoError(t, err)
	assert.Equal(t, `"input_required"`, string(m))
	m, err = Member(obj, "missing")
	require.NoError(t, err)
	assert.Nil(t, m)
	_, err = Member([]byte(`[1]`), "a")
	assert.Error(t, err)
	_, err = Member([]byte(`{"a":`), "a")
	assert.Error(t, err)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = Member(obj, "resultType") }))
}

func TestScanDoesNotAllocate(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"hi"}]}}`)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = Scan(line) }))
}

// TestValidStringsAgreeWithEncodingJSON: strings with every kind of byte
// (quotes, backslashes, control characters, high bytes) at every offset of
// the eight-byte skip agree with json.Valid.
func TestValidStringsAgreeWithEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{'a', 'z', ' ', '"', '\\', 'n', 'u', '0', 'f', 0x00, 0x01, 0x1f, 0x20, 0x7f, 0x80, 0xc3, 0xa9, 0xff}
	for range 200000 {
		n := r.IntN(24)
		b := make([]byte, 0, n+2)
		b = append(b, '"')
		for range n {
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		b = append(b, '"')
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, want)
		}
	}
}

// MergeMeta into params that carry a _meta already: the missing members
// are added inside it, as the decoding merge adds them, and params that
// have them all come back as they are.
func TestMergeMetaIntoAnExistingMeta(t *testing.T) {
	members := map[string]json.RawMessage{"b": json.RawMessage(`{"x":1}`), "a": json.RawMessage(`"v"`)}
	for _, params := range []string{
		`{"name":"echo","_meta":{"a":"mine"},"arguments":{"_meta":1}}`,
		`{"_meta":{}}`,
		`{"_meta": { } ,"k":[1,2]}`,
		`{"k":{"_meta":{"z":1}},"_meta":{"b":2,"a":3}}`,
	} {
		got, err := MergeMeta([]byte(params), members)
		if err != nil {
			t.Fatalf("%s: %v", params, err)
		}
		var obj, want map[string]any
		if err := json.Unmarshal(got, &obj); err != nil {
			t.Fatalf("%s: merged into invalid JSON %s", params, got)
		}
		_ = json.Unmarshal([]byte(params), &want)
		meta, _ := want["_meta"].(map[string]any)
		for k, v := range members {
			if _, ok := meta[k]; !ok {
				var x any
				_ = json.Unmarshal(v, &x)
				meta[k] = x
			}
		}
		wb, _ := json.Marshal(want)
		gb, _ := json.Marshal(obj)
		if string(wb) != string(gb) {
			t.Errorf("%s: got %s, want %s", params, gb, wb)
		}
	}
	full := []byte(`{"_meta":{"a":1,"b":2}}`)
	got, _ := MergeMeta(full, members)
	if &got[0] != &full[0] {
		t.Error("params that have every member were copied")
	}
	// Two _meta members, or escapes: the decoding merge decides.
	if _, err := MergeMeta([]byte(`{"_meta":{},"_meta":{}}`), members); err != nil {
		t.Error(err)
	}
}

// MergeMetaObject gives what MergeMeta gives for the same members decoded
// from the object (and the extra member), byte for byte, on its fast way
// and on the ways it hands to MergeMeta; params that have every member
// come back as they are, uncopied.
func TestMergeMetaObjectAsMergeMeta(t *testing.T) {
	objs := []string{``, `{}`, `{"b":{"x":1},"a":"v"}`, `{"a":1,"a":2}`, `{"k\u0041":1}`, `{"progressToken":"p","c":[1]}`}
	params := []string{
		``, `null`, `{}`, `{"name":"echo"}`,
		`{"name":"echo","_meta":{"a":"mine"},"arguments":{"_meta":1}}`,
		`{"_meta":{}}`, `{"_meta": { } ,"k":[1,2]}`,
		`{"k":{"_meta":{"z":1}},"_meta":{"b":2,"a":3}}`,
		`{"_meta":{"a":1,"b":2,"c":3,"progressToken":4,"kA":5}}`,
	}
	for _, o := range objs {
		for _, p := range params {
			for _, extra := range []string{"", "progressToken"} {
				members := map[string]json.RawMessage{}
				if o != "" {
					if err := json.Unmarshal([]byte(o), &members); err != nil {
						t.Fatal(err)
					}
				}
				if extra != "" {
					members[extra] = json.RawMessage(`7`)
				}
				want, werr := MergeMeta([]byte(p), members)
				got, gerr := MergeMetaObject([]byte(p), []byte(o), extra, []byte(`7`))
				if string(got) != string(want) || (werr == nil) != (gerr == nil) {
					t.Errorf("params %s, obj %s, extra %q: got %s (%v), want %s (%v)", p, o, extra, got, gerr, want, werr)
				}
			}
		}
	}
	full := []byte(`{"_meta":{"a":1,"b":2}}`)
	got, _ := MergeMetaObject(full, []byte(`{"a":"x","b":"y"}`), "", nil)
	if &got[0] != &full[0] {
		t.Error("params that have every member were copied")
	}
}
