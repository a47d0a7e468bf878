// house prints the measures of how geoflow's code reads, for a before/after table: the longest
// product functions, the highest cyclomatic complexity (gocyclo's count), the widest interface each
// package takes from this module, and the method sets of the store implementations.
//
// Run from the repository root: go -C .ci/house run . ../..  (a module of its own, so that its
// tools stay out of geoflow's go.mod). Tests, test support, benchmarks and sample servers are not
// product code and are left out, as the function-length check in the review hook leaves them out.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/fzipp/gocyclo"
	"golang.org/x/tools/go/packages"
)

// notProduct are the package paths (relative to the module) that only tests, benchmarks and
// `geoflow dev` use.
var notProduct = []string{"bench", "internal/devserver", "internal/uishots", "internal/testdb",
	"internal/testflow", "internal/browser", "store/storetest", "spatial/internal/readertest"}

type fn struct {
	lines, cyclo int
	name, where  string
}

func main() {
	top := flag.Int("top", 15, "rows per table")
	check := flag.Bool("check", false, "fail (exit 1) when a limit below is crossed or an import points up")
	maxLines := flag.Int("max-lines", 120, "with -check: the most lines a product function may have")
	maxCyclo := flag.Int("max-cyclo", 25, "with -check: the highest cyclomatic complexity a product function may have")
	maxLong := flag.Int("max-long", 10, "with -check: how many product functions may be over 80 lines")
	flag.Parse()
	root := flag.Arg(0)
	if root == "" {
		root = "."
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		fail(err)
	}
	cfg := &packages.Config{Dir: abs, Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedImports |
		packages.NeedTypes | packages.NeedTypesInfo | packages.NeedModule}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		fail(err)
	}
	mod := ""
	var prod []*packages.Package
	for _, p := range pkgs {
		if p.Module != nil {
			mod = p.Module.Path
		}
		if len(p.Errors) > 0 {
			fail(fmt.Errorf("%s: %v", p.PkgPath, p.Errors[0]))
		}
		if product(strings.TrimPrefix(strings.TrimPrefix(p.PkgPath, mod), "/")) {
			prod = append(prod, p)
		}
	}
	fns := functions(prod, abs)
	report(fns, *top)
	widest(prod, mod)
	storeMethods(pkgs, mod)
	problems := limits(fns, *maxLines, *maxCyclo, *maxLong)
	if bad := importGraph(prod, mod); bad > 0 {
		problems = append(problems, fmt.Sprintf("%d imports point up the layers", bad))
	}
	if *check && len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "house:", p)
		}
		os.Exit(1)
	}
}

// limits lists the product functions beyond the limits the house keeps.
func limits(fns []fn, maxLines, maxCyclo, maxLong int) []string {
	var out []string
	long := 0
	for _, f := range fns {
		if f.lines > 80 {
			long++
		}
		if f.lines > maxLines {
			out = append(out, fmt.Sprintf("%s %s is %d lines (at most %d)", f.where, f.name, f.lines, maxLines))
		}
		if f.cyclo > maxCyclo {
			out = append(out, fmt.Sprintf("%s %s has cyclomatic complexity %d (at most %d)", f.where, f.name, f.cyclo, maxCyclo))
		}
	}
	if long > maxLong {
		out = append(out, fmt.Sprintf("%d product functions are over 80 lines (at most %d)", long, maxLong))
	}
	return out
}

// layers is the architecture, top-down: a package may import only packages of its own
// layer or of lower layers. The longest prefix that matches a package's path gives its
// layer ("tasks/" is every task kind, above "tasks"; "export" is the export core, above
// its formats "export/", which read the store; spatial/wkb and spatial/internal are
// leaves below "spatial", which uses them).
var layers = []string{"cmd", "server", "schedule", "flows/engine", "flows", "tasks/", "tasks",
	"export", "export/", "store/", "store", "retry", "dlq", "spatial/", "spatial", "spatial/internal", "spatial/wkb", "migrations", "internal"}

func layerOf(rel string) int {
	best, bestLen := len(layers), -1
	for i, l := range layers {
		match := rel == strings.TrimSuffix(l, "/") && !strings.HasSuffix(l, "/") ||
			strings.HasPrefix(rel, strings.TrimSuffix(l, "/")+"/")
		if match && len(l) > bestLen {
			best, bestLen = i, len(l)
		}
	}
	return best
}

// importGraph prints each product package, top-down by layer, with the packages of this
// module it imports, marking (and counting) an import of a higher layer.
func importGraph(pkgs []*packages.Package, mod string) (bad int) {
	rel := func(path string) string { return strings.TrimPrefix(strings.TrimPrefix(path, mod), "/") }
	sorted := slices.Clone(pkgs)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := rel(sorted[i].PkgPath), rel(sorted[j].PkgPath)
		if la, lb := layerOf(a), layerOf(b); la != lb {
			return la < lb
		}
		return a < b
	})
	fmt.Printf("\nimport graph, top-down (a package imports only those below it)\n")
	for _, p := range sorted {
		from := rel(p.PkgPath)
		var deps []string
		for path := range p.Imports {
			if !strings.HasPrefix(path, mod+"/") {
				continue
			}
			to := rel(path)
			if layerOf(to) < layerOf(from) {
				to += " (UP)"
				bad++
			}
			deps = append(deps, to)
		}
		sort.Strings(deps)
		fmt.Printf("  %-28s -> %s\n", from, strings.Join(deps, " "))
	}
	return bad
}

func product(rel string) bool {
	for _, np := range notProduct {
		if rel == np || strings.HasPrefix(rel, np+"/") {
			return false
		}
	}
	return true
}

// functions measures every product function declaration: lines from `func` to its closing brace.
func functions(pkgs []*packages.Package, root string) []fn {
	var out []fn
	for _, p := range pkgs {
		for _, f := range p.Syntax {
			file := p.Fset.Position(f.Pos()).Filename
			if strings.HasSuffix(file, "_test.go") || ast.IsGenerated(f) {
				continue
			}
			rel, _ := filepath.Rel(root, file)
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				n := p.Fset.Position(fd.End()).Line - p.Fset.Position(fd.Pos()).Line + 1
				out = append(out, fn{lines: n, cyclo: gocyclo.Complexity(fd), name: funcName(fd), where: rel})
			}
		}
	}
	return out
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func report(fns []fn, top int) {
	var over80, over120, cyc25 int
	for _, f := range fns {
		if f.lines > 80 {
			over80++
		}
		if f.lines > 120 {
			over120++
		}
		if f.cyclo > 25 {
			cyc25++
		}
	}
	fmt.Printf("product functions: %d; over 80 lines: %d; over 120 lines: %d; cyclomatic over 25: %d\n\n",
		len(fns), over80, over120, cyc25)
	sort.SliceStable(fns, func(i, j int) bool { return fns[i].lines > fns[j].lines })
	fmt.Printf("longest functions\n")
	for _, f := range fns[:min(top, len(fns))] {
		fmt.Printf("  %4d lines  cyclo %2d  %s %s\n", f.lines, f.cyclo, f.where, f.name)
	}
	sort.SliceStable(fns, func(i, j int) bool { return fns[i].cyclo > fns[j].cyclo })
	fmt.Printf("\nhighest cyclomatic complexity\n")
	for _, f := range fns[:min(10, len(fns))] {
		fmt.Printf("  cyclo %2d  %4d lines  %s %s\n", f.cyclo, f.lines, f.where, f.name)
	}
}

// widest prints, per product package, the interface with the most methods (of those declared in
// this module) that the package takes: as a parameter, a struct field or an embedded interface of
// its own declarations.
func widest(pkgs []*packages.Package, mod string) {
	fmt.Printf("\nwidest interface each package takes (declared in this module)\n")
	for _, p := range pkgs {
		best, bestN := "", 0
		consider := func(t types.Type) {
			named, ok := types.Unalias(t).(*types.Named)
			if !ok || named.Obj().Pkg() == nil || !strings.HasPrefix(named.Obj().Pkg().Path(), mod) {
				return
			}
			it, ok := named.Underlying().(*types.Interface)
			if !ok {
				return
			}
			if n := it.NumMethods(); n > bestN {
				bestN = n
				best = strings.TrimPrefix(strings.TrimPrefix(named.Obj().Pkg().Path(), mod), "/") + "." + named.Obj().Name()
			}
		}
		for id, obj := range p.TypesInfo.Defs {
			if obj == nil || strings.HasSuffix(p.Fset.Position(id.Pos()).Filename, "_test.go") {
				continue
			}
			switch o := obj.(type) {
			case *types.Func:
				sig := o.Type().(*types.Signature)
				for i := range sig.Params().Len() {
					consider(deref(sig.Params().At(i).Type()))
				}
			case *types.Var:
				if o.IsField() {
					consider(deref(o.Type()))
				}
			}
		}
		if bestN > 0 {
			fmt.Printf("  %-40s %2d  %s\n", strings.TrimPrefix(strings.TrimPrefix(p.PkgPath, mod), "/"), bestN, best)
		}
	}
}

func deref(t types.Type) types.Type {
	if p, ok := t.(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

// storeMethods prints the method set of each store implementation's *Store.
func storeMethods(pkgs []*packages.Package, mod string) {
	fmt.Printf("\nmethods per store implementation (exported, all)\n")
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.PkgPath, mod), "/")
		if !strings.HasPrefix(rel, "store/") || p.Types.Scope().Lookup("Store") == nil {
			continue
		}
		t := p.Types.Scope().Lookup("Store").Type()
		ms := types.NewMethodSet(types.NewPointer(t))
		exported := 0
		for i := range ms.Len() {
			if ms.At(i).Obj().Exported() {
				exported++
			}
		}
		fmt.Printf("  %-40s %2d  %d\n", rel+".Store", exported, ms.Len())
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "house:", err)
	os.Exit(1)
}
