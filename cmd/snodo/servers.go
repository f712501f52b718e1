package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/servers"
)

// serverLine is one server of `snodo --config FILE servers`.
type serverLine struct {
	Name            string `json:"name"`
	Era             string `json:"era,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	Server          string `json:"server,omitempty"` // serverInfo name and version
	Tools           int    `json:"tools"`
	Error           string `json:"error,omitempty"`
}

// maxServersAtOnce bounds how many servers `snodo --config FILE servers`
// runs at the same time: a file may name thousands (1 MiB holds some
// 20,000), and starting them all at once would fork as many processes.
const maxServersAtOnce = 8

// runServers connects to every server of the --config file, at most
// maxServersAtOnce at a time, and lists each in file order with its era,
// version and tool count. A server that fails
// is listed with its error, and the exit status is 1; so is a file whose
// servers are all skipped (it says why).
func runServers(cfg *config, sio stdio) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	s := &session{cfg: cfg, io: sio}
	ctx, printTrace := s.trace(ctx)
	defer printTrace()
	file, err := loadFile(cfg.configFile, sio.err)
	if err != nil {
		return s.exitCode(ctx, err)
	}
	if len(file.Servers) == 0 {
		return s.exitCode(ctx, noUsableServer(file))
	}
	opts, err := s.options()
	if err != nil {
		return s.exitCode(ctx, err)
	}
	lines := make([]serverLine, len(file.Servers))
	slots := make(chan struct{}, maxServersAtOnce)
	var wg sync.WaitGroup
	for i, spec := range file.Servers {
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
				lines[i] = s.probeServer(ctx, spec, opts)
			case <-ctx.Done():
				lines[i] = serverLine{Name: spec.Name, Error: "interrupted before it was started"}
			}
		})
	}
	wg.Wait()
	failed := false
	for _, l := range lines {
		failed = failed || l.Error != ""
	}
	if cfg.json {
		if err := printJSON(sio.out, map[string]any{"servers": lines}); err != nil {
			return s.exitCode(ctx, err)
		}
	} else {
		// The names are the file's and the server info the server's:
		// their control characters are shown, not sent to the terminal.
		for _, l := range lines {
			if l.Error != "" {
				fmt.Fprintf(sio.out, "%-20s error: %s\n", oneLine(l.Name), l.Error)
				continue
			}
			fmt.Fprintf(sio.out, "%-20s %-7s %-11s %3d tools  %s\n", oneLine(l.Name), l.Era, l.ProtocolVersion, l.Tools, oneLine(l.Server))
		}
	}
	if ctx.Err() != nil {
		return exitInterrupted
	}
	if failed {
		return exitFailure
	}
	return exitOK
}

// probeServer connects to one server, counts its tools and closes it.
func (s *session) probeServer(ctx context.Context, server *servers.Server, opts []snodo.Option) serverLine {
	line := serverLine{Name: server.Name}
	spec, err := readServer(server)
	if err != nil {
		line.Error = oneLine(err.Error())
		return line
	}
	c, err := spec.Target.Connect(ctx, s.withFile(opts, spec)...)
	if err != nil {
		line.Error = s.describeFor(spec, err)
		return line
	}
	defer s.close(c)
	line.Era, line.ProtocolVersion = string(c.Era()), c.ProtocolVersion()
	if info := c.ServerInfo(); info.Name != "" {
		line.Server = info.Name + " " + info.Version
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		line.Error = s.describeFor(spec, err)
		return line
	}
	line.Tools = len(tools)
	return line
}

// describeFor says what went wrong with one server of the file, and what
// to do, as exitCode says it for the server of a --server run.
func (s *session) describeFor(spec *fileServer, err error) string {
	cfg := *s.cfg
	cfg.serverName = spec.Name
	one := session{cfg: &cfg, io: s.io, fileTimeout: spec.timeout}
	return oneLine(flagWords.Replace(one.describe(err)))
}

// loadFile loads the --config file and prints its warnings (keys snodo
// does not use, servers it skips) on stderr, one line each: the servers
// package only returns them.
func loadFile(path string, errOut io.Writer) (*servers.File, error) {
	file, err := servers.Load(path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// Missing or unreadable: say which flag names it (a PathError
		// would read as the server's command failing to start).
		return nil, fmt.Errorf("--config %s: %v; give the path of an mcpServers JSON file", path, pe.Err)
	}
	if err != nil {
		return nil, err
	}
	for _, w := range file.Warnings {
		fmt.Fprintf(errOut, "snodo: warning: %s\n", w)
	}
	return file, nil
}

// noUsableServer says that a file has no server snodo can start, and why
// each was skipped (the warnings above say it too, one line each).
func noUsableServer(file *servers.File) error {
	if len(file.Skipped) == 0 {
		return &servers.FileError{File: file.Path, Err: errors.New("no server to start")}
	}
	names := make([]string, 0, len(file.Skipped))
	for name := range file.Skipped {
		names = append(names, name)
	}
	slices.Sort(names)
	whys := make([]string, len(names))
	for i, name := range names {
		whys[i] = fmt.Sprintf("%q: %s", name, file.Skipped[name])
	}
	return &servers.FileError{File: file.Path, Err: fmt.Errorf("no server snodo can use: every one is skipped (%s)", strings.Join(whys, "; "))}
}
