package server

import (
	"bytes"
	"io"

	"github.com/snodo/snodo/bench/internal/wire"
)

// ServeFast is the server that is never the bottleneck: it answers from
// canned lines, splicing in the request's id. It finds each line's
// top-level id and method and decodes nothing else; it reads as much as
// the pipe holds at once and answers everything it read in one write.
// The era is the handshake's: server/discover makes the tools/call and
// tools/list answers carry resultType "complete" and, as spec-following
// modern servers put in every result, the server's identity in _meta;
// initialize leaves both out.
//
// It answers server/discover, initialize, ping, tools/list, and tools/call
// as the echo tool whatever the tool and its arguments ("hello"); other
// requests get method not found; notifications and responses are ignored.
// It serves the calls measurement only (no ask, big or emit).
func ServeFast(r io.Reader, w io.Writer) error { return serveFast(r, w, &fast{}) }

// ServeFastWithoutMeta is ServeFast configured, as the spec lets a server
// be, not to identify itself in results: no result carries _meta, in
// either era. Its modern tools/call answer is what the fast server sent
// before its results were spec-shaped, so that the cost of a result's
// _meta to a client shows beside ServeFast's in the same run.
func ServeFastWithoutMeta(r io.Reader, w io.Writer) error {
	return serveFast(r, w, &fast{noMeta: true})
}

func serveFast(r io.Reader, w io.Writer, f *fast) error {
	buf := make([]byte, 256<<10)
	start, end := 0, 0
	for {
		n, err := r.Read(buf[end:])
		end += n
		for {
			i := bytes.IndexByte(buf[start:end], '\n')
			if i < 0 {
				break
			}
			f.handle(buf[start : start+i])
			start += i + 1
		}
		if len(f.out) > 0 {
			if _, werr := w.Write(f.out); werr != nil {
				return werr
			}
			f.out = f.out[:0]
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		// Keep the partial line at the front; grow for a long one.
		end = copy(buf, buf[start:end])
		start = 0
		if end == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
}

type fast struct {
	out    []byte
	modern bool
	noMeta bool // ServeFastWithoutMeta: no _meta in any result
}

// Canned answers: the id goes between head and the answer's rest.
const (
	fastHead         = `{"jsonrpc":"2.0","id":`
	fastEchoModern   = `,"result":{"resultType":"complete",` + echoContent + `,` + metaMember + "}}\n"
	fastEchoBare     = `,"result":{"resultType":"complete",` + echoContent + "}}\n"
	fastEchoLegacy   = `,"result":{` + echoContent + "}}\n"
	fastEmpty        = `,"result":{}}` + "\n"
	fastNotFound     = `,"error":{"code":-32601,"message":"method not found (fast bench server)"}}` + "\n"
	fastDiscoverRest = `,"result":{"resultType":"complete","supportedVersions":["` + modernVersion + `"],"capabilities":` + capabilitiesObj +
		`,"serverInfo":` + serverInfoJSON + `,` + metaMember + "}}\n"
	fastDiscoverBare = `,"result":{"resultType":"complete","supportedVersions":["` + modernVersion + `"],"capabilities":` + capabilitiesObj +
		`,"serverInfo":` + serverInfoJSON + "}}\n"
	fastInitRest = `,"result":{"protocolVersion":"` + legacyVersion + `","capabilities":` + capabilitiesObj + `,"serverInfo":` + serverInfoJSON + "}}\n"
	fastTools    = `"tools":[{"name":"echo","inputSchema":{"type":"object"}}]`
	// fastToolsModern and fastToolsBare are the modern tools/list answer's
	// rest, with _meta and (ServeFastWithoutMeta) without.
	fastToolsModern = `,"result":{"resultType":"complete",` + fastTools + `,` + metaMember + "}}\n"
	fastToolsBare   = `,"result":{"resultType":"complete",` + fastTools + "}}\n"
)

func (f *fast) handle(line []byte) {
	m := wire.Top(line)
	id, method := m.ID, m.Method
	if id == nil || method == nil {
		return // a notification, a response, or not a request at all
	}
	var rest string
	switch string(method) {
	case "tools/call":
		switch {
		case !f.modern:
			rest = fastEchoLegacy
		case f.noMeta:
			rest = fastEchoBare
		default:
			rest = fastEchoModern
		}
	case "server/discover":
		if f.modern, rest = true, fastDiscoverRest; f.noMeta {
			rest = fastDiscoverBare
		}
	case "initialize":
		f.modern, rest = false, fastInitRest
	case "ping":
		rest = fastEmpty
	case "tools/list":
		switch {
		case !f.modern:
			rest = `,"result":{` + fastTools + "}}\n"
		case f.noMeta:
			rest = fastToolsBare
		default:
			rest = fastToolsModern
		}
	default:
		rest = fastNotFound
	}
	f.out = append(f.out, fastHead...)
	f.out = append(f.out, id...)
	f.out = append(f.out, rest...)
}
