package sim

import (
	"fmt"
	"sync/atomic"

	"github.com/openiwarp/openiwarp/hw/gen"
	hwsim "github.com/openiwarp/openiwarp/hw/sim"
)

// port names one port of a Verilated block and where its position goes.
type port struct {
	dst  *hwsim.Port
	name string
	in   bool
}

// loadBlock builds (with make, if needed) and loads the Verilated library
// of m, checks it against the generator's layout and binds ports. Every
// output of the block must be among ports: the sim card compares them all
// with the cycle model, so a block with an output it does not know is
// refused.
func loadBlock(m *gen.Module, ports []port) (*hwsim.Lib, hwsim.Layout, error) {
	layout := hwsim.LayoutOf(m)
	path := hwsim.LibPath(m.Name, false)
	if err := hwsim.Build(path); err != nil {
		return nil, layout, fmt.Errorf("building the Verilated %s (make, verilator and g++ are needed): %w", m.Name, err)
	}
	lib, err := hwsim.Load(path)
	if err != nil {
		return nil, layout, err
	}
	if lib.InWords != layout.InWords || lib.OutWords != layout.OutWords {
		return nil, layout, fmt.Errorf("%w: %s has %d/%d words per cycle, the generator %d/%d: rebuild it",
			hwsim.ErrLibrary, path, lib.InWords, lib.OutWords, layout.InWords, layout.OutWords)
	}
	outputs := 0
	for _, p := range ports {
		if p.in {
			*p.dst, err = layout.In(p.name)
		} else {
			*p.dst, err = layout.Out(p.name)
			outputs++
		}
		if err != nil {
			return nil, layout, fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	if len(layout.Outputs) != outputs {
		return nil, layout, fmt.Errorf("%s has %d outputs; the sim card checks exactly %d", m.Name, len(layout.Outputs), outputs)
	}
	return lib, layout, nil
}

// portWant is one output port's expected value in one cycle.
type portWant struct {
	p    hwsim.Port
	want uint64
}

// vectors holds the recorded cycles of one Verilated instance: its input
// and output vectors, a cycle's data port as octets, and the count of cycles
// checked so far, for naming a mismatch and for the card's counters.
type vectors struct {
	block   string         // the module, for errors
	checked *atomic.Uint64 // the card's count of checked cycles
	cycle   uint64         // cycles checked before this run
	in, out []uint32
	wants   []portWant
	got     []byte
}

// check runs n recorded cycles through inst (set fills cycle c's input
// vector) and compares every output of every cycle with the model's:
// wants(c, dst) appends cycle c's expected scalar ports to dst, and the
// data port must show wdata's octets of cycle c. The first difference is
// an error wrapping ErrMismatch that names the block, cycle and port; a
// clean run adds its cycles to the counts.
func (v *vectors) check(inst *hwsim.Instance, l hwsim.Layout, n int, set func(c int, in []uint32),
	wants func(c int, dst []portWant) []portWant, data hwsim.Port, wdata []byte) error {
	iw, ow := l.InWords, l.OutWords
	if cap(v.in) < n*iw || cap(v.out) < n*ow {
		v.in, v.out = make([]uint32, n*iw), make([]uint32, n*ow)
	}
	v.in, v.out = v.in[:n*iw], v.out[:n*ow]
	clear(v.in)
	for c := range n {
		set(c, v.in[c*iw:(c+1)*iw])
	}
	if err := inst.Run(v.in, v.out); err != nil {
		return err
	}
	mismatch := func(c int, port, want, got string) error {
		return fmt.Errorf("%w: %s cycle %d: port %s: expected %s, got %s", ErrMismatch, v.block, v.cycle+uint64(c), port, want, got)
	}
	lanes := data.Width / 8
	if len(v.got) != lanes {
		v.got = make([]byte, lanes)
	}
	for c := range n {
		got := v.out[c*ow : (c+1)*ow]
		v.wants = wants(c, v.wants[:0])
		for _, w := range v.wants {
			if g := w.p.Get(got); g != w.want {
				return mismatch(c, w.p.Name, fmt.Sprintf("%#x", w.want), fmt.Sprintf("%#x", g))
			}
		}
		data.Bytes(got, v.got)
		if wd := wdata[c*lanes : (c+1)*lanes]; string(wd) != string(v.got) {
			return mismatch(c, data.Name, fmt.Sprintf("%x", wd), fmt.Sprintf("%x", v.got))
		}
	}
	v.cycle += uint64(n)
	v.checked.Add(uint64(n))
	totalCycles.Add(uint64(n))
	return nil
}
