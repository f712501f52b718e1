package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/snodo/snodo/test/testutil"
)

// The transport's overhead is read against a minimal hand-written client
// (one writer, one reader, a map of channels) talking to the same
// near-zero-cost server (the test server in -fast mode), in the same run:
//
//	go test -run '^$' -bench Request -benchmem ./connection
var benchParams = json.RawMessage(`{"message":"hello"}`)

func BenchmarkRequest(b *testing.B) {
	for _, inFlight := range []int{1, 64} {
		b.Run("client=snodo/inflight="+strconv.Itoa(inFlight), func(b *testing.B) {
			cmd, args := testutil.Server(b, "-fast")
			c, err := Start(context.Background(), Config{Command: cmd, Args: args})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			run(b, inFlight, func() error {
				_, err := c.Request(context.Background(), "test/echo", benchParams, nil)
				return err
			})
		})
		b.Run("client=minimal/inflight="+strconv.Itoa(inFlight), func(b *testing.B) {
			m := startMinimal(b)
			defer m.close()
			run(b, inFlight, func() error { _, err := m.call("test/echo", benchParams); return err })
		})
	}
}

// run performs b.N calls with inFlight callers at once.
func run(b *testing.B, inFlight int, call func() error) {
	b.ReportAllocs()
	b.ResetTimer()
	if inFlight == 1 {
		for i := 0; i < b.N; i++ {
			if err := call(); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.SetParallelism((inFlight + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := call(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// minimal is the ceiling: the least a correct multiplexing client does.
type minimal struct {
	cmd     *exec.Cmd
	stdin   io.Closer
	mu      sync.Mutex // guards w and waiting
	w       *bufio.Writer
	waiting map[int64]chan json.RawMessage
	nextID  atomic.Int64
	done    chan struct{}
}

func startMinimal(b *testing.B) *minimal {
	cmdName, args := testutil.Server(b, "-fast")
	cmd := exec.Command(cmdName, args...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	m := &minimal{cmd: cmd, stdin: in, w: bufio.NewWriter(in), waiting: map[int64]chan json.RawMessage{}, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var msg struct {
				ID     int64           `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if json.Unmarshal(sc.Bytes(), &msg) != nil {
				continue
			}
			m.mu.Lock()
			ch := m.waiting[msg.ID]
			delete(m.waiting, msg.ID)
			m.mu.Unlock()
			if ch != nil {
				ch <- msg.Result
			}
		}
	}()
	return m
}

func (m *minimal) call(method string, params json.RawMessage) (json.RawMessage, error) {
	id := m.nextID.Add(1)
	ch := make(chan json.RawMessage, 1)
	m.mu.Lock()
	m.waiting[id] = ch
	m.w.WriteString(`{"jsonrpc":"2.0","id":`)
	m.w.WriteString(strconv.FormatInt(id, 10))
	m.w.WriteString(`,"method":"` + method + `","params":`)
	m.w.Write(params)
	m.w.WriteString("}\n")
	err := m.w.Flush()
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return <-ch, nil
}

func (m *minimal) close() {
	m.stdin.Close()
	m.cmd.Wait() //nolint:errcheck
	<-m.done
}
