package weborigin

import (
	"net/url"
	"testing"
)

func TestSame(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://example.com/mcp", "https://example.com/other?q=1", true},
		{"https://example.com/mcp", "https://EXAMPLE.com:443/mcp", true},
		{"http://example.com/mcp", "http://example.com:80/mcp", true},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:9090/mcp", false},
		{"http://example.com/mcp", "https://example.com/mcp", false},
		{"https://example.com/mcp", "https://api.example.com/mcp", false},
		{"http://[::1]:8080/mcp", "http://[::1]:8080/x", true},
		{"http://[::1]:8080/mcp", "http://127.0.0.1:8080/mcp", false},
		{"/relative", "/relative", false},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := Same(a, b); got != tc.same {
			t.Errorf("Same(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
