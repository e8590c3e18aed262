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
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func main() {
	mods := flag.String("modules", "crc32c_w64,crc32c_w512", "modules to synthesise (hw/rtl/<name>.v)")
	pnr := flag.String("pnr", "crc32c_w32,crc32c_w64", "modules to place and route on an iCE40 HX8K")
	out := flag.String("out", "build/hw/synth", "directory for netlists and logs")
	readme := flag.String("readme", "hw/README.md", "file whose synth:begin/end section receives the table")
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(split(*mods), split(*pnr), *out, *readme); err != nil {
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
	module                               string
	xLUT, xFF, xDepth, iLUT, iFF, iDepth int
}

type pnrResult struct {
	module string
	fmax   float64
	lcs    string
}

func run(mods, pnrMods []string, out, readme string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var rows []row
	for _, m := range mods {
		r := row{module: m}
		var err error
		fmt.Fprintf(os.Stderr, "synth: %s: synth_xilinx\n", m)
		if r.xLUT, r.xFF, err = synthCounts(out, m, "synth_xilinx -flatten", `^LUT\d$`, `^FD[A-Z]*$`); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "synth: %s: synth_ice40\n", m)
		if r.iLUT, r.iFF, err = synthCounts(out, m, "synth_ice40", `^SB_LUT4$`, `^SB_DFF[A-Z]*$`); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "synth: %s: logic depth\n", m)
		if r.xDepth, err = depth(out, m, 6); err != nil {
			return err
		}
		if r.iDepth, err = depth(out, m, 4); err != nil {
			return err
		}
		rows = append(rows, r)
	}
	var pnrs []pnrResult
	for _, m := range pnrMods {
		fmt.Fprintf(os.Stderr, "synth: %s: nextpnr-ice40 --hx8k\n", m)
		p, err := placeRoute(out, m)
		if err != nil {
			return err
		}
		pnrs = append(pnrs, p)
	}
	table := render(rows, pnrs)
	fmt.Print(table)
	return updateReadme(readme, table)
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

// synthCounts runs one vendor flow and sums the cells whose names match the
// LUT and flip-flop patterns in yosys's stat.
func synthCounts(out, m, flow, lutPat, ffPat string) (luts, ffs int, err error) {
	tag := strings.Fields(flow)[0]
	log, err := yosys(out, m+"_"+tag, fmt.Sprintf("read_verilog hw/rtl/%s.v; %s -top %s; tee -o %s stat",
		m, flow, m, filepath.Join(out, m+"_"+tag+".stat")))
	if err != nil {
		return 0, 0, err
	}
	stat, err := os.ReadFile(filepath.Join(out, m+"_"+tag+".stat"))
	if err != nil {
		return 0, 0, fmt.Errorf("%s: no stat output: %w (log %d bytes)", m, err, len(log))
	}
	luts, ffs = countCells(string(stat), lutPat, ffPat)
	if luts == 0 || ffs == 0 {
		return 0, 0, fmt.Errorf("%s %s: no LUTs or flip-flops found in stat:\n%s", m, tag, stat)
	}
	return luts, ffs, nil
}

// countCells sums the cells of a yosys stat report whose type matches the
// LUT and flip-flop patterns.
func countCells(stat, lutPat, ffPat string) (luts, ffs int) {
	lutRE, ffRE := regexp.MustCompile(lutPat), regexp.MustCompile(ffPat)
	for _, c := range cellRE.FindAllStringSubmatch(stat, -1) {
		n, _ := strconv.Atoi(c[2])
		switch {
		case lutRE.MatchString(c[1]):
			luts += n
		case ffRE.MatchString(c[1]):
			ffs += n
		}
	}
	return luts, ffs
}

var ltpRE = regexp.MustCompile(`Longest topological path in \S+ \(length=(\d+)\)`)

// depth is the number of k-input LUT levels on the longest register-to-
// register (or port) path after generic synthesis and ABC LUT mapping.
func depth(out, m string, k int) (int, error) {
	name := fmt.Sprintf("%s_depth_lut%d", m, k)
	_, err := yosys(out, name, fmt.Sprintf("read_verilog hw/rtl/%s.v; synth -flatten -top %s; abc -lut %d; tee -o %s ltp -noff",
		m, m, k, filepath.Join(out, name+".ltp")))
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(filepath.Join(out, name+".ltp"))
	if err != nil {
		return 0, err
	}
	mm := ltpRE.FindStringSubmatch(string(b))
	if mm == nil {
		return 0, fmt.Errorf("%s: ltp printed no path length", name)
	}
	// ltp counts nodes on the path; the flip-flop (or port) it starts from is one.
	n, _ := strconv.Atoi(mm[1])
	return n - 1, nil
}

var (
	fmaxRE = regexp.MustCompile(`Max frequency for clock '[^']*': ([0-9.]+) MHz`)
	lcRE   = regexp.MustCompile(`ICESTORM_LC:\s+(\d+/\s*\d+)`)
)

func placeRoute(out, m string) (pnrResult, error) {
	res := pnrResult{module: m}
	json := filepath.Join(out, m+"_ice40.json")
	if _, err := yosys(out, m+"_ice40_pnr", fmt.Sprintf("read_verilog hw/rtl/%s.v; synth_ice40 -top %s -json %s", m, m, json)); err != nil {
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
	b.WriteString("| Module | Xilinx LUTs | Xilinx FFs | LUT6 depth | iCE40 LUT4s | iCE40 FFs | LUT4 depth |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %d | %d | %d | %d | %d | %d |\n", r.module, r.xLUT, r.xFF, r.xDepth, r.iLUT, r.iFF, r.iDepth)
	}
	if len(pnrs) > 0 {
		b.WriteString("\nnextpnr-ice40, HX8K (ct256), unconstrained pins, seed 1:\n\n| Module | Logic cells | Fmax |\n|---|---:|---:|\n")
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
