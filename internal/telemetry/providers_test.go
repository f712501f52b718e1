package telemetry

import (
	"testing"

	"go.opentelemetry.io/otel"
)

// TestClientsFollowingTheDefaultGlobalShareInstruments: while the global
// meter provider is the delegating default (which keeps every instrument
// made from it, to forward it later), every client following it gets the
// same instruments, so connecting again and again does not pile them up.
func TestClientsFollowingTheDefaultGlobalShareInstruments(t *testing.T) {
	if !isDefault(otel.GetMeterProvider()) {
		t.Skip("a global meter provider is set")
	}
	first := New(nil, nil)
	if first.meters == nil {
		t.Fatal("no instruments while following the global provider")
	}
	for range 100 {
		if New(nil, nil).meters != first.meters {
			t.Fatal("a client following the default global provider made instruments of its own")
		}
	}
}
