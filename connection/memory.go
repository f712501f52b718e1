package connection

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/snodo/snodo/internal/framer"
	"github.com/snodo/snodo/internal/sentinel"
)

// InMemory is the Transport of a server run in this process: each Open
// runs serve on a goroutine of its own with the server's ends of two
// in-memory pipes, in reading what the client sends and out taking what
// the server writes, as newline-delimited JSON-RPC, exactly what a stdio
// server reads and writes. So any stdio MCP server written in Go (the
// official SDK's or mcp-go's over an io.Reader and io.Writer, or
// snodo's own test server) can be connected to in the same process, for
// tests or for embedding, with every rule of the connection but the
// process's own.
//
// serve should return once in reaches EOF (the connection closed) and
// the requests it took are answered; ctx is done a grace (2 s) after the
// connection closed, for a server that does not stop at EOF alone. The
// connection is Done once serve has returned.
// A serve that returns while the connection is open is the server's exit:
// callers get -32000 wrapping snodo.ErrServerExited and the error serve
// returned.
func InMemory(serve func(ctx context.Context, in io.Reader, out io.Writer) error) Transport {
	return memoryTransport{serve: serve}
}

type memoryTransport struct {
	serve func(ctx context.Context, in io.Reader, out io.Writer) error
}

// String names the transport in log records.
func (memoryTransport) String() string { return "in-memory" }

// memoryMaxQueued bounds the messages waiting for the server to read
// them; past it, the server is taken to have stopped reading (Send
// fails with ErrNotReading, and the connection stops).
const memoryMaxQueued = 4096

// Open starts serve and the goroutines that feed it and read it.
func (t memoryTransport) Open(_ context.Context, p Peer) (Channel, error) {
	if t.serve == nil {
		return nil, fmt.Errorf("snodo: InMemory: nil serve function; pass the function that runs the server")
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	m := &memoryChannel{peer: p, inW: inW, outR: outR, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{}), served: make(chan struct{}), read: make(chan struct{})}
	go m.runServer(ctx, t.serve, inR, outW)
	go m.readLoop()
	go m.writeLoop()
	return m, nil
}

// memoryChannel is InMemory's Channel.
type memoryChannel struct {
	peer   Peer
	inW    *io.PipeWriter // the server's input, written by writeLoop
	outR   *io.PipeReader // the server's output, read by readLoop
	cancel context.CancelFunc

	mu      sync.Mutex
	queue   [][]byte // messages not yet written to the server, in order
	closing bool     // Close was called: write what is queued, then EOF
	exitErr error    // serve returned while open: why
	wake    chan struct{}

	served chan struct{} // serve returned
	read   chan struct{} // readLoop ended
	done   chan struct{}
	once   sync.Once
}

func (m *memoryChannel) runServer(ctx context.Context, serve func(context.Context, io.Reader, io.Writer) error, in *io.PipeReader, out *io.PipeWriter) {
	err := serve(ctx, in, out)
	m.mu.Lock()
	if !m.closing {
		m.exitErr = fmt.Errorf("the in-memory server returned (%v): %w", err, sentinel.ErrServerExited)
	}
	m.mu.Unlock()
	in.CloseWithError(io.ErrClosedPipe) // nothing reads what is still sent
	out.Close()                         // readLoop ends at EOF
	close(m.served)
	<-m.read
	m.once.Do(func() { close(m.done) })
	m.cancel()
}

// readLoop frames the server's output into messages for the connection.
func (m *memoryChannel) readLoop() {
	defer close(m.read)
	fr := framer.New(m.outR, m.peer.MaxMessageBytes, func(n int) {
		m.peer.Logger.Warn("snodo: discarded an overlong line from the in-memory server; the request it answered will time out",
			"bytes", n, "max_line_bytes", m.peer.MaxMessageBytes)
	})
	for {
		line, err := fr.Next()
		if err != nil {
			m.outR.Close()
			return
		}
		if len(bytes.TrimSpace(line)) > 0 {
			m.peer.Receive(bytes.Clone(line))
		}
	}
}

// writeLoop writes the queued messages to the server, one line each,
// and its input's EOF once Close was called and the queue is empty.
func (m *memoryChannel) writeLoop() {
	for {
		m.mu.Lock()
		for len(m.queue) == 0 && !m.closing {
			m.mu.Unlock()
			select {
			case <-m.wake:
			case <-m.served:
				return
			}
			m.mu.Lock()
		}
		if len(m.queue) == 0 { // closing, all written
			m.mu.Unlock()
			m.inW.Close()
			return
		}
		msg := m.queue[0]
		m.queue[0] = nil
		m.queue = m.queue[1:]
		m.mu.Unlock()
		if _, err := m.inW.Write(msg); err != nil {
			return // the server is gone: runServer says why
		}
	}
}

// Send queues msg (with its newline) for the server.
func (m *memoryChannel) Send(msg []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.closing:
		return errChannelClosed
	case len(m.queue) >= memoryMaxQueued:
		return fmt.Errorf("%d messages wait for the in-memory server to read them: %w", len(m.queue), sentinel.ErrNotReading)
	}
	line := make([]byte, len(msg)+1)
	copy(line, msg)
	line[len(msg)] = '\n'
	m.queue = append(m.queue, line)
	select {
	case m.wake <- struct{}{}:
	default:
	}
	return nil
}

// Close lets what is queued be written (within closeFlushTimeout), then
// gives the server EOF on its input. It does not wait for serve to
// return: Done says when it has.
func (m *memoryChannel) Close() error {
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
	t := time.AfterFunc(closeFlushTimeout, func() { m.inW.Close(); m.cancel() })
	go func() { <-m.done; t.Stop() }()
	return nil
}

func (m *memoryChannel) Done() <-chan struct{} { return m.done }

func (m *memoryChannel) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.exitErr
}
