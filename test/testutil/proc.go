package testutil

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// pollInterval is how often the polling helpers re-check their condition.
const pollInterval = 10 * time.Millisecond

// Eventually polls cond every 10 ms until it returns true, and fails tb
// with msg (via Fatalf) if it has not within the given duration.
func Eventually(tb testing.TB, cond func() bool, within time.Duration, msg string) {
	tb.Helper()
	if !poll(cond, within) {
		tb.Fatalf("condition not met within %v: %s", within, msg)
	}
}

// poll reports whether cond became true within d (checked at least once
// after d has elapsed).
func poll(cond func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pollInterval)
	}
}

// procState returns the state letter from /proc/<pid>/status ("R", "S",
// "Z", …) or "" if the process does not exist.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return ""
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("State:")); ok {
			rest = bytes.TrimSpace(rest)
			if len(rest) > 0 {
				return string(rest[:1])
			}
		}
	}
	return "?"
}

// Running reports whether pid exists and is not a zombie.
func Running(pid int) bool {
	st := procState(pid)
	return st != "" && st != "Z"
}

// AssertReaped polls until /proc/<pid> is gone and reports through
// tb.Errorf whether the process is still alive or is an unreaped zombie
// when the time is up. It returns whether the process was reaped.
func AssertReaped(tb testing.TB, pid int, within time.Duration) bool {
	tb.Helper()
	if poll(func() bool { return procState(pid) == "" }, within) {
		return true
	}
	switch st := procState(pid); st {
	case "":
		return true
	case "Z":
		tb.Errorf("process %d is a zombie (exited but not reaped) after %v", pid, within)
	default:
		tb.Errorf("process %d is still alive (state %s) after %v", pid, st, within)
	}
	return false
}

// OpenFDs returns the number of open file descriptors of this process.
func OpenFDs() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries) - 1 // the descriptor used to read the directory
}

// AssertFDsBack polls until OpenFDs() <= before and reports through
// tb.Errorf if that does not happen within the given duration.
func AssertFDsBack(tb testing.TB, before int, within time.Duration) bool {
	tb.Helper()
	if poll(func() bool { return OpenFDs() <= before }, within) {
		return true
	}
	tb.Errorf("open file descriptors: %d, want <= %d after %v", OpenFDs(), before, within)
	return false
}

// ChildPIDs returns the PIDs of this process's direct children, zombies
// included.
func ChildPIDs() []int {
	self := os.Getpid()
	var pids []int
	for pid, ppid := range Parents() {
		if ppid == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Parents maps every process on the machine to its parent, from /proc.
func Parents() map[int]int {
	parent := map[int]int{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// Fields after the parenthesised command name: state ppid …
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(b[i+1:])
		if len(fields) < 2 {
			continue
		}
		pid, err1 := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		ppid, err2 := strconv.Atoi(string(fields[1]))
		if err1 == nil && err2 == nil {
			parent[pid] = ppid
		}
	}
	return parent
}
