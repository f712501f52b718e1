package remote

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/snodo/snodo"
)

// An option meant for one kind cannot be given to the other: it does not
// have the other's option type, so passing it is a compile error rather
// than an option silently ignored. Options for both are both.
func TestOptionsOfOneKindAreNotTheOthers(t *testing.T) {
	hostOnly := map[string]HostOption{
		"Serve":         Serve("x", nil),
		"WithMaxHeld":   WithMaxHeld(1),
		"WithHostLabel": WithHostLabel("x"),
	}
	for name, o := range hostOnly {
		_, ok := o.(ClientOption)
		assert.False(t, ok, "%s is a ClientOption", name)
	}
	clientOnly := map[string]ClientOption{
		"WithHeartbeat":            WithHeartbeat(time.Second),
		"WithTimeout":              WithTimeout(time.Second),
		"WithServerRequestHandler": WithServerRequestHandler(nil),
		"WithMaxInputRounds":       WithMaxInputRounds(1),
		"WithClientCapabilities":   WithClientCapabilities(snodo.ClientCapabilities{}),
		"WithTracerProvider":       WithTracerProvider(nil),
		"WithMeterProvider":        WithMeterProvider(nil),
		"WithActorSystem":          WithActorSystem(nil),
	}
	for name, o := range clientOnly {
		_, ok := o.(HostOption)
		assert.False(t, ok, "%s is a HostOption", name)
	}
	for name, o := range map[string]Option{
		"WithPrefix":      WithPrefix("x"),
		"WithNATSOptions": WithNATSOptions(),
		"WithReconnect":   WithReconnect(Reconnect{}),
		"WithLogger":      WithLogger(nil),
	} {
		var h HostOption = o
		var c ClientOption = o
		assert.NotNil(t, h, name)
		assert.NotNil(t, c, name)
	}
	_, err := clientConfig([]ClientOption{nil})
	assert.ErrorContains(t, err, "option 1 is nil")
	_, err = hostConfig([]HostOption{WithMaxHeld(2), nil})
	assert.ErrorContains(t, err, "option 2 is nil")
}
