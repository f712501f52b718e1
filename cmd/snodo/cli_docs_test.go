package main_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// flagName is a long flag as the usage and the README write it.
var flagName = regexp.MustCompile(`--[a-z][a-z-]*[a-z]`)

// TestDocsCLIFlags pins docs/cli.md, the command-line reference, to the
// CLI: every flag it names exists, and every flag of snodo -h is in it.
// (README.md's short command-line section names flags of docs/cli.md.)
func TestDocsCLIFlags(t *testing.T) {
	ref, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(ref)
	documented := slices.Compact(slices.Sorted(slices.Values(flagName.FindAllString(section, -1))))

	help := snodo(t, "help").want(t, 0).stdout
	_, flags, ok := strings.Cut(help, "\nFlags:\n")
	if !ok {
		t.Fatalf("snodo help has no Flags: section:\n%s", help)
	}
	var real []string
	for _, line := range strings.Split(flags, "\n") {
		if strings.HasPrefix(line, "  --") {
			real = append(real, flagName.FindString(line))
		}
	}
	if len(real) == 0 {
		t.Fatalf("no flags found in snodo help:\n%s", help)
	}
	for _, f := range documented {
		if !slices.Contains(real, f) {
			t.Errorf("docs/cli.md names %s, which snodo does not have", f)
		}
	}
	for _, f := range real {
		if !slices.Contains(documented, f) {
			t.Errorf("snodo has %s, which docs/cli.md does not name", f)
		}
	}
}
