package sandbox

import (
	"os/exec"
	"testing"
	"time"
)

// BenchmarkStart is starting and reaping /bin/true without a sandbox and
// inside a full one: the sandbox's own cost, apart from a connection's.
//
//	go test -run '^$' -bench Start -benchtime 20x ./internal/sandbox
func BenchmarkStart(b *testing.B) {
	path, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1) here")
	}
	full := &Spec{MemoryBytes: 256 << 20, CPUTime: time.Minute, MaxProcesses: 64, MaxOpenFiles: 256,
		ReadOnly: []string{"/usr"}, ReadWrite: []string{"/dev/null"}, NoNetwork: true}
	for _, bc := range []struct {
		name string
		spec *Spec
	}{{"sandbox=none", nil}, {"sandbox=full", full}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(path)
				var h *Handle
				var err error
				if bc.spec == nil {
					err = cmd.Start()
				} else {
					h, err = Start(cmd, bc.spec)
				}
				if err != nil {
					b.Skipf("cannot start here: %v", err)
				}
				if err := h.Exit(cmd.Wait()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
