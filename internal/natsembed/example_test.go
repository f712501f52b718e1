package natsembed_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/snodo/snodo/internal/natsembed"
)

// One machine needs no NATS setup: start a server in the process and give
// its URL to remote.NewHost and remote.Dial (see package remote).
func ExampleStart() {
	// 127.0.0.1 on a free port. With Options.Token set, clients pass the
	// token too: remote.WithNATSOptions(nats.Token(…)).
	nats, err := natsembed.Start(natsembed.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer nats.Shutdown()
	fmt.Println(strings.HasPrefix(nats.URL(), "nats://127.0.0.1:"))
	// Output: true
}
