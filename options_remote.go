package snodo

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/snodo/snodo/internal/connopts"
)

// capsUnset marks the capabilities of a config no option has set yet, so
// that WithClientCapabilities with none declared still counts as given.
var capsUnset = map[string]json.RawMessage{"": nil}

// StartRemote readies a zero config to read one option for a remote
// client (connopts.RemoteOf): capsUnset tells whether
// WithClientCapabilities was given, even with none declared.
func (c *config) StartRemote() { c.mcp.capabilities.Extensions = capsUnset }

// TakeRemote moves into s what the one option applied to c set that a
// client reaching its server through hosts over NATS (package remote)
// has; other says the option set anything else, rest names it.
func (c *config) TakeRemote(s *connopts.RemoteSettings[ClientCapabilities]) (rest string, other bool) {
	if reflect.ValueOf(c.mcp.capabilities.Extensions).Pointer() != reflect.ValueOf(capsUnset).Pointer() {
		caps := c.mcp.capabilities
		s.Capabilities = &caps
	}
	c.mcp.capabilities = ClientCapabilities{}
	if c.conn.Timeout != 0 {
		s.Timeout, c.conn.Timeout = c.conn.Timeout, 0
	}
	if c.mcp.handler != nil {
		s.Handler, c.mcp.handler = c.mcp.handler, nil
	}
	if c.mcp.maxInputRounds != 0 {
		s.MaxInputRounds, c.mcp.maxInputRounds = c.mcp.maxInputRounds, 0
	}
	if c.tracerProvider != nil {
		s.Tracers, c.tracerProvider = c.tracerProvider, nil
	}
	if c.meterProvider != nil {
		s.Meters, c.meterProvider = c.meterProvider, nil
	}
	if c.conn.System != nil {
		s.System, c.conn.System = c.conn.System, nil
	}
	if c.conn.Logger != nil {
		s.Logger, c.conn.Logger = c.conn.Logger, nil
	}
	if c.mcp.era != "" {
		s.Era, c.mcp.era = string(c.mcp.era), ""
	}
	if h := c.mcp.notify; h != nil {
		s.Notify, c.mcp.notify = func(ctx context.Context, method string, params json.RawMessage) {
			h(ctx, &Notification{Method: method, Params: params})
		}, nil
	}
	return c.processOnly + c.httpOnly, !reflect.ValueOf(*c).IsZero() // at most one name is set: the option applied alone
}
