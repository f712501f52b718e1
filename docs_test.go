package snodo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsActorsSnippets checks that every Go block in docs/actors.md is
// an excerpt of a runnable example, so the guide's code compiles and
// runs: its lines, without indentation, appear in the same order and
// together in one of the example files.
func TestDocsActorsSnippets(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "actors.md"))
	if err != nil {
		t.Fatal(err)
	}
	var sources [][]string
	for _, name := range []string{"example_actors_test.go", "supervisor/example_actors_test.go", "servers/example_router_test.go", "servers/gateway_test.go"} {
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

// TestDocsREADMESnippets checks that every Go block of README.md is an
// excerpt of example_readme_test.go, whose examples compile, so the
// README's code stays true to the API; and that README.md stays short.
func TestDocsREADMESnippets(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 150 {
		t.Errorf("README.md has %d lines; keep it to 150 (what snodo is, go get, the examples, the two commands, links) and put the rest in docs/", n)
	}
	lines := codeLines(string(src))
	blocks := goBlocks(string(readme))
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d Go blocks, want the stdio and the HTTP examples at least", len(blocks))
	}
	for i, block := range blocks {
		if !contains(lines, codeLines(block)) {
			t.Errorf("Go block %d of README.md is not an excerpt of example_readme_test.go:\n%s", i+1, block)
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

// TestDocsCiteRealTests checks that every test, fuzz target and example
// the documentation names (docs/*.md, README.md) is a function of some
// _test.go file in the repository, so no doc points to a test that was
// renamed or removed.
func TestDocsCiteRealTests(t *testing.T) {
	cited := regexp.MustCompile(`\b(?:Test|Fuzz|Example)[A-Z][A-Za-z0-9_]*`)
	defined := map[string]bool{}
	def := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Example)[A-Za-z0-9_]*)\(`)
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range def.FindAllStringSubmatch(string(src), -1) {
				defined[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docFiles(t) {
		md, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range cited.FindAllString(string(md), -1) {
			if !defined[name] {
				t.Errorf("%s names %s, which no _test.go file defines", doc, name)
			}
		}
	}
}

// TestDocsCitePathsThatExist checks that every repository path the
// documentation writes in backquotes (`internal/engine/pending.go`,
// `test/peers/install.sh`), and every package directory below a
// directory of the module (`internal/natsembed`, `remote/…`; not below
// test/, whose name the test server's methods share), exists.
func TestDocsCitePathsThatExist(t *testing.T) {
	cited := regexp.MustCompile("`((?:[a-z0-9_.-]+/)+[a-z0-9_.-]+\\.(?:go|md|sh|json|mjs))`")
	dirs := regexp.MustCompile("`((?:[a-z0-9_]+/)+[a-z0-9_]+)/?`")
	for _, doc := range docFiles(t) {
		md, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range dirs.FindAllStringSubmatch(string(md), -1) {
			top, _, _ := strings.Cut(m[1], "/")
			if fi, err := os.Stat(top); err != nil || !fi.IsDir() || top == "test" {
				// Not below a directory of ours (application/json,
				// tools/call), or a method of the test server
				// (test/crash), which shares test/'s name.
				continue
			}
			if fi, err := os.Stat(filepath.FromSlash(m[1])); err != nil || !fi.IsDir() {
				t.Errorf("%s names the directory %s, which does not exist", doc, m[1])
			}
		}
		for _, m := range cited.FindAllStringSubmatch(string(md), -1) {
			if first, _, _ := strings.Cut(m[1], "/"); strings.Contains(first, ".") {
				continue // a module path (github.com/…), not a file of ours
			}
			if _, err := os.Stat(filepath.FromSlash(m[1])); err != nil {
				t.Errorf("%s names %s, which does not exist", doc, m[1])
			}
		}
	}
}

// docFiles are README.md and every file of docs/.
func docFiles(t *testing.T) []string {
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs found: %v", err)
	}
	return append(docs, "README.md")
}

// TestDocsREADMEListsEveryDoc checks that README.md's Documentation list
// links every file of docs/, and nothing that is not there.
func TestDocsREADMEListsEveryDoc(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(readme), "\n## Documentation\n")
	if !ok {
		t.Fatal(`README.md has no "## Documentation" section`)
	}
	list, _, _ = strings.Cut(list, "\n## ")
	linked := map[string]bool{}
	for _, m := range regexp.MustCompile(`\]\((docs/[^)]+\.md)\)`).FindAllStringSubmatch(list, -1) {
		linked[m[1]] = true
	}
	docs, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if d = filepath.ToSlash(d); !linked[d] {
			t.Errorf("README.md's Documentation list does not link %s", d)
		}
		delete(linked, d)
	}
	for d := range linked {
		t.Errorf("README.md's Documentation list links %s, which does not exist", d)
	}
}

// TestDocsEveryPackageHasAnExample checks that each public package
// (neither internal, nor a command, nor the test helpers) has a runnable
// example for go doc to show.
func TestDocsEveryPackageHasAnExample(t *testing.T) {
	for _, dir := range publicPackages(t) {
		tests, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range tests {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if regexp.MustCompile(`(?m)^func Example`).Match(src) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("package %s has no runnable Example", dir)
		}
	}
}

// TestDocsEveryExportedNameHasADocComment checks what go vet does not:
// every exported function, method of an exported type, type, constant
// and variable of the public packages has a doc comment (a group's
// comment, or a line comment in a group, counts for its members).
func TestDocsEveryExportedNameHasADocComment(t *testing.T) {
	for _, dir := range publicPackages(t) {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			for _, missing := range undocumented(f) {
				t.Errorf("%s: %s has no doc comment", fset.Position(missing.Pos()), missing.Name)
			}
		}
	}
}

// undocumented are the exported names of f that have no doc comment.
func undocumented(f *ast.File) []*ast.Ident {
	var out []*ast.Ident
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && receiverExported(d) && d.Doc == nil {
				out = append(out, d.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
						out = append(out, s.Name)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Doc == nil && s.Comment == nil && d.Doc == nil {
							out = append(out, n)
						}
					}
				}
			}
		}
	}
	return out
}

// receiverExported reports whether fn is a function, or a method of an
// exported type (methods of unexported types are not documented).
func receiverExported(fn *ast.FuncDecl) bool {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return true
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	id, ok := t.(*ast.Ident)
	return ok && id.IsExported()
}

// publicPackages are the directories of the module's public library
// packages: not internal, not a command, not the test helpers, not the
// bench module.
func publicPackages(t *testing.T) []string {
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		switch base := d.Name(); {
		case path == ".":
		case base == "internal" || base == "cmd" || base == "test" || base == "bench" || base == "docs" || base == "testdata" || strings.HasPrefix(base, "."):
			return filepath.SkipDir
		}
		if src, _ := filepath.Glob(filepath.Join(path, "*.go")); len(src) > 0 {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 8 {
		t.Fatalf("found only %d public packages: %v", len(dirs), dirs)
	}
	return dirs
}

// TestDocsErrorsListEverySentinel checks that docs/errors.md names every
// exported error sentinel (a variable Err…) of the public packages, as
// pkg.ErrName or, for the root package, ErrName.
func TestDocsErrorsListEverySentinel(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("docs", "errors.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range publicPackages(t) {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, s := range g.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						if !n.IsExported() || !strings.HasPrefix(n.Name, "Err") {
							continue
						}
						if !regexp.MustCompile(`\b` + n.Name + `\b`).Match(doc) {
							t.Errorf("docs/errors.md does not name %s.%s", f.Name.Name, n.Name)
						}
					}
				}
			}
		}
	}
}
