package remote

import (
	"fmt"
	"testing"
	"time"

	"github.com/snodo/snodo"
)

// A host's pins: a key idle past pinIdle is forgotten; at maxPins the
// key idle longest goes; the others stay.
func TestMemberPinsBounds(t *testing.T) {
	var pins memberPins
	conn := &snodo.Client{}
	t0 := time.Now()
	pins.put("idle", conn, t0)
	if pins.get("idle", t0.Add(pinIdle/2)) != conn {
		t.Fatal("a key used within pinIdle is kept")
	}
	if pins.get("idle", t0.Add(pinIdle/2+pinIdle+time.Second)) != nil {
		t.Fatal("a key idle past pinIdle is forgotten")
	}
	for i := range maxPins {
		pins.put(fmt.Sprint(i), conn, t0.Add(time.Duration(i)*time.Millisecond))
	}
	at := t0.Add(time.Hour)
	pins.get("0", t0.Add(maxPins*time.Millisecond)) // "0" is used again: "1" is idle longest
	pins.put("new", conn, t0.Add((maxPins+1)*time.Millisecond))
	if pins.len() != maxPins {
		t.Fatalf("%d keys, want the bound %d", pins.len(), maxPins)
	}
	if pins.get("1", t0.Add((maxPins+2)*time.Millisecond)) != nil || pins.get("0", t0.Add((maxPins+2)*time.Millisecond)) != conn {
		t.Fatal("at the bound the key idle longest goes, and only it")
	}
	pins.put("later", conn, at) // an hour on: a sweep takes the idle keys
	if pins.len() != 1 {
		t.Fatalf("%d keys after the sweep, want 1", pins.len())
	}
}
