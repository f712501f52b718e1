package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/snodo/snodo"
	"github.com/snodo/snodo/internal/demoserver"
)

// indent is how far the demo indents what happens under each caption.
const indent = "   "

// demoName is the answer the demo gives when the server asks for a name.
const demoName = "Ada"

// tour prints the demo: numbered captions, indented results.
type tour struct {
	w    io.Writer
	step int
}

func (t *tour) caption(text string) {
	t.step++
	fmt.Fprintf(t.w, "\n%d. %s\n", t.step, text)
}

func (t *tour) say(format string, a ...any) { fmt.Fprintf(t.w, indent+format+"\n", a...) }

// runDemo starts the example server built into this binary and walks
// through the main features of snodo against it.
func runDemo(sio stdio) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	start := time.Now()
	t := &tour{w: sio.out}
	if err := t.run(ctx, sio); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(sio.err, "snodo demo: interrupted")
			return exitInterrupted
		}
		fmt.Fprintf(sio.err, "snodo demo: %s\n", oneLine(trim(err)))
		return exitFailure
	}
	fmt.Fprintf(sio.out, "\nDone in %.1fs. Now try your own server:  snodo tools -- SERVER_CMD [ARGS...]  or  snodo tools --url URL\n",
		time.Since(start).Seconds())
	return exitOK
}

func (t *tour) run(ctx context.Context, sio stdio) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the snodo binary to start the demo server: %w", err)
	}
	fmt.Fprintln(t.w, "snodo demo: an MCP client and the example server built into this binary")
	fmt.Fprintf(t.w, "(the server is internal/demoserver, started as `snodo %s`)\n", demoServerArg)

	t.caption("Connect. The client probes with server/discover; the server answers, so the era is modern.")
	c, err := snodo.Connect(ctx, self, []string{demoServerArg},
		snodo.WithServerRequestHandler(t.answer),
		snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{Form: true}}),
		snodo.WithTimeout(10*time.Second),
		snodo.WithShutdownGrace(shutdownGrace))
	if err != nil {
		return err
	}
	defer c.Close()
	printInfo(t.w, infoDoc{Era: string(c.Era()), ProtocolVersion: c.ProtocolVersion(),
		ServerInfo: c.ServerInfo(), Capabilities: c.Capabilities()}, indent)

	t.caption("List the tools (tools/list).")
	if err := t.listTools(ctx, c); err != nil {
		return err
	}

	t.caption("Call countdown. The server reports progress while it works.")
	bar := &progressBar{w: t.w, tty: sio.outTTY, fd: sio.outFd, prefix: indent, keep: true, every: true}
	res, err := c.CallTool(ctx, "countdown", map[string]int{"from": 5}, bar.options()...)
	bar.finish()
	if err != nil {
		return err
	}
	t.say("→ %s", resultText(res))

	t.caption("Call greet. The server needs input: it answers input_required, the client's\n" +
		indent + "handler answers the elicitation/create inside it, and the call is retried.")
	if res, err = c.CallTool(ctx, "greet", nil); err != nil {
		return err
	}
	t.say("→ %s", resultText(res))

	t.caption("Listen for tool changes (subscriptions/listen). A plugin loads and adds a tool.")
	if err := t.listen(ctx, c); err != nil {
		return err
	}

	t.caption("Close. The client closes the server's stdin; the server finishes and exits.")
	pid := c.ServerPID()
	_ = c.Close()
	select {
	case <-c.Done():
		t.say("server (pid %d) exited; nothing left running", pid)
	case <-time.After(shutdownWait):
		return fmt.Errorf("the demo server (pid %d) did not exit within %v of Close", pid, shutdownWait)
	}

	t.caption("Over Streamable HTTP. This process serves the same server on a local port;\n" +
		indent + "ConnectHTTP gives the same client: each request is a POST of its own.")
	return t.overHTTP(ctx, sio)
}

// overHTTP serves the demo server over HTTP on a local port, in this
// process, and calls it through ConnectHTTP.
func (t *tour) overHTTP(ctx context.Context, sio stdio) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("cannot listen on a local port for the HTTP step: %w", err)
	}
	handler := demoserver.NewHTTP(demoserver.Options{})
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(l)
	}()
	defer func() {
		handler.Close()
		_ = srv.Close()
		<-served
	}()
	url := "http://" + l.Addr().String() + "/mcp"
	c, err := snodo.ConnectHTTP(ctx, url,
		snodo.WithServerRequestHandler(t.answer),
		snodo.WithClientCapabilities(snodo.ClientCapabilities{Elicitation: &snodo.ElicitationCapability{Form: true}}),
		snodo.WithTimeout(10*time.Second))
	if err != nil {
		return err
	}
	defer c.Close()
	t.say("%s: %s, protocol %s", url, c.Era(), c.ProtocolVersion())
	bar := &progressBar{w: t.w, tty: sio.outTTY, fd: sio.outFd, prefix: indent, keep: true, every: true}
	res, err := c.CallTool(ctx, "countdown", map[string]int{"from": 3}, bar.options()...)
	bar.finish()
	if err != nil {
		return err
	}
	t.say("→ %s (the progress came on the POST's SSE stream, before the answer)", resultText(res))
	if res, err = c.CallTool(ctx, "greet", nil); err != nil {
		return err
	}
	t.say("→ %s", resultText(res))
	_ = c.Close()
	select {
	case <-c.Done():
		t.say("closed; no connection left open")
	case <-time.After(shutdownWait):
		return fmt.Errorf("the HTTP client did not end within %v of Close", shutdownWait)
	}
	return nil
}

// answer is the demo's server-request handler: it answers the server's
// question for the user, where `snodo call` would prompt on the terminal.
func (t *tour) answer(_ context.Context, req *snodo.ServerRequest) (any, error) {
	if req.Method != "elicitation/create" {
		return nil, &snodo.Error{Code: snodo.CodeMethodNotFound, Message: "the demo does not answer " + req.Method}
	}
	var p struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(req.Params, &p)
	t.say("the server asks: %q", p.Message)
	t.say("the handler answers: %q (snodo call would prompt you)", demoName)
	return map[string]any{"action": "accept", "content": map[string]string{"name": demoName}}, nil
}

func (t *tour) listTools(ctx context.Context, c *snodo.Client) error {
	tools, err := c.ListTools(ctx)
	if err != nil {
		return err
	}
	printTools(t.w, tools, indent, 0)
	return nil
}

// listen opens a subscription, waits for the tool list to change and
// lists the tools again.
func (t *tour) listen(ctx context.Context, c *snodo.Client) error {
	sub, err := c.Listen(ctx, snodo.Filter{ToolsListChanged: true})
	if err != nil {
		return err
	}
	defer sub.Close()
	t.say("acknowledged: %s", describeFilter(sub.Acknowledged()))
	select {
	case ev, ok := <-sub.Events():
		if !ok {
			return fmt.Errorf("the subscription ended before any event: %v", sub.Err())
		}
		t.say("event: %s", ev.Method)
	case <-time.After(5 * time.Second):
		return fmt.Errorf("no tools/list_changed event within 5 s")
	case <-ctx.Done():
		return ctx.Err()
	}
	t.say("the tools now:")
	return t.listTools(ctx, c)
}
