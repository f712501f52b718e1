package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/snodo/snodo"
)

// ServerInfo is what a host knows of the MCP server it serves under a
// name: the era and version it settled with it, and what the server
// reported about itself (self-reported: display it, do not base
// decisions on it).
type ServerInfo struct {
	Era             string                   `json:"era"` // "modern" or "legacy"
	ProtocolVersion string                   `json:"protocolVersion"`
	ServerInfo      snodo.Implementation     `json:"serverInfo"`
	Capabilities    snodo.ServerCapabilities `json:"capabilities"`
	Instructions    string                   `json:"instructions,omitempty"`
	Host            string                   `json:"host"`  // the answering host's id
	Label           string                   `json:"label"` // and its label
	// Pool is what the answering host's pool can do now (members up,
	// restarting, given up; calls held).
	Pool *PoolState `json:"pool,omitempty"`
}

// infoWait bounds Era's look-up when no call has told the era yet.
const infoWait = 5 * time.Second

// onInfo answers an info request from a pool member whose server is up
// (for a caller of the legacy era, from the legacy-era pool when the name
// has one: legacyInfo).
func (h *Host) onInfo(s *served, r *nats.Msg) {
	t0 := time.Now()
	if s.leg != nil && callOptsOf(r.Header).legacy && r.Header.Get(hdrOpts) != "" {
		s.leg.info(r, t0)
		return
	}
	var cur *snodo.Client
	for _, m := range s.pool.Members() {
		if c := m.Current(); c != nil && c.Err() == nil {
			cur = c
			break
		}
	}
	if cur == nil {
		why := "no member of " + s.name + " is connected now (restarting)"
		s.infoStats.fail(why)
		m := nats.NewMsg(r.Reply)
		m.Header.Set(micro.ErrorHeader, why)
		m.Header.Set(micro.ErrorCodeHeader, "503")
		_ = r.RespondMsg(m)
		s.infoStats.record(time.Since(t0))
		return
	}
	si := infoOf(cur, h)
	st := h.poolState(s)
	si.Pool = &st
	b, _ := json.Marshal(si)
	_ = r.Respond(b)
	s.infoStats.record(time.Since(t0))
}

func infoOf(c *snodo.Client, h *Host) ServerInfo {
	return ServerInfo{
		Era: string(c.Era()), ProtocolVersion: c.ProtocolVersion(), ServerInfo: c.ServerInfo(),
		Capabilities: c.Capabilities(), Instructions: c.Instructions(), Host: h.id, Label: h.label,
	}
}

// Info asks a host of the name about its MCP server. A name no host
// serves is a -32000 wrapping ErrNoHost (and snodo.ErrConnectionClosed);
// ctx's error and NATS failures come wrapped with the name.
func (c *Client) Info(ctx context.Context) (*ServerInfo, error) {
	if ctx == nil {
		return nil, nilContextError("info of " + c.name)
	}
	req := nats.NewMsg(c.subj.info)
	if c.cfg.era == snodo.EraLegacy {
		req.Header.Set(hdrOpts, "legacy") // the host's legacy-era connection, if it has one
	}
	msg, err := c.nc.RequestMsgWithContext(ctx, req)
	if err != nil {
		if err == nats.ErrNoResponders {
			return nil, noHostErr(fmt.Sprintf("no host serves %q (subject %s)", c.name, c.subj.info))
		}
		return nil, fmt.Errorf("remote: info of %s: %w", c.name, err)
	}
	if desc := msg.Header.Get(micro.ErrorHeader); desc != "" {
		return nil, fmt.Errorf("remote: info of %s: %s", c.name, desc)
	}
	var si ServerInfo
	if err := json.Unmarshal(msg.Data, &si); err != nil {
		return nil, fmt.Errorf("remote: info of %s: malformed answer: %w", c.name, err)
	}
	c.learnEra(si.Era)
	return &si, nil
}

// Era is the era of the MCP server behind the name, as its hosts report
// it: learnt from replies, or asked for (bounded by 5 s) before the
// first. EraModern when no host answers. A client of the legacy era
// (snodo.WithEra(snodo.EraLegacy) in WithConnectOptions) learns it from
// Info alone: EraLegacy when its hosts serve it on a legacy-era
// connection (ServeLegacy), their pool's era otherwise.
func (c *Client) Era() snodo.Era {
	if e := knownEras[c.era.Load()]; e != "" {
		return e
	}
	ctx, cancel := context.WithTimeout(context.Background(), infoWait)
	defer cancel()
	if _, err := c.Info(ctx); err != nil {
		return snodo.EraModern
	}
	return knownEras[c.era.Load()]
}

// knownEras are the eras a client learns, by their code in Client.era
// (0: not learnt yet), so that a reply's era is stored without an
// allocation.
var knownEras = [...]snodo.Era{"", snodo.EraModern, snodo.EraLegacy}

// learnEra stores the era a host named, if it is one.
func (c *Client) learnEra(s string) {
	for code, e := range knownEras {
		if code > 0 && s == string(e) {
			c.era.Store(int32(code))
			return
		}
	}
}
