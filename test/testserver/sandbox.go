package testserver

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// Tools that test a sandbox's limits (not listed; see doc.go). Each one
// that meets a limit inside the server answers with what it achieved and
// the first error, as a tool result, so the server stays usable.

type sandboxArgs struct {
	MB      int    `json:"mb"`
	Ms      int    `json:"ms"`
	N       int    `json:"n"`
	Path    string `json:"path"`
	Text    string `json:"text"`
	Address string `json:"address"`
}

// held keeps what alloc allocated, so that it stays resident.
var held struct {
	sync.Mutex
	blocks [][]byte
}

// sandboxTool runs the tool name, reporting whether it is one of these.
func (s *server) sandboxTool(req *request, p *callParams) (any, bool) {
	var a sandboxArgs
	if len(p.Arguments) > 0 {
		_ = json.Unmarshal(p.Arguments, &a)
	}
	switch p.Name {
	case "alloc":
		return alloc(a.MB), true
	case "spin":
		return spin(req, a.Ms), true
	case "fork":
		return forkN(a.N), true
	case "openfiles":
		return openN(a.N), true
	case "read":
		b, err := os.ReadFile(a.Path)
		if err != nil {
			return textResult(err.Error(), true), true
		}
		return textResult(string(b), false), true
	case "write":
		if err := os.WriteFile(a.Path, []byte(a.Text), 0o600); err != nil {
			return textResult(err.Error(), true), true
		}
		return textResult("wrote "+a.Path, false), true
	case "connect":
		c, err := net.DialTimeout("tcp", a.Address, 5*time.Second)
		if err != nil {
			return textResult(err.Error(), true), true
		}
		c.Close()
		return textResult("connected to "+a.Address, false), true
	}
	return nil, false
}

// alloc allocates mb MiB, touches every page and keeps it.
func alloc(mb int) any {
	for i := 0; i < mb; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		held.Lock()
		held.blocks = append(held.blocks, b)
		held.Unlock()
	}
	return textResult("allocated "+strconv.Itoa(mb)+" MiB", false)
}

// spin burns CPU on every core for ms (0: until the call is cancelled).
func spin(req *request, ms int) any {
	var deadline time.Time
	if ms > 0 {
		deadline = time.Now().Add(time.Duration(ms) * time.Millisecond)
	}
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for i := 0; ; i++ {
				x += i * i
				if i%1_000_000 == 0 && (req.ctx.Err() != nil || !deadline.IsZero() && time.Now().After(deadline)) {
					_ = x
					return
				}
			}
		}()
	}
	wg.Wait()
	return textResult("spun", false)
}

// forkN starts n "sleep 60" children at once, then kills and reaps them:
// "started K of N" and the first error.
func forkN(n int) any {
	var cmds []*exec.Cmd
	var first error
	for range n {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			first = err
			break
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
	return countResult("started", len(cmds), n, first)
}

// openN opens the null device n times at once, then closes them all.
func openN(n int) any {
	var files []*os.File
	var first error
	for range n {
		f, err := os.Open(os.DevNull)
		if err != nil {
			first = err
			break
		}
		files = append(files, f)
	}
	for _, f := range files {
		f.Close()
	}
	return countResult("opened", len(files), n, first)
}

func countResult(verb string, got, want int, err error) any {
	text := fmt.Sprintf("%s %d of %d", verb, got, want)
	if err != nil {
		return textResult(text+": "+err.Error(), true)
	}
	return textResult(text, false)
}
