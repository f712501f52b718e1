// Package bytebound bounds a buffered channel in bytes as well as in
// items, when its reader takes items without telling the writer: the
// subscription queues of packages subscription and remote use it, so
// both keep the same policy at the bound.
package bytebound

// Counter holds the sizes of the items sent into one channel, oldest
// first. Only the channel's writer uses it (or calls are serialised by
// the writer's lock); the zero value is ready.
type Counter struct {
	// sizes[head:] are the sizes of the items sent, oldest first, and
	// total their sum; the reader takes items from the front without
	// telling, so the sizes of those it took are found (the channel's
	// length says how many are left) and dropped at the next Admit.
	sizes []int
	head  int
	total int
}

// Admit says whether an item of n bytes may join a channel holding left
// items (its len now) under a bound of max bytes, and how many bytes
// wait: the sizes of the items the reader took since the last call, the
// oldest, are dropped first (waiting may count more than is left, as
// the reader may take some meanwhile). The policy: an item arriving at
// an empty queue is always taken, however large; otherwise it is taken
// when the bytes waiting and its own stay within max. Call Sent once it
// is in the channel.
func (c *Counter) Admit(left, n, max int) (waiting int, ok bool) {
	for len(c.sizes)-c.head > left {
		c.total -= c.sizes[c.head]
		c.head++
	}
	if c.head > 0 && c.head*2 >= len(c.sizes) { // compact: at most twice the items queued
		k := copy(c.sizes, c.sizes[c.head:])
		c.sizes, c.head = c.sizes[:k], 0
	}
	return c.total, c.total == 0 || c.total+n <= max
}

// Sent records an item of n bytes sent into the channel.
func (c *Counter) Sent(n int) {
	c.sizes = append(c.sizes, n)
	c.total += n
}
