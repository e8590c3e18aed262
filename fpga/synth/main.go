// Command synth runs the open FPGA flows on openiwarp's generated RTL and
// writes a resource table into hw/README.md (between <!-- synth:begin -->
// and <!-- synth:end -->):
//
//   - yosys synth_xilinx: LUTs and flip-flops on a 7-series/UltraScale-style
//     fabric;
//   - yosys synth_ice40: LUT4s and flip-flops on iCE40;
//   - logic depth: LUT levels between flip-flops after a generic synthesis
//     mapped to 6-input (and 4-input) LUTs by ABC;
//   - nextpnr-ice40: place and route of the small-width instances on an
//     HX8K (ct256) and the Fmax it reports.
//
// Run it from the repository root (make synth does); logs go to
// build/hw/synth.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	mods := flag.String("modules", "crc32c_w64,crc32c_w512", "modules to synthesise (hw/rtl/<name>.v)")
	pnr := flag.String("pnr", "crc32c_w32,crc32c_w64", "modules to place and route on an iCE40 HX8K")
	out := flag.String("out", "build/hw/synth", "directory for netlists and logs")
	readme := flag.String("readme", "hw/README.md", "file whose synth:begin/end section receives the table")
	lv := flag.String("levels", "", "instead of the table: list every register of these modules with at least -min LUT6 levels in front of it, and the path")
	lvMin := flag.Int("min", 9, "with -levels: the least depth listed")
	lvRTL := flag.String("rtl", "hw/rtl", "with -levels: directory of the modules' Verilog (a probe build)")
	jobs := flag.Int("j", runtime.NumCPU(), "modules synthesised (and placed) at once: yosys and nextpnr each use one core")
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *lv != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "synth:", err)
			os.Exit(1)
		}
		for _, m := range split(*lv) {
			fmt.Printf("%s (LUT6 levels >= %d):\n", m, *lvMin)
			if err := depthReport(*out, *lvRTL, m, *lvMin, os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, "synth:", err)
				os.Exit(1)
			}
		}
		return
	}
	if *jobs < 1 {
		fmt.Fprintln(os.Stderr, "synth: -j must be at least 1")
		os.Exit(2)
	}
	if err := run(split(*mods), split(*pnr), *out, *readme, *jobs); err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		os.Exit(1)
	}
}

func split(s string) []string {
	var r []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			r = append(r, f)
		}
	}
	return r
}

type row struct {
	Module                                           string
	XLUT, XFF, XRAM, XDepth, ILUT, IFF, IRAM, IDepth int
	Worst                                            endpoint // the deepest LUT6 path
}

type pnrResult struct {
	module string
	fmax   float64
	lcs    string
}

func run(mods, pnrMods []string, out, readme string, jobs int) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	rows := make([]row, len(mods))
	err := parallel(len(mods), jobs, func(i int) error {
		r, err := synthRow(out, mods[i])
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "synth: %s: %d LUT6 levels into %s (%s)\n", mods[i], r.XDepth, r.Worst.Name, strings.Join(r.Worst.Path, " > "))
		rows[i] = r
		return nil
	})
	if err != nil {
		return err
	}
	if len(pnrMods) == 1 && pnrMods[0] == "auto" {
		pnrMods = fitting(rows)
	}
	pnrs := make([]pnrResult, len(pnrMods))
	err = parallel(len(pnrMods), jobs, func(i int) error {
		fmt.Fprintf(os.Stderr, "synth: %s: nextpnr-ice40 --hx8k\n", pnrMods[i])
		p, err := placeRoute(out, pnrMods[i])
		pnrs[i] = p
		return err
	})
	if err != nil {
		return err
	}
	table := render(rows, pnrs)
	fmt.Print(table)
	return updateReadme(readme, table)
}

// parallel calls f(0) to f(n-1), at most jobs at once, and returns the
// error of the lowest index that failed (every call started is waited
// for; none starts after a failure).
func parallel(n, jobs int, f func(i int) error) error {
	errs := make([]error, n)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		next   int
		failed bool
	)
	for w := 0; w < min(jobs, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := failed || i >= n
				mu.Unlock()
				if stop {
					return
				}
				if err := f(i); err != nil {
					errs[i] = err
					mu.Lock()
					failed = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// iCE40-HX8K resources: logic cells (one LUT4 and one flip-flop each) and
// 4 Kbit block RAMs.
const hx8kCells, hx8kRAMs = 7680, 32

// fitting lists the modules of rows that fit an HX8K: LUT4s and
// flip-flops each within its logic cells (a cell holds one of each), block
// RAMs within its 32. nextpnr says whether they really do.
func fitting(rows []row) []string {
	var r []string
	for _, x := range rows {
		if x.ILUT <= hx8kCells && x.IFF <= hx8kCells && x.IRAM <= hx8kRAMs {
			r = append(r, x.Module)
		}
	}
	return r
}

// synthRow measures one module, or reads the measurement of the same RTL
// from an earlier run (out/<m>.row.json, keyed by the hash of the module's
// Verilog, of the modules it instantiates and of rowFlow).
func synthRow(out, m string) (row, error) {
	key, err := rtlKey(m, rowFlow(m))
	if err != nil {
		return row{}, err
	}
	cache := filepath.Join(out, m+".row.json")
	var cached struct {
		Key string
		Row row
	}
	if b, err := os.ReadFile(cache); err == nil && json.Unmarshal(b, &cached) == nil && cached.Key == key {
		fmt.Fprintf(os.Stderr, "synth: %s: unchanged since %s\n", m, cache)
		return cached.Row, nil
	}
	r := row{Module: m}
	fmt.Fprintf(os.Stderr, "synth: %s: synth_xilinx\n", m)
	c, err := synthCounts(out, m, xilinxFlow[0], xilinxFlow[1:]...)
	if err != nil {
		return r, err
	}
	r.XLUT, r.XFF, r.XRAM = c[0], c[1], c[2]
	fmt.Fprintf(os.Stderr, "synth: %s: synth_ice40\n", m)
	if c, err = synthCounts(out, m, ice40Flow[0], ice40Flow[1:]...); err != nil {
		return r, err
	}
	r.ILUT, r.IFF, r.IRAM = c[0], c[1], c[2]
	fmt.Fprintf(os.Stderr, "synth: %s: logic depth\n", m)
	if r.XDepth, r.Worst, err = depth(out, m, 6); err != nil {
		return r, err
	}
	if r.IDepth, _, err = depth(out, m, 4); err != nil {
		return r, err
	}
	cached.Key, cached.Row = key, r
	b, err := json.Marshal(cached)
	if err != nil {
		return r, err
	}
	return r, os.WriteFile(cache, b, 0o644)
}

var instRE = regexp.MustCompile(`(?m)^\s+([a-z][a-z0-9_]*) [a-z][a-z0-9_]* \($`)

// The vendor flows of a row: the yosys command, then the cell types it
// counts as LUTs, flip-flops and block RAMs.
var (
	xilinxFlow = []string{"synth_xilinx -flatten", `^LUT\d$`, `^FD[A-Z]*$`, `^RAMB(36|18)E[12]$`}
	ice40Flow  = []string{"synth_ice40", `^SB_LUT4$`, `^SB_DFF[A-Z]*$`, `^SB_RAM40_4K$`}
)

// rowFormat is bumped when the measurement changes in Go (levels, the
// row's fields), so that cached rows are measured again.
const rowFormat = 1

// rowFlow is everything besides the RTL that a row of module m depends
// on: the yosys version, the flows and the row format.
func rowFlow(m string) string {
	return strings.Join(append(append([]string{toolVersion("yosys"), genericSynth(m), fmt.Sprint(rowFormat)}, xilinxFlow...), ice40Flow...), "\n")
}

// rtlKey hashes flow, hw/rtl/<m>.v and, recursively, the modules it
// instantiates.
func rtlKey(m, flow string) (string, error) {
	h := sha256.New()
	h.Write([]byte(flow))
	seen := map[string]bool{}
	var add func(m string) error
	add = func(m string) error {
		if seen[m] {
			return nil
		}
		seen[m] = true
		b, err := os.ReadFile(filepath.Join("hw/rtl", m+".v"))
		if err != nil {
			return err
		}
		h.Write(b)
		for _, mm := range instRE.FindAllStringSubmatch(string(b), -1) {
			if _, err := os.Stat(filepath.Join("hw/rtl", mm[1]+".v")); err == nil {
				if err := add(mm[1]); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := add(m); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func yosys(out, name, script string) (string, error) {
	log := filepath.Join(out, name+".log")
	cmd := exec.Command("yosys", "-q", "-l", log, "-p", script)
	msg, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("yosys %s: %v\n%s", name, err, msg)
	}
	b, err := os.ReadFile(log)
	return string(b), err
}

var cellRE = regexp.MustCompile(`(?m)^\s+(\S+)\s+(\d+)\s*$`)

// synthCounts runs one vendor flow and sums, for each pattern, the cells
// of yosys's stat whose type matches it (LUTs, flip-flops, block RAMs).
func synthCounts(out, m, flow string, pats ...string) ([]int, error) {
	tag := strings.Fields(flow)[0]
	log, err := yosys(out, m+"_"+tag, fmt.Sprintf("%s; %s -top %s; tee -o %s stat",
		readRTL("hw/rtl", m), flow, m, filepath.Join(out, m+"_"+tag+".stat")))
	if err != nil {
		return nil, err
	}
	stat, err := os.ReadFile(filepath.Join(out, m+"_"+tag+".stat"))
	if err != nil {
		return nil, fmt.Errorf("%s: no stat output: %w (log %d bytes)", m, err, len(log))
	}
	c := countCells(string(stat), pats...)
	if c[0] == 0 || c[1] == 0 {
		return nil, fmt.Errorf("%s %s: no LUTs or flip-flops found in stat:\n%s", m, tag, stat)
	}
	return c, nil
}

// countCells sums, for each pattern, the cells of a yosys stat report
// whose type matches it.
func countCells(stat string, pats ...string) []int {
	n := make([]int, len(pats))
	res := make([]*regexp.Regexp, len(pats))
	for i, p := range pats {
		res[i] = regexp.MustCompile(p)
	}
	for _, c := range cellRE.FindAllStringSubmatch(stat, -1) {
		v, _ := strconv.Atoi(c[2])
		for i, re := range res {
			if re.MatchString(c[1]) {
				n[i] += v
			}
		}
	}
	return n
}

// depth is the number of k-input LUTs on the longest path between
// flip-flops, memories and ports after generic synthesis and ABC LUT
// mapping (see levels), and the endpoint that has it.
func depth(out, m string, k int) (int, endpoint, error) {
	eps, err := levelsOf(out, "hw/rtl", m, k, 0)
	if err != nil {
		return 0, endpoint{}, err
	}
	if len(eps) == 0 {
		return 0, endpoint{}, fmt.Errorf("%s: no register or output found in the netlist", m)
	}
	return eps[0].Depth, eps[0], nil
}

var (
	fmaxRE = regexp.MustCompile(`Max frequency for clock '[^']*': ([0-9.]+) MHz`)
	lcRE   = regexp.MustCompile(`ICESTORM_LC:\s+(\d+/\s*\d+)`)
)

func placeRoute(out, m string) (pnrResult, error) {
	res := pnrResult{module: m}
	json := filepath.Join(out, m+"_ice40.json")
	wrap, err := writeWrapper(out, m)
	if err != nil {
		return res, err
	}
	if _, err := yosys(out, m+"_ice40_pnr", fmt.Sprintf("read_verilog %s hw/rtl/%s.v; hierarchy -libdir hw/rtl -top %s_pnr; synth_ice40 -top %s_pnr -json %s", wrap, m, m, m, json)); err != nil {
		return res, err
	}
	cmd := exec.Command("nextpnr-ice40", "--hx8k", "--package", "ct256", "--json", json,
		"--asc", filepath.Join(out, m+".asc"), "--pcf-allow-unconstrained", "--timing-allow-fail", "--freq", "100", "--seed", "1")
	msg, err := cmd.CombinedOutput()
	if werr := os.WriteFile(filepath.Join(out, m+"_nextpnr.log"), msg, 0o644); werr != nil {
		return res, werr
	}
	if err != nil {
		return res, fmt.Errorf("nextpnr-ice40 %s: %v\n%s", m, err, tail(msg, 20))
	}
	all := fmaxRE.FindAllSubmatch(msg, -1)
	if len(all) == 0 {
		return res, errors.New("nextpnr-ice40 " + m + ": no Fmax in its report")
	}
	res.fmax, _ = strconv.ParseFloat(string(all[len(all)-1][1]), 64)
	if lc := lcRE.FindSubmatch(msg); lc != nil {
		res.lcs = strings.Join(strings.Fields(string(lc[1])), "")
	}
	return res, nil
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func toolVersion(tool string) string {
	out, err := exec.Command(tool, "-V").CombinedOutput()
	if err != nil {
		out, _ = exec.Command(tool, "--version").CombinedOutput()
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

func render(rows []row, pnrs []pnrResult) string {
	var b strings.Builder
	b.WriteString("| Module | Xilinx LUTs | FFs | BRAMs | LUT6 depth | iCE40 LUT4s | FFs | SB_RAM40_4K | LUT4 depth |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %d | %d | %d | %d | %d | %d | %d | %d |\n", r.Module, r.XLUT, r.XFF, r.XRAM, r.XDepth, r.ILUT, r.IFF, r.IRAM, r.IDepth)
	}
	if len(pnrs) > 0 {
		b.WriteString("\nnextpnr-ice40, HX8K (ct256), the block inside a wrapper that shifts its ports through two pins, seed 1:\n\n| Module | Logic cells | Fmax |\n|---|---:|---:|\n")
		for _, p := range pnrs {
			fmt.Fprintf(&b, "| `%s` | %s | %.1f MHz |\n", p.module, p.lcs, p.fmax)
		}
	}
	fmt.Fprintf(&b, "\nTools: %s; %s. Written by `make synth` on %s.\n", toolVersion("yosys"), toolVersion("nextpnr-ice40"), time.Now().UTC().Format("2006-01-02"))
	return b.String()
}

const begin, end = "<!-- synth:begin -->", "<!-- synth:end -->"

func updateReadme(path, table string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	i, j := bytes.Index(old, []byte(begin)), bytes.Index(old, []byte(end))
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s section", path, begin, end)
	}
	var b bytes.Buffer
	b.Write(old[:i+len(begin)])
	b.WriteString("\n" + table)
	b.Write(old[j:])
	return os.WriteFile(path, b.Bytes(), 0o644)
}
