package snodo_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/test/httpserver"
)

func ExampleConnectHTTP() {
	srv := httptest.NewServer(&httpserver.HTTP{Era: "legacy"}) // any Streamable HTTP MCP server's endpoint
	defer srv.Close()

	ctx := context.Background()
	c, err := snodo.ConnectHTTP(ctx, srv.URL, snodo.WithHTTPHeader("X-API-Key", "secret"))
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
	// legacy 2025-11-25
	// hello
}
