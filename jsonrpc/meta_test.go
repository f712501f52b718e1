package jsonrpc

import (
	"encoding/json"
	"testing"
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
