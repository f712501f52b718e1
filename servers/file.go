package servers

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/serverproc"
	"github.com/snodo/snodo/supervisor"
)

// File is a parsed server file: its named servers in file order.
type File struct {
	// Path is the name the file was loaded or parsed under; errors and
	// warnings start with it.
	Path string
	// Servers are the servers snodo can start, in file order. Servers
	// marked "disabled" and servers of a transport snodo does not speak
	// (a "type" other than "stdio", "http", "streamable-http" and "sse") are not
	// among them: they are in Skipped.
	Servers []*Server
	// Skipped names each server left out and says why.
	Skipped map[string]string
	// Warnings are the keys snodo did not use and the servers it skipped,
	// one line each. The package logs nothing: show them to your user
	// (the snodo CLI prints them on stderr).
	Warnings []string
}

// Server is one named server of a File, ready to start: how to reach
// it, its pool size, and everything else the file gives it as options,
// built once when the file was parsed.
type Server struct {
	// Name is the server's key in the file.
	Name string
	// Target is how to reach the server: snodo.Command("command",
	// "args"...), snodo.HTTP("url") for an entry with "type": "http"
	// or "streamable-http" and a "url", or
	// snodo.TransportTarget(connection.SSE("url", nil, headers)) for one
	// with "type": "sse" (the HTTP+SSE transport of 2024-11-05, which
	// Claude Code and Cursor write; its "headers" go with the transport,
	// not as options).
	Target snodo.Target
	// Pool is how many servers a pool of this one runs (the snodo "pool"
	// key), 1 to 256. Default 1.
	Pool int
	// Options are the server's configuration, as supervisor options:
	// first those the file gives it, then those the program appends for
	// this server only. The file's are one supervisor.WithConnectOptions
	// with its "env" (snodo.WithEnv, one per variable), "cwd"
	// (snodo.WithDir; relative to the file's directory when Load read
	// it), "headers" (snodo.WithHTTPHeader; an "sse" entry's are in its
	// Target), "sandbox" (snodo.WithSandbox), and from the snodo block
	// "timeout" (snodo.WithTimeout), "shutdownGrace"
	// (snodo.WithShutdownGrace) and "era" (snodo.WithEra), with
	// snodo.WithOrigin naming the server; then "maxRestarts" and
	// "window" (supervisor.WithIntensity), "failFast"
	// (supervisor.FailFast) and "maxWait" (supervisor.WithMaxWait). Start
	// the server with them, supervised or as a pool:
	//
	//	p, err := supervisor.NewPool(ctx, s.Target, s.Pool, s.Options...)
	//
	// Append the program's own (handlers, an events actor, a grace) to
	// them: they come after the file's, and win where both set one
	// thing. A Router applies the options it gives every server between
	// the two: after the file's, before those appended.
	Options []supervisor.Option
	// OAuth is an http server's "oauth" object: "clientId", a client
	// registered for snodo with the server's authorization server (none:
	// snodo registers itself), "scopes" to ask for (none: the server's
	// challenge or metadata says), "clientSecretEnv", the environment
	// variable holding a confidential client's secret (read when the
	// file is parsed into ClientSecret; a secret written in the file is
	// refused), and "callbackPort", the loopback port the client was
	// registered with (RedirectURL http://localhost:PORT/callback); nil
	// when the entry has none.
	// It is not among Options: only the program can ask its user, so it
	// completes it (Authorize, Store…) and gives it with snodo.WithOAuth
	// in supervisor.WithConnectOptions among its own options. The snodo
	// command line authorizes with it when the server answers 401.
	OAuth *snodo.OAuth
	// Sandbox is a command server's "sandbox" object (keys "memory",
	// "cpuTime", "maxProcesses", "maxOpenFiles", "readOnly", "readWrite",
	// "noNetwork"; docs/cli.md); nil when the entry has none. Options
	// already carry it as snodo.WithSandbox: it is here to be shown.
	Sandbox *snodo.Sandbox
	// SSE says the entry has "type": "sse": Target is a
	// snodo.TransportTarget of the HTTP+SSE transport, which takes no
	// HTTP options (snodo.WithHTTPHeader, snodo.WithOAuth) and no
	// process options: its "headers" are in the transport.
	SSE bool

	// fromFile is how many of Options the file gave: a Router puts its
	// options for every server after them.
	fromFile int
}

// The pool size of a server whose snodo block gives none, and the bound
// of the size a file may ask for: a pool starts all its servers at once,
// so a typo must not start thousands of processes (256 is the bound of
// every supervisor pool).
const (
	defaultPool = 1
	maxPool     = 256
)

// maxFileBytes bounds a server file (1 MiB: files MCP hosts write are a
// few KiB). Load reads no more, and Parse refuses larger data.
const maxFileBytes = 1 << 20

// FileError is a problem with a server file. Its message names the file,
// the server and the field, for example
//
//	mcp.json: server "github": "args": want an array of strings, got a number
type FileError struct {
	File   string
	Server string // empty for a problem with the file as a whole
	Field  string // the key, dotted for nested ones ("snodo.pool", "env.TOKEN"); may be empty
	Err    error
}

// Error names the file, the server and the field, then the problem.
func (e *FileError) Error() string {
	var b bytes.Buffer
	b.WriteString(e.File)
	if e.Server != "" {
		fmt.Fprintf(&b, ": server %q", e.Server)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the problem itself, for errors.Is and errors.As.
func (e *FileError) Unwrap() error { return e.Err }

// ErrNotRegularFile is Load's error (wrapped in a *FileError) for a path
// that is not a regular file once symbolic links are followed: a named
// pipe, a device, a socket or a directory. Reading a pipe with no writer
// would wait for ever, and a device may never end; to load JSON from one,
// read it yourself (boundedly) and pass the bytes to Parse.
var ErrNotRegularFile = errors.New("not a regular file")

// Load reads and parses the server file at path. Relative "cwd" values
// are resolved against the file's directory. Show File.Warnings to your
// user: Load logs nothing.
//
// The path must name a regular file (a symbolic link to one will do):
// anything else fails with ErrNotRegularFile before a byte is read, and
// Load never waits on a named pipe that has no writer. It reads at most
// 1 MiB.
func Load(path string) (*File, error) {
	// Stat first, so that a pipe or a device is refused without being
	// opened (opening some devices does something of its own).
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	if err := checkRegular(path, fi); err != nil {
		return nil, err
	}
	fh, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	// One byte more than the bound, for Parse to see that it is over.
	data, err := io.ReadAll(io.LimitReader(fh, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("servers: reading %s: %w", path, err)
	}
	return parse(path, filepath.Dir(path), data)
}

// openRegular opens path for reading and checks that what it opened is a
// regular file. The open cannot block: it is non-blocking, so a path
// replaced by a named pipe after Load's Stat opens at once even with no
// writer, and the mode of the opened file is checked before any read.
func openRegular(path string) (*os.File, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	fi, err := fh.Stat()
	if err == nil {
		err = checkRegular(path, fi)
	}
	if err != nil {
		_ = fh.Close()
		return nil, err
	}
	return fh, nil
}

// checkRegular refuses what is not a regular file, saying what it is and
// what to pass instead.
func checkRegular(path string, fi os.FileInfo) error {
	mode := fi.Mode()
	if mode.IsRegular() {
		return nil
	}
	what := "not a regular file (mode " + mode.Type().String() + ")"
	switch {
	case mode.IsDir():
		what = "a directory"
	case mode&os.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case mode&os.ModeCharDevice != 0:
		what = "a character device"
	case mode&os.ModeDevice != 0:
		what = "a device"
	case mode&os.ModeSocket != 0:
		what = "a socket"
	}
	return &FileError{File: path, Err: fmt.Errorf("%s, %w: give the path of the JSON file itself (write JSON from a pipe or a command to a file first)", what, ErrNotRegularFile)}
}

// Parse parses a server file's contents; name is used in errors and
// warnings. It accepts the top key "mcpServers" or "servers" (not both).
// Keys it does not use are never silently ignored: each is a line of
// File.Warnings, for the caller to show (nothing is logged). Errors name
// the file, the server and the field, and a value's type, never a
// string's contents (a misplaced one may be a secret). A relative "cwd"
// stays relative: the server starts in it from this process's working
// directory (Load resolves it against the file's).
func Parse(name string, data []byte) (*File, error) {
	return parse(name, "", data)
}

// parse is Parse with dir, the directory relative "cwd" values are
// resolved against ("": none).
func parse(name, dir string, data []byte) (*File, error) {
	p := parser{f: &File{Path: name, Skipped: map[string]string{}}, dir: dir}
	if len(data) > maxFileBytes {
		return nil, p.fail("", "", "larger than %d bytes: is it the right file?", maxFileBytes)
	}
	if err := p.file(data); err != nil {
		return nil, err
	}
	return p.f, nil
}

// Lookup returns the server called name. A name the file skipped fails
// with why it was skipped; a name it does not have fails with an error
// that lists the names it has (errors.Is ErrUnknownServer).
func (f *File) Lookup(name string) (*Server, error) {
	for _, s := range f.Servers {
		if s.Name == name {
			return s, nil
		}
	}
	if why, ok := f.Skipped[name]; ok {
		return nil, &FileError{File: f.Path, Server: name, Err: fmt.Errorf("skipped: %s", why)}
	}
	return nil, &FileError{File: f.Path, Server: name, Err: &noSuchServer{f: f}}
}

// noSuchServer is Lookup's error for a name the file does not have.
type noSuchServer struct{ f *File }

func (e *noSuchServer) Error() string {
	msg := fmt.Sprintf("no such server (the file has %q", e.f.names())
	if len(e.f.Skipped) > 0 {
		skipped := make([]string, 0, len(e.f.Skipped))
		for name := range e.f.Skipped {
			skipped = append(skipped, name)
		}
		slices.Sort(skipped)
		msg += fmt.Sprintf(", and skipped %q", skipped)
	}
	return msg + ")"
}

func (e *noSuchServer) Is(target error) bool { return target == ErrUnknownServer }

// names are the servers' names in file order.
func (f *File) names() []string {
	names := make([]string, len(f.Servers))
	for i, s := range f.Servers {
		names[i] = s.Name
	}
	return names
}

type parser struct {
	f   *File
	dir string // relative "cwd" values are resolved against it
}

func (p *parser) fail(server, field string, format string, args ...any) error {
	return &FileError{File: p.f.Path, Server: server, Field: field, Err: fmt.Errorf(format, args...)}
}

func (p *parser) warn(server, field, msg string) {
	line := (&FileError{File: p.f.Path, Server: server, Field: field, Err: errors.New(msg)}).Error()
	p.f.Warnings = append(p.f.Warnings, line)
}

func (p *parser) file(data []byte) error {
	top, err := members(data)
	if err != nil {
		return p.fail("", "", "%w", err)
	}
	var list json.RawMessage
	key := ""
	for _, m := range top {
		switch m.key {
		case "mcpServers", "servers":
			if key != "" {
				return p.fail("", m.key, "the file has both %q and %q; keep one", key, m.key)
			}
			key, list = m.key, m.value
		default:
			p.warn("", m.key, "unknown top-level key, ignored")
		}
	}
	if key == "" {
		return p.fail("", "", "no %q (or %q) object", "mcpServers", "servers")
	}
	entries, err := members(list)
	if err != nil {
		return p.fail("", key, "%w", err)
	}
	for _, e := range entries {
		if e.key == "" {
			return p.fail("", key, "a server has an empty name")
		}
		s, skip, err := p.server(e.key, e.value)
		if err != nil {
			return err
		}
		if skip != "" {
			p.f.Skipped[e.key] = skip
			p.warn(e.key, "", "skipped: "+skip)
			continue
		}
		p.f.Servers = append(p.f.Servers, s.server(p.dir))
	}
	return nil
}

// server parses one entry; skip is set for a server snodo does not run.
func (p *parser) server(name string, data json.RawMessage) (s *entry, skip string, err error) {
	fields, err := members(data)
	if err != nil {
		return nil, "", p.fail(name, "", "%w", err)
	}
	s = &entry{Name: name, Pool: defaultPool}
	var disabled bool
	var transport string
	for _, m := range fields {
		switch m.key {
		case "command":
			err = p.decode(name, m, &s.Command, "a string")
		case "args":
			err = p.decode(name, m, &s.Args, "an array of strings")
		case "env":
			err = p.env(s, m)
		case "cwd":
			err = p.decode(name, m, &s.Cwd, "a string")
		case "type", "transport":
			err = p.decode(name, m, &transport, "a string")
		case "url":
			err = p.decode(name, m, &s.URL, "a string")
		case "headers":
			err = p.headers(s, m)
		case "oauth":
			err = p.oauth(s, m)
		case "disabled":
			err = p.decode(name, m, &disabled, "true or false")
		case "snodo":
			err = p.snodo(s, m.value)
		case "sandbox":
			err = p.sandbox(s, m) // sandbox.go
		default:
			p.warn(name, m.key, "unknown key, ignored")
		}
		if err != nil {
			return nil, "", err
		}
	}
	switch {
	case disabled:
		return nil, "disabled", nil
	case transport == "sse" && s.OAuth != nil:
		return nil, "", p.fail(name, "oauth", "snodo authorizes Streamable HTTP servers only, not those of the HTTP+SSE transport (\"type\": \"sse\"): leave it out, or give the token in \"headers\"")
	case transport == "http" || transport == "streamable-http" || transport == "sse" || (transport == "" && s.URL != "" && s.Command == ""):
		s.SSE = transport == "sse"
		if s.URL == "" {
			return nil, "", p.fail(name, "url", "missing or empty: say where the %s server listens", cmp.Or(transport, "http"))
		}
		if u, err := neturl.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, "", p.fail(name, "url", "not an http:// or https:// URL")
		}
		switch {
		case s.Command != "":
			return nil, "", p.fail(name, "command", "an http server has a url, not a command: leave one out")
		case len(s.Args) > 0:
			return nil, "", p.fail(name, "args", "an http server runs elsewhere and takes no arguments: leave them out")
		case len(s.Env) > 0:
			return nil, "", p.fail(name, "env", "an http server runs elsewhere and takes no environment: leave it out (headers carry what it needs)")
		case s.Cwd != "":
			return nil, "", p.fail(name, "cwd", "an http server runs elsewhere and has no working directory here: leave it out")
		case s.ShutdownGrace > 0:
			return nil, "", p.fail(name, "snodo.shutdownGrace", "an http server is no process of snodo's to stop: leave it out")
		case s.Sandbox != nil:
			return nil, "", p.fail(name, "sandbox", "an http server runs elsewhere, outside any sandbox of snodo's: leave it out")
		}
		return s, "", nil
	case s.OAuth != nil:
		return nil, "", p.fail(name, "oauth", "only an http server (a \"url\") is authorized with OAuth: leave it out")
	case transport != "" && transport != "stdio":
		return nil, fmt.Sprintf("transport %q (snodo speaks stdio, Streamable HTTP: \"http\", and HTTP+SSE: \"sse\")", transport), nil
	case s.Command == "":
		return nil, "", p.fail(name, "command", "missing or empty: say which program to start")
	case len(s.Headers) > 0:
		return nil, "", p.fail(name, "headers", "only an http server (a \"url\") is sent headers: leave them out, or give the environment with \"env\"")
	}
	return s, "", nil
}

// oauth reads an http server's "oauth": {"clientId": "…", "scopes":
// ["…"], "clientSecretEnv": "NAME", "callbackPort": 8080}. The secret is
// never in the file: clientSecretEnv names the environment variable that
// holds it, read now (unset or empty is an error: the client would be
// refused at the token endpoint with a less clear one). callbackPort is
// the loopback port the client was registered with, as Claude Code's
// configs set it: the redirect URL becomes http://localhost:PORT/callback.
func (p *parser) oauth(s *entry, m member) error {
	fields, err := members(m.value)
	if err != nil {
		return p.fail(s.Name, "oauth", "want an object with clientId, scopes, clientSecretEnv and callbackPort: %w", err)
	}
	s.OAuth = &snodo.OAuth{}
	for _, f := range fields {
		switch f.key {
		case "clientId":
			err = p.decode(s.Name, member{key: "oauth.clientId", value: f.value}, &s.OAuth.ClientID, "a string")
		case "scopes":
			err = p.decode(s.Name, member{key: "oauth.scopes", value: f.value}, &s.OAuth.Scopes, "an array of strings")
			if err == nil && s.OAuth.Scopes == nil {
				s.OAuth.Scopes = []string{} // given, if null: the entry has an oauth object
			}
		case "clientSecretEnv":
			err = p.clientSecret(s, f)
		case "clientSecret":
			err = p.fail(s.Name, "oauth.clientSecret", "a secret is not written in the file: put it in an environment variable and name that with \"clientSecretEnv\"")
		case "callbackPort":
			var port int
			if err = p.decode(s.Name, member{key: "oauth.callbackPort", value: f.value}, &port, "a port number"); err == nil {
				if port < 1 || port > 65535 {
					err = p.fail(s.Name, "oauth.callbackPort", "want a port from 1 to 65535, got %d", port)
				}
				s.OAuth.RedirectURL = fmt.Sprintf("http://localhost:%d/callback", port)
			}
		default:
			p.warn(s.Name, "oauth."+f.key, "unknown key, ignored")
		}
		if err != nil {
			return err
		}
	}
	if o := s.OAuth; o.ClientID == "" && o.Scopes == nil && o.ClientSecret == "" && o.RedirectURL == "" {
		s.OAuth = nil // an empty object names nothing
	}
	return nil
}

// clientSecret reads "clientSecretEnv": the name of the environment
// variable that holds the client secret.
func (p *parser) clientSecret(s *entry, f member) error {
	var name string
	if err := p.decode(s.Name, member{key: "oauth.clientSecretEnv", value: f.value}, &name, "the name of an environment variable"); err != nil {
		return err
	}
	if name == "" || strings.ContainsAny(name, "=\x00") {
		return p.fail(s.Name, "oauth.clientSecretEnv", "want the name of an environment variable, such as MCP_CLIENT_SECRET")
	}
	secret := os.Getenv(name)
	if secret == "" {
		return p.fail(s.Name, "oauth.clientSecretEnv", "the environment variable %s, which should hold the client secret, is not set or empty", name)
	}
	s.OAuth.ClientSecret = secret
	return nil
}

// headers reads an http server's "headers": an object of strings.
func (p *parser) headers(s *entry, m member) error {
	vars, err := members(m.value)
	if err != nil {
		return p.fail(s.Name, "headers", "want an object of strings: %w", err)
	}
	s.Headers = make(map[string]string, len(vars))
	for _, v := range vars {
		var val string
		if err := json.Unmarshal(v.value, &val); err != nil {
			return p.fail(s.Name, "headers."+v.key, "want a string, got %s", kind(v.value))
		}
		if v.key == "" || strings.ContainsAny(v.key, " \t\r\n:") || strings.ContainsAny(val, "\r\n\x00") {
			return p.fail(s.Name, "headers."+v.key, "not a header name and value")
		}
		s.Headers[v.key] = val
	}
	return nil
}

func (p *parser) env(s *entry, m member) error {
	vars, err := members(m.value)
	if err != nil {
		return p.fail(s.Name, "env", "want an object of strings: %w", err)
	}
	s.Env = make(map[string]string, len(vars))
	for _, v := range vars {
		if v.key == "" {
			return p.fail(s.Name, "env", "empty variable name")
		}
		if err := serverproc.CheckEnvName(v.key); err != nil {
			return p.fail(s.Name, "env."+v.key, "%w", err)
		}
		var val string
		if err := json.Unmarshal(v.value, &val); err != nil {
			return p.fail(s.Name, "env."+v.key, "want a string, got %s", kind(v.value))
		}
		s.Env[v.key] = val
	}
	return nil
}

// snodo parses the snodo block: pool size and supervision.
func (p *parser) snodo(s *entry, data json.RawMessage) error {
	fields, err := members(data)
	if err != nil {
		return p.fail(s.Name, "snodo", "%w", err)
	}
	for _, m := range fields {
		m.key = "snodo." + m.key
		switch m.key {
		case "snodo.pool":
			if err = p.decode(s.Name, m, &s.Pool, "a whole number"); err == nil && s.Pool < 1 {
				err = p.fail(s.Name, m.key, "%d must be at least 1", s.Pool)
			} else if err == nil && s.Pool > maxPool {
				err = p.fail(s.Name, m.key, "%d is more than %d: is it a typo?", s.Pool, maxPool)
			}
		case "snodo.timeout":
			err = p.duration(s.Name, m, &s.Timeout, true)
		case "snodo.shutdownGrace":
			err = p.duration(s.Name, m, &s.ShutdownGrace, false)
		case "snodo.era":
			if err = p.decode(s.Name, m, &s.Era, "a string"); err == nil && s.Era != "modern" && s.Era != "legacy" {
				err = p.fail(s.Name, m.key, "%q: want \"modern\" or \"legacy\"", s.Era)
			}
		case "snodo.maxRestarts":
			var n int
			if err = p.decode(s.Name, m, &n, "a whole number"); err == nil && n < 0 {
				err = p.fail(s.Name, m.key, "%d must not be negative", n)
			}
			s.MaxRestarts = &n
		case "snodo.window":
			err = p.duration(s.Name, m, &s.Window, false)
		case "snodo.failFast":
			err = p.decode(s.Name, m, &s.FailFast, "true or false")
		case "snodo.maxWait":
			err = p.duration(s.Name, m, &s.MaxWait, false)
		default:
			p.warn(s.Name, m.key, "unknown key, ignored")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// duration reads a Go duration string ("30s", "1m30s"); negative is
// allowed only where it means "never".
func (p *parser) duration(server string, m member, d *time.Duration, negative bool) error {
	var text string
	if err := p.decode(server, m, &text, `a duration string such as "30s"`); err != nil {
		return err
	}
	v, err := time.ParseDuration(text)
	if err != nil {
		return p.fail(server, m.key, "%q is not a duration (write it like \"30s\" or \"2m\")", text)
	}
	if v == 0 || (v < 0 && !negative) {
		return p.fail(server, m.key, "%s must be positive", v)
	}
	*d = v
	return nil
}

func (p *parser) decode(server string, m member, v any, want string) error {
	if err := json.Unmarshal(m.value, v); err != nil {
		return p.fail(server, m.key, "want %s, got %s", want, kind(m.value))
	}
	return nil
}

// kind names a JSON value's type for error messages: a number with its
// value, a string without (it may be a secret in the wrong place).
func kind(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "the number " + string(v)
}

type member struct {
	key   string
	value json.RawMessage
}

// members reads a JSON object's members in order, refusing duplicate
// keys (encoding/json would keep the last one and lose the others).
func members(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("want an object, got %s", kind(data))
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %w", err)
		}
		key := tok.(string) // object keys are always strings
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("not valid JSON at %q: %w", key, err)
		}
		if seen[key] {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		seen[key] = true
		out = append(out, member{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("not valid JSON: data after the object")
	}
	return out, nil
}
