package snodo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestActorsDocSnippets checks that every Go block in docs/actors.md is
// an excerpt of a runnable example, so the guide's code compiles and
// runs: its lines, without indentation, appear in the same order and
// together in one of the example files.
func TestActorsDocSnippets(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "actors.md"))
	if err != nil {
		t.Fatal(err)
	}
	var sources [][]string
	for _, name := range []string{"example_actors_test.go", "supervisor/example_actors_test.go", "servers/example_router_test.go"} {
		src, err := os.ReadFile(filepath.FromSlash(name))
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, codeLines(string(src)))
	}
	blocks := goBlocks(string(doc))
	if len(blocks) == 0 {
		t.Fatal("no Go blocks found in docs/actors.md")
	}
	for i, block := range blocks {
		lines := codeLines(block)
		found := false
		for _, src := range sources {
			if contains(src, lines) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("Go block %d of docs/actors.md is not an excerpt of an example:\n%s", i+1, block)
		}
	}
}

// goBlocks are the bodies of the ```go fences in markdown.
func goBlocks(md string) []string {
	var blocks []string
	for {
		_, rest, ok := strings.Cut(md, "```go\n")
		if !ok {
			return blocks
		}
		body, after, _ := strings.Cut(rest, "```")
		blocks = append(blocks, body)
		md = after
	}
}

// codeLines are the non-empty lines of code, trimmed.
func codeLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// contains reports whether sub appears in lines, contiguous.
func contains(lines, sub []string) bool {
	for i := 0; i+len(sub) <= len(lines); i++ {
		match := true
		for j := range sub {
			if lines[i+j] != sub[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}
