package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// ErrGHDL is wrapped by a failed GHDL run.
var ErrGHDL = errors.New("sim: GHDL run failed")

// WriteVectors writes the stimulus of seed and the model's expected outputs
// for cycles cycles in the format of gen.WriteVHDLTestbench.
func (b *Bench) WriteVectors(w io.Writer, seed, cycles uint64) error {
	model, err := b.NewModel()
	if err != nil {
		return err
	}
	drv := b.NewDriver(seed)
	in := make([]uint32, b.Layout.InWords)
	out := make([]uint32, b.Layout.OutWords)
	rec := newVectorRecorder(w, b.Layout)
	for c := uint64(0); c < cycles; c++ {
		drv.Next(in)
		model.Step(in, out)
		drv.Observe(in, out)
		if err := rec.record(in, out); err != nil {
			return err
		}
	}
	return rec.flush()
}

// vectorRecorder writes cycles in the GHDL test bench's vector format
// (gen.WriteVHDLTestbench): each port of the layout's inputs then outputs
// as hex, one line per cycle.
type vectorRecorder struct {
	w    *bufio.Writer
	l    Layout
	line []byte
}

func newVectorRecorder(w io.Writer, l Layout) *vectorRecorder {
	return &vectorRecorder{w: bufio.NewWriterSize(w, 1<<16), l: l, line: make([]byte, 0, 1024)}
}

// record writes one cycle: its inputs and the outputs they gave (nothing
// on a nil recorder: a run that records nothing).
func (r *vectorRecorder) record(in, out []uint32) error {
	if r == nil {
		return nil
	}
	r.line = r.line[:0]
	for _, p := range r.l.Inputs {
		r.line = appendHex(r.line, p, in)
	}
	for _, p := range r.l.Outputs {
		r.line = appendHex(r.line, p, out)
	}
	r.line[len(r.line)-1] = '\n'
	_, err := r.w.Write(r.line)
	return err
}

func (r *vectorRecorder) flush() error {
	if r == nil {
		return nil
	}
	return r.w.Flush()
}

// appendHex appends port p of vec as gen.HexDigits(W) hex digits and a space.
func appendHex(dst []byte, p Port, vec []uint32) []byte {
	const digits = "0123456789abcdef"
	for d := gen.HexDigits(p.Width) - 1; d >= 0; d-- {
		nib := vec[p.Offset+d/8] >> (4 * (d % 8)) & 0xF
		dst = append(dst, digits[nib])
	}
	return append(dst, ' ')
}

// GHDLResult is what a GHDL run reported.
type GHDLResult struct {
	Cycles int    // cycles the test bench checked
	Output string // its console output
}

var passRE = regexp.MustCompile(`PASS: (\d+) cycles`)

// RunGHDL runs the committed VHDL of the block (hw/rtl/<name>.vhd, after
// that of every block it instantiates) under its
// generated self-checking test bench on the vector file at vectors, in dir.
func (b *Bench) RunGHDL(dir, vectors string) (GHDLResult, error) {
	var res GHDLResult
	name := b.Module.Name
	tbPath := filepath.Join(dir, name+"_tb.vhd")
	tb, err := gen.Render(tbPath, func(w io.Writer) error { return gen.WriteVHDLTestbench(w, b.Module) })
	if err != nil {
		return res, err
	}
	if err := os.WriteFile(tbPath, tb.Data, 0o644); err != nil {
		return res, err
	}
	work := "--workdir=" + dir
	var steps [][]string
	// The blocks the module instantiates first, each once, leaves first.
	seen := map[string]bool{}
	var add func(m *gen.Module)
	add = func(m *gen.Module) {
		if seen[m.Name] {
			return
		}
		seen[m.Name] = true
		for _, in := range m.Instances {
			add(in.Of)
		}
		steps = append(steps, []string{"-a", "--std=08", work, filepath.Join(RepoRoot(), "hw", "rtl", m.Name+".vhd")})
	}
	add(b.Module)
	steps = append(steps, [][]string{
		{"-a", "--std=08", work, tbPath},
		{"-e", "--std=08", work, name + "_tb"},
		{"-r", "--std=08", work, name + "_tb", "-gvectors=" + vectors, "--ieee-asserts=disable-at-0"}, // registers without reset are U until loaded
	}...)
	for _, args := range steps {
		cmd := exec.Command("ghdl", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		res.Output = string(out)
		if err != nil {
			return res, fmt.Errorf("%w: ghdl %s: %v\n%s", ErrGHDL, strings.Join(args, " "), err, out)
		}
	}
	m := passRE.FindStringSubmatch(res.Output)
	if m == nil {
		return res, fmt.Errorf("%w: the test bench did not report PASS:\n%s", ErrGHDL, res.Output)
	}
	res.Cycles, _ = strconv.Atoi(m[1])
	return res, nil
}
