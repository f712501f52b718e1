//go:build !unix

package servers

// openFlags: no named pipe blocks an open here; the mode checks remain.
const openFlags = 0
