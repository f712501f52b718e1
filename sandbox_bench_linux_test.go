package snodo

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/snodo/snodo/test/testutil"
)

// BenchmarkConnectSandbox is Connect then Close (the server reaped) of the
// test server without a sandbox and inside a full one (every limit, the
// filesystem rule and a network namespace). Run the two interleaved and
// compare medians (bench/notes/sandbox.md):
//
//	go test -run '^$' -bench ConnectSandbox -benchtime 10x -count 20 .
func BenchmarkConnectSandbox(b *testing.B) {
	command, args := testutil.Server(b)
	full := Sandbox{
		MemoryBytes: 256 << 20, CPUTime: time.Minute, MaxProcesses: 64, MaxOpenFiles: 256,
		ReadOnly: []string{filepath.Dir(command)}, ReadWrite: []string{"/dev/null"}, NoNetwork: true,
	}
	for _, bc := range []struct {
		name string
		opts []Option
	}{{"sandbox=none", nil}, {"sandbox=full", []Option{WithSandbox(full)}}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				c, err := Connect(context.Background(), command, args, bc.opts...)
				var se *SandboxError
				if errors.As(err, &se) && se.Err != nil {
					b.Skipf("this machine cannot set up the sandbox: %v", err)
				}
				if err != nil {
					b.Fatal(err)
				}
				_ = c.Close()
				<-c.Done()
			}
		})
	}
}
