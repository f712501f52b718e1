package snodo

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/snodo/snodo/internal/seam"
)

func init() {
	seam.RemoteOptions = func(opts any) (seam.RemoteSettings, error) { return remoteOptions(opts.([]Option)) }
}

// capsUnset marks the capabilities of a config no option has set yet, so
// that WithClientCapabilities with none declared still counts as given.
var capsUnset = map[string]json.RawMessage{"": nil}

// remoteOptions reads opts for a client that reaches its server through
// hosts over NATS (package remote): each option is applied alone, what
// such a client has is taken, and an option that sets anything else is
// refused, so that none is silently ignored.
func remoteOptions(opts []Option) (seam.RemoteSettings, error) {
	var s seam.RemoteSettings
	for i, opt := range opts {
		if opt == nil {
			return s, fmt.Errorf("option %d is nil; leave it out of the list instead", i+1)
		}
		var c config
		c.mcp.capabilities.Extensions = capsUnset
		if err := opt(&c); err != nil {
			return s, err
		}
		if reflect.ValueOf(c.mcp.capabilities.Extensions).Pointer() != reflect.ValueOf(capsUnset).Pointer() {
			s.Capabilities = c.mcp.capabilities
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
		if c.mcp.era != "" { // natsleg
			s.Era, c.mcp.era = string(c.mcp.era), ""
		}
		if h := c.mcp.notify; h != nil { // natsleg
			s.Notify, c.mcp.notify = func(ctx context.Context, method string, params json.RawMessage) {
				h(ctx, &Notification{Method: method, Params: params})
			}, nil
		}
		if !reflect.ValueOf(c).IsZero() {
			name := c.processOnly + c.httpOnly // at most one is set: the option applied alone
			if name != "" {
				name = " (" + name + ")"
			}
			return s, fmt.Errorf("option %d%s does not apply to a remote client: its server is started and reached by the hosts, which take such options in their pools' own; a remote client takes WithTimeout, WithServerRequestHandler, WithMaxInputRounds, WithClientCapabilities, WithTracerProvider, WithMeterProvider, WithActorSystem, WithLogger, WithEra and WithNotificationHandler", i+1, name)
		}
	}
	return s, nil
}
