package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/test/testutil"
)

// A Func answers the requests a server sends its client. The connection
// runs each one on a child actor of its own, at most MaxServerRequests at
// once, and writes the answer (or the error) back to the server.
func ExampleFunc() {
	roots := handlers.Func(func(ctx context.Context, req *handlers.Request) (any, error) {
		if req.Method != "roots/list" {
			return nil, fmt.Errorf("%s is not supported", req.Method) // -32603 for the server
		}
		return handlers.ListRootsResult{Roots: []handlers.Root{{URI: "file:///srv/project", Name: "project"}}}, nil
	})

	server, err := testutil.BuildServer() // any stdio MCP server
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	c, err := engine.Start(ctx, engine.Config{Command: server, Args: []string{"-era", "legacy"}, Handler: roots})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// Ask the test server to send roots/list and tell what it got back.
	raw, err := c.Request(ctx, "test/serverRequest", map[string]string{"method": "roots/list"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	var out struct {
		Responses []struct{ Result json.RawMessage }
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out.Responses[0].Result))
	// Output: {"roots":[{"uri":"file:///srv/project","name":"project"}]}
}

// Sampling decodes sampling/createMessage; the answer is the model's
// message.
func ExampleRequest_Sampling() {
	req := &handlers.Request{Method: "sampling/createMessage", Params: json.RawMessage(`{
		"messages":[{"role":"user","content":{"type":"text","text":"What is 2+2?"}}],
		"maxTokens":64}`)}
	p, err := req.Sampling()
	if err != nil {
		log.Fatal(err) // an answer of -32602 for the server
	}
	fmt.Println(p.Messages[0].Role, p.Messages[0].Content[0].Text, p.MaxTokens)

	answer := handlers.CreateMessageResult{
		Role:       "assistant",
		Content:    handlers.SamplingContents{{Type: "text", Text: "4"}},
		Model:      "my-model",
		StopReason: "endTurn",
	}
	b, err := json.Marshal(answer)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))
	// Output:
	// user What is 2+2? 64
	// {"role":"assistant","content":{"type":"text","text":"4"},"model":"my-model","stopReason":"endTurn"}
}
