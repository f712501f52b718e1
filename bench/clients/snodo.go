package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/snodo/snodo"
)

func init() { register("snodo", connectSnodo) }

type snodoClient struct {
	c    *snodo.Client
	sub  *snodo.Subscription
	args atomic.Pointer[boxedArgs] // the last args, already in an interface
}

// boxedArgs keeps args in an interface value, so that calling with the
// same pre-encoded args again does not allocate a new one.
type boxedArgs struct {
	raw   json.RawMessage
	boxed any
}

// box returns args as an interface, reusing the last one for the same bytes.
func (s *snodoClient) box(args json.RawMessage) any {
	if args == nil {
		return nil
	}
	if b := s.args.Load(); b != nil && len(b.raw) == len(args) && &b.raw[0] == &args[0] {
		return b.boxed
	}
	b := &boxedArgs{raw: args, boxed: args}
	s.args.Store(b)
	return b.boxed
}

func declineAll(ctx context.Context, req *snodo.ServerRequest) (any, error) {
	if req.Method == "elicitation/create" {
		return map[string]any{"action": "decline"}, nil
	}
	return nil, &snodo.Error{Code: snodo.CodeMethodNotFound, Message: "no " + req.Method}
}

func connectSnodo(ctx context.Context, o Options) (Client, error) {
	era := snodo.EraModern
	if o.Era == Legacy {
		era = snodo.EraLegacy
	}
	opts := []snodo.Option{
		snodo.WithEra(era),
		snodo.WithServerRequestHandler(declineAll),
		snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{}}),
	}
	var c *snodo.Client
	var err error
	if o.URL != "" {
		c, err = snodo.ConnectHTTP(context.Background(), o.URL, opts...)
	} else {
		c, err = snodo.Connect(context.Background(), o.Command, o.Args, opts...)
	}
	if err != nil {
		return nil, err
	}
	sc := &snodoClient{c: c}
	if o.OnEvent != nil {
		sub, err := c.Listen(context.Background(), snodo.Filter{ToolsListChanged: true})
		if err != nil {
			c.Close()
			return nil, err
		}
		sc.sub = sub
		go func() {
			for range sub.Events() {
				o.OnEvent()
			}
		}()
	}
	return sc, nil
}

func (s *snodoClient) Call(ctx context.Context, tool string, args json.RawMessage) (string, error) {
	res, err := s.c.CallTool(ctx, tool, s.box(args))
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("tool %s failed", tool)
	}
	if len(res.Content) == 0 {
		return "", fmt.Errorf("result has no content")
	}
	return res.Content[0].Text, nil
}

// Request is Client.Request with the params already encoded.
func (s *snodoClient) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return s.c.Request(ctx, method, params)
}

func (s *snodoClient) Close() error {
	if s.sub != nil {
		s.sub.Close()
	}
	return s.c.Close()
}
