package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// What checking a caller's raw params costs (OneLine), against
// encoding/json's own check, for a small object and a 256 KiB one:
//
//	go test -run '^$' -bench 'OneLine|JSONValid' -benchmem ./internal/jsonrpc
var (
	smallParams = []byte(`{"name":"echo","arguments":{"message":"hello","n":42,"ok":true}}`)
	largeParams = []byte(`{"data":"` + strings.Repeat("abcdefgh", 32<<10) + `","list":[` + strings.TrimSuffix(strings.Repeat("1.5e3,", 1000), ",") + `]}`)
	multiParams = bytes.ReplaceAll(smallParams, []byte(","), []byte(",\n  "))
)

// benchValue is one input of a benchmark over values.
type benchValue struct {
	name string
	v    []byte
}

// benchEach runs fn on each value as a sub-benchmark, reporting bytes
// per second and allocations; fn fails the benchmark when it returns false.
func benchEach(b *testing.B, values []benchValue, fn func([]byte) bool) {
	for _, c := range values {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.v)))
			for i := 0; i < b.N; i++ {
				if !fn(c.v) {
					b.Fatalf("%s: refused", c.name)
				}
			}
		})
	}
}

func BenchmarkOneLine(b *testing.B) {
	benchEach(b, []benchValue{{"small", smallParams}, {"large", largeParams}, {"multiline", multiParams}},
		func(v []byte) bool { _, err := OneLine(v); return err == nil })
}

func BenchmarkJSONValid(b *testing.B) {
	benchEach(b, []benchValue{{"small", smallParams}, {"large", largeParams}}, json.Valid)
}

// What classifying an answer costs the reader (Scan checks the whole line):
//
//	go test -run '^$' -bench Scan -benchmem ./internal/jsonrpc
func BenchmarkScan(b *testing.B) {
	benchEach(b, []benchValue{
		{"answer", []byte(`{"jsonrpc":"2.0","id":123456,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}`)},
		{"request", []byte(`{"jsonrpc":"2.0","id":"s-1","method":"elicitation/create","params":{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}`)},
	}, func(v []byte) bool { _, err := Scan(v); return err == nil })
}
