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
