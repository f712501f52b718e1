package sandbox

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/snodo/snodo/test/testutil"
)

func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }

func TestSpecValidate(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{MemoryBytes: -1}, "MemoryBytes is -1"},
		{Spec{CPUTime: -time.Second}, "CPUTime is -1s"},
		{Spec{MaxProcesses: -2}, "MaxProcesses is -2"},
		{Spec{MaxOpenFiles: -3}, "MaxOpenFiles is -3"},
		{Spec{ReadOnly: []string{"usr"}}, `path "usr" is relative`},
		{Spec{ReadWrite: []string{""}}, "an empty path"},
		{Spec{ReadWrite: []string{"/a\x00b"}}, "NUL byte"},
	} {
		err := tc.spec.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.want)
		}
	}
	if err := (&Spec{ReadOnly: []string{"/usr"}, MemoryBytes: 1}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestSpecString(t *testing.T) {
	var none *Spec
	if got := none.String(); got != "none" {
		t.Errorf("nil: %q", got)
	}
	s := &Spec{MemoryBytes: 256 << 20, CPUTime: time.Minute, MaxProcesses: 32, MaxOpenFiles: 256,
		ReadOnly: []string{"/usr", "/etc/ssl"}, ReadWrite: []string{"/srv"}, NoNetwork: true}
	want := "memory 256 MiB, cpu 1m0s, processes 32, files 256, read-only /usr /etc/ssl, read-write /srv, no network"
	if got := s.String(); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	for n, want := range map[int64]string{512: "512 B", 1536: "1.5 KiB", 64 << 20: "64 MiB", 3 << 30: "3 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
	if got := (&Spec{CPUTime: 1500 * time.Millisecond}).cpuSeconds(); got != 2 {
		t.Errorf("1.5 s rounds up to %d s", got)
	}
}

func TestSpecClone(t *testing.T) {
	s := &Spec{ReadOnly: []string{"/a"}}
	c := s.Clone()
	c.ReadOnly[0] = "/b"
	if s.ReadOnly[0] != "/a" {
		t.Error("Clone shares its slices")
	}
	if !reflect.DeepEqual((*Spec)(nil).Clone(), (*Spec)(nil)) {
		t.Error("a nil Spec's Clone")
	}
}
