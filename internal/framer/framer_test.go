package framer

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFramerGrowsLongLinesInOneStep: past framerLong a line's buffer goes
// to framerLarge at once, so a 3 MiB line leaves no 2 MiB buffer behind;
// beyond framerLarge it doubles again, up to the line limit and "\r\n".
func TestFramerGrowsLongLinesInOneStep(t *testing.T) {
	for _, tc := range []struct {
		line, max, want int
	}{
		{3 << 20, 32 << 20, framerLarge},
		{framerLong - 100, 32 << 20, framerLong},
		{20 << 20, 24 << 20, 24<<20 + 2},
		{3 << 20, 4 << 20, 4<<20 + 2},
	} {
		data := append(bytes.Repeat([]byte("x"), tc.line), '\n')
		fr := New(&readAll{data: data}, tc.max, func(int) { t.Fatal("overlong") })
		line, err := fr.Next()
		require.NoError(t, err)
		assert.Len(t, line, tc.line)
		assert.Equal(t, tc.want, len(fr.buf), "a %d-byte line, limit %d", tc.line, tc.max)
	}
}

// TestLineLimitIsOnTheContent: the limit is on a line's content, without
// its ending, so a line of exactly the limit is kept whether it ends with
// "\n" or "\r\n", and one byte more is discarded (reported with its
// content's length) either way, however the bytes arrive: the '\r' last
// in a read, or the line filling the buffer.
func TestLineLimitIsOnTheContent(t *testing.T) {
	for _, limit := range []int{64, framerInitial - 2, framerInitial - 1, framerInitial, framerInitial + 1, 3 << 20} {
		for _, ending := range []string{"\n", "\r\n"} {
			at := bytes.Repeat([]byte("a"), limit)
			over := bytes.Repeat([]byte("b"), limit+1)
			var data []byte
			for _, part := range [][]byte{at, over, []byte("after")} {
				data = append(append(data, part...), ending...)
			}
			for _, size := range []int{len(data), limit, limit + 1, limit + 2, 7} {
				if size == 7 && limit > 1<<20 {
					continue // small reads say nothing more there, slowly
				}
				var discarded []int
				fr := New(&readsOf{data: data, size: size}, limit, func(n int) { discarded = append(discarded, n) })
				var lines []string
				for {
					line, err := fr.Next()
					if err == io.EOF {
						break
					}
					require.NoError(t, err)
					lines = append(lines, string(line))
				}
				name := fmt.Sprintf("limit %d, ending %q, reads of %d bytes", limit, ending, size)
				assert.Equal(t, []string{string(at), "after"}, lines, name)
				assert.Equal(t, []int{limit + 1}, discarded, name)
				assert.LessOrEqual(t, len(fr.buf), max(framerInitial, limit+2), name)
			}
		}
	}
}

// readsOf hands out its data at most size bytes a read.
type readsOf struct {
	data []byte
	size int
}

func (r *readsOf) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.size)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// readAll hands out as much as the buffer takes.
type readAll struct{ data []byte }

func (r *readAll) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestFramerLendsItsBufferWhileIdle: reading a pipe, the framer waits for
// input holding no buffer (it went back to idleBufs), and lines arriving
// in any pieces, overlong ones, lines longer than the initial buffer and
// the pipe's end come out as they do from a plain reader.
func TestFramerLendsItsBufferWhileIdle(t *testing.T) {
	if !CanLend {
		t.Skip("reads keep their buffer on this platform")
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	raw, err := r.SyscallConn()
	require.NoError(t, err)
	const limit = 3 * framerInitial
	var discarded []int
	fr := New(r, limit, func(n int) { discarded = append(discarded, n) })
	fr.Lend(raw, nil)

	// Nothing to read: the wait (cut short by a deadline already passed)
	// holds no buffer.
	require.NoError(t, r.SetReadDeadline(time.Now()))
	_, err = fr.Next()
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.Nil(t, fr.buf, "the framer kept its buffer while it waited")
	require.NoError(t, r.SetReadDeadline(time.Time{}))

	want := []string{"short", strings.Repeat("l", framerInitial+10), "", "crlf", strings.Repeat("m", limit), "after"}
	var data []byte
	for i, l := range want {
		data = append(data, l...)
		if i == 3 {
			data = append(data, "\r\n"...)
			data = append(data, strings.Repeat("o", limit+1)...) // overlong, discarded
		}
		data = append(data, '\n')
	}
	go func() {
		defer w.Close()
		for len(data) > 0 { // pieces of 1, 7, 200, 1000 bytes
			for _, size := range []int{1, 7, 200, 1000} {
				n := min(size, len(data))
				if _, err := w.Write(data[:n]); err != nil {
					return
				}
				data = data[n:]
			}
		}
	}()
	var got []string
	for {
		line, err := fr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		got = append(got, string(line))
	}
	assert.Equal(t, want, got)
	assert.Equal(t, []int{limit + 1}, discarded)
}

// TestFramerLendingEndsWhenItsPipeCloses: a framer waiting on an empty
// pipe (holding no buffer) returns once the read end is closed under it,
// as the reader's wait does when snodo closes stdout that a grandchild
// holds open: with an error that is not EOF, the bytes read before it
// delivered, and no goroutine left waiting.
func TestFramerLendingEndsWhenItsPipeCloses(t *testing.T) {
	if !CanLend {
		t.Skip("reads keep their buffer on this platform")
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	raw, err := r.SyscallConn()
	require.NoError(t, err)
	fr := New(r, 64, func(int) { t.Error("nothing is overlong") })
	fr.Lend(raw, nil)
	_, err = w.Write([]byte("first\n"))
	require.NoError(t, err)
	line, err := fr.Next()
	require.NoError(t, err)
	require.Equal(t, "first", string(line))

	done := make(chan error, 1)
	go func() {
		_, err := fr.Next() // the pipe is empty and its write end open: it waits (unless the close came first)
		done <- err
	}()
	require.NoError(t, r.Close())
	select {
	case err := <-done:
		require.Error(t, err)
		require.NotErrorIs(t, err, io.EOF, "a closed read end is not the server's EOF")
	case <-time.After(20 * time.Second):
		t.Fatal("the framer still waits on a closed pipe")
	}
}

// TestFramerReadsABurstInOneBuffer: a lending framer whose read fills its
// initial buffer goes on in a burst buffer, so that a burst of answers
// written at once is read in a few reads, not one per initial buffer's
// worth; the lines come out whole and in order, and the wait after them
// holds no buffer again.
func TestFramerReadsABurstInOneBuffer(t *testing.T) {
	if !CanLend {
		t.Skip("reads keep their buffer on this platform")
	}
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	raw, err := r.SyscallConn()
	require.NoError(t, err)
	fr := New(r, 1<<20, func(int) { t.Error("nothing is overlong") })
	fr.Lend(raw, nil)

	var want []string
	var burst []byte
	for i := range 12 { // about 2.5 KiB: five initial buffers' worth
		l := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"text":"%s"}}`, i, strings.Repeat("x", 150))
		want = append(want, l)
		burst = append(append(burst, l...), '\n')
	}
	_, err = w.Write(burst)
	require.NoError(t, err)
	var got []string
	sizes := map[int]bool{}
	for range want {
		line, err := fr.Next()
		require.NoError(t, err)
		got = append(got, string(line))
		sizes[len(fr.buf)] = true
	}
	assert.Equal(t, want, got)
	assert.True(t, sizes[framerBurst], "the burst went on in a burst buffer (buffer sizes seen: %v)", sizes)

	require.NoError(t, r.SetReadDeadline(time.Now()))
	_, err = fr.Next()
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.Nil(t, fr.buf, "the framer kept its buffer while it waited")
}
