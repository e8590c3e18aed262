package sim

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// Model is a block's cycle model seen through its vector layout.
type Model interface {
	// Step writes to out the outputs the block shows during this cycle, given
	// this cycle's inputs, then takes the rising clock edge.
	Step(in, out []uint32)
}

// Driver makes the stimulus. It is closed-loop over the model: Observe sees
// each cycle's inputs and the model's outputs (for example whether a beat
// was accepted), and the RTL gets exactly the same inputs.
type Driver interface {
	Next(in []uint32)
	Observe(in, out []uint32)
}

// Bench is everything the harness needs to co-simulate one block.
type Bench struct {
	Module    *gen.Module
	Layout    Layout
	NewModel  func() (Model, error)
	NewDriver func(seed uint64) Driver
	// Tap, if set, sees every cycle's inputs and the RTL's outputs after they
	// matched the model (for end-to-end checks of what the RTL produced).
	Tap func(in, got []uint32)
}

// NewBench builds the bench of module m.
func NewBench(m *gen.Module, model func() (Model, error), driver func(seed uint64) Driver) *Bench {
	return &Bench{Module: m, Layout: LayoutOf(m), NewModel: model, NewDriver: driver}
}

// Mismatch is a difference between the RTL and the model.
type Mismatch struct {
	Block    string
	Seed     uint64
	Cycle    uint64
	Port     string
	Want     string
	Got      string
	Inputs   string // that cycle's inputs
	Waveform string // VCD of the cycles around the mismatch ("" if it could not be written)
	TraceErr error  // why not
}

func (m *Mismatch) Error() string {
	s := fmt.Sprintf("%s: seed %d cycle %d: port %s: expected %s, got %s\n  inputs: %s",
		m.Block, m.Seed, m.Cycle, m.Port, m.Want, m.Got, m.Inputs)
	if m.Waveform != "" {
		s += "\n  waveform: " + m.Waveform
	}
	if m.TraceErr != nil {
		s += "\n  no waveform: " + m.TraceErr.Error()
	}
	return s
}

// Stats reports a run.
type Stats struct {
	Cycles  uint64
	Elapsed time.Duration
	// Accepted counts, per input port name ending in "tvalid", the cycles in
	// which that stream's beat was accepted (tvalid and the matching tready).
	Accepted map[string]uint64
	// Emitted counts, per output port name ending in "tvalid", the cycles in
	// which the block's beat on that stream was taken.
	Emitted map[string]uint64
}

// CyclesPerSecond is the co-simulation speed, checks included.
func (s Stats) CyclesPerSecond() float64 { return float64(s.Cycles) / s.Elapsed.Seconds() }

// BatchCycles is how many cycles one C++ call runs.
const BatchCycles = 8192

// loadFor loads module's co-simulation library (not the trace build) and
// checks that it was built for layout l.
func loadFor(module string, l Layout) (*Lib, error) {
	lib, err := Load(LibPath(module, false))
	if err != nil {
		return nil, err
	}
	if lib.InWords != l.InWords || lib.OutWords != l.OutWords {
		return nil, fmt.Errorf("%w: %s has %d/%d words per cycle, the module %d/%d: rebuild it", ErrLibrary,
			lib.Path, lib.InWords, lib.OutWords, l.InWords, l.OutWords)
	}
	return lib, nil
}

// RunRTL simulates cycles cycles of module m's co-simulation library with
// drv closed over the RTL's own outputs (no cycle model: drv checks the
// RTL against a transaction-level reference). It stops early when stop,
// if not nil, reports true after a cycle.
func RunRTL(m *gen.Module, drv Driver, cycles uint64, stop func() bool) (Stats, error) {
	st := Stats{Accepted: map[string]uint64{}, Emitted: map[string]uint64{}}
	l := LayoutOf(m)
	lib, err := loadFor(m.Name, l)
	if err != nil {
		return st, err
	}
	inst := lib.New()
	defer inst.Close()
	in, out := make([]uint32, l.InWords), make([]uint32, l.OutWords)
	start := time.Now()
	for st.Cycles < cycles {
		drv.Next(in)
		if err := inst.Run(in, out); err != nil {
			return st, err
		}
		drv.Observe(in, out)
		st.Cycles++
		if stop != nil && stop() {
			break
		}
	}
	st.Elapsed = time.Since(start)
	return st, nil
}

// portSet looks ports up by name, keeping the first error.
type portSet struct {
	l   Layout
	err error
}

func (s *portSet) in(name string) Port  { return s.get(name, true) }
func (s *portSet) out(name string) Port { return s.get(name, false) }
func (s *portSet) get(name string, in bool) Port {
	var p Port
	var err error
	if in {
		p, err = s.l.In(name)
	} else {
		p, err = s.l.Out(name)
	}
	if err != nil && s.err == nil {
		s.err = err
	}
	return p
}

type batch struct {
	in, want []uint32
	first    uint64
	n        int
}

// Run co-simulates cycles cycles of block b from seed: the RTL (the library
// at LibPath(name)) and the model get identical inputs and every output of
// every cycle is compared. Stimulus generation (Go) and simulation (C++) of
// consecutive batches overlap. A difference returns a *Mismatch.
func (b *Bench) Run(seed, cycles uint64) (Stats, error) {
	st := Stats{Accepted: map[string]uint64{}, Emitted: map[string]uint64{}}
	lib, err := loadFor(b.Module.Name, b.Layout)
	if err != nil {
		return st, err
	}
	model, err := b.NewModel()
	if err != nil {
		return st, err
	}
	drv := b.NewDriver(seed)
	inst := lib.New()
	defer inst.Close()

	iw, ow := b.Layout.InWords, b.Layout.OutWords
	free := make(chan *batch, 3)
	for i := 0; i < 3; i++ {
		free <- &batch{in: make([]uint32, BatchCycles*iw), want: make([]uint32, BatchCycles*ow)}
	}
	full := make(chan *batch, 2)
	stop := make(chan struct{})
	valids, emits := acceptPairs(b.Layout)
	accepted, emitted := make([]uint64, len(valids)), make([]uint64, len(emits))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // stimulus, expected outputs and the counts
		defer wg.Done()
		defer close(full)
		for first := uint64(0); first < cycles; first += BatchCycles {
			var bt *batch
			select {
			case bt = <-free:
			case <-stop:
				return
			}
			bt.first, bt.n = first, int(min(BatchCycles, cycles-first))
			for c := 0; c < bt.n; c++ {
				in, want := bt.in[c*iw:(c+1)*iw], bt.want[c*ow:(c+1)*ow]
				drv.Next(in)
				model.Step(in, want)
				drv.Observe(in, want)
				// Counted on the model's outputs: a run that returns without
				// a mismatch had the RTL's equal to them on every cycle.
				for i, v := range valids {
					if in[v.valid.Offset] != 0 && want[v.ready.Offset] != 0 {
						accepted[i]++
					}
				}
				for i, v := range emits {
					if want[v.valid.Offset] != 0 && in[v.ready.Offset] != 0 {
						emitted[i]++
					}
				}
			}
			full <- bt
		}
	}()
	finish := func() {
		close(stop)
		for range full {
		}
		wg.Wait()
	}
	got := make([]uint32, ow)
	start := time.Now()
	for bt := range full {
		c, err := inst.RunCheck(bt.in[:bt.n*iw], bt.want, got)
		if err != nil {
			finish()
			return st, err
		}
		if c >= 0 {
			finish()
			return st, b.mismatch(seed, bt.first+uint64(c), bt.in[c*iw:(c+1)*iw], bt.want[c*ow:(c+1)*ow], got)
		}
		if b.Tap != nil { // the RTL's outputs are the expected ones
			for c := 0; c < bt.n; c++ {
				b.Tap(bt.in[c*iw:(c+1)*iw], bt.want[c*ow:(c+1)*ow])
			}
		}
		st.Cycles += uint64(bt.n)
		free <- bt
	}
	st.Elapsed = time.Since(start)
	finish()
	for i, v := range valids {
		st.Accepted[v.valid.Name] = accepted[i]
	}
	for i, v := range emits {
		st.Emitted[v.valid.Name] = emitted[i]
	}
	return st, nil
}

type acceptPair struct{ valid, ready Port }

// acceptPairs finds the input streams (xxx_tvalid in, xxx_tready out) and
// the output streams (xxx_tvalid out, xxx_tready in).
func acceptPairs(l Layout) (ins, outs []acceptPair) {
	for _, p := range l.Inputs {
		if n := len(p.Name); n > 6 && p.Name[n-6:] == "tvalid" {
			if r, err := l.Out(p.Name[:n-6] + "tready"); err == nil {
				ins = append(ins, acceptPair{p, r})
			}
		}
	}
	for _, p := range l.Outputs {
		if n := len(p.Name); n > 6 && p.Name[n-6:] == "tvalid" {
			if r, err := l.In(p.Name[:n-6] + "tready"); err == nil {
				outs = append(outs, acceptPair{p, r})
			}
		}
	}
	return ins, outs
}

// mismatch describes the first output port of cycle that differs.
func (b *Bench) mismatch(seed, cycle uint64, in, want, got []uint32) *Mismatch {
	m := &Mismatch{Block: b.Module.Name, Seed: seed, Cycle: cycle, Inputs: Describe(b.Layout.Inputs, in)}
	for _, p := range b.Layout.Outputs {
		if m.Port == "" && !slices.Equal(want[p.Offset:p.Offset+p.Words], got[p.Offset:p.Offset+p.Words]) {
			m.Port, m.Want, m.Got = p.Name, p.Hex(want), p.Hex(got)
		}
	}
	m.Waveform, m.TraceErr = b.Trace(seed, cycle)
	return m
}

// TraceWindow is how many cycles before a mismatch the waveform shows.
const TraceWindow = 64

// Trace replays the stimulus of seed up to a few cycles past cycle through
// the --trace build of the block and writes the window around cycle as a VCD
// file under build/hw/sim/fail/. It returns the file's path.
func (b *Bench) Trace(seed, cycle uint64) (string, error) {
	if err := Build(LibPath(b.Module.Name, true)); err != nil {
		return "", err
	}
	lib, err := Load(LibPath(b.Module.Name, true))
	if err != nil {
		return "", err
	}
	model, err := b.NewModel()
	if err != nil {
		return "", err
	}
	drv := b.NewDriver(seed)
	end := cycle + 8
	iw, ow := b.Layout.InWords, b.Layout.OutWords
	in := make([]uint32, int(end)*iw)
	out := make([]uint32, int(end)*ow)
	for c := 0; c < int(end); c++ {
		drv.Next(in[c*iw : (c+1)*iw])
		model.Step(in[c*iw:(c+1)*iw], out[c*ow:(c+1)*ow])
		drv.Observe(in[c*iw:(c+1)*iw], out[c*ow:(c+1)*ow])
	}
	from := uint64(0)
	if cycle > TraceWindow {
		from = cycle - TraceWindow
	}
	dir := filepath.Join(RepoRoot(), "build", "hw", "sim", "fail")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-seed%d-cycle%d.vcd", b.Module.Name, seed, cycle))
	inst := lib.New()
	defer inst.Close()
	if err := inst.Run(in[:int(from)*iw], out); err != nil {
		return "", err
	}
	if err := inst.TraceOpen(path); err != nil {
		return "", err
	}
	err = inst.Run(in[int(from)*iw:], out)
	inst.TraceClose()
	return path, err
}

// LibPath is where mk/hw.mk builds the co-simulation library of a module.
func LibPath(module string, trace bool) string {
	dir := filepath.Join(RepoRoot(), "build", "hw", "sim")
	if trace {
		dir = filepath.Join(dir, "trace")
	}
	return filepath.Join(dir, "lib"+module+".so")
}

// Build runs make for the given files (absolute paths under the
// repository). It holds an exclusive lock on build/hw/sim/.build.lock
// meanwhile, so that test processes run at once (go test ./... runs
// packages in parallel: hw/sim and host/driver/simcard both build the
// card's library) never verilate the same library together.
func Build(targets ...string) error {
	root := RepoRoot()
	unlock, err := lockBuild(filepath.Join(root, "build", "hw", "sim"))
	if err != nil {
		return err
	}
	defer unlock()
	args := []string{"-C", root, "--no-print-directory", "-j2"}
	for _, t := range targets {
		rel, err := filepath.Rel(root, t)
		if err != nil {
			return err
		}
		args = append(args, rel)
	}
	cmd := exec.Command("make", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: make %v: %v\n%s", ErrLibrary, targets, err, out)
	}
	return nil
}

// lockBuild takes the exclusive lock on dir/.build.lock, saying so on
// stderr when another process holds it (its build may take minutes), and
// returns the function that releases it.
func lockBuild(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLibrary, err)
	}
	path := filepath.Join(dir, ".build.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLibrary, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		fmt.Fprintf(os.Stderr, "hw/sim: waiting for another process building co-simulation libraries (%s)\n", path)
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("%w: locking %s: %v", ErrLibrary, path, err)
		}
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}

var (
	rootOnce sync.Once
	root     string
)

// RepoRoot is the directory holding go.mod, found from the working directory
// (tests run in their package's directory).
func RepoRoot() string {
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			root = "."
			return
		}
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				root = d
				return
			}
			if filepath.Dir(d) == d {
				root = dir
				return
			}
		}
	})
	return root
}

// IsMismatch reports whether err is a co-simulation mismatch.
func IsMismatch(err error) bool {
	var m *Mismatch
	return errors.As(err, &m)
}
