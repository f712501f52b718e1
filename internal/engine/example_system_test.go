package engine_test

import (
	"context"
	"fmt"
	"log"

	protoactor "github.com/asynkron/protoactor-go/actor"

	"github.com/snodo/snodo/internal/engine"
)

// The connection actor lives in System: stopping its PID there closes the
// connection, and a request waiting then fails.
func ExampleConn_System() {
	c, err := engine.Start(context.Background(), engine.Config{Command: testServer()})
	if err != nil {
		log.Fatal(err)
	}
	var sys *protoactor.ActorSystem = c.System() // Config.System, or actor.Shared() when nil
	sys.Root.Stop(c.PID())
	<-c.Done()
	fmt.Println(c.Err() != nil)
	// Output: true
}
