package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Handle is one sandboxed server from Start to Exit: the cgroups made for
// it and how each limit is enforced. Its methods are nil-safe: a nil
// *Handle is a server without a sandbox.
type Handle struct {
	spec      Spec
	mem, pids *cgroup
	memMech   string // mechMemCgroup or mechAS; "" without a memory limit
	procMech  string // mechPidsCgroup or mechNproc; "" without a process limit
}

// Start starts cmd as exec.Cmd.Start does, inside spec's sandbox: every
// limit is in place before the program's first instruction and is
// inherited by whatever it starts. cmd.SysProcAttr is replaced by a copy
// that adds what the sandbox needs (its Setpgid is kept), and a nil
// Stdin, Stdout or Stderr is set to the null device. A limit this
// machine cannot enforce fails Start with an *Error naming it; the
// program is then not running.
func Start(cmd *exec.Cmd, spec *Spec) (*Handle, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	h := &Handle{spec: *spec.Clone()}
	ok := false
	defer func() {
		if !ok {
			h.release()
		}
	}()
	if err := h.prepare(); err != nil {
		return nil, err
	}
	rs := -1
	if h.spec.Filesystem() {
		fd, _, err := ruleset(&h.spec, programPath(cmd))
		if err != nil {
			return nil, setupError(LimitFilesystem, "", mechLandlock, err)
		}
		rs = fd
		defer unix.Close(fd)
	}
	attr := &syscall.SysProcAttr{Ptrace: true}
	if cmd.SysProcAttr != nil {
		attr.Setpgid, attr.Pgid = cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid
	}
	if h.spec.NoNetwork {
		attr.Cloneflags = syscall.CLONE_NEWNET
		if os.Geteuid() != 0 {
			// Unprivileged: a user namespace of its own grants the right
			// to make the network one; it maps the user to itself.
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
		}
	}
	cmd.SysProcAttr = attr
	// os/exec opens the null device for a nil stdin, stdout or stderr as
	// it starts: here, before the thread is restricted.
	if cmd.Stdin == nil || cmd.Stdout == nil || cmd.Stderr == nil {
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		defer null.Close()
		if cmd.Stdin == nil {
			cmd.Stdin = null
		}
		if cmd.Stdout == nil {
			cmd.Stdout = null
		}
		if cmd.Stderr == nil {
			cmd.Stderr = null
		}
	}
	if err := onDiscardedThread(func() error { return h.launch(cmd, rs) }); err != nil {
		return nil, err
	}
	ok = true
	return h, nil
}

// onDiscardedThread runs fn on an OS thread of its own that the runtime
// ends afterwards, so that whatever fn sets on its thread (no_new_privs, a
// Landlock domain) dies with it: fn's goroutine locks its thread and
// never unlocks it. The main thread is the one thread the runtime does
// not end (it parks it for good instead), so fn never runs there: a
// goroutine that finds itself on it keeps it locked while fn runs in a
// new goroutine, which therefore cannot land on it, then lets it go.
func onDiscardedThread(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			done <- fn() // never unlocked
			return
		}
		inner := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			inner <- fn() // never unlocked
		}()
		done <- <-inner
		runtime.UnlockOSThread()
	}()
	return <-done
}

// prepare makes the cgroups (before Landlock would forbid it) and picks
// the mechanism of each limit.
func (h *Handle) prepare() error {
	s := &h.spec
	if s.MemoryBytes > 0 {
		limit := strconv.FormatInt(s.MemoryBytes, 10)
		g, err := newCgroup("memory", [2]string{"memory.limit_in_bytes", limit})
		if err == nil {
			// With swap accounting, swap counts too: no escape to swap.
			if _, e := os.Stat(filepath.Join(g.dir, "memory.memsw.limit_in_bytes")); e == nil {
				_ = g.write("memory.memsw.limit_in_bytes", limit)
			}
			h.mem, h.memMech = g, mechMemCgroup
		} else {
			h.memMech = mechAS // no cgroup may be made here: the address space instead
		}
	}
	if s.MaxProcesses > 0 {
		g, err := newCgroup("pids", [2]string{"pids.max", strconv.Itoa(s.MaxProcesses)})
		switch {
		case err == nil:
			h.pids, h.procMech = g, mechPidsCgroup
		case os.Geteuid() == 0:
			// RLIMIT_NPROC does not hold for root.
			return setupError(LimitProcesses, strconv.Itoa(s.MaxProcesses), mechPidsCgroup,
				fmt.Errorf("%w (RLIMIT_NPROC is not enforced for root, so the pids controller is needed)", err))
		default:
			h.procMech = mechNproc
		}
	}
	return nil
}

// launch runs on a locked thread it leaves restricted: it starts cmd
// traced, so that the child stops at exec, sets the limits on the
// stopped child and lets it go.
func (h *Handle) launch(cmd *exec.Cmd, ruleset int) error {
	if err := restrictSelf(ruleset); err != nil {
		return setupError(LimitFilesystem, "", mechLandlock, err)
	}
	if err := cmd.Start(); err != nil {
		if h.spec.NoNetwork && isNamespaceErr(err) {
			return setupError(LimitNetwork, "", mechNetns, fmt.Errorf("%w (user or network namespaces are off on this machine: see /proc/sys/user/max_user_namespaces and /proc/sys/user/max_net_namespaces)", err))
		}
		return err
	}
	pid := cmd.Process.Pid
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			h.abort(cmd)
			return fmt.Errorf("sandbox: waiting for the server to stop at exec: %w", err)
		}
		if !ws.Stopped() {
			// It ended before its first instruction; Wait would find nothing.
			return fmt.Errorf("sandbox: the server ended as it started (wait status %#x)", uint32(ws))
		}
		if ws.StopSignal() == unix.SIGTRAP {
			break // the stop at exec
		}
		// A signal that reached the child before its exec stops it too,
		// being traced: deliver it and wait on.
		if err := unix.PtraceCont(pid, int(ws.StopSignal())); err != nil {
			h.abort(cmd)
			return fmt.Errorf("sandbox: cannot let a signal through before exec: %w", err)
		}
	}
	if err := h.apply(pid); err != nil {
		h.abort(cmd)
		return err
	}
	if err := unix.PtraceDetach(pid); err != nil {
		h.abort(cmd)
		return fmt.Errorf("sandbox: cannot let the server go after setting its limits (PTRACE_DETACH): %w", err)
	}
	return nil
}

// abort kills and reaps a child that will not run.
func (h *Handle) abort(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// apply sets the rlimits of the stopped child and moves it into its
// cgroups.
func (h *Handle) apply(pid int) error {
	s := &h.spec
	set := func(limit, value, mech string, res int, n uint64) error {
		if err := unix.Prlimit(pid, res, &unix.Rlimit{Cur: n, Max: n}, nil); err != nil {
			return setupError(limit, value, mech, fmt.Errorf("prlimit: %w", err))
		}
		return nil
	}
	if h.memMech == mechAS {
		if err := set(LimitMemory, Bytes(s.MemoryBytes), mechAS, unix.RLIMIT_AS, uint64(s.MemoryBytes)); err != nil {
			return err
		}
	}
	if s.CPUTime > 0 {
		// Soft = hard: the kernel sends SIGKILL at the hard limit, which
		// no program can ignore (a Go program ignores SIGXCPU).
		if err := set(LimitCPU, s.CPUTime.String(), mechCPU, unix.RLIMIT_CPU, s.cpuSeconds()); err != nil {
			return err
		}
	}
	if h.procMech == mechNproc {
		if err := set(LimitProcesses, strconv.Itoa(s.MaxProcesses), mechNproc, unix.RLIMIT_NPROC, uint64(s.MaxProcesses)); err != nil {
			return err
		}
	}
	if s.MaxOpenFiles > 0 {
		// The hard one too: a Go program raises its soft limit to the
		// hard one as it starts.
		if err := set(LimitFiles, strconv.Itoa(s.MaxOpenFiles), mechNofile, unix.RLIMIT_NOFILE, uint64(s.MaxOpenFiles)); err != nil {
			return err
		}
	}
	if h.mem != nil {
		if err := h.mem.attach(pid); err != nil {
			return setupError(LimitMemory, Bytes(s.MemoryBytes), mechMemCgroup, err)
		}
	}
	if h.pids != nil {
		if err := h.pids.attach(pid); err != nil {
			return setupError(LimitProcesses, strconv.Itoa(s.MaxProcesses), mechPidsCgroup, err)
		}
	}
	return nil
}

// Exit turns the reaped server's wait error into one that also wraps an
// *Error when the server was stopped by a limit, and releases the
// sandbox: what the server left running in its cgroups is killed, and
// the cgroups are removed. Call it once, after exec.Cmd.Wait.
func (h *Handle) Exit(waitErr error) error {
	if h == nil {
		return waitErr
	}
	broken := h.classify(waitErr)
	h.release()
	if broken == nil {
		return waitErr
	}
	return &exitError{limit: broken, wait: waitErr}
}

// classify says which limit, if any, stopped the server.
func (h *Handle) classify(waitErr error) *Error {
	var ee *exec.ExitError
	if !errors.As(waitErr, &ee) {
		return nil
	}
	ws, _ := ee.Sys().(syscall.WaitStatus)
	s := &h.spec
	abnormal := ws.Signaled() || ws.ExitStatus() != 0
	if h.mem != nil && abnormal && h.mem.value("memory.oom_control", "oom_kill") > 0 {
		// The OOM killer killed in its group (the kernel's own record,
		// so it comes first): the server, or a process it started and
		// then ended for (a wrapper such as npx exits 137).
		return &Error{Limit: LimitMemory, Value: Bytes(s.MemoryBytes), Mechanism: mechMemCgroup, Peak: h.mem.number("memory.max_usage_in_bytes")}
	}
	if s.CPUTime > 0 && ws.Signaled() && (ws.Signal() == syscall.SIGKILL || ws.Signal() == syscall.SIGXCPU) {
		// The kernel kills at the limit by its precise clock; the rusage
		// it reports is sampled at ticks and reads up to ~10% lower.
		if used := ee.UserTime() + ee.SystemTime(); used >= time.Duration(s.cpuSeconds())*time.Second*3/4 {
			return &Error{Limit: LimitCPU, Value: s.CPUTime.String(), Mechanism: mechCPU}
		}
	}
	if h.memMech == mechAS && abnormal {
		// An allocation refused at the address-space limit ends a program
		// with an error of its own; no record says that was the cause.
		return &Error{Limit: LimitMemory, Value: Bytes(s.MemoryBytes), Mechanism: mechAS}
	}
	return nil
}

// Mechanisms says how each limit of the sandbox is enforced, in the
// order of Spec.String: "memory 64 MiB by cgroup v1 memory controller,
// files 256 by RLIMIT_NOFILE".
func (h *Handle) Mechanisms() string {
	if h == nil {
		return ""
	}
	s := &h.spec
	var parts []string
	add := func(on bool, what, mech string) {
		if on {
			parts = append(parts, what+" by "+mech)
		}
	}
	add(s.MemoryBytes > 0, "memory "+Bytes(s.MemoryBytes), h.memMech)
	add(s.CPUTime > 0, "cpu "+s.CPUTime.String(), mechCPU)
	add(s.MaxProcesses > 0, "processes "+strconv.Itoa(s.MaxProcesses), h.procMech)
	add(s.MaxOpenFiles > 0, "files "+strconv.Itoa(s.MaxOpenFiles), mechNofile)
	add(s.Filesystem(), "paths", mechLandlock)
	add(s.NoNetwork, "network", mechNetns)
	return strings.Join(parts, ", ")
}

// release kills what is left in the cgroups and removes them.
func (h *Handle) release() {
	_ = h.pids.remove()
	_ = h.mem.remove()
	h.pids, h.mem = nil, nil
}

// isNamespaceErr: how clone(2) refuses a namespace it may not make.
func isNamespaceErr(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS)
}

// programPath is cmd's program as an absolute path.
func programPath(cmd *exec.Cmd) string {
	p := cmd.Path
	if !filepath.IsAbs(p) {
		if cmd.Dir != "" {
			p = filepath.Join(cmd.Dir, p)
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
	}
	return p
}
