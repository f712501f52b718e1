package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroup is one cgroup v1 group made for one server, beneath the group
// the host process is in, and removed after the server is reaped.
type cgroup struct {
	dir   string
	procs *os.File // cgroup.procs, opened before Landlock restricts the thread
}

// cgroupSeq makes each group's name unique within the host process.
var cgroupSeq atomic.Uint64

// newCgroup makes a group in controller's v1 hierarchy, beneath the
// host's own group, and writes settings (file, value) into it in order.
func newCgroup(controller string, settings ...[2]string) (*cgroup, error) {
	parent, err := ownCgroup(controller)
	if err != nil {
		return nil, err
	}
	if _, swept := sweptParents.LoadOrStore(parent, true); !swept {
		sweepStale(parent)
	}
	dir := filepath.Join(parent, fmt.Sprintf("snodo-%d-%d", os.Getpid(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot make a %s cgroup beneath %s: %w", controller, parent, err)
	}
	g := &cgroup{dir: dir}
	for _, s := range settings {
		if err := g.write(s[0], s[1]); err != nil {
			g.remove()
			return nil, err
		}
	}
	if g.procs, err = os.OpenFile(filepath.Join(dir, "cgroup.procs"), os.O_WRONLY, 0); err != nil {
		g.remove()
		return nil, fmt.Errorf("cannot open %s cgroup's cgroup.procs: %w", controller, err)
	}
	return g, nil
}

func (g *cgroup) write(file, value string) error {
	if err := os.WriteFile(filepath.Join(g.dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("cannot set %s to %s: %w", file, value, err)
	}
	return nil
}

// attach moves pid into the group, through the file opened beforehand.
func (g *cgroup) attach(pid int) error {
	if _, err := g.procs.Write([]byte(strconv.Itoa(pid))); err != nil {
		return fmt.Errorf("cannot move the server into %s: %w", g.dir, err)
	}
	return nil
}

// number reads a file holding one number (memory.max_usage_in_bytes);
// 0 when it cannot.
func (g *cgroup) number(file string) int64 {
	b, err := os.ReadFile(filepath.Join(g.dir, file))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// value reads one "key N" line of a flat-keyed file (memory.oom_control).
func (g *cgroup) value(file, key string) int64 {
	f, err := os.Open(filepath.Join(g.dir, file))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// sweptParents are the groups beneath which this process has removed the
// groups that hosts no longer running left behind.
var sweptParents sync.Map

// sweepStale removes, once per parent group, the groups a snodo host that
// is no longer running left beneath it (it crashed before reaping its
// servers): what still runs in them is killed first. A group whose host
// pid is in use again is left alone.
func sweepStale(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "snodo-*-*"))
	for _, d := range dirs {
		pid, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), "snodo-"), "-")
		if n, err := strconv.Atoi(pid); !ok || err != nil || n == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + pid); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		g := &cgroup{dir: d}
		g.killAll()
		_ = os.Remove(d) // still busy: the next host's sweep
	}
}

// removeWait bounds how long remove waits for killed processes to leave.
const removeWait = 2 * time.Second

// remove kills every process still in the group (the server is reaped;
// these are what it started and left behind), then removes the group,
// retrying while the killed processes leave it, for at most removeWait.
func (g *cgroup) remove() error {
	if g == nil {
		return nil
	}
	if g.procs != nil {
		g.procs.Close()
	}
	deadline := time.Now().Add(removeWait)
	for pause := 100 * time.Microsecond; ; pause = min(2*pause, 20*time.Millisecond) {
		g.killAll()
		err := os.Remove(g.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("cannot remove cgroup %s: %w", g.dir, err)
		}
		time.Sleep(pause)
	}
}

func (g *cgroup) killAll() {
	data, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// ownCgroup is the directory of the host process's own group in
// controller's v1 hierarchy: its mount point (/proc/self/mountinfo) joined
// with the group's path (/proc/self/cgroup) below the mount's root.
func ownCgroup(controller string) (string, error) {
	mount, root, err := v1Mount(controller)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("cannot read /proc/self/cgroup: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !hasWord(parts[1], controller) {
			continue
		}
		rel := parts[2]
		if root != "/" {
			r, ok := strings.CutPrefix(rel, root)
			if !ok {
				return "", fmt.Errorf("the host's %s cgroup %s is outside the mounted hierarchy (%s)", controller, rel, root)
			}
			rel = r
		}
		return filepath.Join(mount, rel), nil
	}
	return "", fmt.Errorf("the host process is in no %s cgroup (/proc/self/cgroup)", controller)
}

// v1Mount finds where controller's cgroup v1 hierarchy is mounted, and
// the root of that mount within the hierarchy.
func v1Mount(controller string) (mount, root string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", fmt.Errorf("cannot read /proc/self/mountinfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 || tail[0] != "cgroup" {
			continue
		}
		if hasWord(tail[2], controller) {
			return fields[4], fields[3], nil
		}
	}
	return "", "", fmt.Errorf("no cgroup v1 %s controller is mounted", controller)
}

// hasWord reports whether the comma-separated list holds word.
func hasWord(list, word string) bool {
	for _, w := range strings.Split(list, ",") {
		if w == word {
			return true
		}
	}
	return false
}
