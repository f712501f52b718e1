package snodo_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/snodo/snodo"
)

func ExampleWithSandbox() {
	cmd, args := exampleServer() // any stdio MCP server: "npx", []string{"-y", "…"}
	c, err := snodo.Connect(context.Background(), cmd, args, snodo.WithSandbox(snodo.Sandbox{
		MemoryBytes:  64 << 20, // past it the server is stopped
		CPUTime:      time.Minute,
		MaxProcesses: 64,
		MaxOpenFiles: 256,
		NoNetwork:    true,
	}))
	if err != nil {
		log.Fatal(err) // a *snodo.SandboxError when this machine cannot set the sandbox up
	}
	defer c.Close()
	_, err = c.CallTool(context.Background(), "alloc", map[string]int{"mb": 256})
	var se *snodo.SandboxError
	if errors.As(err, &se) {
		fmt.Println("the server broke its", se.Limit, "limit of", se.Value)
	}
	<-c.Done()
	fmt.Println(errors.As(c.Err(), &se))
	// Output:
	// the server broke its memory limit of 64 MiB
	// true
}
