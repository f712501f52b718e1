package snodo

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The module's path, and protoactor-go's actor package, which docs and
// examples also write as actor.X (actor.PID, actor.Started).
const (
	modulePath      = "github.com/snodo/snodo"
	protoactorActor = "github.com/asynkron/protoactor-go/actor"
)

// docPackages maps the package names the docs qualify identifiers with
// to the import paths an identifier so qualified may come from. actor.X
// is snodo's actor package or protoactor-go's, which the examples
// import under that name.
var docPackages = map[string][]string{
	"snodo":        {modulePath},
	"supervisor":   {modulePath + "/supervisor"},
	"connection":   {modulePath + "/connection"},
	"subscription": {modulePath + "/subscription"},
	"handlers":     {modulePath + "/handlers"},
	"actor":        {modulePath + "/actor", protoactorActor},
	"servers":      {modulePath + "/servers"},
	"remote":       {modulePath + "/remote"},
	"gateway":      {modulePath + "/gateway"},
}

// TestDocsNameIdentifiersThatExist checks that every Go identifier
// README.md and docs/*.md name exists in the code, so that a rename or a
// removal cannot leave a stale name in the docs (CHANGELOG.md is exempt:
// it names what is gone on purpose). The rule:
//
//   - pkg.X and pkg.X.Y, anywhere (prose or code), for the packages of
//     docPackages: X is a top-level name of that package, and Y a field
//     or method of type X (promoted ones and aliases followed);
//   - T.Y in an inline code span, where T is an exported type of one of
//     snodo's packages: some package's T has the field or method Y (the
//     doc's context says which package; the check does not try to), so
//     another package's type of the same name is written qualified
//     (`http.Client.Do`);
//   - an unqualified ErrX or WithX in an inline code span: some package
//     of snodo exports it (sentinels and options are the names most
//     often written bare).
//
// Receivers in examples (c.Close, ctx.Self) are lower case and not
// checked; neither are names of other packages (nats.ErrConnectionClosed)
// nor of internal ones, which docs/architecture.md names as it explains
// them. A package of docPackages that does not exist yet is skipped with
// a note.
func TestDocsNameIdentifiersThatExist(t *testing.T) {
	nc := newNameChecker(t)
	span := regexp.MustCompile("`[^`\n]+`")
	bareName := regexp.MustCompile(`(?:^|[^\w./-])((?:Err|With)[A-Z]\w*)\b`)
	checked := 0
	for _, doc := range docFiles(t) {
		src, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		md := string(src)
		line := func(off int) int { return 1 + strings.Count(md[:off], "\n") }
		checked += nc.qualified(md, func(off int, name, why string) {
			t.Errorf("%s:%d names %s: %s", doc, line(off), name, why)
		})
		prose := withoutFences(md)
		for _, s := range span.FindAllStringIndex(prose, -1) {
			code := prose[s[0]:s[1]]
			checked += nc.bareMembers(code, func(_ int, name, why string) {
				t.Errorf("%s:%d names %s: %s", doc, line(s[0]), name, why)
			})
			for _, m := range bareName.FindAllStringSubmatch(code, -1) {
				checked++
				if !nc.ix.anyHas(nc.ours, m[1]) {
					t.Errorf("%s:%d names %s, which no public package exports", doc, line(s[0]), m[1])
				}
			}
		}
	}
	t.Logf("%d names checked", checked)
	if checked < 200 {
		t.Errorf("only %d names checked: the patterns no longer match the docs", checked)
	}
}

// TestDocCommentsNameIdentifiersThatExist applies the same rule to the
// comments of the public packages' Go files: pkg.X and pkg.X.Y anywhere,
// and T.Y where T is an exported type of snodo's packages (comments have
// no code spans; a bare ErrX or WithX is not checked there, as the
// standard library's are written bare too: context.WithCancel's).
func TestDocCommentsNameIdentifiersThatExist(t *testing.T) {
	nc := newNameChecker(t)
	checked := 0
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
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, cg := range f.Comments {
				at := fset.Position(cg.Pos())
				text := cg.Text()
				checked += nc.qualified(text, func(off int, name, why string) {
					t.Errorf("%s:%d: a comment names %s: %s", at.Filename, at.Line+strings.Count(text[:off], "\n"), name, why)
				})
				checked += nc.bareMembers(text, func(off int, name, why string) {
					t.Errorf("%s:%d: a comment names %s: %s", at.Filename, at.Line+strings.Count(text[:off], "\n"), name, why)
				})
			}
		}
	}
	t.Logf("%d names checked", checked)
	if checked < 200 {
		t.Errorf("only %d names checked: the patterns no longer match the comments", checked)
	}
}

// nameChecker holds what both checks share: the index of the code, the
// packages each qualifier may mean, and snodo's packages, which a bare
// name may come from.
type nameChecker struct {
	ix         goIndex
	qualifiers map[string][]string
	ours       []string
	pkgRef     *regexp.Regexp
	memberRef  *regexp.Regexp
}

func newNameChecker(t *testing.T) *nameChecker {
	ix := indexModule(t)
	dir, err := exec.Command("go", "list", "-f", "{{.Dir}}", protoactorActor).Output()
	if err != nil {
		t.Fatalf("locating %s (go list): %v", protoactorActor, err)
	}
	ix.add(t, strings.TrimSpace(string(dir)), protoactorActor)
	nc := &nameChecker{ix: ix, qualifiers: map[string][]string{}}
	names := make([]string, 0, len(docPackages))
	for name := range docPackages {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, p := range docPackages[name] {
			if ix[p] == nil {
				continue
			}
			nc.qualifiers[name] = append(nc.qualifiers[name], p)
			if strings.HasPrefix(p, modulePath) {
				nc.ours = append(nc.ours, p) // protoactor-go's names are written actor.X
			}
		}
		if len(nc.qualifiers[name]) == 0 {
			t.Logf("package %s does not exist (yet): the names written %s.X are not checked", name, name)
		}
	}
	nc.pkgRef = regexp.MustCompile(`(?:^|[^\w./-])(` + strings.Join(names, "|") + `)\.([A-Z]\w*)(?:\.([A-Z]\w*))?`)
	nc.memberRef = regexp.MustCompile(`(?:^|[^\w./-])([A-Z]\w*)\.([A-Z]\w*)`)
	return nc
}

// qualified checks each pkg.X and pkg.X.Y of text, calling report with
// its offset, the name and what is wrong for each stale one; it returns
// how many it checked.
func (nc *nameChecker) qualified(text string, report func(off int, name, why string)) int {
	n := 0
	for _, m := range nc.pkgRef.FindAllStringSubmatchIndex(text, -1) {
		pkg, x, y := text[m[2]:m[3]], text[m[4]:m[5]], ""
		if m[6] >= 0 {
			y = text[m[6]:m[7]]
		}
		paths := nc.qualifiers[pkg]
		if len(paths) == 0 {
			continue // the package does not exist yet (logged)
		}
		n++
		if why := nc.ix.check(paths, x, y); why != "" {
			report(m[2], pkg+"."+strings.TrimSuffix(x+"."+y, "."), why)
		}
	}
	return n
}

// bareMembers checks each T.Y of text where T is an exported type of
// snodo's packages (not a package name), as qualified does, and returns
// how many it checked.
func (nc *nameChecker) bareMembers(text string, report func(off int, name, why string)) int {
	n := 0
	for _, m := range nc.memberRef.FindAllStringSubmatchIndex(text, -1) {
		typ, member := text[m[2]:m[3]], text[m[4]:m[5]]
		if _, ok := docPackages[typ]; ok || !nc.ix.isType(nc.ours, typ) {
			continue // a package name (checked by qualified), or not a type of ours
		}
		n++
		if !nc.ix.anyHasMember(nc.ours, typ, member) {
			report(m[2], typ+"."+member, "no type "+typ+" of the public packages has a field or method "+member)
		}
	}
	return n
}

// withoutFences is md with its fenced code blocks blanked out (lines
// kept, so that offsets still give line numbers).
func withoutFences(md string) string {
	lines := strings.SplitAfter(md, "\n")
	in := false
	for i, l := range lines {
		fence := strings.HasPrefix(strings.TrimSpace(l), "```")
		if in || fence {
			lines[i] = strings.Repeat(" ", len(strings.TrimRight(l, "\n"))) + l[len(strings.TrimRight(l, "\n")):]
		}
		if fence {
			in = !in
		}
	}
	return strings.Join(lines, "")
}

// goIndex is what the docs check knows of the code, by import path.
type goIndex map[string]*goPackage

// goPackage is one package's top-level names, and for each of its
// types the fields and methods it declares, the types it embeds (or is
// defined from) and the type it aliases.
type goPackage struct {
	names   map[string]bool
	types   map[string]bool
	members map[string]map[string]bool
	embeds  map[string][]typeRef
	alias   map[string]typeRef
}

// typeRef names a type: its package's import path and its name.
type typeRef struct{ pkg, name string }

// indexModule indexes every package of the module (internal ones too,
// which public aliases point into), but not the commands, the test
// helpers or the bench module.
func indexModule(t *testing.T) goIndex {
	ix := goIndex{}
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		switch base := d.Name(); {
		case p == ".":
		case base == "cmd" || base == "test" || base == "bench" || base == "docs" || base == "testdata" || base == "node_modules" || strings.HasPrefix(base, "."):
			return filepath.SkipDir
		}
		imp := modulePath
		if p != "." {
			imp += "/" + filepath.ToSlash(p)
		}
		ix.add(t, p, imp)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if ix[modulePath] == nil || len(ix[modulePath].names) < 100 {
		t.Fatal("the root package was not indexed")
	}
	return ix
}

// add indexes the package in dir (its non-test files, for every
// platform) under the import path imp; a directory without Go files
// adds nothing.
func (ix goIndex) add(t *testing.T, dir, imp string) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if file.Name.Name == "main" {
			continue
		}
		p := ix[imp]
		if p == nil {
			p = &goPackage{names: map[string]bool{}, types: map[string]bool{}, members: map[string]map[string]bool{}, embeds: map[string][]typeRef{}, alias: map[string]typeRef{}}
			ix[imp] = p
		}
		p.addFile(file, imp)
	}
}

func (p *goPackage) addFile(f *ast.File, self string) {
	imports := map[string]string{}
	for _, s := range f.Imports {
		ip, _ := strconv.Unquote(s.Path.Value)
		name := path.Base(ip)
		if regexp.MustCompile(`^v[0-9]+$`).MatchString(name) {
			name = path.Base(path.Dir(ip))
		}
		if s.Name != nil {
			name = s.Name.Name
		}
		imports[name] = ip
	}
	ref := func(e ast.Expr) (typeRef, bool) {
		for {
			switch x := e.(type) {
			case *ast.StarExpr:
				e = x.X
			case *ast.IndexExpr:
				e = x.X
			case *ast.IndexListExpr:
				e = x.X
			case *ast.Ident:
				return typeRef{self, x.Name}, true
			case *ast.SelectorExpr:
				id, ok := x.X.(*ast.Ident)
				if !ok {
					return typeRef{}, false
				}
				return typeRef{imports[id.Name], x.Sel.Name}, true
			default:
				return typeRef{}, false
			}
		}
	}
	member := func(typ, name string) {
		if p.members[typ] == nil {
			p.members[typ] = map[string]bool{}
		}
		p.members[typ][name] = true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				p.names[d.Name.Name] = true
				continue
			}
			if r, ok := ref(d.Recv.List[0].Type); ok {
				member(r.name, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						p.names[n.Name] = true
					}
				case *ast.TypeSpec:
					name := s.Name.Name
					p.names[name] = true
					p.types[name] = true
					if s.Assign.IsValid() {
						if r, ok := ref(s.Type); ok {
							p.alias[name] = r
						}
						continue
					}
					var fields *ast.FieldList
					switch st := s.Type.(type) {
					case *ast.StructType:
						fields = st.Fields
					case *ast.InterfaceType:
						fields = st.Methods
					default:
						// A type defined from another (type A B) has B's
						// fields; counting its methods too is lenient.
						if r, ok := ref(s.Type); ok {
							p.embeds[name] = append(p.embeds[name], r)
						}
					}
					if fields == nil {
						continue
					}
					for _, fld := range fields.List {
						for _, n := range fld.Names {
							member(name, n.Name)
						}
						if len(fld.Names) == 0 {
							if r, ok := ref(fld.Type); ok {
								member(name, r.name) // an embedded field is named by its type
								p.embeds[name] = append(p.embeds[name], r)
							}
						}
					}
				}
			}
		}
	}
}

// check says what is wrong with the name x (and its member y, if not
// "") in any of the packages paths, or "" when one of them has it.
func (ix goIndex) check(paths []string, x, y string) string {
	for _, p := range paths {
		if ix[p].names[x] && (y == "" || ix.hasMember(p, x, y, 0)) {
			return ""
		}
	}
	for _, p := range paths {
		if ix[p].names[x] {
			if !ix[p].types[x] {
				return x + " is not a type, so it has no " + y
			}
			return "type " + x + " has no field or method " + y
		}
	}
	return "the package exports no " + x
}

// isType reports whether any of the packages paths declares the type typ.
func (ix goIndex) isType(paths []string, typ string) bool {
	for _, p := range paths {
		if ix[p].types[typ] {
			return true
		}
	}
	return false
}

// anyHas reports whether any of the packages paths declares name.
func (ix goIndex) anyHas(paths []string, name string) bool {
	for _, p := range paths {
		if ix[p].names[name] {
			return true
		}
	}
	return false
}

// anyHasMember reports whether the type typ of any of the packages
// paths has the field or method member.
func (ix goIndex) anyHasMember(paths []string, typ, member string) bool {
	for _, p := range paths {
		if ix[p].types[typ] && ix.hasMember(p, typ, member, 0) {
			return true
		}
	}
	return false
}

// hasMember reports whether the type pkg.typ has the field or method
// member, its own or promoted from an embedded type, following aliases.
// A type of a package not indexed (the standard library, a dependency)
// cannot be told, and counts as having it.
func (ix goIndex) hasMember(pkg, typ, member string, depth int) bool {
	p := ix[pkg]
	if p == nil || depth > 8 {
		return true
	}
	if a, ok := p.alias[typ]; ok {
		return ix.hasMember(a.pkg, a.name, member, depth+1)
	}
	if p.members[typ][member] {
		return true
	}
	for _, e := range p.embeds[typ] {
		if ix.hasMember(e.pkg, e.name, member, depth+1) {
			return true
		}
	}
	return false
}
