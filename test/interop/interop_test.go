package interop

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

var (
	resultsFlag = flag.String("results", "", "directory for captures, console logs and reports (default: <repo>/build/interop)")
	matrixFlag  = flag.String("matrix", "", "write the interoperability matrix (Markdown) to this file")
	onlyFlag    = flag.String("only", "", "run only the scenarios whose name matches this regexp")
	repeatFlag  = flag.Int("repeat", 1, "run each scenario this many times (to measure flakiness)")
)

// ran collects every scenario's result, of every test of the package, for
// the matrix TestMain writes once they have all run.
var ran struct {
	sync.Mutex
	results []Result
}

func record(r Result) {
	ran.Lock()
	ran.results = append(ran.results, r)
	ran.Unlock()
}

// writeMatrix writes the matrix of the scenarios that ran, if -matrix asks
// for it and any ran.
func writeMatrix() error {
	ran.Lock()
	defer ran.Unlock()
	if *matrixFlag == "" || len(ran.results) == 0 {
		return nil
	}
	if err := os.WriteFile(*matrixFlag, []byte(Matrix(ran.results)), 0o644); err != nil {
		return fmt.Errorf("interop: writing the matrix: %w", err)
	}
	return nil
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) { l.t.Log(string(p)); return len(p), nil }

// TestInterop runs every scenario against real Linux siw in QEMU guests.
func TestInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU guests")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	results := *resultsFlag
	if results == "" {
		results = filepath.Join(root, "build", "interop")
	}
	var only *regexp.Regexp
	if *onlyFlag != "" {
		only = regexp.MustCompile(*onlyFlag)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	h, err := NewHarness(ctx, results, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := h.Close(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}()
	scenarios := append(Scenarios(), RTLScenarios()...)
	for _, s := range scenarios {
		if only != nil && !only.MatchString(s.Name) {
			continue
		}
		for i := range *repeatFlag {
			t.Run(s.Name, func(t *testing.T) {
				tag := ""
				if *repeatFlag > 1 {
					tag = fmt.Sprintf("-%d", i)
				}
				r := h.Run(ctx, s, tag)
				record(r)
				t.Logf("%s: %s in %s; capture: %s; iwdump: %s", r.Name, r.Status, r.Elapsed.Round(time.Millisecond), r.Decoded, r.Iwdump)
				if r.Status != "pass" {
					t.Errorf("%s: %s: %s (kept in %s)", r.Name, r.Status, r.Detail, r.Dir)
				}
			})
		}
	}
}
