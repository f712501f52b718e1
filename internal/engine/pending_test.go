package engine

import (
	"encoding/json"
	"errors"
	"testing"
)

// TestTableRingOverflow: a call that outlives tableSlots later IDs keeps
// its slot, the later call filed under the same slot goes to the overflow
// map, and both are found, completed and failed by their own IDs.
func TestTableRingOverflow(t *testing.T) {
	tb := newTable()
	long := &call{wake: make(chan struct{}, 1)}
	longID, err := tb.add(long, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var sameSlot *call
	var sameSlotID int64
	for i := 0; i < 2*tableSlots; i++ {
		c := &call{wake: make(chan struct{}, 1)}
		id, err := tb.add(c, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if id&(tableSlots-1) == longID&(tableSlots-1) && sameSlot == nil {
			sameSlot, sameSlotID = c, id // kept in flight, in the overflow map
			continue
		}
		if !tb.complete(id, json.RawMessage(`1`), nil) {
			t.Fatalf("call %d not found", id)
		}
	}
	if sameSlot == nil || tb.shardOf(sameSlotID).overflow[sameSlotID] != sameSlot {
		t.Fatalf("the call sharing the long call's slot is not in the overflow map")
	}
	if got := tb.inFlight(); got != 2 {
		t.Fatalf("in flight: %d, want 2", got)
	}
	if tb.shardOf(longID).lookup(longID) != long || tb.shardOf(sameSlotID).lookup(sameSlotID) != sameSlot {
		t.Fatal("lookup does not find the calls by their IDs")
	}
	if tb.complete(longID+tableSlots*4, nil, nil) {
		t.Fatal("an ID never handed out completed a call")
	}
	if !tb.complete(sameSlotID, json.RawMessage(`2`), nil) || string(sameSlot.result) != "2" {
		t.Fatal("the overflowed call was not completed")
	}
	if tb.abandon(sameSlotID, sameSlot) && tb.inFlight() != 1 {
		t.Fatal("abandoning a finished call changed the count")
	}
	stop := errors.New("stopped")
	tb.close(stop)
	if !long.done.Load() || long.err != stop || tb.inFlight() != 0 {
		t.Fatalf("close did not fail the long call: done %v, err %v, in flight %d", long.done.Load(), long.err, tb.inFlight())
	}
	if _, err := tb.add(&call{wake: make(chan struct{}, 1)}, 0, 0); err != stop {
		t.Fatalf("add after close: %v", err)
	}
}
