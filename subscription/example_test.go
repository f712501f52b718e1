package subscription_test

import (
	"context"
	"fmt"
	"io"
	"log"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/connection"
	"github.com/snodo/snodo/subscription"
	"github.com/snodo/snodo/test/testserver"
)

// A Filter asks for the notifications a subscription carries; each one
// the server sends arrives as an Event. Here the project's test server,
// run in this process, is asked to touch a resource the subscription
// follows.
func ExampleFilter() {
	server := connection.InMemory(func(_ context.Context, in io.Reader, out io.Writer) error {
		if code := testserver.Main([]string{"-era", "legacy"}, in, out, io.Discard); code != 0 {
			return fmt.Errorf("test server: exit status %d", code)
		}
		return nil
	})
	ctx := context.Background()
	c, err := snodo.ConnectTransport(ctx, server)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	sub, err := c.Listen(ctx, subscription.Filter{ResourceSubscriptions: []string{"test://a"}})
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	if _, err := c.Request(ctx, "test/touch", map[string]string{"uri": "test://a"}); err != nil {
		log.Fatal(err)
	}
	var ev subscription.Event = <-sub.Events()
	fmt.Println(ev.Method, string(ev.Params))
	// Output: notifications/resources/updated {"uri":"test://a"}
}
