package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// The logic-depth report: after generic synthesis and ABC's LUT mapping,
// the netlist (yosys write_json) is walked in Go, giving every register
// (and output port) the number of LUT levels in front of it and the path
// that has them, named by the design's own wires. yosys's ltp gives only
// the longest path of the whole design; pipelining needs every path above
// a budget.

// netlist is the part of yosys's JSON netlist the walk needs.
type netlist struct {
	Modules map[string]struct {
		Ports map[string]struct {
			Direction string `json:"direction"`
			Bits      []any  `json:"bits"`
		} `json:"ports"`
		Cells map[string]struct {
			Type        string           `json:"type"`
			Connections map[string][]any `json:"connections"`
		} `json:"cells"`
		Netnames map[string]struct {
			HideName int   `json:"hide_name"`
			Bits     []any `json:"bits"`
		} `json:"netnames"`
	} `json:"modules"`
}

// endpoint is one register (all its bits) or output port and the deepest
// LUT path into it.
type endpoint struct {
	Name  string
	Depth int
	Path  []string // named nets along the path, start first
}

// ffType matches yosys's fine-grained flip-flop cells ($_DFF_P_,
// $_SDFFE_PP0P_, $_DFFE_PN0P_, ...).
var ffType = regexp.MustCompile(`^\$_(S|A)?(DFF|DFFE|SDFF|SDFFE|SDFFCE|DFFSR|DFFSRE|ALDFF|ALDFFE|DLATCH)_`)

// bitID is a net bit's number; constants ("0", "1", "x") get none.
func bitID(v any) (int, bool) {
	f, ok := v.(float64)
	return int(f), ok
}

// bitIDs appends the numbered bits of conn to to (constants left out).
func bitIDs(to []int, conn []any) []int {
	for _, a := range conn {
		if b, ok := bitID(a); ok {
			to = append(to, b)
		}
	}
	return to
}

// levels reads a LUT-mapped JSON netlist of module top and returns every
// endpoint whose deepest input path has at least min LUT levels, deepest
// first.
func levels(r io.Reader, top string, min int) ([]endpoint, error) {
	var nl netlist
	if err := json.NewDecoder(r).Decode(&nl); err != nil {
		return nil, fmt.Errorf("netlist: %w", err)
	}
	mod, ok := nl.Modules[top]
	if !ok {
		return nil, fmt.Errorf("netlist has no module %q", top)
	}
	// Names of bits, preferring the design's own (visible) names.
	bitName := map[int]string{}
	// Maps are walked in key order throughout, so that of equally deep
	// paths and equally good names the same one is reported every run.
	for _, n := range slices.Sorted(maps.Keys(mod.Netnames)) {
		nn := mod.Netnames[n]
		for i, v := range nn.Bits {
			b, ok := bitID(v)
			if !ok {
				continue
			}
			full := n
			if len(nn.Bits) > 1 {
				full = fmt.Sprintf("%s[%d]", n, i)
			}
			old, had := bitName[b]
			if !had || (nn.HideName == 0 && (strings.HasPrefix(old, "$") || len(full) < len(old))) {
				bitName[b] = full
			}
		}
	}
	// Each LUT output bit: its input bits.
	lutIn := map[int][]int{}
	type sink struct {
		name string
		bits []int
	}
	var sinks []sink
	for _, cname := range slices.Sorted(maps.Keys(mod.Cells)) {
		c := mod.Cells[cname]
		switch {
		case c.Type == "$lut":
			y, ok := bitID(c.Connections["Y"][0])
			if !ok {
				continue
			}
			lutIn[y] = bitIDs(nil, c.Connections["A"])
		case ffType.MatchString(c.Type):
			var in []int
			for _, port := range slices.Sorted(maps.Keys(c.Connections)) {
				if port != "Q" && port != "C" {
					in = bitIDs(in, c.Connections[port])
				}
			}
			name := cname
			if q, ok := bitID(c.Connections["Q"][0]); ok {
				name = stripIndex(bitName[q])
			}
			sinks = append(sinks, sink{name, in})
		case c.Type == "$mem_v2" || c.Type == "$mem":
			// A memory (left unmapped: its read port is synchronous) ends
			// the paths into its ports and starts the paths from its read data.
			var in []int
			for _, port := range slices.Sorted(maps.Keys(c.Connections)) {
				if port != "RD_DATA" && !strings.HasSuffix(port, "_CLK") {
					in = bitIDs(in, c.Connections[port])
				}
			}
			name := cname
			if i := strings.LastIndex(name, "$"); i >= 0 { // yosys names a memory cell after its memory
				name = name[i+1:]
			}
			sinks = append(sinks, sink{name, in})
		case strings.HasPrefix(c.Type, "$"):
			return nil, fmt.Errorf("netlist: cell %s of type %s is neither a LUT nor a flip-flop (map with abc -lut first)", cname, c.Type)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(mod.Ports)) {
		pt := mod.Ports[p]
		if pt.Direction == "output" {
			sinks = append(sinks, sink{p, bitIDs(nil, pt.Bits)})
		}
	}
	depth := map[int]int{}
	from := map[int]int{}
	var walk func(b int) int
	walk = func(b int) int {
		if d, ok := depth[b]; ok {
			return d
		}
		in, isLUT := lutIn[b]
		if !isLUT {
			depth[b] = 0
			return 0
		}
		depth[b] = 0 // a combinational loop would recurse forever
		best, arg := 0, -1
		for _, a := range in {
			if d := walk(a); arg < 0 || d > best {
				best, arg = d, a
			}
		}
		depth[b], from[b] = best+1, arg
		return best + 1
	}
	byName := map[string]*endpoint{}
	for _, s := range sinks {
		for _, b := range s.bits {
			d := walk(b)
			e := byName[s.name]
			if e == nil {
				e = &endpoint{Name: s.name, Depth: -1}
				byName[s.name] = e
			}
			if d > e.Depth {
				e.Depth = d
				e.Path = tracePath(b, from, bitName)
			}
		}
	}
	var out []endpoint
	for _, e := range byName {
		if e.Depth >= min {
			out = append(out, *e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Depth != out[j].Depth {
			return out[i].Depth > out[j].Depth
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// tracePath lists the visible names along the deepest path into bit b.
func tracePath(b int, from map[int]int, bitName map[int]string) []string {
	var rev []string
	for {
		n := bitName[b]
		if n != "" && !strings.HasPrefix(n, "$") && (len(rev) == 0 || rev[len(rev)-1] != n) {
			rev = append(rev, n)
		}
		p, ok := from[b]
		if !ok {
			break
		}
		b = p
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

var indexRE = regexp.MustCompile(`\[\d+\]$`)

func stripIndex(s string) string { return indexRE.ReplaceAllString(s, "") }

// levelsOf synthesises module m from directory rtl (generic synthesis,
// ABC mapping to k-input LUTs) and returns its endpoints with at least min
// levels, deepest first.
func levelsOf(out, rtl, m string, k, min int) ([]endpoint, error) {
	js := filepath.Join(out, fmt.Sprintf("%s_levels_lut%d.json", m, k))
	if _, err := yosys(out, fmt.Sprintf("%s_levels_lut%d", m, k), fmt.Sprintf(
		"%s; %s; abc -lut %d; opt_clean; write_json %s", readRTL(rtl, m), genericSynth(m), k, js)); err != nil {
		return nil, err
	}
	f, err := os.Open(js)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	eps, err := levels(f, m, min)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m, err)
	}
	return eps, nil
}

// readRTL reads module m from directory rtl, and the modules it
// instantiates from hw/rtl.
func readRTL(rtl, m string) string {
	return fmt.Sprintf("read_verilog %s/%s.v; hierarchy -libdir hw/rtl -top %s", rtl, m, m)
}

// depthReport prints every endpoint of module m with at least min LUT6
// levels, and the named wires along its deepest path.
func depthReport(out, rtl, m string, min int, w io.Writer) error {
	eps, err := levelsOf(out, rtl, m, 6, min)
	if err != nil {
		return err
	}
	for _, e := range eps {
		fmt.Fprintf(w, "%3d %-32s %s\n", e.Depth, e.Name, strings.Join(e.Path, " > "))
	}
	return nil
}

// genericSynth is yosys's generic synth script for module m with its
// memories left as memory cells (synth's own fine stage would turn each
// into flip-flops and multiplexers, slow at block-RAM sizes and not what a
// device builds): the read port's register is merged into the cell, whose
// ports end and start paths as a block RAM's do.
func genericSynth(m string) string {
	return fmt.Sprintf("synth -flatten -top %s -run begin:fine; opt -fast -full; opt -full; techmap; opt -fast", m)
}
