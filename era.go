package snodo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/snodo/snodo/internal/engine"
	"github.com/snodo/snodo/internal/jsonrpc"
	"github.com/snodo/snodo/internal/limits"
	"github.com/snodo/snodo/internal/mcpmethod"
)

// Era is the generation of MCP a server speaks, settled by Connect:
// "modern" or "legacy". The zero value, "", is an era not known yet (a
// pool with no member up, a remote name no host answered for).
type Era string

// The MCP eras.
const (
	// EraModern: protocol version 2026-07-28. Stateless: every request
	// carries the protocol version, client info and capabilities in
	// _meta; the server never sends requests but asks for input with
	// input_required results.
	EraModern Era = "modern"
	// EraLegacy: protocol versions 2025-11-25, 2025-06-18, 2025-03-26
	// and 2024-11-05. An initialize handshake opens a session; the
	// server sends its own requests (sampling, elicitation, roots, ping)
	// to the client.
	EraLegacy Era = "legacy"
)

// Protocol versions snodo speaks, newest first (tests may swap them).
var (
	modernVersions = mcpmethod.ModernVersions()
	legacyVersions = mcpmethod.LegacyVersions()
)

// Error codes that only a modern server sends: an answer carrying one of
// them identifies the server as modern.
const (
	codeHeaderMismatch             = -32020
	codeMissingClientCapability    = -32021
	codeUnsupportedProtocolVersion = jsonrpc.CodeUnsupportedProtocol
)

// mcpConfig holds the MCP-level options.
type mcpConfig struct {
	origin         Origin // WithOrigin
	handler        ServerRequestHandler
	notify         notificationHandler
	notifyItems    int // 0: defaultNotificationQueueItems
	notifyBytes    int // 0: defaultNotificationQueueBytes
	clientInfo     Implementation
	capabilities   ClientCapabilities
	probeTimeout   time.Duration // 0: 10 s
	maxInputRounds int           // 0: 10
	era            Era           // "": detect
	reprobed       bool          // the probe was sent again with a version refused once
}

// mcpState is what Connect settled about the server. Everything but meta
// is written before Connect returns and read-only afterwards.
type mcpState struct {
	origin       Origin // names the server in messages to actors
	era          Era
	version      string
	serverInfo   Implementation
	capabilities ServerCapabilities
	instructions string
	restarted    bool                 // the probe killed the first process
	baseMeta     []byte               // modern era: the required _meta, encoded
	serve        ServerRequestHandler // the wrapped handler (serverrequests.go)
	maxRounds    int
	timeout      time.Duration // WithTimeout's; 0 the default, negative none

	// meta is the encoded _meta every modern request carries: baseMeta,
	// plus the log level once SetLoggingLevel was called. It is encoded
	// once per change, not per request, and read without a lock.
	meta atomic.Pointer[[]byte]
}

// negotiate probes with server/discover and falls back to initialize on
// any answer that is not modern, as the stdio binding prescribes.
func (c *Client) negotiate(ctx context.Context, cfg *config) error {
	if cfg.mcp.era == EraLegacy {
		return c.initialize(ctx, cfg, nil)
	}
	modernErr, err := c.probe(ctx, cfg, modernVersions[0])
	switch {
	case err == nil:
		return nil
	case modernErr:
		return err
	case authorizationFailed(err): // auth.go: one login per connection attempt
		return fmt.Errorf("snodo: %s needs authorization, which failed: %w", cfg.name(), err)
	case cfg.mcp.era == EraModern:
		return fmt.Errorf("snodo: %s is not a modern MCP server (WithEra(EraModern) forbids the legacy fallback): %w", cfg.name(), err)
	case ctx.Err() != nil:
		return fmt.Errorf("snodo: connecting to %s: %w", cfg.name(), ctx.Err())
	case diedOfProbe(err) && c.lent.LeftInputUnread():
		// It went away without reading the probe (it exited at start, or
		// before the probe arrived): starting it again would only run its
		// side effects twice.
		return fmt.Errorf("snodo: %s went away before it read the server/discover probe: %w", cfg.name(), err)
	case diedOfProbe(err):
		// Some legacy servers exit on an unknown first request: it read
		// the probe and died of it. Start it again and speak legacy from
		// the first line.
		if err := c.restart(ctx, cfg); err != nil {
			return err
		}
	}
	return c.initialize(ctx, cfg, err)
}

// probe sends server/discover with version. It returns err == nil when
// the server is modern and the state is filled; modern == true when the
// server is modern but cannot be used (the error says why); otherwise the
// server is to be treated as legacy.
func (c *Client) probe(ctx context.Context, cfg *config, version string) (modern bool, err error) {
	meta := buildMeta(version, &cfg.mcp)
	params, _ := jsonrpc.MergeMeta(nil, meta)
	opts := &engine.CallOptions{Timeout: cmp.Or(cfg.mcp.probeTimeout, limits.ProbeTimeout)}
	raw, err := c.send(ctx, "server/discover", json.RawMessage(params), nil, opts)
	if err != nil {
		return c.probeFailed(ctx, cfg, version, err)
	}
	var res discoverResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return false, fmt.Errorf("snodo: server/discover result is malformed (%v); treating the server as legacy", err)
	}
	if rt := res.ResultType; rt != "" && rt != resultComplete {
		return false, fmt.Errorf("snodo: server/discover answered resultType %q; treating the server as legacy", rt)
	}
	if len(res.SupportedVersions) == 0 {
		// Not a DiscoverResult: some legacy servers answer any method.
		return false, errors.New("snodo: server/discover result lists no supportedVersions; treating the server as legacy")
	}
	chosen := ""
	for _, v := range modernVersions {
		if slices.Contains(res.SupportedVersions, v) {
			chosen = v
			break
		}
	}
	if chosen == "" {
		if commonLegacy(res.SupportedVersions) {
			return false, errors.New("snodo: server/discover lists only legacy versions")
		}
		return true, fmt.Errorf("snodo: %s supports protocol versions %v, snodo supports %v and %v: no version in common; upgrade one of them",
			cfg.name(), res.SupportedVersions, modernVersions, legacyVersions)
	}
	if chosen != version {
		meta = buildMeta(chosen, &cfg.mcp)
	}
	if _, ok := res.Capabilities.Extensions[mcpmethod.TasksExtension]; ok {
		declareTasks(meta, &cfg.mcp) // the server may answer tools/call with a task, which CallTool runs
	}
	c.mcp.era, c.mcp.version = EraModern, chosen
	c.mcp.baseMeta, _ = json.Marshal(meta) // RawMessages from json.Marshal: cannot fail
	c.setMeta("")
	c.mcp.capabilities, c.mcp.instructions = res.Capabilities, res.Instructions
	c.mcp.serverInfo = res.ServerInfo
	if info, ok := res.Meta[metaServerInfo]; ok {
		_ = json.Unmarshal(info, &c.mcp.serverInfo)
	}
	return false, nil
}

// probeFailed classifies a failed probe: a recognised modern error keeps
// the server modern (retrying with a version it supports); anything else
// means legacy.
func (c *Client) probeFailed(ctx context.Context, cfg *config, version string, err error) (bool, error) {
	var e *Error
	if !errors.As(err, &e) || e.Local() {
		return false, err
	}
	switch e.Code {
	case codeUnsupportedProtocolVersion:
		var data struct {
			Supported []string `json:"supported"`
		}
		_ = json.Unmarshal(e.Data, &data)
		for _, v := range modernVersions {
			if v != version && slices.Contains(data.Supported, v) {
				return c.probe(ctx, cfg, v)
			}
		}
		if slices.Contains(data.Supported, version) && !cfg.mcp.reprobed {
			// It refused the version it says it supports: try once more
			// (over HTTP a gateway may have refused the header).
			cfg.mcp.reprobed = true
			return c.probe(ctx, cfg, version)
		}
		if commonLegacy(data.Supported) {
			return false, err // a dual-era server whose modern versions we lack
		}
		return true, fmt.Errorf("snodo: %s does not support protocol version %s and offers %v; snodo supports %v: upgrade one of them: %w",
			cfg.name(), version, data.Supported, modernVersions, err)
	case codeMissingClientCapability:
		return true, fmt.Errorf("snodo: %s requires client capabilities %s; declare them with WithClientCapabilities and answer them in the server-request handler: %w",
			cfg.name(), e.Data, err)
	case codeHeaderMismatch:
		return true, fmt.Errorf("snodo: %s rejected the probe as inconsistent: %w", cfg.name(), err)
	}
	return false, err
}

func commonLegacy(versions []string) bool {
	return slices.ContainsFunc(versions, func(v string) bool { return slices.Contains(legacyVersions, v) })
}

// diedOfProbe reports whether the probe failed because the server went
// away (exit, closed pipes) rather than because of the caller.
func diedOfProbe(err error) bool {
	return errors.Is(err, ErrConnectionClosed) &&
		(errors.Is(err, ErrServerExited) || errors.Is(err, ErrStdoutClosed) || errors.Is(err, ErrStdinClosed))
}

// restart replaces a connection whose server died of the probe. The old
// server is stopped for good first (it may have closed its stdout and
// live on, ignoring EOF): the wait is bounded by failedConnectGrace.
func (c *Client) restart(ctx context.Context, cfg *config) error {
	c.kill()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("snodo: connecting to %s: %w", cfg.name(), err)
	}
	conn, err := c.startConn(ctx, cfg)
	if err != nil {
		return fmt.Errorf("snodo: restarting %s after it exited on the server/discover probe: %w", cfg.name(), err)
	}
	c.conn, c.mcp.restarted = conn, true
	return nil
}

// initialize runs the legacy handshake with the newest legacy version
// and accepts any legacy version the server picks that snodo knows.
// probeErr is why the server/discover probe did not settle the era (nil
// when none was sent): a probe that timed out is named if initialize
// fails too, since the server may be modern and only slow to start.
func (c *Client) initialize(ctx context.Context, cfg *config, probeErr error) error {
	params := map[string]any{
		"protocolVersion": legacyVersions[0],
		"capabilities":    cfg.mcp.capabilities,
		"clientInfo":      cfg.mcp.clientInfo,
	}
	raw, err := c.send(ctx, "initialize", params, nil, nil)
	if err != nil && c.fallBackToSSE(ctx, cfg, &err) {
		raw, err = c.send(ctx, "initialize", params, nil, nil)
	}
	if err != nil {
		why := ""
		if errors.Is(probeErr, ErrTimeout) {
			why = fmt.Sprintf(" (server/discover got no answer within %s: a server that starts slowly may need a longer WithProbeTimeout)",
				cmp.Or(cfg.mcp.probeTimeout, limits.ProbeTimeout))
		}
		return fmt.Errorf("snodo: %s answered neither server/discover nor initialize%s: %w", cfg.name(), why, err)
	}
	var res initializeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("snodo: malformed initialize result from %s: %w", cfg.name(), err)
	}
	if !slices.Contains(legacyVersions, res.ProtocolVersion) {
		return fmt.Errorf("snodo: %s chose protocol version %q; snodo supports %v and %v: upgrade one of them",
			cfg.name(), res.ProtocolVersion, modernVersions, legacyVersions)
	}
	c.mcp.era, c.mcp.version = EraLegacy, res.ProtocolVersion
	c.mcp.serverInfo, c.mcp.capabilities, c.mcp.instructions = res.ServerInfo, res.Capabilities, res.Instructions
	if err := c.Notify(ctx, "notifications/initialized", nil); err != nil { // traced and measured as any notification
		return fmt.Errorf("snodo: sending notifications/initialized to %s: %w", cfg.name(), err)
	}
	return nil
}

type discoverResult struct {
	ResultType        string                     `json:"resultType"`
	SupportedVersions []string                   `json:"supportedVersions"`
	Capabilities      ServerCapabilities         `json:"capabilities"`
	Instructions      string                     `json:"instructions"`
	ServerInfo        Implementation             `json:"serverInfo"`
	Meta              map[string]json.RawMessage `json:"_meta"`
}

type initializeResult struct {
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
	ServerInfo      Implementation     `json:"serverInfo"`
	Instructions    string             `json:"instructions"`
}

// legacy reports whether the server speaks a legacy (initialize-era)
// protocol version, where subscriptions/listen does not exist.
func (c *Client) legacy() bool { return c.mcp.era == EraLegacy }

// Default client identity, sent when WithClientInfo is not given.
const (
	defaultClientName    = "snodo"
	defaultClientVersion = "0.1.0"
)

// Era is the MCP era Connect settled: EraModern or EraLegacy.
func (c *Client) Era() Era { return c.mcp.era }

// ProtocolVersion is the negotiated protocol version, such as
// "2026-07-28" (modern) or "2025-11-25" (legacy).
func (c *Client) ProtocolVersion() string { return c.mcp.version }

// ServerInfo is the name and version the server reported (from
// server/discover or initialize). It is self-reported: display it, do not
// base decisions on it.
func (c *Client) ServerInfo() Implementation { return c.mcp.serverInfo }

// Capabilities is what the server declared it offers.
func (c *Client) Capabilities() ServerCapabilities { return c.mcp.capabilities }

// Instructions is the server's guidance for models on how to use it; ""
// when it gave none.
func (c *Client) Instructions() string { return c.mcp.instructions }
