package main

import (
	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/sandbox"
)

// describeSandbox says in one line which limits sb sets ("" for none):
// "memory 256 MiB, cpu 1m0s, processes 32, files 256, read-only /usr,
// read-write /srv/x, no network".
func describeSandbox(sb *snodo.Sandbox) string {
	if sb == nil {
		return ""
	}
	spec := &sandbox.Spec{MemoryBytes: sb.MemoryBytes, CPUTime: sb.CPUTime, MaxProcesses: sb.MaxProcesses,
		MaxOpenFiles: sb.MaxOpenFiles, ReadOnly: sb.ReadOnly, ReadWrite: sb.ReadWrite, NoNetwork: sb.NoNetwork}
	if spec.IsZero() {
		return ""
	}
	return spec.String()
}
