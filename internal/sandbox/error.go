package sandbox

import "fmt"

// Error is a sandbox at work: either a limit the server broke (it was
// stopped for it; Err is nil), or a sandbox that could not be set up on
// this machine (the server was never started; Err says why).
//
// A server that breaks a processes, files, filesystem or network limit
// is not stopped: the fork, open or connect fails inside it. So an Error
// with one of those limits is always a set-up failure.
type Error struct {
	// Limit is the kind of limit: "memory", "cpu", "processes", "files",
	// "filesystem" or "network".
	Limit string
	// Value is the limit as set, in words ("256 MiB", "2s", "32").
	Value string
	// Mechanism is what enforces it: "cgroup v1 memory controller",
	// "RLIMIT_AS", "RLIMIT_CPU", "pids cgroup", "RLIMIT_NPROC",
	// "RLIMIT_NOFILE", "Landlock", "network namespace".
	Mechanism string
	// Peak is the most memory the server and what it started held at
	// once, in bytes, when a cgroup kept the count (the memory group's
	// max_usage_in_bytes, read as the server was reaped); 0 otherwise.
	// It is what the host lost to the server at most. (The server's own
	// rusage cannot say it: Linux carries the high-water mark of the
	// memory it was forked from, the host's, across its exec.)
	Peak int64
	// Err, when set, is why the sandbox could not be set up.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("sandbox: cannot set the %s limit (%s): %v", e.Limit, e.Mechanism, e.Err)
	}
	switch e.Limit {
	case LimitMemory:
		if e.Mechanism == mechAS {
			return fmt.Sprintf("sandbox: server stopped at its memory limit of %s (%s, address space: most likely an allocation failed)", e.Value, e.Mechanism)
		}
		return fmt.Sprintf("sandbox: server stopped at its memory limit of %s (%s: killed by the kernel's OOM killer)", e.Value, e.Mechanism)
	case LimitCPU:
		return fmt.Sprintf("sandbox: server stopped at its CPU time limit of %s (%s)", e.Value, e.Mechanism)
	}
	return fmt.Sprintf("sandbox: server stopped by its %s limit of %s (%s)", e.Limit, e.Value, e.Mechanism)
}

// Unwrap returns Err (nil when the server broke the limit).
func (e *Error) Unwrap() error { return e.Err }

// Mechanisms, as Error.Mechanism names them.
const (
	mechMemCgroup  = "cgroup v1 memory controller"
	mechAS         = "RLIMIT_AS"
	mechCPU        = "RLIMIT_CPU"
	mechPidsCgroup = "pids cgroup"
	mechNproc      = "RLIMIT_NPROC"
	mechNofile     = "RLIMIT_NOFILE"
	mechLandlock   = "Landlock"
	mechNetns      = "network namespace"
)

func setupError(limit, value, mech string, err error) *Error {
	return &Error{Limit: limit, Value: value, Mechanism: mech, Err: err}
}
