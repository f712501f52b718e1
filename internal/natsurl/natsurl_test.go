package natsurl

import (
	"testing"

	"github.com/snodo/snodo/test/testutil"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":                         "nats://127.0.0.1:4222",
		"nats://alice:secret@host:4222":                 "nats://***@host:4222",
		"nats://token@host:4222":                        "nats://***@host:4222",
		"tls://a:b@h1:4222, nats://h2:4222,nats://t@h3": "tls://***@h1:4222, nats://h2:4222,nats://***@h3",
		"alice:secret@host:4222":                        "***@host:4222",
		"nats://a:p@ss@host:4222/x@y":                   "nats://***@host:4222/x@y",
		"":                                              "",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }
