package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo"
)

// Many clients of both eras calling at once through one gateway in front
// of one supervised server (modern, so legacy clients are translated):
// every call gets its own answer, with its own progress.
func TestManyClientsAtOnce(t *testing.T) {
	s := serve(t, []string{})
	ctx := context.Background()
	const clients, calls = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, clients*calls)
	for i := range clients {
		era := snodo.EraLegacy
		if i%2 == 0 {
			era = snodo.EraModern
		}
		c, err := snodo.ConnectHTTP(ctx, s.url, snodo.WithEra(era))
		require.NoError(t, err)
		defer c.Close()
		for j := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				msg := fmt.Sprintf("client %d call %d", i, j)
				updates := 0
				res, err := c.CallTool(ctx, "echo", map[string]any{"message": msg})
				if err == nil && !strings.Contains(res.Content[0].Text, msg) {
					err = fmt.Errorf("%s: got %q", msg, res.Content[0].Text)
				}
				if err == nil && j%5 == 0 {
					_, err = c.Request(ctx, "test/progress", map[string]any{"count": 3, "intervalMs": 1}, snodo.OnProgress(func(snodo.Progress) { updates++ }))
					if err == nil && updates != 3 {
						err = fmt.Errorf("%s: %d progress updates, want 3", msg, updates)
					}
				}
				if err != nil {
					errs <- err
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
