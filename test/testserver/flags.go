package testserver

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// Era names accepted by the -era flag.
const (
	EraModern = "modern"
	EraLegacy = "legacy"
	EraBoth   = "both"
)

// DefaultDiscoverVersion is the modern protocol version supported by default.
const DefaultDiscoverVersion = "2026-07-28"

type config struct {
	era             string
	discoverVersion string
	exitOnDiscover  bool
	stateFile       string
	silentDiscover  bool
	discoverDelay   time.Duration
	silentListen    bool
	closeOnDiscover bool
	endlessPages    string
	emptyLists      bool
	discoverError   int
	discoverJunk    bool
	initVersion     string
	ignoreEOF       bool
	ignoreSigterm   bool
	grandchild      bool
	grandchildStdio bool
	stderrLines     int
	fast            bool
	eofGrace        time.Duration
	journalFile     string
	startFile       string
	refuseAfter     int
	refuse          bool // -refuse-after: this start is one of those refused
	noResultMeta    bool
	tasks           bool // -tasks: the research tool and the tasks/* methods
	updatedOnSub    bool // -updated-on-subscribe
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("snodo-testserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.era, "era", EraBoth, "handshakes to answer: modern, legacy or both")
	fs.StringVar(&c.discoverVersion, "discover-version", DefaultDiscoverVersion, "modern protocol version supported")
	fs.BoolVar(&c.exitOnDiscover, "exit-on-discover", false, "exit 1 when server/discover arrives")
	fs.StringVar(&c.stateFile, "state-file", "", "with -exit-on-discover: act as legacy if this file exists, else create it")
	fs.BoolVar(&c.silentDiscover, "silent-discover", false, "never answer server/discover")
	fs.DurationVar(&c.discoverDelay, "discover-delay", 0, "answer server/discover only after `D` (none if it is cancelled meanwhile)")
	fs.BoolVar(&c.silentListen, "silent-listen", false, "take subscriptions/listen and never acknowledge or answer it")
	fs.StringVar(&c.endlessPages, "endless-pages", "", "list methods always give a nextCursor: fresh (a new one each page) or repeat (the same)")
	fs.BoolVar(&c.emptyLists, "empty-lists", false, "every list method answers one page with no items")
	fs.BoolVar(&c.closeOnDiscover, "close-stdout-on-discover", false, "close stdout when server/discover arrives, and live on")
	fs.IntVar(&c.discoverError, "discover-error", 0, "answer server/discover with this error `code` (0: no)")
	fs.BoolVar(&c.discoverJunk, "discover-junk", false, "answer server/discover with a result that is no DiscoverResult")
	fs.StringVar(&c.initVersion, "initialize-version", "", "answer initialize with this protocol `version`, whatever was asked")
	fs.BoolVar(&c.ignoreEOF, "ignore-eof", false, "keep running after stdin EOF")
	fs.BoolVar(&c.ignoreSigterm, "ignore-sigterm", false, "ignore SIGTERM")
	fs.BoolVar(&c.grandchild, "grandchild", false, "spawn a sleeping grandchild process")
	fs.BoolVar(&c.grandchildStdio, "grandchild-stdio", false, "grandchild inherits stdout and stderr")
	fs.IntVar(&c.stderrLines, "stderr-lines", 0, "stderr lines to write at start")
	fs.BoolVar(&c.fast, "fast", false, "benchmark mode: inline test/echo")
	fs.StringVar(&c.journalFile, "journal", "", "append every notification and request received to this `file`, one JSON line each (for tests across processes)")
	fs.StringVar(&c.startFile, "start-file", "", "number this start: claim the first free `path`.K (K = 1, 2, …) and write the server's pid in it")
	fs.IntVar(&c.refuseAfter, "refuse-after", 0, "with -start-file: starts numbered above `N` refuse server/discover and initialize with -32603 (0: none)")
	fs.BoolVar(&c.noResultMeta, "no-result-meta", false, "modern era: leave io.modelcontextprotocol/serverInfo out of results' _meta (spec-following servers put it in every result)")
	fs.BoolVar(&c.tasks, "tasks", false, "offer tasks: the research tool, tasks/* (2025-11-25 core tasks, legacy; the io.modelcontextprotocol/tasks extension, modern)")
	fs.BoolVar(&c.updatedOnSub, "updated-on-subscribe", false, "legacy: send notifications/resources/updated for a URI just before answering resources/subscribe for it")
	fs.DurationVar(&c.eofGrace, "eof-grace", defaultEOFGrace, "how long to wait for in-flight requests at stdin EOF")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch c.era {
	case EraModern, EraLegacy, EraBoth:
	default:
		err := fmt.Errorf("invalid -era %q", c.era)
		fmt.Fprintln(stderr, err)
		return c, err
	}
	if c.exitOnDiscover && c.stateFile != "" {
		if _, err := os.Stat(c.stateFile); err == nil {
			c.era = EraLegacy
			c.exitOnDiscover = false
		}
	}
	return c, nil
}

// startup performs the flag-driven side effects that happen before the first
// message is read.
func (s *server) startup() {
	if s.cfg.ignoreSigterm {
		signal.Ignore(syscall.SIGTERM)
	}
	if s.cfg.startFile != "" {
		k := claimStart(s.cfg.startFile)
		s.cfg.refuse = s.cfg.refuseAfter > 0 && k > s.cfg.refuseAfter
	}
	for i := 1; i <= s.cfg.stderrLines; i++ {
		s.stderrf("stderr line %d\n", i)
	}
	if s.cfg.grandchild {
		cmd := exec.Command("sleep", "3600")
		if s.cfg.grandchildStdio {
			cmd.Stdout = s.stdout
			cmd.Stderr = s.stderr
			if f, ok := s.stdout.(*os.File); ok {
				cmd.Stdout = f
			}
			if f, ok := s.stderr.(*os.File); ok {
				cmd.Stderr = f
			}
		}
		if err := cmd.Start(); err != nil {
			s.stderrf("grandchild: %v\n", err)
			return
		}
		s.stderrf("grandchild-pid=%d\n", cmd.Process.Pid)
		go func() { _ = cmd.Wait() }()
	}
}

// claimStart numbers this start among those sharing path: it creates the
// first of path.1, path.2, … that does not exist yet, holding the process
// id, and returns its number. The pid is written to a file of this
// process's own first and hard-linked into place (a link fails on an
// existing name, so servers started in parallel get distinct numbers): a
// claimed start file is never seen empty, even when the server is killed
// at once (a test reading the pids of a pool that gave up and stopped its
// servers read "" so).
func claimStart(path string) int {
	tmp := fmt.Sprintf("%s.tmp%d", path, os.Getpid())
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d\n", os.Getpid()), 0o644); err != nil {
		return 1
	}
	defer os.Remove(tmp)
	for k := 1; ; k++ {
		err := os.Link(tmp, fmt.Sprintf("%s.%d", path, k))
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return k
	}
}
