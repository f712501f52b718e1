package testutil

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
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
	require.NoError(tb, json.Unmarshal(out, &r), string(out))
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
	require.Empty(tb, r.Errors, "the SDK raised no error (a late progress notification would be one)")
	require.Contains(tb, r.Tools, "trigger-long-running-operation")
	// The go-sdk client runs notification handlers on a goroutine of
	// their own, so a progress handler may run after its call returned
	// though the notification came first on the wire (counted in Late;
	// the TypeScript client's runs, which have none, check the order).
	require.Equal(tb, 5, r.Progress+r.Late, "every progress update of the call")
	if !slices.Contains(skip, "sampling") {
		require.Equal(tb, 1, r.Sampled, "the client's own sampling handler answered")
		require.Contains(tb, r.Sampling, "sampled by the "+who+" client")
		require.Equal(tb, 1, r.Elicited, "the client's own elicitation handler answered")
	}
	if !slices.Contains(skip, "logs") {
		require.Positive(tb, r.Logs, "log messages after logging/setLevel")
	}
	require.Positive(tb, r.Updates, "resource updates after resources/subscribe")
}
