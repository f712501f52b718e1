package snodo

import (
	"errors"
	"fmt"
	"time"

	"github.com/snodo/snodo/internal/sandbox"
)

// Sandbox is the set of limits a stdio server is started inside
// (WithSandbox). Each zero field sets no limit of its kind; the zero
// Sandbox sets none. The limits are in place before the server's first
// instruction and hold for everything it starts. docs/security.md says
// what each one stops, what it does not, and what this machine needs.
type Sandbox struct {
	// MemoryBytes bounds the memory of the server and everything it
	// starts. Past it the server is stopped, with a *SandboxError whose
	// Limit is "memory". It is enforced by a cgroup v1 memory group made
	// beneath snodo's own where one may be made (resident memory, the
	// kernel's OOM killer), else by RLIMIT_AS (address space, per
	// process: a runtime that reserves large ranges, such as node, needs
	// far more than its resident size). The error says which.
	MemoryBytes int64
	// CPUTime bounds the CPU time of the server process (RLIMIT_CPU,
	// rounded up to whole seconds; each process it starts has a budget
	// of its own). Past it the server is stopped, with Limit "cpu".
	CPUTime time.Duration
	// MaxProcesses bounds the processes and threads the server and
	// everything it starts have at once (a pids cgroup; RLIMIT_NPROC, which
	// counts every process of the user, when no cgroup may be made and
	// snodo is not root). Past it, fork and thread creation fail inside
	// the server; it is not stopped for it. Leave room for threads: an
	// idle Go server had 4 on a 2-core machine, node 7, and 4 more once
	// it uses its thread pool.
	MaxProcesses int
	// MaxOpenFiles bounds the open file descriptors of each process
	// (RLIMIT_NOFILE, soft and hard). Past it, open fails inside the
	// server; it is not stopped for it.
	MaxOpenFiles int
	// ReadOnly and ReadWrite, when either is set, are the only paths the
	// server and what it starts may open (Landlock): beneath ReadOnly
	// paths it may read and execute; beneath ReadWrite ones also write,
	// create, rename and remove. The program itself, its interpreter
	// ("#!" line, ELF loader) and, for a dynamically linked program, the
	// library directories (/lib, /lib64, /usr/lib, /usr/lib64,
	// /usr/local/lib, /etc/ld.so.cache and the like) are added for
	// reading. Paths must be absolute and exist. Anything else fails to
	// open inside the server (EACCES); it is not stopped for it.
	ReadOnly  []string
	ReadWrite []string
	// NoNetwork starts the server in a network namespace of its own
	// (inside a user namespace of its own when snodo is not root): it has
	// only a loopback interface, down, so every connect fails inside it.
	NoNetwork bool
}

// SandboxError is a sandbox at work. As the cause of a stopped
// connection (errors.As on Client.Err, on the -32000 of each call that
// was waiting, on a supervisor's LifecycleEvent.Err): the server broke
// the limit Limit and was stopped; Err is nil. As a Connect error: the
// sandbox asked for cannot be set up on this machine, and the server
// was never started; Err says what is missing.
//
// Limit is "memory", "cpu", "processes", "files", "filesystem" or
// "network" (only "memory" and "cpu" stop a running server); Value is the
// limit as set, in words; Mechanism what enforces it, such as "cgroup v1
// memory controller" or "RLIMIT_AS"; Peak, for a memory stop a cgroup
// enforced, the most memory the server and its children held at once
// (what the host lost to it). SandboxError is an alias of an
// internal type; its methods are
//
//	func (e *SandboxError) Error() string // what stopped the server, or what is missing
//	func (e *SandboxError) Unwrap() error // Err
type SandboxError = sandbox.Error

// WithSandbox starts the server inside s (see Sandbox): Connect, and each
// start of a supervised client or pool given it in
// supervisor.WithConnectOptions. A sandbox this machine cannot provide
// (no Landlock, user namespaces off, a system other than Linux) fails
// Connect with a *SandboxError naming what is missing: a server is never
// started unsandboxed. A zero Sandbox, or a later WithSandbox(Sandbox{}),
// sets none. Relative paths and negative limits are refused here.
// ConnectHTTP refuses it: such a server runs elsewhere.
func WithSandbox(s Sandbox) Option {
	return func(c *config) error {
		spec := s.spec()
		if spec.IsZero() {
			c.conn.Sandbox = nil
			return nil
		}
		c.processOption("WithSandbox")
		if err := spec.Validate(); err != nil {
			return fmt.Errorf("WithSandbox: %w", err)
		}
		c.conn.Sandbox = spec
		return nil
	}
}

// spec is s as the sandbox package takes it (its own copy of the paths).
func (s Sandbox) spec() *sandbox.Spec {
	return (&sandbox.Spec{
		MemoryBytes: s.MemoryBytes, CPUTime: s.CPUTime, MaxProcesses: s.MaxProcesses, MaxOpenFiles: s.MaxOpenFiles,
		ReadOnly: s.ReadOnly, ReadWrite: s.ReadWrite, NoNetwork: s.NoNetwork,
	}).Clone()
}

// sandboxLimit is the limit that stopped the server, when reason says a
// sandbox did ("" otherwise).
func sandboxLimit(reason error) string {
	var se *SandboxError
	if errors.As(reason, &se) && se.Err == nil {
		return se.Limit
	}
	return ""
}
