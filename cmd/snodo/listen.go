package main

import (
	"fmt"
	"net"
	"strconv"

	"github.com/snodo/snodo/internal/natsembed"
)

// embedAt is where `snodo node --listen ADDR` runs its embedded NATS
// server: ADDR's host and port ("" for a free port on 127.0.0.1, each
// start a new one).
func embedAt(addr string) (natsembed.Options, error) {
	if addr == "" {
		return natsembed.Options{}, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return natsembed.Options{}, fmt.Errorf("--listen %s: want HOST:PORT, such as 127.0.0.1:4222: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return natsembed.Options{}, fmt.Errorf("--listen %s: %q is not a port", addr, port)
	}
	return natsembed.Options{Host: host, Port: p}, nil
}
