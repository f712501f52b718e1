package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/snodo/snodo/internal/natsname"
)

// Served is one name served on a NATS system, with the hosts serving it.
type Served struct {
	Name  string     `json:"name"`
	Hosts []HostInfo `json:"hosts"`
}

// HostInfo is one host of a served name.
type HostInfo struct {
	ID    string `json:"id"`    // unique per host process run
	Label string `json:"label"` // hostname:pid unless set with WithHostLabel
}

// discoverQuiet is how long Discover waits after the last answer.
const discoverQuiet = 300 * time.Millisecond

// maxDiscoverAnswers bounds the answers one Discover reads: a peer that
// keeps answering (hostile, or a very large system) cannot keep it
// waiting past that, nor grow its result.
const maxDiscoverAnswers = 16384

// Discover asks every NATS micro service on nc's system for its info
// (the $SRV.INFO subject) and returns the names snodo hosts serve under
// prefix ("" for the default, "snodo"), sorted, each with its hosts. It returns
// once no answer came for 300 ms, when ctx is done, or after 16384
// answers, with what it has. A host that answers twice is listed once.
// It fails, with nothing found, for a nil ctx or nc, a prefix that is
// no valid name (letters, digits, '-' and '_' only), or a NATS subscription or publish that fails.
func Discover(ctx context.Context, nc *nats.Conn, prefix string) ([]Served, error) {
	switch {
	case ctx == nil:
		return nil, errors.New("remote: Discover: nil context.Context; pass one that bounds the wait")
	case nc == nil:
		return nil, errors.New("remote: Discover: nil *nats.Conn; pass a connection from nats.Connect")
	}
	if prefix == "" {
		prefix = defaultPrefix
	}
	if err := natsname.Check("prefix", prefix); err != nil {
		return nil, err
	}
	inbox := nc.NewRespInbox()
	answers := make(chan *nats.Msg, 1024)
	sub, err := nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return nil, fmt.Errorf("remote: discover: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	subject, _ := micro.ControlSubject(micro.InfoVerb, "", "")
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		return nil, fmt.Errorf("remote: discover: %w", err)
	}
	// A user that may not publish on $SRV.> (or subscribe to its inbox)
	// would find nothing, and say so as if nothing were served.
	if err := nc.FlushWithContext(ctx); err != nil {
		return nil, fmt.Errorf("remote: discover: %w", err)
	}
	if err := nc.LastError(); err != nil {
		if _, subj, ok := denied(err); ok && (subj == subject || subj == inbox) {
			return nil, permissionError("remote: discover", err)
		}
	}
	byName := map[string]*Served{}
	type hostKey struct{ name, id, label string }
	seen := map[hostKey]bool{}
	quiet := time.NewTimer(discoverQuiet)
	defer quiet.Stop()
	for n := 0; ; n++ {
		if n == maxDiscoverAnswers {
			return sorted(byName), nil
		}
		select {
		case m := <-answers:
			quiet.Reset(discoverQuiet)
			var info micro.Info
			if json.Unmarshal(m.Data, &info) != nil || info.Metadata[metaServer] == "" || info.Metadata[metaPrefix] != prefix {
				continue // not a snodo host of this prefix
			}
			name := info.Metadata[metaServer]
			k := hostKey{name, info.Metadata[metaHost], info.Metadata[metaLabel]}
			if seen[k] {
				continue
			}
			seen[k] = true
			s := byName[name]
			if s == nil {
				s = &Served{Name: name}
				byName[name] = s
			}
			s.Hosts = append(s.Hosts, HostInfo{ID: info.Metadata[metaHost], Label: info.Metadata[metaLabel]})
		case <-quiet.C:
			return sorted(byName), nil
		case <-ctx.Done():
			return sorted(byName), nil
		}
	}
}

func sorted(byName map[string]*Served) []Served {
	out := make([]Served, 0, len(byName))
	for _, s := range byName {
		sort.Slice(s.Hosts, func(i, j int) bool { return s.Hosts[i].Label < s.Hosts[j].Label })
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
