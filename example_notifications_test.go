package snodo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/snodo/snodo"
)

func ExampleWithNotificationHandler() {
	cmd, args := exampleServer("-era", "legacy") // a legacy-era server, where resources/subscribe exists
	notes := make(chan *snodo.Notification, 16)
	c, err := snodo.Connect(context.Background(), cmd, args,
		// Runs on a goroutine of its own, in the order the server sent
		// them; a slow handler never delays responses.
		snodo.WithNotificationHandler(func(ctx context.Context, n *snodo.Notification) {
			notes <- n
		}))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.SetLoggingLevel(ctx, "info"); err != nil {
		log.Fatal(err)
	}
	if err := c.SubscribeResource(ctx, "test://a"); err != nil {
		log.Fatal(err)
	}
	// The test server sends a log message, then the update of test://a.
	_, _ = c.Request(ctx, "test/notify", map[string]any{"method": "notifications/message",
		"params": map[string]any{"level": "warning", "logger": "db", "data": "disk almost full"}})
	_, _ = c.Request(ctx, "test/touch", map[string]string{"uri": "test://a"})

	for range 2 {
		n := <-notes
		switch n.Method {
		case "notifications/message":
			m, err := n.LogMessage()
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("log %s %s: %s\n", m.Level, m.Logger, m.Text())
		case "notifications/resources/updated":
			u, err := n.ResourceUpdated()
			if err != nil {
				log.Fatal(err)
			}
			fmt.Println("updated", u.URI)
		}
	}
	// Output:
	// log warning db: disk almost full
	// updated test://a
}
