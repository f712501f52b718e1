package engine

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/snodo/snodo/test/testutil"
)

// The writer under concurrent appends and drops, against a slow reader on
// a real pipe: every line comes out whole, once, in each writer's order;
// a line whose drop succeeded never comes out; every other line does.
// With company (other requests always in flight) every line is queued,
// and the caller that would start the goroutine writes the batch itself
// first (flushInline): what the full pipe does not take is written later,
// first, and can no longer be dropped.
func TestWriterKeepsLinesWholeInOrderAndDropsOnlyQueuedOnes(t *testing.T) {
	for _, company := range []bool{false, true} {
		t.Run(fmt.Sprintf("company=%v", company), func(t *testing.T) { writerKeepsLinesWhole(t, company) })
	}
}

func writerKeepsLinesWhole(t *testing.T, company bool) {
	r, wf, err := os.Pipe()
	require.NoError(t, err)
	w := newWriter(wf, 2<<20, func(err error) { t.Errorf("writer failed: %v", err) })
	if company {
		w.company = func() bool { return true }
	}

	got := make(chan map[string][]int, 1)
	go func() {
		seen := map[string][]int{}
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if rand.IntN(50) == 0 {
				time.Sleep(time.Millisecond) // a slow reader, now and then
			}
			who, rest, _ := strings.Cut(sc.Text(), ":")
			n, _ := strconv.Atoi(strings.TrimRight(rest, "x"))
			seen[who] = append(seen[who], n)
		}
		got <- seen
	}()

	const writers, lines = 4, 3000
	var wg sync.WaitGroup
	dropped := make([]map[int]bool, writers)
	for g := range writers {
		dropped[g] = map[int]bool{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				pad := strings.Repeat("x", rand.IntN(4000))
				tk, err := w.append(lineCaller, func(b []byte) []byte { return fmt.Appendf(b, "w%d:%d%s\n", g, i, pad) })
				if err == errQueueFull {
					dropped[g][i] = true
					continue
				}
				require.NoError(t, err)
				if rand.IntN(3) == 0 && w.drop(tk) {
					dropped[g][i] = true
				}
			}
		}()
	}
	wg.Wait()
	w.close()
	<-w.closedCh
	seen := <-got
	total := 0
	for g := range writers {
		want := []int{}
		for i := range lines {
			if !dropped[g][i] {
				want = append(want, i)
			}
		}
		require.Equal(t, want, seen[fmt.Sprintf("w%d", g)], "writer %d", g)
		total += len(dropped[g])
	}
	t.Logf("%d of %d lines dropped or refused", total, writers*lines)
	require.Zero(t, w.live)
}

// The rest of a caller's line, however long, counts for at most the bound
// against the connection's own lines: a cancellation queued behind it is
// admitted, while the connection's own lines past twice the bound still
// fail the writer with errNotReading.
func TestWriterCountsACallersLongLineOnlyUpToTheBound(t *testing.T) {
	r, wf, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	failed := make(chan error, 1)
	w := newWriter(wf, 64<<10, func(err error) { failed <- err })
	defer w.close()
	w.mu.Lock()
	w.busy = true // a write under way: nothing else is written meanwhile
	w.pushFront(make([]byte, 4<<20), 1, false)
	w.mu.Unlock()
	_, err = w.append(lineOwn, func(b []byte) []byte { return append(b, "cancel\n"...) })
	require.NoError(t, err, "a cancellation behind a caller's long line")
	own := make([]byte, 32<<10)
	_, err = w.append(lineOwn, func(b []byte) []byte { return append(b, own...) })
	require.NoError(t, err, "the own lines are within the bound still")
	_, err = w.append(lineOwn, func(b []byte) []byte { return append(b, own...) })
	require.ErrorIs(t, err, errNotReading, "the bound plus as much again of own lines")
	require.ErrorIs(t, <-failed, errNotReading)
	w.mu.Lock()
	w.busy = false
	w.mu.Unlock()
}

// With company, the caller that would start the writer's goroutine makes
// its batch's first write itself, without waiting on the pipe. When the
// pipe is full that write takes nothing: the batch goes back first in the
// queue, pinned (its lines can no longer be dropped), and the goroutine
// writes it once the server reads, before the lines queued after it, of
// which a dropped one is never written.
func TestWriterInlineFlushPinsWhatThePipeDidNotTake(t *testing.T) {
	if !directWrites {
		t.Skip("no non-blocking writes on this platform")
	}
	r, wf, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	w := newWriter(wf, 1<<20, func(err error) { t.Errorf("writer failed: %v", err) })
	w.company = func() bool { return true }

	raw, err := wf.SyscallConn()
	require.NoError(t, err)
	filled := 0
	fill := []byte(strings.Repeat("f", 4095) + "\n")
	require.NoError(t, raw.Write(func(fd uintptr) bool {
		for {
			n, err := syscall.Write(int(fd), fill)
			if err != nil {
				return true // EAGAIN: the pipe is full
			}
			filled += n
		}
	}))

	first, err := w.append(lineCaller, func(b []byte) []byte { return append(b, "first\n"...) })
	require.NoError(t, err)
	require.False(t, w.drop(first), "the batch taken for the inline write is pinned")
	testutil.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.busy && w.live == 0
	}, 10*time.Second, "the goroutine took the rest and waits on the full pipe")
	second, err := w.append(lineCaller, func(b []byte) []byte { return append(b, "second\n"...) })
	require.NoError(t, err)
	require.True(t, w.drop(second), "a line queued behind it can still be dropped")
	third, err := w.append(lineCaller, func(b []byte) []byte { return append(b, "third\n"...) })
	require.NoError(t, err)
	_ = third

	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var lines []string
	for read := 0; read < filled; {
		require.True(t, sc.Scan())
		read += len(sc.Bytes()) + 1
	}
	w.close()
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	require.Equal(t, []string{"first", "third"}, lines)
}
