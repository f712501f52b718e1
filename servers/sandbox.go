package servers

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/snodo/snodo"
)

// sandbox reads an entry's "sandbox" object (snodo.WithSandbox):
//
//	"sandbox": {"memory": "256MiB", "cpuTime": "1m", "maxProcesses": 32,
//	            "maxOpenFiles": 256, "readOnly": ["/usr"], "readWrite": ["/srv/x"],
//	            "noNetwork": true}
//
// Each key is optional; an object with none sets no sandbox.
func (p *parser) sandbox(s *entry, m member) error {
	fields, err := members(m.value)
	if err != nil {
		return p.fail(s.Name, "sandbox", "want an object: %w", err)
	}
	var sb snodo.Sandbox
	for _, f := range fields {
		key := "sandbox." + f.key
		f := member{key: key, value: f.value}
		switch key {
		case "sandbox.memory":
			sb.MemoryBytes, err = p.size(s.Name, f)
		case "sandbox.cpuTime":
			err = p.duration(s.Name, f, &sb.CPUTime, false)
		case "sandbox.maxProcesses":
			err = p.count(s.Name, f, &sb.MaxProcesses)
		case "sandbox.maxOpenFiles":
			err = p.count(s.Name, f, &sb.MaxOpenFiles)
		case "sandbox.readOnly":
			err = p.paths(s.Name, f, &sb.ReadOnly)
		case "sandbox.readWrite":
			err = p.paths(s.Name, f, &sb.ReadWrite)
		case "sandbox.noNetwork":
			err = p.decode(s.Name, f, &sb.NoNetwork, "true or false")
		default:
			p.warn(s.Name, key, "unknown key, ignored")
		}
		if err != nil {
			return err
		}
	}
	if sb.MemoryBytes != 0 || sb.CPUTime != 0 || sb.MaxProcesses != 0 || sb.MaxOpenFiles != 0 ||
		len(sb.ReadOnly) > 0 || len(sb.ReadWrite) > 0 || sb.NoNetwork {
		s.Sandbox = &sb
	}
	return nil
}

// count reads a whole number of at least 1.
func (p *parser) count(server string, m member, n *int) error {
	if err := p.decode(server, m, n, "a whole number"); err != nil {
		return err
	}
	if *n < 1 {
		return p.fail(server, m.key, "%d must be at least 1 (leave the key out for no limit)", *n)
	}
	return nil
}

// paths reads an array of absolute paths.
func (p *parser) paths(server string, m member, out *[]string) error {
	if err := p.decode(server, m, out, "an array of strings"); err != nil {
		return err
	}
	for _, path := range *out {
		if path == "" || !filepath.IsAbs(path) {
			return p.fail(server, m.key, "%q is not an absolute path: the paths a server may open are given whole", path)
		}
	}
	return nil
}

// sizeUnits are the units "memory" takes, longest first.
var sizeUnits = []struct {
	suffix string
	bytes  int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// size reads a memory size: a whole number of bytes, or a string such as
// "256MiB", "1.5GiB" or "500MB".
func (p *parser) size(server string, m member) (int64, error) {
	var n int64
	if json.Unmarshal(m.value, &n) == nil {
		if n < 1 {
			return 0, p.fail(server, m.key, "%d must be at least 1 byte (leave the key out for no limit)", n)
		}
		return n, nil
	}
	var text string
	if err := p.decode(server, m, &text, `a size such as "256MiB" (or a number of bytes)`); err != nil {
		return 0, err
	}
	t := strings.TrimSpace(text)
	for _, u := range sizeUnits {
		num, ok := strings.CutSuffix(t, u.suffix)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil || v <= 0 || v*float64(u.bytes) > 1<<62 {
			break
		}
		return int64(v * float64(u.bytes)), nil
	}
	return 0, p.fail(server, m.key, "%q is not a size (write it like \"256MiB\", \"2GiB\" or \"500MB\")", text)
}
