package snodo_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/handlers"
	"github.com/snodo/snodo/test/testutil"
)

// exampleServer returns the command of snodo's test server, built once.
func exampleServer(flags ...string) (string, []string) {
	path, err := testutil.BuildServer()
	if err != nil {
		log.Fatalf("building the test server: %v", err)
	}
	return path, flags
}

func Example() {
	cmd, args := exampleServer()
	c, err := snodo.Connect(context.Background(), cmd, args, snodo.WithClientInfo("my-agent", "1.0.0"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println(c.Era(), c.ProtocolVersion(), c.ServerInfo().Name)

	res, err := c.CallTool(context.Background(), "echo", map[string]string{"message": "hello"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text())
	// Output:
	// modern 2026-07-28 snodo-testserver
	// hello
}

func ExampleClient_ListTools() {
	cmd, args := exampleServer("-era", "legacy")
	c, err := snodo.Connect(context.Background(), cmd, args)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	tools, err := c.ListTools(context.Background()) // every page
	if err != nil {
		log.Fatal(err)
	}
	for _, tool := range tools {
		fmt.Println(tool.Name, "-", tool.Description)
	}
	// Output:
	// echo - Echoes message.
	// add - Adds a and b.
	// fail - Always fails.
	// slow - Sleeps ms milliseconds.
	// ask - Asks the user for a name.
}

func ExampleClient_CallTool_toolError() {
	cmd, args := exampleServer()
	c, err := snodo.Connect(context.Background(), cmd, args)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(context.Background(), "fail", nil)
	if err != nil {
		log.Fatal(err) // protocol errors only
	}
	fmt.Println(res.IsError, res.Text())
	// Output: true tool failed
}

// A tool that needs input: in the modern era the server answers
// input_required and the client fulfils it with the server-request
// handler, then retries; in the legacy era the server sends the same
// elicitation/create as a request. The caller sees one result.
func ExampleWithServerRequestHandler() {
	// One typed handler for both eras: pushed elicitation/create requests
	// (legacy) and the input requests of input_required results (modern).
	answer := func(ctx context.Context, req *snodo.ServerRequest) (any, error) {
		if req.Method != "elicitation/create" {
			return nil, &snodo.Error{Code: snodo.CodeMethodNotFound, Message: req.Method}
		}
		p, err := req.Elicitation()
		if err != nil {
			return nil, err // -32602 for the server
		}
		content := map[string]any{}
		for name, field := range p.RequestedSchema.Properties {
			if field.Type == "string" {
				content[name] = "Ada" // a real client asks the user, showing p.Message
			}
		}
		// Checked against p.RequestedSchema before it is sent.
		return &handlers.ElicitResult{Action: "accept", Content: content}, nil
	}
	for _, era := range []string{"modern", "legacy"} {
		cmd, args := exampleServer("-era", era)
		c, err := snodo.Connect(context.Background(), cmd, args,
			snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{Form: true}}),
			snodo.WithServerRequestHandler(answer))
		if err != nil {
			log.Fatal(err)
		}
		res, err := c.CallTool(context.Background(), "ask", map[string]int{"rounds": 2})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(c.Era(), res.Text())
		_ = c.Close()
	}
	// Output:
	// modern Hello, Ada!
	// legacy Hello, Ada!
}

func ExampleClient_ReadResource() {
	cmd, args := exampleServer("-era", "legacy")
	c, err := snodo.Connect(context.Background(), cmd, args)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.ReadResource(context.Background(), "test://a")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Contents[0].Text)
	_, err = c.ReadResource(context.Background(), "test://nope")
	fmt.Println(snodo.IsResourceNotFound(err))
	// Output:
	// content of a
	// true
}

func ExampleClient_GetPrompt() {
	cmd, args := exampleServer()
	c, err := snodo.Connect(context.Background(), cmd, args, snodo.WithStderr(os.Stderr))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	p, err := c.GetPrompt(context.Background(), "greet", map[string]string{"name": "Grace"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Messages[0].Role, p.Messages[0].Content.Text)
	// Output: user Hello, Grace!
}

func ExampleElicitParams_Check() {
	req := &snodo.ServerRequest{Method: "elicitation/create", Params: []byte(`{"message":"Your age?",
		"requestedSchema":{"type":"object","required":["age"],"properties":{"age":{"type":"integer","minimum":0}}}}`)}
	p, err := req.Elicitation()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Check(map[string]any{"age": 36}))
	fmt.Println(p.Check(map[string]any{"age": "old"}))
	fmt.Println(p.Check(map[string]any{}))
	// Output:
	// <nil>
	// the field "age": want an integer, got "old"
	// the required field "age" is missing
}
