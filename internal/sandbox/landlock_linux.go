package sandbox

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rulesetAttr is struct landlock_ruleset_attr as of ABI 6 (the fields
// after it in newer headers stay zero, so the 24 bytes are enough).
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

const (
	readRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// fileRights are those a rule on a file (not a directory) may hold.
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// landlockABI is the kernel's Landlock ABI version, or why there is none.
func landlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch errno {
	case 0:
		return int(v), nil
	case unix.ENOSYS:
		return 0, errors.New("this kernel has no Landlock (built without CONFIG_SECURITY_LANDLOCK)")
	case unix.EOPNOTSUPP:
		return 0, errors.New("Landlock is built in but not enabled (add landlock to the lsm= boot parameter)")
	}
	return 0, fmt.Errorf("Landlock version query failed: %w", errno)
}

// handledFS is every filesystem right the ABI knows: each one not
// granted by a rule is denied.
func handledFS(abi int) uint64 {
	h := uint64(1<<13 - 1) // ABI 1: EXECUTE … MAKE_SYM
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return h
}

// libraryPaths are what the dynamic loader reads to start a dynamically
// linked program; each one that exists is granted read and execute.
var libraryPaths = []string{"/lib", "/lib32", "/lib64", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/local/lib", "/etc/ld.so.cache"}

// ruleset builds the Landlock ruleset of spec for the program at exe
// and returns its descriptor (the caller closes it), with the paths
// granted on top of spec's (the program, its interpreters, the loader's).
func ruleset(spec *Spec, exe string) (fd int, extra []string, err error) {
	abi, err := landlockABI()
	if err != nil {
		return -1, nil, err
	}
	attr := rulesetAttr{handledFS: handledFS(abi)}
	if abi >= 6 {
		// Nor may it signal, or reach by an abstract socket, any process
		// outside its own sandbox (the host included).
		attr.scoped = unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	}
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return -1, nil, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	fd = int(r)
	fail := func(e error) (int, []string, error) { unix.Close(fd); return -1, nil, e }
	for _, p := range spec.ReadOnly {
		if err := allow(fd, p, readRights, true); err != nil {
			return fail(err)
		}
	}
	for _, p := range spec.ReadWrite {
		if err := allow(fd, p, attr.handledFS, true); err != nil {
			return fail(err)
		}
	}
	extra = programPaths(exe)
	for _, p := range extra {
		if err := allow(fd, p, readRights, false); err != nil {
			return fail(err)
		}
	}
	return fd, extra, nil
}

// allow adds a rule granting rights beneath path. A path that does not
// exist is an error when the caller named it, else skipped.
func allow(ruleset int, path string, rights uint64, named bool) error {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if !named {
			return nil
		}
		return fmt.Errorf("path %s: %w (a path the server may open must exist when it starts)", path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("path %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= fileRights
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(pfd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_add_rule %s: %w", path, errno)
	}
	return nil
}

// restrictSelf puts the calling thread, and what it forks from then on,
// in the ruleset's domain. no_new_privs first: Landlock needs it (or
// CAP_SYS_ADMIN), and a sandboxed program must not gain privileges by
// executing a set-user-ID one anyway. Both are per thread.
func restrictSelf(ruleset int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if ruleset < 0 {
		return nil
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// programPaths are the files exe needs to start: exe itself, the ELF
// interpreter it names (the dynamic loader) and, for a dynamically linked
// program, the library directories; for a script, its "#!" interpreter
// (and, for "#!/usr/bin/env prog", prog as found in PATH), with theirs.
func programPaths(exe string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	var visit func(p string, depth int)
	visit = func(p string, depth int) {
		if depth > 3 || seen[p] {
			return
		}
		add(p)
		if interp := elfInterp(p); interp != "" {
			add(interp)
			for _, l := range libraryPaths {
				add(l)
			}
			return
		}
		prog, arg := shebang(p)
		if prog == "" {
			return
		}
		visit(prog, depth+1)
		if filepath.Base(prog) == "env" && arg != "" && !strings.HasPrefix(arg, "-") {
			if found, err := exec.LookPath(arg); err == nil {
				visit(found, depth+1)
			}
		}
	}
	visit(exe, 0)
	return out
}

// elfInterp is the PT_INTERP of the ELF file at p ("" if none or not ELF).
func elfInterp(p string) string {
	f, err := elf.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err != nil {
				return ""
			}
			return strings.TrimRight(string(b), "\x00")
		}
	}
	return ""
}

// shebang reads a script's "#!prog arg" line.
func shebang(p string) (prog, arg string) {
	f, err := os.Open(p)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 256).ReadString('\n')
	if err != nil && line == "" {
		return "", ""
	}
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return "", ""
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 || !filepath.IsAbs(fields[0]) {
		return "", ""
	}
	if len(fields) > 1 {
		arg = fields[1]
	}
	return fields[0], arg
}
