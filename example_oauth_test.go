package snodo_test

import (
	"context"
	"fmt"
	"net/url"
	"os"

	"github.com/snodo/snodo"
)

// A protected HTTP server: snodo discovers its authorization server on
// the first 401, registers, and asks the user through Authorize.
func ExampleWithOAuth() {
	redirects := make(chan url.Values, 1) // filled by your callback handler at RedirectURL
	auth := snodo.WithOAuth(snodo.OAuth{
		RedirectURL: "http://127.0.0.1:8765/callback",
		Authorize: func(ctx context.Context, authURL string) (url.Values, error) {
			fmt.Fprintln(os.Stderr, "Open this URL to authorize:", authURL)
			select {
			case q := <-redirects:
				return q, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
	_ = auth // pass it to snodo.ConnectHTTP(ctx, "https://mcp.example.com/mcp", auth)
}
