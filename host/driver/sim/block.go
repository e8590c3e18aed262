package sim

import (
	"fmt"

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
