package listening

import (
	"errors"
	"testing"
)

// Err is nil until Finish closes Done, then the reason Finish recorded.
func TestEnd(t *testing.T) {
	e := NewEnd()
	select {
	case <-e.Done():
		t.Fatal("Done closed before Finish")
	default:
	}
	if e.Err() != nil {
		t.Fatal("Err before the end")
	}
	why := errors.New("gone")
	go e.Finish(why)
	<-e.Done()
	if e.Err() != why {
		t.Fatalf("Err is %v, want %v", e.Err(), why)
	}
}
