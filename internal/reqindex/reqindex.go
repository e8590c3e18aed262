// Package reqindex checks a package's requirement index, the table its
// tests keep from each numbered requirement of a spec digest to the tests
// that show it (or the reason none applies), against the digest's full
// list of requirement IDs, kept in the package's testdata so that tests
// never read the digest itself.
//
// A requirement list is a text file with one requirement per line: its
// ID, a space, then its text (for people; Load keeps only the ID). Blank
// lines and lines starting with # are skipped.
package reqindex

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ErrList is a requirement list that cannot be used: unreadable, empty, or
// with an ID twice.
var ErrList = errors.New("reqindex: bad requirement list")

// Load reads the requirement IDs of the list at path, in file order.
func Load(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrList, err)
	}
	defer f.Close()
	var ids []string
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, _, _ := strings.Cut(line, " ")
		if prev, dup := seen[id]; dup {
			return nil, fmt.Errorf("%w: %s: %s on lines %d and %d", ErrList, path, id, prev, n)
		}
		seen[id] = n
		ids = append(ids, id)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrList, path, err)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: %s lists no requirement", ErrList, path)
	}
	return ids, nil
}

// Gaps compares an index's entries (the requirement IDs it has, in any
// order, repeats allowed so that a repeat is reported) with the list and
// returns one sentence per problem, sorted: an ID of the list without an
// entry, an entry whose ID the list does not have, an ID with two entries.
// None means the index covers the list exactly.
func Gaps(list, entries []string) []string {
	var out []string
	want := map[string]bool{}
	for _, id := range list {
		want[id] = true
	}
	have := map[string]int{}
	for _, id := range entries {
		have[id]++
		if have[id] == 2 {
			out = append(out, fmt.Sprintf("requirement %s has more than one entry", id))
		}
		if !want[id] && have[id] == 1 {
			out = append(out, fmt.Sprintf("entry %s is not a requirement of the digest", id))
		}
	}
	for _, id := range list {
		if have[id] == 0 {
			out = append(out, fmt.Sprintf("requirement %s has no entry (no test and no reason)", id))
		}
	}
	sort.Strings(out)
	return out
}

// Funcs lists the top-level functions (tests, fuzz targets, helpers) of the
// _test.go files in dir.
func Funcs(dir string) (map[string]bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("reqindex: no _test.go files in %s", dir)
	}
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("reqindex: %w", err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				names[fd.Name.Name] = true
			}
		}
	}
	return names, nil
}
