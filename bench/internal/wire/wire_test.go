package wire

import "testing"

// TestTop: the top-level members are found whatever their order, nested
// values are skipped without being mistaken for them, and a malformed
// line yields what was found before the fault.
func TestTop(t *testing.T) {
	for _, tc := range []struct {
		line                      string
		id, method, result, error string
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"id":1,"method":"x"}}`, `7`, ``, `{"id":1,"method":"x"}`, ``},
		{`{"params":{"id":"p","method":"no"},"method":"tools/call","id":"a\"b"}`, `"a\"b"`, `tools/call`, ``, ``},
		{` { "id" : 3 , "error" : {"code":-1} }`, `3`, ``, ``, `{"code":-1}`},
		{`{"result":["}",{"a":"]"}],"id":12}`, `12`, ``, `["}",{"a":"]"}]`, ``},
		{`not json`, ``, ``, ``, ``},
		{`{"id":4,"method"`, `4`, ``, ``, ``},
	} {
		m := Top([]byte(tc.line))
		if string(m.ID) != tc.id || string(m.Method) != tc.method || string(m.Result) != tc.result || string(m.Error) != tc.error {
			t.Errorf("%s: got id %q method %q result %q error %q", tc.line, m.ID, m.Method, m.Result, m.Error)
		}
	}
	if n, ok := Int([]byte("123")); !ok || n != 123 {
		t.Errorf("Int(123) = %d, %v", n, ok)
	}
	if _, ok := Int([]byte(`"1"`)); ok {
		t.Error("a string id parsed as an integer")
	}
}
