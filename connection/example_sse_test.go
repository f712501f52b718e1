package connection_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/test/httpserver"
)

// A server of the HTTP+SSE transport of 2024-11-05 (an mcpServers entry
// of "type": "sse"), reached directly: the GET of its stream, then every
// message POSTed where the stream's endpoint event says. snodo.ConnectHTTP
// reaches it too, by falling back when its POSTs are refused.
func ExampleSSE() {
	srv := httptest.NewServer(&httpserver.SSE{}) // any HTTP+SSE server; its stream is at /sse
	defer srv.Close()

	ctx := context.Background()
	t := connection.SSE(srv.URL+"/sse", nil, http.Header{"X-Api-Key": {"secret"}})
	c, err := snodo.ConnectTransport(ctx, t)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println(c.Era(), c.ProtocolVersion())

	res, err := c.CallTool(ctx, "echo", map[string]string{"text": "hello"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text())
	// Output:
	// legacy 2024-11-05
	// hello
}
