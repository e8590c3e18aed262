// Command iwgen generates openiwarp's RTL from the Go generators in hw/gen:
// Verilog-2005 and VHDL-2008 for every block and data width the project
// ships (hw/rtl), and the port lists the Verilator co-simulation wrapper
// needs (hw/sim/ports).
//
// Usage:
//
//	iwgen [-rtl hw/rtl] [-ports hw/sim/ports] [-check] [-list]
//	iwgen -mpa-rx-probe 16 -rtl DIR
//
// With -check nothing is written: iwgen exits 1 and names every file that
// regenerating would change, add or that should not be there. Run it from
// the repository root (make hw-gen does).
//
// With -mpa-rx-probe N, iwgen writes only mpa_rx_w64.v and mpa_rx_w512.v,
// with an N-beat ULPDU buffer, into the -rtl directory: the builds whose
// logic depth make synth-mpa-rx measures (generic synthesis maps memories
// to flip-flops, which the shipped buffer makes far too slow).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/openiwarp/openiwarp/hw/gen"
	"github.com/openiwarp/openiwarp/internal/cli"
)

func main() { os.Exit(command(os.Args[1:], os.Stdout, os.Stderr)) }

// command is the whole command line: tests call it in-process.
func command(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("iwgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	rtl := fs.String("rtl", "hw/rtl", "directory for the .v and .vhd files")
	ports := fs.String("ports", "hw/sim/ports", "directory for the co-simulation port lists")
	check := fs.Bool("check", false, "compare with the files on disk instead of writing; exit 1 on any difference")
	list := fs.Bool("list", false, "print the module names and exit")
	probe := fs.Int("mpa-rx-probe", 0, "write only mpa_rx at 64 and 512 bits with this many buffer beats (synthesis probes)")
	fs.StringVar(&RegMapRoot, "regmap-root", ".", "repository root for the register-map outputs (docs/regmap.md, host/driver/regs); empty: skip them")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: iwgen [flags]\n\nGenerates the RTL of every openiwarp block from hw/gen.\n\n")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "iwgen: unexpected argument %q (iwgen takes only flags)\n", fs.Arg(0))
		return 2
	}
	if *probe != 0 {
		return writeProbes(*rtl, *probe)
	}
	return run(stdout, *rtl, *ports, *check, *list)
}

func run(out io.Writer, rtl, ports string, check, list bool) int {
	files, err := Files(rtl, ports)
	if err != nil {
		fmt.Fprintln(os.Stderr, "iwgen:", err)
		return 1
	}
	if list {
		for _, f := range files {
			fmt.Fprintln(out, f.Path)
		}
		return 0
	}
	if check {
		diffs, err := Check(files, rtl, ports)
		if err != nil {
			fmt.Fprintln(os.Stderr, "iwgen:", err)
			return 1
		}
		for _, d := range diffs {
			fmt.Fprintln(out, d)
		}
		if len(diffs) > 0 {
			fmt.Fprintln(out, "iwgen: generated files are out of date; run `make hw-gen` and commit")
			return 1
		}
		fmt.Fprintf(out, "iwgen: %d generated files up to date\n", len(files))
		return 0
	}
	for _, f := range files {
		if err := write(f); err != nil {
			fmt.Fprintln(os.Stderr, "iwgen:", err)
			return 1
		}
	}
	fmt.Fprintf(out, "iwgen: wrote %d files\n", len(files))
	return 0
}

func write(f File) error {
	old, err := os.ReadFile(f.Path)
	if err == nil && string(old) == string(f.Data) {
		return nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(f.Path, f.Data, 0o644)
}

// writeProbes writes the mpa_rx synthesis probes (see the package doc).
func writeProbes(dir string, beats int) int {
	for _, w := range []int{64, 512} {
		m, err := gen.MPARxBuffered(w, beats)
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		var f gen.GenFile
		if err == nil {
			f, err = gen.Render(filepath.Join(dir, m.Name+".v"), func(w io.Writer) error { return gen.WriteVerilog(w, m) })
		}
		if err == nil {
			err = os.WriteFile(f.Path, f.Data, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "iwgen:", err)
			return 1
		}
	}
	return 0
}
