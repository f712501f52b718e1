package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/internal/natsname"
	"github.com/snodo/snodo/internal/serverproc"
)

// version is the CLI's version, printed by --version.
const version = "0.1.0"

// config is the parsed command line.
type config struct {
	json, verbose, quiet, showVersion bool
	trace                             bool
	timeout                           time.Duration
	timeoutSet                        bool          // --timeout given: it wins over the config file's
	probeTimeout                      time.Duration // 0: the shorter of the run's timeout and 10 s
	env, unset, roots                 []string
	dir                               string
	maxLineBytes                      int
	samplingReply                     string
	era                               string // "", "modern" or "legacy"
	maxInputRounds                    int    // 0: the library's default

	// listen only
	tools, prompts, resources bool
	resourceURIs              []string
	count                     int
	forDur                    time.Duration

	// remote (NATS)
	configFile, natsURL, serverName, prefix string
	natsCreds, natsNkey, natsUser           string
	natsCA, natsCert, natsKey               string
	drain                                   time.Duration
	maxHeld                                 int

	given []string // the flags given, by name

	url string // --url: a Streamable HTTP server instead of -- SERVER_CMD

	// serve and node --listen
	httpAddr, listenAddr     string
	allowOrigins, allowHosts []string
	pool                     int
	authIssuer, authAudience string
	headers                  []string // --header K=V, on each of its requests

	command string   // info, tools, call, request, listen, demo, help, node, servers
	args    []string // the command's positional arguments
	server  []string // SERVER_CMD [ARGS...], after --
}

// usageError is a mistake on the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// listFlag is a repeatable string flag.
type listFlag struct{ list *[]string }

func (f listFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}
func (f listFlag) Set(v string) error { *f.list = append(*f.list, v); return nil }

const usageText = `Usage:
  snodo [flags] info    -- SERVER_CMD [ARGS...]    era, version, server info, capabilities
  snodo [flags] tools   -- SERVER_CMD [ARGS...]    the server's tools
  snodo [flags] call NAME [JSON_ARGS] -- SERVER_CMD [ARGS...]
  snodo [flags] request METHOD [JSON_PARAMS] -- SERVER_CMD [ARGS...]
  snodo [flags] listen [--tools] [--prompts] [--resources] [--resource URI]...
                [--count N] [--for D] -- SERVER_CMD [ARGS...]
  snodo demo                                        tour the features with a built-in server
  snodo logout --url URL                            forget the OAuth token kept for URL

A Streamable HTTP server instead of a command (both eras; docs/http.md):
  snodo [flags] info|tools|call|request|listen ... --url URL [--header K=V]...

Named servers from an mcpServers file (the file MCP hosts use):
  snodo --config FILE --server NAME info|tools|call|request|listen ...
  snodo --config FILE servers                       every server: era, version, tool count

Named servers over NATS:
  snodo node --config FILE [--nats URL]             serve the file's servers (no --nats: embed
                                                    a NATS server and print its URL)
  snodo --nats URL --server NAME info|tools|call|request|listen ...
  snodo --nats URL servers                          every served name and its hosts
  snodo bridge --nats URL --server NAME             a stdio MCP server forwarding to a served
                                                    name: list it as a command in an mcpServers file

Serving MCP servers to any MCP client over Streamable HTTP (docs/gateway.md):
  snodo serve --http ADDR [--pool N] -- SERVER_CMD [ARGS...]   one server at http://ADDR/mcp
  snodo serve --http ADDR --config FILE             every server of the file at /mcp/NAME
  snodo serve --http ADDR --nats URL --server NAME...   names served by nodes, at /mcp/NAME
  GET http://ADDR/healthz: 200, or 503 with the names that cannot serve

Example:
  snodo call echo '{"message":"hi"}' -- npx -y @modelcontextprotocol/server-everything

Exit status: 0 success, 1 the server answered an error or the connection
failed, 2 usage error, 130 interrupted (Ctrl-C), 141 stdout closed by its
reader (snodo ... | head): the connection is closed cleanly first.

Flags:
`

// newFlagSet declares every flag on cfg.
func newFlagSet(cfg *config, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("snodo", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, usageText)
		printFlags(out, fs)
	}
	fs.BoolVar(&cfg.json, "json", false, "print one JSON document on stdout (listen: one event per line)")
	fs.DurationVar(&cfg.timeout, "timeout", limits.Timeout, "per-request `timeout`; progress restarts it")
	fs.DurationVar(&cfg.probeTimeout, "probe-timeout", 0, "wait at most `duration` for the server/discover probe that settles the era (default: the shorter of --timeout and 10s)")
	fs.Var(listFlag{&cfg.env}, "env", "set `K=V` in the server's environment (repeatable)")
	fs.Var(listFlag{&cfg.unset}, "unset", "remove variable `K` from the server's environment (repeatable)")
	fs.StringVar(&cfg.dir, "dir", "", "run the server in `directory`")
	fs.IntVar(&cfg.maxLineBytes, "max-line-bytes", limits.MaxLineBytes, "largest line accepted from the server, in `bytes`: 64 to 1073741824 (1 GiB; a line is held whole in memory, so a larger cap bounds nothing)")
	fs.BoolVar(&cfg.verbose, "verbose", false, "copy every message on the wire to stderr")
	fs.BoolVar(&cfg.quiet, "quiet", false, "show no progress and no server log messages")
	fs.StringVar(&cfg.era, "era", "", "speak this MCP `era` (modern or legacy) instead of detecting it")
	fs.IntVar(&cfg.maxInputRounds, "max-input-rounds", limits.MaxInputRounds, "modern era: complete at most `N` input_required rounds per call")
	fs.BoolVar(&cfg.trace, "trace", false, "print every span of the run (names, durations, attributes) on stderr when done")
	fs.BoolVar(&cfg.showVersion, "version", false, "print snodo's version and exit")
	fs.Var(listFlag{&cfg.roots}, "root", "share `DIR` with the server as a root, answering roots/list (repeatable)")
	fs.StringVar(&cfg.samplingReply, "sampling-reply", "", "answer sampling/createMessage with this `text` (default: decline)")
	fs.BoolVar(&cfg.tools, "tools", false, "listen: tools/list_changed")
	fs.BoolVar(&cfg.prompts, "prompts", false, "listen: prompts/list_changed")
	fs.BoolVar(&cfg.resources, "resources", false, "listen: resources/list_changed")
	fs.Var(listFlag{&cfg.resourceURIs}, "resource", "listen: resources/updated for `URI` (repeatable)")
	fs.IntVar(&cfg.count, "count", 0, "listen: stop after `N` events (0: no limit)")
	fs.DurationVar(&cfg.forDur, "for", 0, "listen: stop after `duration` (0: until Ctrl-C)")
	fs.StringVar(&cfg.natsURL, "nats", "", "reach named servers through the NATS system at `URL` (node: without it, embed one)")
	fs.StringVar(&cfg.serverName, "server", "", "with --config or --nats: use the server called `NAME` instead of a SERVER_CMD")
	fs.StringVar(&cfg.url, "url", "", "reach the Streamable HTTP server at `URL` instead of starting a SERVER_CMD")
	fs.Var(listFlag{&cfg.headers}, "header", "with --url: send header `K=V` on every request (repeatable)")
	fs.StringVar(&cfg.configFile, "config", "", "the mcpServers `file` naming the servers (with --server, servers, node)")
	fs.StringVar(&cfg.prefix, "prefix", "", "NATS subject `prefix` of hosts and callers (default snodo)")
	fs.DurationVar(&cfg.drain, "drain", limits.DrainTimeout, "node: on SIGINT/SIGTERM, wait at most `duration` for held calls")
	fs.IntVar(&cfg.maxHeld, "max-held", limits.MaxHeld, "node: hold at most `N` calls at once; one more is refused unrun, and the caller sends it to another host")
	fs.StringVar(&cfg.natsCreds, "nats-creds", "", "NATS credentials `file` (JWT and nkey seed)")
	fs.StringVar(&cfg.natsNkey, "nats-nkey", "", "NATS nkey seed `file`")
	fs.StringVar(&cfg.natsUser, "nats-user", "", "NATS `user` (password from $SNODO_NATS_PASSWORD; a token from $SNODO_NATS_TOKEN)")
	fs.StringVar(&cfg.natsCA, "nats-ca", "", "CA certificates `file` for the NATS server's TLS certificate")
	fs.StringVar(&cfg.natsCert, "nats-cert", "", "client certificate `file` for NATS TLS (with --nats-key)")
	fs.StringVar(&cfg.natsKey, "nats-key", "", "client key `file` for NATS TLS (with --nats-cert)")
	fs.StringVar(&cfg.httpAddr, "http", "", "serve: listen for MCP clients on `ADDR` (host:port)")
	fs.IntVar(&cfg.pool, "pool", 0, "serve: run `N` copies of each server (default: the file's, or 1)")
	fs.StringVar(&cfg.authIssuer, "auth-issuer", "", "serve: require a bearer JWT from the OAuth issuer at `URL`")
	fs.StringVar(&cfg.authAudience, "auth-audience", "", "serve: the audience `AUD` the tokens must name")
	fs.Var(listFlag{&cfg.allowOrigins}, "allow-origin", "serve: also serve browser requests from `ORIGIN` (https://app.example; \"*\" for any) (repeatable)")
	fs.Var(listFlag{&cfg.allowHosts}, "allow-host", "serve: on a loopback address, also serve requests for host `NAME` (a reverse proxy's) (repeatable)")
	fs.StringVar(&cfg.listenAddr, "listen", "", "node: run the embedded NATS server at `ADDR` (host:port), so that its URL survives a restart")
	return fs
}

// printFlags lists the flags as users write them, with two dashes.
func printFlags(out io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		if name != "" {
			name = " " + name
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			def = " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(out, "  --%s%s\n        %s%s\n", f.Name, name, usage, def)
	})
}

// parseArgs reads the command line. Flags may come anywhere before "--";
// everything after it is the server's command line. It returns
// flag.ErrHelp for -h, and a *usageError for mistakes.
func parseArgs(args []string, out io.Writer) (*config, error) {
	cfg := &config{}
	left, server, _ := cutDashDash(args)
	cfg.server = server
	fs := newFlagSet(cfg, out)
	var positional []string
	for {
		if err := fs.Parse(left); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{err.Error()}
		}
		left = fs.Args()
		if len(left) == 0 {
			break
		}
		positional, left = append(positional, left[0]), left[1:]
	}
	if cfg.showVersion {
		cfg.command = "version"
		return cfg, nil
	}
	if len(positional) == 0 {
		return nil, usagef("no command given (%s)", commandNames)
	}
	cfg.command, cfg.args = positional[0], positional[1:]
	var empty error
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "timeout" {
			cfg.timeoutSet = true
		}
		cfg.given = append(cfg.given, f.Name)
		if empty == nil {
			empty = emptyValue(f)
		}
	})
	if empty != nil {
		return nil, empty
	}
	return cfg, cfg.validate()
}

// emptyValue refuses a flag given with an empty value ("--root ”", as an
// unset shell variable writes it): taken as given, --root ” shared the
// current directory with the server, --dir ” and --era ” were as if
// left out, --resource ” subscribed to no URI, and --config ” or
// --server ” were reported as missing.
func emptyValue(f *flag.Flag) error {
	switch v := f.Value.(type) {
	case flag.Getter:
		if s, ok := v.Get().(string); !ok || s != "" {
			return nil // a bool, a number or a duration is parsed already
		}
	case listFlag:
		if !slices.Contains(*v.list, "") {
			return nil
		}
	default:
		return nil
	}
	what, _ := flag.UnquoteUsage(f)
	return usagef("--%s is empty: give its %s, or leave the flag out", f.Name, what)
}

// validateURL checks --url and --header: one server at a time, a URL
// of http or https, headers as K=V.
func (cfg *config) validateURL() error {
	if cfg.url == "" {
		if len(cfg.headers) > 0 {
			return usagef("--header goes with --url")
		}
		return nil
	}
	switch {
	case len(cfg.server) > 0:
		return usagef("%s: give either --url URL or -- SERVER_CMD, not both", cfg.command)
	case cfg.serverName != "":
		return usagef("%s: give either --url URL or --server NAME, not both", cfg.command)
	case !strings.HasPrefix(cfg.url, "http://") && !strings.HasPrefix(cfg.url, "https://"):
		return usagef("--url: %q is not an http:// or https:// URL", snodo.HTTP(cfg.url).String())
	}
	for _, flag := range []string{"env", "unset", "dir"} {
		if slices.Contains(cfg.given, flag) {
			return usagef("--%s starts a server process; with --url there is none", flag)
		}
	}
	for _, kv := range cfg.headers {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usagef("--header %q: want K=V", k)
		}
	}
	return nil
}

// cutDashDash splits args at the first "--".
func cutDashDash(args []string) (before, after []string, found bool) {
	if i := slices.Index(args, "--"); i >= 0 {
		return args[:i], args[i+1:], true
	}
	return args, nil, false
}

// commandNames lists the commands for usage errors.
const commandNames = "info, tools, call, request, listen, servers, node, bridge, serve, logout or demo"

// argCounts is how many positional arguments each command takes.
var argCounts = map[string][2]int{
	"info": {0, 0}, "tools": {0, 0}, "call": {1, 2}, "request": {1, 2},
	"listen": {0, 0}, "demo": {0, 0}, "help": {0, 0}, "node": {0, 0}, "servers": {0, 0}, "bridge": {0, 0},
	"logout": {0, 0}, "serve": {0, 64},
}

func (cfg *config) validate() error {
	counts, ok := argCounts[cfg.command]
	if !ok {
		return usagef("unknown command %q (%s)", cfg.command, commandNames)
	}
	if n := len(cfg.args); n < counts[0] || n > counts[1] {
		return usagef("%s: wrong number of arguments (%s)", cfg.command, commandSyntax[cfg.command])
	}
	if cfg.command == "serve" {
		return cfg.validateServe()
	}
	for _, f := range []string{"http", "pool", "auth-issuer", "auth-audience", "allow-origin", "allow-host"} {
		if slices.Contains(cfg.given, f) {
			return usagef("--%s goes with serve", f)
		}
	}
	if slices.Contains(cfg.given, "listen") && cfg.command != "node" {
		return usagef("--listen goes with node")
	}
	if (cfg.command == "call" || cfg.command == "request") && strings.TrimSpace(cfg.args[0]) == "" {
		what := map[string]string{"call": "the tool's NAME", "request": "the METHOD"}[cfg.command]
		return usagef("%s: %s is empty (%s)", cfg.command, what, commandSyntax[cfg.command])
	}
	if err := cfg.validateRemote(); err != nil {
		return err
	}
	if cfg.command == "logout" {
		if cfg.url == "" || len(cfg.server) > 0 || cfg.serverName != "" {
			return usagef("logout: give --url URL, the server whose token to forget (%s)", commandSyntax["logout"])
		}
		return cfg.validateURL()
	}
	switch cfg.command {
	case "demo", "help", "node", "servers", "bridge":
		if len(cfg.server) > 0 {
			return usagef("%s takes no server command", cfg.command)
		}
		if cfg.url != "" {
			return usagef("%s takes no --url", cfg.command)
		}
	}
	if err := cfg.validateURL(); err != nil {
		return err
	}
	switch cfg.command {
	case "demo", "help", "node", "bridge":
		return nil // validateRemote checked node's and bridge's flags; demo takes none
	case "servers":
		// No server command, but it starts every server of the file
		// with the flags' settings: they are checked below as for any
		// command, not ignored or failed server by server.
	default:
		if cfg.serverName != "" && len(cfg.server) > 0 {
			return usagef("%s: give either --server NAME or -- SERVER_CMD, not both", cfg.command)
		}
		if cfg.serverName == "" && len(cfg.server) == 0 && cfg.url == "" {
			return usagef("%s: no server command; end the arguments with -- SERVER_CMD [ARGS...] (or give --url URL, or --config FILE --server NAME)", cfg.command)
		}
	}
	if len(cfg.args) == 2 {
		var v map[string]any
		if err := json.Unmarshal([]byte(cfg.args[1]), &v); err != nil {
			return usagef("%s: %s is not a JSON object: %v", cfg.command, cfg.args[1], err)
		}
		if v == nil { // null decodes into a map without an error
			return usagef("%s: %s is not a JSON object; write {} for none", cfg.command, cfg.args[1])
		}
	}
	if cfg.command != "listen" && (cfg.tools || cfg.prompts || cfg.resources || len(cfg.resourceURIs) > 0 || cfg.count != 0 || cfg.forDur != 0) {
		return usagef("--tools, --prompts, --resources, --resource, --count and --for go with listen only")
	}
	if cfg.count < 0 || cfg.forDur < 0 {
		return usagef("--count and --for cannot be negative")
	}
	if err := limits.CheckMaxLineBytes(cfg.maxLineBytes); err != nil {
		return usagef("--max-line-bytes: %v", err)
	}
	if cfg.timeout == 0 {
		return usagef("--timeout 0s: give a positive duration (or a negative one for no timeout)")
	}
	if slices.Contains(cfg.given, "probe-timeout") {
		if cfg.probeTimeout <= 0 {
			return usagef("--probe-timeout %s: give a positive duration (or leave it out: the probe then waits the shorter of --timeout and 10s)", cfg.probeTimeout)
		}
		if cfg.era != "" {
			return usagef("--probe-timeout goes without --era: with --era %s snodo sends no server/discover probe", cfg.era)
		}
	}
	if cfg.maxInputRounds < 1 {
		return usagef("--max-input-rounds %d: must be at least 1", cfg.maxInputRounds)
	}
	switch cfg.era {
	case "", "modern", "legacy":
	default:
		return usagef("--era %q: give modern or legacy (or leave it out to detect the era)", cfg.era)
	}
	for _, kv := range cfg.env {
		if k, _, ok := strings.Cut(kv, "="); !ok || serverproc.CheckEnvName(k) != nil {
			return usagef("--env %q: write it as NAME=VALUE", kv)
		}
	}
	for _, k := range cfg.unset {
		if err := serverproc.CheckEnvName(k); err != nil {
			return usagef("--unset %q: give the variable's name alone (%v)", k, err)
		}
	}
	for i, dir := range cfg.roots {
		abs, err := filepath.Abs(dir)
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(abs); err == nil && !fi.IsDir() {
				err = errors.New("not a directory")
			}
		}
		if err != nil {
			return usagef("--root %s: %v", dir, err)
		}
		cfg.roots[i] = abs
	}
	return nil
}

// maxKeyFileBytes bounds the credential, key and certificate files of the
// NATS flags: they are a few KiB.
const maxKeyFileBytes = 1 << 20

// checkKeyFile refuses a NATS credential, key or certificate file that is
// missing, not a regular file, or larger than maxKeyFileBytes, before the
// NATS client reads it whole: a named pipe with no writer blocked snodo
// for ever (deaf to SIGTERM: the read is not a wait it can end), and
// /dev/zero would be read until memory ran out.
func checkKeyFile(path string) error {
	fi, err := os.Stat(path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		what := "not a regular file"
		switch mode := fi.Mode(); {
		case mode.IsDir():
			what = "a directory, " + what
		case mode&os.ModeNamedPipe != 0:
			what = "a named pipe (FIFO), " + what
		case mode&os.ModeCharDevice != 0:
			what = "a character device, " + what
		}
		return fmt.Errorf("%s: give the path of the file itself", what)
	}
	if fi.Size() > maxKeyFileBytes {
		return fmt.Errorf("%d bytes, more than %d: is it the right file?", fi.Size(), maxKeyFileBytes)
	}
	return nil
}

// commandSyntax is each command's argument syntax, for usage errors.
var commandSyntax = map[string]string{
	"info": "snodo info -- SERVER_CMD", "tools": "snodo tools -- SERVER_CMD",
	"call":    "snodo call NAME [JSON_ARGS] -- SERVER_CMD",
	"request": "snodo request METHOD [JSON_PARAMS] -- SERVER_CMD",
	"listen":  "snodo listen [--tools] [--prompts] [--resources] [--resource URI]... -- SERVER_CMD",
	"demo":    "snodo demo", "help": "snodo help",
	"logout": "snodo logout --url URL",
	"node":   "snodo node --config FILE [--nats URL]", "servers": "snodo --config FILE servers",
	"bridge": "snodo bridge --nats URL --server NAME",
	"serve":  "snodo serve --http ADDR -- CMD ARGS | --config FILE | --nats URL --server NAME...",
}

// natsFlags are the flags of NATS connections: with --nats URL or node.
var natsFlags = []string{"prefix", "nats-creds", "nats-nkey", "nats-user", "nats-ca", "nats-cert", "nats-key"}

// serverFlags set up a server process: over NATS the host does, from its
// own --config file.
var serverFlags = []string{"env", "unset", "dir", "max-line-bytes", "era", "probe-timeout"}

// notNodeFlags are the flags a node has no use for: it takes each
// server's settings from the --config file and prints no results.
var notNodeFlags = append([]string{"timeout", "max-input-rounds", "json", "trace",
	"tools", "prompts", "resources", "resource", "count", "for"}, serverFlags...)

// notBridgeFlags are the flags a bridge has no use for: its client
// sends the requests, and it prints only protocol messages.
var notBridgeFlags = append([]string{"max-input-rounds", "json", "trace", "quiet", "root", "sampling-reply",
	"tools", "prompts", "resources", "resource", "count", "for", "drain", "max-held", "config"}, serverFlags...)

// validateRemote checks the flags of the NATS commands. Flags that would
// be silently ignored are usage errors.
func (cfg *config) validateRemote() error {
	overNATS := cfg.command == "node" || cfg.command == "bridge" || (cfg.natsURL != "" && (cfg.serverName != "" || cfg.command == "servers"))
	for _, name := range cfg.given {
		switch {
		case cfg.command == "bridge" && slices.Contains(notBridgeFlags, name):
			return usagef("--%s does not go with bridge: its client sends the requests, and the server runs on its host", name)
		case cfg.command == "demo":
			return usagef("demo takes no flags (--%s): it runs its own server with its own settings", name)
		case name == "nats" && !overNATS:
			return usagef("--nats URL goes with --server NAME, servers or node")
		case name == "config" && cfg.natsURL != "" && cfg.command != "node":
			return usagef("--config does not go with --nats: the named servers run on their hosts, which set them up from their own --config files")
		case name == "server" && cfg.command == "servers":
			return usagef("servers lists every server; --server does not go with it (run info or tools with --server NAME for one server)")
		case name == "config" && cfg.serverName == "" && cfg.command != "servers" && cfg.command != "node":
			return usagef("--config FILE goes with --server NAME, servers or node")
		case slices.Contains(natsFlags, name) && !overNATS:
			return usagef("--%s goes with --nats URL or node", name)
		case (name == "drain" || name == "max-held") && cfg.command != "node":
			return usagef("--%s goes with node", name)
		case name == "server" && cfg.command == "node":
			return usagef("node serves every server of the file; --server does not go with it")
		case cfg.command == "node" && slices.Contains(notNodeFlags, name):
			return usagef("--%s does not go with node: it takes each server's settings from the --config file (its \"snodo\" block)", name)
		case overNATS && cfg.command != "node" && slices.Contains(serverFlags, name):
			return usagef("--%s does not go with --nats: the server runs on its host, which sets it up from its own --config file", name)
		}
	}
	if cfg.prefix != "" {
		if err := natsname.Check("prefix", cfg.prefix); err != nil {
			return usagef("--prefix %q: use letters, digits, '-' and '_' only (it is a NATS subject token)", cfg.prefix)
		}
	}
	if overNATS && cfg.serverName != "" {
		if err := natsname.Check("server name", cfg.serverName); err != nil {
			return usagef("--server %q: no host can serve this name over NATS; use letters, digits, '-' and '_' only", cfg.serverName)
		}
	}
	switch {
	case cfg.command == "bridge" && (cfg.natsURL == "" || cfg.serverName == ""):
		return usagef("bridge: give --nats URL and --server NAME (%s)", commandSyntax["bridge"])
	case cfg.command == "node" && cfg.configFile == "":
		return usagef("node: give --config FILE (the mcpServers file naming the servers to serve)")
	case cfg.command == "servers" && cfg.natsURL == "" && cfg.configFile == "":
		return usagef("servers: give --config FILE (or --nats URL)")
	case cfg.serverName != "" && cfg.natsURL == "" && cfg.configFile == "":
		return usagef("--server NAME goes with --config FILE (or --nats URL)")
	case cfg.drain <= 0:
		return usagef("--drain %s: must be positive", cfg.drain)
	case cfg.maxHeld <= 0:
		return usagef("--max-held %d: must be at least 1", cfg.maxHeld)
	case (cfg.natsCert == "") != (cfg.natsKey == ""):
		return usagef("--nats-cert and --nats-key go together")
	}
	for _, f := range []struct{ name, path string }{
		{"nats-creds", cfg.natsCreds}, {"nats-nkey", cfg.natsNkey},
		{"nats-ca", cfg.natsCA}, {"nats-cert", cfg.natsCert}, {"nats-key", cfg.natsKey},
	} {
		if f.path == "" {
			continue
		}
		if err := checkKeyFile(f.path); err != nil {
			return usagef("--%s %s: %v", f.name, f.path, err)
		}
	}
	return nil
}
