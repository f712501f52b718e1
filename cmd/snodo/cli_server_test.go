package main_test

import (
	"strings"
	"testing"
)

// Server log messages go to stderr (level, logger, data) unless --quiet.
func TestServerLogMessagesOnStderr(t *testing.T) {
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			args := []string{"request", "test/notify",
				`{"method":"notifications/message","params":{"level":"warning","logger":"db","data":"disk almost full"}}`}
			r := snodo(t, against(t, args, "-era", era)...).want(t, 0)
			if !strings.Contains(r.stderr, "snodo: server log warning [db]: disk almost full\n") {
				t.Fatalf("stderr:\n%s", r.stderr)
			}
			r = snodo(t, against(t, append([]string{"--quiet"}, args...), "-era", era)...).want(t, 0)
			if strings.Contains(r.stderr, "disk almost full") {
				t.Fatalf("--quiet printed the log message:\n%s", r.stderr)
			}
		})
	}
}

func TestEraFlag(t *testing.T) {
	r := snodo(t, against(t, []string{"--era", "legacy", "--json", "info"})...).want(t, 0)
	var v struct{ Era string }
	r.decode(t, &v)
	if v.Era != "legacy" {
		t.Fatalf("--era legacy against a dual-era server: era %q", v.Era)
	}
	r = snodo(t, against(t, []string{"--era", "modern", "info"}, "-era", "legacy")...).want(t, 1)
	r.oneErrorLine(t, "not a modern MCP server")
	r = snodo(t, against(t, []string{"--era", "ancient", "info"})...).want(t, 2)
	if !strings.Contains(r.stderr, "give modern or legacy") {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
}

func TestMaxInputRoundsFlag(t *testing.T) {
	root := t.TempDir()
	args := []string{"--root", root, "call", "input", `{"rounds":3}`}
	snodo(t, against(t, append([]string{"--max-input-rounds", "3"}, args...), "-era", "modern")...).want(t, 0)
	r := snodo(t, against(t, append([]string{"--max-input-rounds", "2"}, args...), "-era", "modern")...).want(t, 1)
	r.oneErrorLine(t, "still needed input after 2 rounds", "--max-input-rounds")
	if strings.Contains(r.stderr, "WithMaxInputRounds") {
		t.Errorf("the CLI user is pointed at a library option: %s", r.stderr)
	}
}

// Without --root, roots/list is a capability snodo did not declare: it
// says so instead of answering an empty list.
func TestRootsWithoutRootFlag(t *testing.T) {
	r := snodo(t, against(t, []string{"call", "input"}, "-era", "modern")...).want(t, 1)
	if !strings.Contains(r.stderr, "snodo cannot answer the server's request") || !strings.Contains(r.stderr, "--root DIR") {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr, "the server answered") {
		t.Errorf("snodo's refusal reported as the server's: %s", r.stderr)
	}
	r = snodo(t, against(t, []string{"call", "input"}, "-era", "legacy")...).want(t, 1)
	if !strings.Contains(r.stderr, "roots/list failed: method not found: roots/list") {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
	root := t.TempDir()
	r = snodo(t, against(t, []string{"--root", root, "call", "input"}, "-era", "modern")...).want(t, 0)
	if r.stdout != "file://"+root+"\n" {
		t.Fatalf("stdout %q", r.stdout)
	}
}

// snodo's own refusal of a sampling request is reported as snodo's.
func TestSamplingDeclinedIsSnodos(t *testing.T) {
	args := []string{"call", "input", `{"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"2+2?"}}],"maxTokens":5}}`}
	r := snodo(t, against(t, args, "-era", "modern")...).want(t, 1)
	if !strings.Contains(r.stderr, "snodo declined the server's request: sampling declined") || strings.Contains(r.stderr, "the server answered") {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
	r = snodo(t, against(t, append([]string{"--sampling-reply", "four"}, args...), "-era", "modern")...).want(t, 0)
	if !strings.Contains(r.stdout, `"text":"four"`) {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
}

// Text that ends in a newline is printed as it is, without a blank line.
func TestCallTextEndingInNewline(t *testing.T) {
	r := snodo(t, against(t, []string{"call", "echo", `{"message":"hi\n"}`})...).want(t, 0)
	if r.stdout != "hi\n" {
		t.Fatalf("stdout %q", r.stdout)
	}
}

// What a server says reaches the terminal without its control characters:
// an escape sequence in a log message, its logger or a progress message
// (which could recolour, retitle or rewrite the user's terminal) is shown
// as \x1b and the like, never written raw.
func TestServerTextCannotDriveTheTerminal(t *testing.T) {
	for name, args := range map[string][]string{
		"log message": {"request", "test/notify",
			`{"method":"notifications/message","params":{"level":"warning","logger":"db\u001b[2K","data":"\u001b[31mred\u001b[0m \u009b2J"}}`},
		"progress message": {"request", "test/progress", `{"count":1,"message":"\u001b]0;title\u0007done"}`},
	} {
		t.Run(name, func(t *testing.T) {
			r := snodo(t, against(t, args)...).want(t, 0)
			if strings.ContainsAny(r.stderr, "\x1b\x07\u009b") {
				t.Fatalf("control characters reached stderr: %q", r.stderr)
			}
			if !strings.Contains(r.stderr, `\x1b`) {
				t.Fatalf("the escape is not shown: %q", r.stderr)
			}
		})
	}
}

// --verbose copies the wire to stderr without the control characters a
// line may carry (JSON allows C1 codes such as U+009B raw in its strings).
func TestVerboseWireCannotDriveTheTerminal(t *testing.T) {
	args := []string{"--verbose", "request", "test/rawAnswer", `{"line":"{\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"x\":\"\u009b2J\u007f\"}}"}`}
	r := snodo(t, against(t, args)...).want(t, 0)
	if strings.ContainsAny(r.stderr, "\u009b\u007f") {
		t.Fatalf("control characters reached stderr: %q", r.stderr)
	}
	if !strings.Contains(r.stderr, `\x9b2J\x7f`) {
		t.Fatalf("the received line is not shown: %q", r.stderr)
	}
}

// --timeout bounds the server/discover probe too when it is the shorter:
// a server silent on the probe cost the probe's own 10 s first, and the
// error then said "no answer within" the --timeout the run had long
// overrun. The error names the flag to raise.
func TestTimeoutBoundsTheProbe(t *testing.T) {
	r := snodo(t, against(t, []string{"--timeout", "500ms", "info"}, "-era", "modern", "-silent-discover")...).want(t, 1)
	r.oneErrorLine(t, "server/discover got no answer within 500ms", "--timeout")
	if strings.Contains(r.stderr, "WithProbeTimeout") {
		t.Errorf("a library option named to a command-line user:\n%s", r.stderr)
	}
}
