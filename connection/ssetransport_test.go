package connection

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSSEEndpointOrigin: the endpoint event's URI is resolved against
// the stream's URL, and kept only on the same scheme, host and port (a
// missing port is the scheme's default).
func TestSSEEndpointOrigin(t *testing.T) {
	base, _ := url.Parse("http://Example.com/mcp/sse?key=1")
	for ref, want := range map[string]string{
		"/message?sessionId=a":                 "http://Example.com/message?sessionId=a",
		"message?sessionId=a":                  "http://Example.com/mcp/message?sessionId=a",
		"http://example.com:80/m":              "http://example.com:80/m",
		"//example.com/m#frag":                 "http://example.com/m",
		"https://example.com/m":                "",
		"http://example.com:8080/m":            "",
		"http://evil.example/m":                "",
		"http://example.com.evil.example/m":    "",
		"":                                     "",
		"http://user@evil.example/example.com": "",
	} {
		got, err := resolveEndpoint(base, ref)
		if want == "" {
			assert.Error(t, err, ref)
			continue
		}
		if assert.NoError(t, err, ref) {
			assert.Equal(t, want, got.String(), ref)
		}
	}
}
