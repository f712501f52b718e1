package main_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// serverRequest has the legacy test server send the CLI one request and
// returns the response the CLI sent back.
func serverRequest(t *testing.T, flags []string, method string) (result, json.RawMessage) {
	t.Helper()
	args := append(flags, "--json", "request", "test/serverRequest", `{"method":"`+method+`"}`)
	r := snodo(t, against(t, args, "-era", "legacy")...).want(t, 0)
	var v struct{ Responses []json.RawMessage }
	r.decode(t, &v)
	if len(v.Responses) != 1 {
		t.Fatalf("responses %s", r.stdout)
	}
	return r, v.Responses[0]
}

func TestRootsFromFlags(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	_, resp := serverRequest(t, []string{"--root", a, "--root", b}, "roots/list")
	var v struct {
		Result struct{ Roots []struct{ URI, Name string } }
	}
	_ = json.Unmarshal(resp, &v)
	if len(v.Result.Roots) != 2 || v.Result.Roots[0].URI != "file://"+a || v.Result.Roots[1].URI != "file://"+b {
		t.Fatalf("roots/list answered %s", resp)
	}
}

func TestSamplingDeclinedByDefault(t *testing.T) {
	r, resp := serverRequest(t, nil, "sampling/createMessage")
	if !strings.Contains(string(resp), `"code":-1`) || !strings.Contains(string(resp), "--sampling-reply") {
		t.Fatalf("sampling answered %s", resp)
	}
	if !strings.Contains(r.stderr, "declined the server's sampling/createMessage") {
		t.Errorf("stderr does not say sampling was declined:\n%s", r.stderr)
	}
}

func TestSamplingReply(t *testing.T) {
	_, resp := serverRequest(t, []string{"--sampling-reply", "forty-two"}, "sampling/createMessage")
	var v struct {
		Result struct {
			Role    string
			Content struct{ Text string }
		}
	}
	_ = json.Unmarshal(resp, &v)
	if v.Result.Role != "assistant" || v.Result.Content.Text != "forty-two" {
		t.Fatalf("sampling answered %s", resp)
	}
}

func TestElicitationDeclinedWhenNotInteractive(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			r := snodo(t, against(t, []string{"call", "ask"}, "-era", era)...).want(t, 1)
			if !strings.Contains(r.stderr, "stdin is not a terminal") || !strings.Contains(r.stderr, "no name given: decline") {
				t.Fatalf("stderr:\n%s", r.stderr)
			}
		})
	}
}

func TestListenCount(t *testing.T) {
	r := snodo(t, append([]string{"listen", "--tools", "--count", "1"}, demoServer("50ms")...)...).want(t, 0)
	if !strings.HasSuffix(r.stdout, "notifications/tools/list_changed\n") || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "listening for tools/list_changed") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

func TestListenJSON(t *testing.T) {
	r := snodo(t, append([]string{"--json", "listen", "--count", "1"}, demoServer("50ms")...)...).want(t, 0)
	var ev struct{ Method string }
	r.decode(t, &ev)
	if ev.Method != "notifications/tools/list_changed" {
		t.Fatalf("event %s", r.stdout)
	}
}

func TestListenFor(t *testing.T) {
	r := snodo(t, append([]string{"listen", "--tools", "--for", "200ms"}, demoServer("1h")...)...).want(t, 0)
	if r.stdout != "" {
		t.Fatalf("events where none were due:\n%s", r.stdout)
	}
}

// listen works on a legacy server too: snodo subscribes to the resource
// (resources/subscribe) and prints its updates. This server sends one as
// it takes the subscription.
func TestListenLegacyServer(t *testing.T) {
	r := snodo(t, against(t, []string{"--resource", "test://a", "listen", "--count", "1"}, "-era", "legacy", "-updated-on-subscribe")...).want(t, 0)
	if !strings.Contains(r.stdout, `notifications/resources/updated  {"uri":"test://a"}`) || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "listening for") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// A subscription the server acknowledged with none of the requested
// notifications can never deliver an event: snodo says so and fails
// instead of listening for ever. (The test server honours every filter
// member but promptsListChanged.)
func TestListenNothingAcknowledged(t *testing.T) {
	r := snodo(t, against(t, []string{"listen", "--prompts", "--for", "10s"})...).want(t, 1)
	r.oneErrorLine(t, "prompts/list_changed", "none", "snodo info")
	if r.stdout != "" {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}
