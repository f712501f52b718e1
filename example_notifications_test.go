package snodo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/snodo/snodo"
)

func ExampleWithNotificationHandler() {
	cmd, args := exampleServer("-era", "legacy") // a legacy-era server
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
	// Resource updates are a subscription's, in either era (here the
	// client sends resources/subscribe): they skip the handler.
	sub, err := c.Listen(ctx, snodo.Filter{ResourceSubscriptions: []string{"test://a"}})
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	// The test server sends a log message, then the update of test://a.
	_, _ = c.Request(ctx, "test/notify", map[string]any{"method": "notifications/message",
		"params": map[string]any{"level": "warning", "logger": "db", "data": "disk almost full"}})
	_, _ = c.Request(ctx, "test/touch", map[string]string{"uri": "test://a"})

	var m snodo.LogMessage // the params of notifications/message
	if err := json.Unmarshal((<-notes).Params, &m); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("log %s %s: %s\n", m.Level, m.Logger, m.Data)
	ev := <-sub.Events()
	fmt.Println(ev.Method, string(ev.Params))
	// Output:
	// log warning db: "disk almost full"
	// notifications/resources/updated {"uri":"test://a"}
}
