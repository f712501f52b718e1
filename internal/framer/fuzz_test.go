package framer

import (
	"bytes"
	"io"
	"testing"
)

// chunkReader hands out its data in chunks whose sizes come from sizes
// (cycled; each at least 1 byte), the way a pipe delivers a stream.
type chunkReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(r.sizes) > 0 {
		n = 1 + int(r.sizes[r.i%len(r.sizes)])
		r.i++
	}
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// framerEvent is one thing the framer produced: a line, or the length of
// a discarded overlong line.
type framerEvent struct {
	line     string
	overlong int
}

// FuzzFramer splits arbitrary input arriving in arbitrary chunks with a
// small line cap. Every complete line of the input must come out, in
// order, either returned (without its "\n" or "\r\n", whose content
// is at most max bytes) or reported as discarded with its content's exact
// length; the buffer never grows past what one line and its ending need.
func FuzzFramer(f *testing.F) {
	f.Add([]byte("{\"id\":1}\n{\"id\":2}\r\n"), []byte{3, 0, 200}, uint16(64))
	f.Add([]byte("short\n"+string(bytes.Repeat([]byte("x"), 300))+"\nafter\n"), []byte{7}, uint16(16))
	f.Add([]byte("\n\n\r\n\n"), []byte{0}, uint16(1))
	f.Add([]byte("exactly8\nexactly9!\nexactly8\r\n"), []byte{1, 2, 3}, uint16(8))
	f.Add([]byte("exactly8\r\nexactly9!\r\nexactly8\r\r\n\r\r\n"), []byte{8, 0, 9, 1}, uint16(7)) // max 8
	f.Add(append(append(bytes.Repeat([]byte("y"), 4500), "\r\n"...), append(bytes.Repeat([]byte("z"), 4501), "\r\n"...)...), []byte{255, 3}, uint16(4499))
	f.Add(bytes.Repeat([]byte("abcdefgh\n"), 600), []byte{255, 255, 255, 31}, uint16(300))
	f.Add(append(bytes.Repeat([]byte("y"), 5000), "\nz\n"...), []byte{255}, uint16(4500))
	f.Add([]byte("no newline at the end"), []byte{2}, uint16(5))
	f.Fuzz(func(t *testing.T, data, sizes []byte, capSeed uint16) {
		if len(data) > 32<<10 {
			return // larger inputs only slow the fuzzer down: 32 KiB spans many buffers and caps
		}
		maxLine := 1 + int(capSeed)%5000
		var got []framerEvent
		fr := New(&chunkReader{data: data, sizes: sizes}, maxLine, func(n int) {
			got = append(got, framerEvent{overlong: n})
		})
		bound := max(framerInitial, maxLine+2)
		for {
			line, err := fr.Next()
			if len(fr.buf) > bound {
				t.Fatalf("buffer of %d bytes with max %d (bound %d)", len(fr.buf), maxLine, bound)
			}
			if err != nil {
				if err != io.EOF {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(line) > maxLine || bytes.IndexByte(line, '\n') >= 0 {
				t.Fatalf("line %q breaks the cap %d or holds a newline", line, maxLine)
			}
			got = append(got, framerEvent{line: string(line)})
		}

		var want []framerEvent
		parts := bytes.Split(data, []byte{'\n'})
		for _, l := range parts[:len(parts)-1] { // the last part has no newline
			if l = bytes.TrimSuffix(l, []byte{'\r'}); len(l) > maxLine {
				want = append(want, framerEvent{overlong: len(l)})
			} else {
				want = append(want, framerEvent{line: string(l)})
			}
		}
		if len(got) != len(want) {
			t.Fatalf("max %d: %d events, want %d:\n got %+v\nwant %+v", maxLine, len(got), len(want), got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("max %d: event %d is %+v, want %+v", maxLine, i, got[i], want[i])
			}
		}
	})
}
