package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The limits a sandbox sets, as Error.Limit names them.
const (
	LimitMemory     = "memory"
	LimitCPU        = "cpu"
	LimitProcesses  = "processes"
	LimitFiles      = "files"
	LimitFilesystem = "filesystem"
	LimitNetwork    = "network"
)

// Spec is a sandbox: each zero field sets no limit of its kind. It is
// copied by Start, which never changes the caller's slices.
type Spec struct {
	MemoryBytes  int64         // memory of the server and its children, in bytes
	CPUTime      time.Duration // CPU time of the server process, rounded up to whole seconds
	MaxProcesses int           // processes and threads at once, the server's and its children's
	MaxOpenFiles int           // open file descriptors of each process
	ReadOnly     []string      // absolute paths it may read and execute beneath
	ReadWrite    []string      // absolute paths it may also write, create and remove beneath
	NoNetwork    bool          // a network namespace of its own: loopback only, down
}

// IsZero reports whether s sets no limit at all.
func (s *Spec) IsZero() bool {
	return s == nil || (s.MemoryBytes == 0 && s.CPUTime == 0 && s.MaxProcesses == 0 && s.MaxOpenFiles == 0 &&
		len(s.ReadOnly) == 0 && len(s.ReadWrite) == 0 && !s.NoNetwork)
}

// Filesystem reports whether s restricts the paths the server may open.
func (s *Spec) Filesystem() bool { return len(s.ReadOnly) > 0 || len(s.ReadWrite) > 0 }

// Validate refuses negative limits and paths that are relative, empty or
// not clean enough to say what they mean (a NUL byte).
func (s *Spec) Validate() error {
	switch {
	case s.MemoryBytes < 0:
		return fmt.Errorf("sandbox: MemoryBytes is %d: give a positive number of bytes, or 0 for no memory limit", s.MemoryBytes)
	case s.CPUTime < 0:
		return fmt.Errorf("sandbox: CPUTime is %v: give a positive duration, or 0 for no CPU limit", s.CPUTime)
	case s.MaxProcesses < 0:
		return fmt.Errorf("sandbox: MaxProcesses is %d: give a positive number, or 0 for no limit", s.MaxProcesses)
	case s.MaxOpenFiles < 0:
		return fmt.Errorf("sandbox: MaxOpenFiles is %d: give a positive number, or 0 for no limit", s.MaxOpenFiles)
	}
	for _, set := range [][]string{s.ReadOnly, s.ReadWrite} {
		for _, p := range set {
			if err := checkPath(p); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkPath(p string) error {
	switch {
	case p == "":
		return errors.New("sandbox: an empty path in ReadOnly or ReadWrite: leave it out")
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("sandbox: path %q contains a NUL byte", p)
	case !filepath.IsAbs(p):
		return fmt.Errorf("sandbox: path %q is relative: give an absolute path (a relative one would depend on the server's working directory)", p)
	}
	return nil
}

// Clone returns a copy of s that shares no slice with it.
func (s *Spec) Clone() *Spec {
	if s == nil {
		return nil
	}
	c := *s
	c.ReadOnly = append([]string(nil), s.ReadOnly...)
	c.ReadWrite = append([]string(nil), s.ReadWrite...)
	return &c
}

// String describes s in one line, the limits it sets in a fixed order:
// "memory 256 MiB, cpu 1m0s, processes 32, files 256, read-only /usr,
// read-write /var/lib/x, no network"; "none" for a zero Spec.
func (s *Spec) String() string {
	if s.IsZero() {
		return "none"
	}
	var parts []string
	if s.MemoryBytes > 0 {
		parts = append(parts, "memory "+Bytes(s.MemoryBytes))
	}
	if s.CPUTime > 0 {
		parts = append(parts, "cpu "+s.CPUTime.String())
	}
	if s.MaxProcesses > 0 {
		parts = append(parts, "processes "+strconv.Itoa(s.MaxProcesses))
	}
	if s.MaxOpenFiles > 0 {
		parts = append(parts, "files "+strconv.Itoa(s.MaxOpenFiles))
	}
	if len(s.ReadOnly) > 0 {
		parts = append(parts, "read-only "+strings.Join(s.ReadOnly, " "))
	}
	if len(s.ReadWrite) > 0 {
		parts = append(parts, "read-write "+strings.Join(s.ReadWrite, " "))
	}
	if s.NoNetwork {
		parts = append(parts, "no network")
	}
	return strings.Join(parts, ", ")
}

// Bytes writes n bytes for people: "256 MiB", "1.5 GiB", "4096 B".
func Bytes(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	if n < 1<<10 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + units[u]
}

// cpuSeconds is CPUTime as RLIMIT_CPU takes it: whole seconds, rounded up.
func (s *Spec) cpuSeconds() uint64 {
	return uint64((s.CPUTime + time.Second - 1) / time.Second)
}
