// Package sandbox starts a stdio server with limits already in place:
// memory, CPU time, processes, open files, the paths it may open and its
// network. It is the mechanism behind snodo.WithSandbox; the connection
// package calls Start in place of exec.Cmd.Start when a Spec is set, and
// Handle.Exit once the server is reaped.
//
// On Linux the child is forked from a goroutine locked to its OS thread
// that never unlocks it, so the runtime discards the thread afterwards:
//
//	locked thread: no_new_privs, Landlock restrict_self (this thread only)
//	  └─ fork+exec (ptrace TRACEME, own process group, new net/user ns)
//	       child stops at exec, before its first instruction
//	locked thread: wait4 the stop, prlimit the child, write its pid into
//	  its cgroups (opened before Landlock), PTRACE_DETACH
//
// Nothing of the host process changes: rlimits are set on the child with
// prlimit(2), Landlock and no_new_privs on a thread that dies. Elsewhere
// Start refuses every non-zero Spec.
package sandbox
