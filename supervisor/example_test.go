package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/supervisor"
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

// A supervised connection restarts a server that crashed; the call that
// was in flight fails, the next one reaches the new server.
func Example() {
	cmd, args := exampleServer()
	events := make(chan supervisor.LifecycleEvent, 16)
	c, err := supervisor.Connect(context.Background(), snodo.Command(cmd, args...),
		supervisor.WithIntensity(3, time.Minute),
		supervisor.WithEventHandler(func(ev supervisor.LifecycleEvent) { events <- ev }))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	res, err := c.CallTool(context.Background(), "echo", map[string]string{"message": "hello"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text())

	// The server crashes while answering: that call fails with -32000.
	_, err = c.Request(context.Background(), "test/crash", map[string]int{"code": 1})
	fmt.Println(errors.Is(err, snodo.ErrServerExited))
	for ev := range events {
		if ev.Kind == "connected" && ev.Total > 0 {
			fmt.Println("restarted after:", ev.Total, "restart")
			break
		}
	}
	// Calls made during the restart would have waited for it.
	res, err = c.CallTool(context.Background(), "echo", map[string]string{"message": "hello again"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text())
	// Output:
	// hello
	// true
	// restarted after: 1 restart
	// hello again
}

// A pool spreads calls over several servers.
func ExampleNewPool() {
	cmd, args := exampleServer()
	p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 3)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	res, err := p.CallTool(context.Background(), "add", map[string]int{"a": 2, "b": 3},
		snodo.Idempotent(), snodo.Timeout(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(p.Members()), string(res.StructuredContent))
	// Output: 3 {"sum":5}
}

// Size is how many members are in rotation, read without copying them:
// Grow and Shrink change it.
func ExamplePool_Size() {
	cmd, args := exampleServer()
	p, err := supervisor.NewPool(context.Background(), snodo.Command(cmd, args...), 2)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	fmt.Println(p.Size())
	if err := p.Shrink(1); err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Size())
	// Output:
	// 2
	// 1
}
