package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// A block's ports outnumber an iCE40's pins (mpa_tx_w64 has more than 250
// signals, an HX8K in ct256 has 206 I/Os), so place and route runs on a
// measurement wrapper: every input of the block comes from a shift
// register fed by one pin, every output is loaded into a shift register
// read out on one pin. The wrapper adds only one-LUT paths between
// flip-flops, so the Fmax nextpnr reports is the block's own.

type port struct {
	in   bool
	name string
	w    int
}

var portRE = regexp.MustCompile(`(?m)^\s*(input|output)\s+wire\s+(?:\[(\d+):0\]\s+)?(\w+)`)

// modulePorts reads the port list of a generated Verilog module.
func modulePorts(src string) []port {
	hdr := src
	if i := strings.Index(hdr, "\nmodule "); i >= 0 {
		hdr = hdr[i:]
	}
	if i := strings.Index(hdr, "\n);"); i >= 0 {
		hdr = hdr[:i]
	}
	var ps []port
	for _, mm := range portRE.FindAllStringSubmatch(hdr, -1) {
		w := 1
		if mm[2] != "" {
			hi, _ := strconv.Atoi(mm[2])
			w = hi + 1
		}
		ps = append(ps, port{in: mm[1] == "input", name: mm[3], w: w})
	}
	return ps
}

// wrapper is the Verilog of module <m>_pnr around m (clk, din, dout).
func wrapper(m string, ports []port) (string, error) {
	nIn, nOut := 0, 0
	for _, p := range ports {
		if p.name == "clk" {
			continue
		}
		if p.in {
			nIn += p.w
		} else {
			nOut += p.w
		}
	}
	if nIn == 0 || nOut == 0 {
		return "", fmt.Errorf("%s: no inputs or no outputs besides clk", m)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Place-and-route wrapper of %s written by fpga/synth (not part of the design).\n", m)
	fmt.Fprintf(&b, "module %s_pnr (input wire clk, input wire din, output wire dout);\n", m)
	fmt.Fprintf(&b, "  reg [%d:0] si;\n  always @(posedge clk) si <= {si[%d:0], din};\n", nIn, nIn-1)
	fmt.Fprintf(&b, "  wire [%d:0] so_d;\n  reg [%d:0] so;\n", nOut-1, nOut-1)
	fmt.Fprintf(&b, "  always @(posedge clk) so <= si[%d] ? so_d : {1'b0, so[%d:1]};\n  assign dout = so[0];\n", nIn, max(nOut-1, 1))
	fmt.Fprintf(&b, "  %s dut (\n", m)
	in, out := 0, 0
	var conns []string
	for _, p := range ports {
		switch {
		case p.name == "clk":
			conns = append(conns, "    .clk(clk)")
		case p.in:
			conns = append(conns, fmt.Sprintf("    .%s(si[%d:%d])", p.name, in+p.w-1, in))
			in += p.w
		default:
			conns = append(conns, fmt.Sprintf("    .%s(so_d[%d:%d])", p.name, out+p.w-1, out))
			out += p.w
		}
	}
	b.WriteString(strings.Join(conns, ",\n") + "\n  );\nendmodule\n")
	return b.String(), nil
}

// writeWrapper writes the wrapper of hw/rtl/<m>.v into dir.
func writeWrapper(dir, m string) (string, error) {
	src, err := os.ReadFile("hw/rtl/" + m + ".v")
	if err != nil {
		return "", err
	}
	v, err := wrapper(m, modulePorts(string(src)))
	if err != nil {
		return "", err
	}
	path := dir + "/" + m + "_pnr.v"
	return path, os.WriteFile(path, []byte(v), 0o644)
}
