// Command apicount counts the exported names of the module's public
// packages, so that the size of the API can be watched (make api-count).
//
// A public package is one a user can import: every package directory of
// the module except those under internal/, cmd/, test/, bench/ (its own
// module), testdata/ and directories whose name starts with "." or "_";
// package main is skipped too. In each, the names counted are those
// declared in its non-test .go files (every GOOS and build tag: a name
// declared in two variants counts once):
//
//   - every exported package-level const, var, type and func;
//   - every exported method whose receiver is an exported type.
//
// Struct fields and interface methods are not counted: they are read on
// their type's page, not looked up as names.
//
// It prints the root package's count and the total over all public
// packages (with -v, each package and its names), and exits 1 when
// -max-root or -max-all (0: no limit) is passed.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	dir := flag.String("dir", ".", "the module's root directory")
	maxRoot := flag.Int("max-root", 0, "fail when the root package exports more names (0: no limit)")
	maxAll := flag.Int("max-all", 0, "fail when all public packages together export more names (0: no limit)")
	verbose := flag.Bool("v", false, "list each package's count and names")
	flag.Parse()
	counts, err := count(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(2)
	}
	pkgs := make([]string, 0, len(counts))
	total := 0
	for p, names := range counts {
		pkgs = append(pkgs, p)
		total += len(names)
	}
	sort.Strings(pkgs)
	if *verbose {
		for _, p := range pkgs {
			names := counts[p]
			sort.Strings(names)
			fmt.Printf("%-20s %4d  %s\n", p, len(names), strings.Join(names, " "))
		}
	}
	root := len(counts["."])
	fmt.Printf("exported names: root package %d, all public packages %d\n", root, total)
	failed := false
	if *maxRoot > 0 && root > *maxRoot {
		fmt.Printf("apicount: the root package exports %d names, more than the limit of %d\n", root, *maxRoot)
		failed = true
	}
	if *maxAll > 0 && total > *maxAll {
		fmt.Printf("apicount: the public packages export %d names, more than the limit of %d\n", total, *maxAll)
		failed = true
	}
	if failed {
		os.Exit(1)
	}
}

// count maps each public package's directory (relative to dir; "." is
// the root) to its exported names.
func count(dir string) (map[string][]string, error) {
	out := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		name := d.Name()
		if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
			return filepath.SkipDir
		}
		switch strings.Split(filepath.ToSlash(rel), "/")[0] {
		case "internal", "cmd", "test", "bench":
			return filepath.SkipDir
		}
		names, err := exported(path)
		if err != nil {
			return err
		}
		if names != nil {
			out[filepath.ToSlash(rel)] = names
		}
		return nil
	})
	return out, err
}

// exported lists the exported names declared in the non-test Go files of
// one directory; nil when it holds no package or package main.
func exported(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	isPackage := false
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if f.Name.Name == "main" {
			return nil, nil
		}
		isPackage = true
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					seen[d.Name.Name] = true
				} else if recv := receiver(d.Recv.List[0].Type); ast.IsExported(recv) {
					seen[recv+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							seen[s.Name.Name] = true
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.IsExported() {
								seen[id.Name] = true
							}
						}
					}
				}
			}
		}
	}
	if !isPackage {
		return nil, nil
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	return names, nil
}

// receiver is the name of a method's receiver type (T, *T, T[P], *T[P]).
func receiver(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
