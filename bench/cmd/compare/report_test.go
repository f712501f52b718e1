package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotesSection: every *.md of the notes directory ends the report,
// verbatim and sorted by name, and -notes-only replaces just that tail.
func TestNotesSection(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("remote.md", "## Remote\n\n| a | b |\n")
	write("otel.md", "## OTel\n\nno newline at the end")
	write("skip.txt", "not markdown")
	got := string(notesSection(dir))
	want := notesHeading + "\n" +
		"<!-- bench/notes/otel.md -->\n\n## OTel\n\nno newline at the end\n\n" +
		"<!-- bench/notes/remote.md -->\n\n## Remote\n\n| a | b |\n\n"
	if got != want {
		t.Fatalf("notes section:\n%s\nwant:\n%s", got, want)
	}
	report := "# Report\n\ntables\n\n" + got
	write("otel.md", "## OTel\n\nnew figures\n")
	refreshed := string(refreshNotes([]byte(report), dir))
	if !strings.HasPrefix(refreshed, "# Report\n\ntables\n\n"+notesHeading) || !strings.Contains(refreshed, "new figures") ||
		strings.Contains(refreshed, "no newline at the end") || strings.Count(refreshed, notesHeading) != 1 {
		t.Fatalf("refreshed report:\n%s", refreshed)
	}
	if len(notesSection(t.TempDir())) != 0 {
		t.Fatal("an empty notes directory added a section")
	}
}

// TestMetaCost: the _meta table puts each client's typed calls with and
// without _meta side by side and pairs them run by run (ratio for calls/s,
// difference for the rest); a client without figures gets n/a with why.
func TestMetaCost(t *testing.T) {
	run := func(calls, allocs float64) map[string]float64 {
		return map[string]float64{"calls1": calls, "calls64": calls, "cpu1_us": 10, "cpu64_us": 5, "bytes": 400, "allocs": allocs}
	}
	r := &results{runs: map[key][]map[string]float64{
		{mCallsFast, "snodo", "modern"}:   {run(90, 3), run(80, 3.5)},
		{mCallsNoMeta, "snodo", "modern"}: {run(100, 3.001), run(100, 3)},
	}, errs: map[key]string{{mCallsNoMeta, "mcp-go", "modern"}: "n/a: no such client"}}
	notes := &footnotes{}
	got := string(renderMetaCost(settings{clients: []string{"snodo", "mcp-go"}}, r, notes))
	for _, want := range []string{
		"| snodo | with `_meta` (spec-shaped) | 85.0 (80.0–90.0) | 85.0 (80.0–90.0) | 10.0 | 5.00 | 400 | 3.25 (3.00–3.50) |",
		"| snodo | without `_meta` | 100 | 100 | 10.0 | 5.00 | 400 | 3.00 |",
		"| snodo | `_meta` costs | 0.85× (0.80×–0.90×) | 0.85× (0.80×–0.90×) | +0.00 | +0.00 | +0.00 | +0.25 (+0.00–+0.50) |",
		"| mcp-go | `_meta` costs | n/a [1] | n/a [1] |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if len(notes.texts) != 1 || notes.texts[0] != "no such client" {
		t.Errorf("footnotes %q", notes.texts)
	}
	if renderMetaCost(settings{only: []string{mRemote}}, r, notes) != nil {
		t.Error("a remote-only run rendered the _meta table")
	}
}
