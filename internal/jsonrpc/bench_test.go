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

func BenchmarkOneLine(b *testing.B) {
	for _, c := range []struct {
		name string
		v    []byte
	}{{"small", smallParams}, {"large", largeParams}, {"multiline", multiParams}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.v)))
			for i := 0; i < b.N; i++ {
				if _, err := OneLine(c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkJSONValid(b *testing.B) {
	for _, c := range []struct {
		name string
		v    []byte
	}{{"small", smallParams}, {"large", largeParams}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.v)))
			for i := 0; i < b.N; i++ {
				if !json.Valid(c.v) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// What classifying an answer costs the reader (Scan checks the whole line):
//
//	go test -run '^$' -bench Scan -benchmem ./internal/jsonrpc
func BenchmarkScan(b *testing.B) {
	for _, c := range []struct {
		name string
		v    []byte
	}{
		{"answer", []byte(`{"jsonrpc":"2.0","id":123456,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}`)},
		{"request", []byte(`{"jsonrpc":"2.0","id":"s-1","method":"elicitation/create","params":{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}`)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.v)))
			for i := 0; i < b.N; i++ {
				if _, err := Scan(c.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
