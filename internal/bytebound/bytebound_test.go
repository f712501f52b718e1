package bytebound

import "testing"

func TestCounter(t *testing.T) {
	var c Counter
	if w, ok := c.Admit(0, 100, 10); !ok || w != 0 {
		t.Fatalf("an item at an empty queue: got %d, %v; want 0, true", w, ok)
	}
	c.Sent(100)
	if w, ok := c.Admit(1, 1, 10); ok || w != 100 {
		t.Fatalf("past the bound: got %d, %v; want 100, false", w, ok)
	}
	if w, ok := c.Admit(0, 5, 10); !ok || w != 0 { // the reader took it
		t.Fatalf("after the reader took it: got %d, %v; want 0, true", w, ok)
	}
	c.Sent(5)
	if w, ok := c.Admit(1, 5, 10); !ok || w != 5 {
		t.Fatalf("at the bound: got %d, %v; want 5, true", w, ok)
	}
	c.Sent(5)
	if w, ok := c.Admit(2, 1, 10); ok || w != 10 {
		t.Fatalf("one past the bound: got %d, %v; want 10, false", w, ok)
	}
	if w, _ := c.Admit(1, 1, 10); w != 5 || len(c.sizes)-c.head != 1 {
		t.Fatalf("after the reader took one: waiting %d, sizes %v from %d", w, c.sizes, c.head)
	}
}
