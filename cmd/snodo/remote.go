package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/natsurl"
	"github.com/snodo/snodo/remote"
)

// discoverWait bounds `snodo servers`.
const discoverWait = 3 * time.Second

// runRemote runs a command against a named server served over NATS
// (--nats URL --server NAME), or lists the served names (servers).
func runRemote(cfg *config, sio stdio) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	s := &session{cfg: cfg, io: sio}
	ctx, printTrace := s.trace(ctx)
	defer printTrace()
	if cfg.command == "servers" {
		return s.exitCode(ctx, s.servers(ctx))
	}
	h := &answers{roots: cfg.roots, samplingReply: cfg.samplingReply, io: sio, verbose: cfg.verbose}
	connect := []snodo.Option{
		snodo.WithTimeout(cfg.timeout),
		snodo.WithServerRequestHandler(h.serve),
		snodo.WithClientCapabilities(h.capabilities()),
		snodo.WithMaxInputRounds(cfg.maxInputRounds),
	}
	if s.spans != nil {
		connect = append(connect, snodo.WithTracerProvider(s.spans.tp))
	}
	opts := []remote.ClientOption{
		remote.WithNATSOptions(natsOptions(cfg)...),
		remote.WithConnectOptions(connect...),
	}
	if cfg.prefix != "" {
		opts = append(opts, remote.WithPrefix(cfg.prefix))
	}
	c, err := remote.Dial(ctx, cfg.natsURL, cfg.serverName, opts...)
	if err != nil {
		if ctx.Err() != nil { // nothing was sent yet
			fmt.Fprintln(sio.err, "snodo: interrupted while connecting to NATS")
			return exitInterrupted
		}
		return s.exitCode(ctx, err)
	}
	defer c.Close()
	switch cfg.command {
	case "info":
		err = s.remoteInfo(ctx, c)
	case "tools":
		err = s.tools(ctx, c)
	case "call":
		err = s.call(ctx, c)
	case "request":
		err = s.request(ctx, c)
	case "listen":
		err = s.listen(ctx, func(ctx context.Context, f snodo.Filter) (stream, error) { return c.Listen(ctx, f) })
	default:
		err = fmt.Errorf("snodo: %s does not work with --server", cfg.command)
	}
	return s.exitCode(ctx, err)
}

// remoteInfo prints what a host knows of the named server.
func (s *session) remoteInfo(ctx context.Context, c *remote.Client) error {
	si, err := c.Info(ctx)
	if err != nil {
		return err
	}
	v := infoDoc{
		Era: si.Era, ProtocolVersion: si.ProtocolVersion, ServerInfo: si.ServerInfo,
		Capabilities: si.Capabilities, Instructions: si.Instructions, Host: si.Host, Label: si.Label,
	}
	if s.cfg.json {
		return printJSON(s.io.out, v)
	}
	printInfo(s.io.out, v, "")
	return nil
}

// servers lists every served name with its hosts.
func (s *session) servers(ctx context.Context) error {
	nc, err := remote.ConnectNATS(ctx, s.cfg.natsURL, append(natsOptions(s.cfg), nats.Name("snodo servers"))...)
	if err != nil {
		return err // it names the URL, redacted
	}
	defer nc.Close()
	dctx, cancel := context.WithTimeout(ctx, discoverWait)
	defer cancel()
	served, err := remote.Discover(dctx, nc, s.cfg.prefix)
	if err != nil {
		return err
	}
	if s.cfg.json {
		return printJSON(s.io.out, map[string]any{"servers": served})
	}
	if len(served) == 0 {
		fmt.Fprintln(s.io.err, "snodo: no served names found on", natsurl.Redact(s.cfg.natsURL))
		return nil
	}
	for _, sv := range served {
		labels := make([]string, len(sv.Hosts))
		for i, h := range sv.Hosts {
			labels[i] = oneLine(h.Label) // any NATS peer sets its label
		}
		fmt.Fprintf(s.io.out, "%-20s %d host(s): %s\n", oneLine(sv.Name), len(sv.Hosts), strings.Join(labels, ", "))
	}
	return nil
}
