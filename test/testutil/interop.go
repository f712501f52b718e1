package testutil

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// ClientReport is what the interop clients print on their last line, in
// front of server-everything: test/peers/ts-client/gateway-client.mjs
// (the TypeScript SDK's client) and test/peers/gosdk-client (the Go
// SDK's). The restart fields are the go-sdk client's -restart run.
type ClientReport struct {
	Errors   []string `json:"errors"` // what the SDK raised (TypeScript)
	Tools    []string `json:"tools"`
	Progress int      `json:"progress"`
	Late     int      `json:"late_progress"` // go-sdk: progress handled after its call returned
	Sampled  int      `json:"sampled"`
	Elicited int      `json:"elicited"`
	Sampling string   `json:"sampling"`
	Logs     int      `json:"logs"`
	Updates  int      `json:"updates"`

	InflightError           string  `json:"inflight_error"`
	RecoverySecs            float64 `json:"recovery_seconds"`
	Reconnects              int     `json:"reconnects"`
	ListChangedAfterRestart bool    `json:"list_changed_after_restart"`
}

// ReadClientReport decodes out, an interop client's report, and logs it.
func ReadClientReport(tb testing.TB, out []byte) ClientReport {
	tb.Helper()
	var r ClientReport
	if err := json.Unmarshal(out, &r); err != nil {
		tb.Fatalf("the interop client's report %q: %v", out, err)
	}
	tb.Logf("%s", out)
	return r
}

// Check asserts what every run of an interop client must see, through
// a gateway or a bridge: the progress tool's five updates, the client's
// own handlers answering sampling and elicitation ("sampling" in skip
// leaves them out), logs after logging/setLevel ("logs" in skip), and
// resource updates after resources/subscribe. who is the client's name
// in its sampling answer: "TypeScript" or "go-sdk".
func (r ClientReport) Check(tb testing.TB, who string, skip ...string) {
	tb.Helper()
	if len(r.Errors) > 0 {
		tb.Fatalf("the SDK raised errors (a late progress notification would be one): %q", r.Errors)
	}
	if !slices.Contains(r.Tools, "trigger-long-running-operation") {
		tb.Fatalf("tools/list lacks trigger-long-running-operation: %q", r.Tools)
	}
	// The go-sdk client runs notification handlers on a goroutine of
	// their own, so a progress handler may run after its call returned
	// though the notification came first on the wire (counted in Late;
	// the TypeScript client's runs, which have none, check the order).
	if r.Progress+r.Late != 5 {
		tb.Fatalf("%d progress updates (%d of them after the result), not the call's 5", r.Progress+r.Late, r.Late)
	}
	if !slices.Contains(skip, "sampling") {
		if r.Sampled != 1 || !strings.Contains(r.Sampling, "sampled by the "+who+" client") {
			tb.Fatalf("the client's own sampling handler answered %d times; the tool returned %s", r.Sampled, r.Sampling)
		}
		if r.Elicited != 1 {
			tb.Fatalf("the client's own elicitation handler answered %d times, not once", r.Elicited)
		}
	}
	if !slices.Contains(skip, "logs") && r.Logs == 0 {
		tb.Fatalf("no log message after logging/setLevel")
	}
	if r.Updates == 0 {
		tb.Fatalf("no resource update after resources/subscribe")
	}
}
