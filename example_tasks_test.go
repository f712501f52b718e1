package snodo_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/snodo/snodo"
)

// A tool whose taskSupport is "required" is called like any other:
// CallTool runs it as a task and waits, reporting each status.
func ExampleCalls_CallTool_task() {
	cmd, args := exampleServer("-era", "legacy", "-tasks")
	c, err := snodo.Connect(context.Background(), cmd, args)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(context.Background(), "research", map[string]any{"topic": "actors"},
		snodo.OnTaskStatus(func(s snodo.TaskStatus) {
			if s.Terminal() {
				fmt.Println("task", s.Status)
			}
		}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text())
	// Output:
	// task completed
	// Report on actors
}

// CallToolAsTask returns once the server has created the task; Wait gives
// its result, Cancel ends it.
func ExampleCalls_CallToolAsTask() {
	cmd, args := exampleServer("-tasks") // a modern server offering the tasks extension
	c, err := snodo.Connect(context.Background(), cmd, args)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background() // owns the tasks: ending it cancels them on the server

	quick, err := c.CallToolAsTask(ctx, "research", map[string]any{"topic": "go", "ms": 200})
	if err != nil {
		log.Fatal(err)
	}
	long, err := c.CallToolAsTask(ctx, "research", map[string]any{"topic": "everything", "ms": 60000})
	if err != nil {
		log.Fatal(err)
	}
	res, err := quick.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text())

	if err := long.Cancel(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = long.Wait(ctx)
	fmt.Println(errors.Is(err, snodo.ErrTaskCancelled))
	// Output:
	// Report on go
	// true
}

// A legacy server's -32042 names the pages the user must open first.
func ExampleURLElicitationRequiredError() {
	cmd, args := exampleServer("-era", "legacy")
	c, err := snodo.Connect(context.Background(), cmd, args)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	_, err = c.CallTool(context.Background(), "url", map[string]string{"id": "42"})
	var ue *snodo.URLElicitationRequiredError
	if errors.As(err, &ue) {
		for _, el := range ue.Elicitations {
			fmt.Println(el.Message, el.URL)
		}
	}
	// Output:
	// Sign in to Example. https://example.com/auth/42
}
