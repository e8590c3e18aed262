// Command benchratio reads `go test -bench` output and prints each
// benchmark next to its baseline measured in the same run.
//
// A benchmark BenchmarkFoo/<case> is paired with BenchmarkFooBaseline/<case>
// (raw TCP on loopback, hash/crc32 over the same octets, ...); a floor,
// BenchmarkFooFloor/<case>, without a baseline of its own shares
// BenchmarkFooBaseline/<case> with BenchmarkFoo/<case>. With -count
// above 1 it keeps the best run of each, which is the least disturbed by
// other load on the machine. Throughput (MB/s) gives a speed ratio,
// impl/baseline, where higher is better; without it, time per operation
// gives a time ratio, impl/baseline, where lower is better. Other metrics a
// benchmark reports (cycles/s, beats/cycle, ...) are printed as they are.
//
// With -svg DIR it also draws an SVG chart per benchmark family into DIR
// (gonum.org/v1/plot): bandwidth against message size for the engine,
// each card and raw TCP (bandwidth.svg), round trips beside raw TCP
// ping-pong (latency.svg), co-simulation speed per block and width
// (cosim.svg). A chart whose benchmarks are absent is not drawn.
//
// Usage:
//
//	go test -run '^$' -bench . -count 3 ./... | benchratio [-json]
//	benchratio [-json] [-quiet] [-svg DIR [-note TEXT]] FILE...
//
// Files are read in order; a benchmark in several files keeps the runs of
// the last one, so that it and its baseline come from the same run.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// result holds the best of the runs of one benchmark.
type result struct {
	Name    string             `json:"name"`
	Pkg     string             `json:"pkg"`
	NsPerOp float64            `json:"ns_per_op"`
	MBps    float64            `json:"mb_per_s,omitempty"`
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// row is what is printed: a benchmark and, when it has one, its baseline.
type row struct {
	result
	Baseline *result `json:"baseline,omitempty"`
	Ratio    float64 `json:"ratio,omitempty"`
	Kind     string  `json:"ratio_kind,omitempty"` // "speed" (higher is better) or "time" (lower is better)
}

var procSuffix = regexp.MustCompile(`-\d+$`)

func parse(r io.Reader) ([]*result, error) {
	var order []*result
	byName := map[string]*result{}
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = p
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // a log line that happens to start with Benchmark
		}
		cur := result{Name: procSuffix.ReplaceAllString(f[0], ""), Pkg: pkg, Metrics: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchratio: %q: value %q of %s is not a number", f[0], f[i], f[i+1])
			}
			switch unit := f[i+1]; unit {
			case "ns/op":
				cur.NsPerOp = v
			case "MB/s":
				cur.MBps = v
			case "B/op", "allocs/op":
				cur.Metrics[unit] = v
			default:
				cur.Metrics[unit] = v
			}
		}
		key := pkg + " " + cur.Name
		best, seen := byName[key]
		if !seen {
			c := cur
			byName[key] = &c
			order = append(order, &c)
			continue
		}
		if better(&cur, best) {
			*best = cur
		}
	}
	return order, sc.Err()
}

// better reports whether a is a less disturbed run than b.
func better(a, b *result) bool {
	if a.MBps > 0 || b.MBps > 0 {
		return a.MBps > b.MBps
	}
	return a.NsPerOp < b.NsPerOp
}

// baselineName turns BenchmarkFoo/case into BenchmarkFooBaseline/case.
func baselineName(name string) string {
	top, sub, hasSub := strings.Cut(name, "/")
	if hasSub {
		return top + "Baseline/" + sub
	}
	return top + "Baseline"
}

func pair(results []*result) []row {
	idx := map[string]*result{}
	for _, r := range results {
		idx[r.Pkg+" "+r.Name] = r
	}
	var rows []row
	for _, r := range results {
		if top, _, _ := strings.Cut(r.Name, "/"); strings.HasSuffix(top, "Baseline") {
			continue
		}
		rw := row{result: *r}
		b := idx[r.Pkg+" "+baselineName(r.Name)]
		if top, sub, _ := strings.Cut(r.Name, "/"); b == nil && strings.HasSuffix(top, "Floor") {
			b = idx[r.Pkg+" "+baselineName(strings.TrimSuffix(top, "Floor")+"/"+sub)]
		}
		if b != nil {
			rw.Baseline = b
			if r.MBps > 0 && b.MBps > 0 {
				rw.Ratio, rw.Kind = r.MBps/b.MBps, "speed"
			} else if r.NsPerOp > 0 && b.NsPerOp > 0 {
				rw.Ratio, rw.Kind = r.NsPerOp/b.NsPerOp, "time"
			}
		}
		rows = append(rows, rw)
	}
	return rows
}

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchratio", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print one JSON object per benchmark")
	svgDir := fs.String("svg", "", "also draw an SVG chart per benchmark family into this `directory`")
	quiet := fs.Bool("quiet", false, "print no table (with -svg: only draw the charts)")
	fs.StringVar(&chartNote, "note", "", "a second title line on every chart (the conditions of the runs, say)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go test -bench . ./... | benchratio [-json] [-quiet] [-svg DIR] [FILE...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	results, err := parseInputs(fs.Args(), stdin)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if len(results) == 0 {
		fmt.Fprintln(stderr, "benchratio: no benchmark results in the input")
		return 1
	}
	if *svgDir != "" {
		files, err := writeCharts(*svgDir, results)
		for _, f := range files {
			fmt.Fprintf(stderr, "benchratio: wrote %s\n", f)
		}
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
	}
	if *quiet {
		return 0
	}
	rows := pair(results)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range rows {
			_ = enc.Encode(r)
		}
		return 0
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	fmt.Fprintf(w, "%-58s %12s %12s %9s  %s\n", "benchmark", "value", "baseline", "ratio", "other metrics")
	lastPkg := ""
	for _, r := range rows {
		if r.Pkg != lastPkg {
			fmt.Fprintf(w, "%s\n", r.Pkg)
			lastPkg = r.Pkg
		}
		val, base, ratio := describe(r)
		fmt.Fprintf(w, "  %-56s %12s %12s %9s  %s\n", strings.TrimPrefix(r.Name, "Benchmark"), val, base, ratio, metrics(r.Metrics))
	}
	return 0
}

// parseInputs reads the named files in order (standard input if none):
// a benchmark found in a later file replaces its runs from earlier ones.
func parseInputs(files []string, stdin io.Reader) ([]*result, error) {
	if len(files) == 0 {
		return parse(stdin)
	}
	var all []*result
	at := map[string]int{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("benchratio: %w", err)
		}
		rs, err := parse(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("benchratio: %s: %w", name, err)
		}
		for _, r := range rs {
			key := r.Pkg + " " + r.Name
			if i, ok := at[key]; ok {
				all[i] = r
				continue
			}
			at[key] = len(all)
			all = append(all, r)
		}
	}
	return all, nil
}

func describe(r row) (val, base, ratio string) {
	val = fmt.Sprintf("%.0f ns/op", r.NsPerOp)
	if r.MBps > 0 {
		val = fmt.Sprintf("%.0f MB/s", r.MBps)
	}
	if r.Baseline == nil {
		return val, "-", "-"
	}
	switch r.Kind {
	case "speed":
		return val, fmt.Sprintf("%.0f MB/s", r.Baseline.MBps), fmt.Sprintf("%.2fx", r.Ratio)
	case "time":
		return val, fmt.Sprintf("%.0f ns/op", r.Baseline.NsPerOp), fmt.Sprintf("%.2fx t", r.Ratio)
	}
	return val, "?", "-"
}

func metrics(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%g %s", m[k], k))
	}
	return strings.Join(parts, ", ")
}
