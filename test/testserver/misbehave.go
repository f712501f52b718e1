package testserver

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Scripted misbehaviour: test/ methods that break the protocol or the process.

var signalsByName = map[string]syscall.Signal{
	"SIGKILL": syscall.SIGKILL,
	"SIGSEGV": syscall.SIGSEGV,
	"SIGTERM": syscall.SIGTERM,
	"SIGABRT": syscall.SIGABRT,
	"SIGINT":  syscall.SIGINT,
}

func (s *server) crash(req *request) (any, *rpcError) {
	p := struct {
		Code        *int   `json:"code"`
		Signal      string `json:"signal"`
		Stderr      string `json:"stderr"`
		StderrBytes []byte `json:"stderrBytes"` // base64: any bytes, invalid UTF-8 too
	}{}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	if p.Stderr != "" {
		s.stderrf("%s\n", p.Stderr)
	}
	if len(p.StderrBytes) > 0 {
		s.stderrf("%s\n", p.StderrBytes)
	}
	if p.Signal != "" {
		sig, ok := signalsByName[p.Signal]
		if !ok {
			return nil, errInvalidParams("unknown signal " + p.Signal)
		}
		dieBySignal(sig)
	}
	code := 1
	if p.Code != nil {
		code = *p.Code
	}
	s.exit(code)
	return noAnswer, nil
}

func (s *server) closeStdoutMethod(*request) (any, *rpcError) {
	s.closeStdout()
	return noAnswer, nil
}

// overlongChunk is the padding written per write call by test/overlong.
var overlongChunk = bytes.Repeat([]byte("x"), 64<<10)

func (s *server) overlong(req *request) (any, *rpcError) {
	var p struct {
		Bytes int64 `json:"bytes"`
		CRLF  bool  `json:"crlf"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	prefix := append(append([]byte(`{"jsonrpc":"2.0","id":`), req.id...), `,"result":"`...)
	suffix := []byte(`"}`)
	pad := p.Bytes - int64(len(prefix)) - int64(len(suffix))
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.writeLocked(prefix)
	for pad > 0 {
		n := min(pad, int64(len(overlongChunk)))
		s.writeLocked(overlongChunk[:n])
		pad -= n
	}
	s.writeLocked(suffix)
	if p.CRLF {
		s.writeLocked([]byte("\r\n"))
	} else {
		s.writeLocked([]byte("\n"))
	}
	s.flushLocked()
	return noAnswer, nil
}

// garbageLines are written by test/garbage before the real answer.
var garbageLines = [][]byte{
	[]byte(`not json`),
	[]byte(`[1,2,3]`),
	[]byte(`"a string"`),
	[]byte(`{"jsonrpc":"2.0","id":999999,"result":{}}`),
	[]byte(`{"jsonrpc":"2.0","result":{}}`),
	[]byte("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"\xff\xfe\"}}"),
	[]byte(`{}`),
	[]byte(``),
	[]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`),
}

func (s *server) garbage(*request) (any, *rpcError) {
	for _, l := range garbageLines {
		s.writeLine(l)
	}
	return obj{"ok": true}, nil
}

// junk writes params.line count times, as fast as it can, then answers:
// a flood of lines the client must ignore without logging each one.
func (s *server) junk(req *request) (any, *rpcError) {
	p := struct {
		Count int    `json:"count"`
		Line  string `json:"line"`
	}{Count: 1, Line: "junk"}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	s.wmu.Lock()
	for range p.Count {
		s.writeLocked([]byte(p.Line + "\n"))
	}
	s.flushLocked()
	s.wmu.Unlock()
	return obj{"sent": p.Count}, nil
}

func (s *server) split(req *request) (any, *rpcError) {
	p := struct {
		Parts   int `json:"parts"`
		DelayMs int `json:"delayMs"`
	}{Parts: 2}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	line := append(responseLine(req.id, []byte(`{"ok":true}`)), '\n')
	parts := max(1, min(p.Parts, len(line)))
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for i := range parts {
		if i > 0 {
			time.Sleep(time.Duration(p.DelayMs) * time.Millisecond)
		}
		s.writeLocked(line[i*len(line)/parts : (i+1)*len(line)/parts])
		s.flushLocked()
	}
	return noAnswer, nil
}

func (s *server) duplicate(req *request) (any, *rpcError) {
	one := responseLine(req.id, []byte(`{"n":1}`))
	s.writeLine(one)
	s.writeLine(one)
	s.writeLine(responseLine(req.id, []byte(`{"n":2}`)))
	return noAnswer, nil
}

func (s *server) stderrMethod(req *request) (any, *rpcError) {
	var p struct {
		Lines        int `json:"lines"`
		BytesPerLine int `json:"bytesPerLine"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	for i := 1; i <= p.Lines; i++ {
		line := []byte("stderr " + strconv.Itoa(i) + " ")
		for len(line) < p.BytesPerLine {
			line = append(line, 'e')
		}
		line = append(line[:p.BytesPerLine], '\n')
		s.emu.Lock()
		_, _ = s.stderr.Write(line)
		s.emu.Unlock()
	}
	return obj{"lines": p.Lines}, nil
}

// rawAnswer writes params.line as the answer, with every "$ID" replaced by
// the request's id: answers spelled in ways a client must still read
// (escaped member names) or must survive.
func (s *server) rawAnswer(req *request) (any, *rpcError) {
	var p struct {
		Line string `json:"line"`
	}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	s.writeLine(bytes.ReplaceAll([]byte(p.Line), []byte("$ID"), req.id))
	return noAnswer, nil
}

// orphanExit leaves a grandchild holding the server's stdout and stderr
// and exits: the client must see the exit without waiting for EOF.
func (s *server) orphanExit(req *request) (any, *rpcError) {
	p := struct {
		Code int `json:"code"`
	}{Code: 3}
	if e := unmarshalParams(req, &p); e != nil {
		return nil, e
	}
	cmd := exec.Command("sleep", "3600")
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	if f, ok := s.stdout.(*os.File); ok {
		cmd.Stdout = f
	}
	if f, ok := s.stderr.(*os.File); ok {
		cmd.Stderr = f
	}
	if err := cmd.Start(); err != nil {
		return nil, errorf(-32603, "grandchild: "+err.Error())
	}
	s.stderrf("grandchild-pid=%d\n", cmd.Process.Pid)
	s.exit(p.Code)
	return noAnswer, nil
}

// floodRequests runs on the reading goroutine: it sends count requests to
// the client, reading nothing meanwhile (the client's answers pile up in
// its pipe and its queue), then reads nothing for pauseMs more, and
// carries on. The request itself is never answered.
func (s *server) floodRequests(req *request) {
	p := struct {
		Count   int    `json:"count"`
		Method  string `json:"method"`
		PauseMs int    `json:"pauseMs"`
	}{Method: "ping", PauseMs: 3000}
	if e := unmarshalParams(req, &p); e != nil {
		s.reply(req, nil, e)
		return
	}
	for range p.Count {
		s.writeLine(requestLine(s.peer.newID(), p.Method, nil))
	}
	time.Sleep(time.Duration(p.PauseMs) * time.Millisecond)
}
