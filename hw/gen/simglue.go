package gen

import (
	"fmt"
	"io"
	"strings"
)

// SimPorts is the order in which a co-simulation packs a module's ports into
// per-cycle vectors: every port but the clock, inputs and outputs apart, in
// declaration order, each in ceil(W/32) little-endian 32-bit words.
func SimPorts(m *Module) (inputs, outputs []*Signal) {
	for _, p := range m.Ports {
		switch {
		case p.Name == "clk":
		case p.Dir == In:
			inputs = append(inputs, p)
		default:
			outputs = append(outputs, p)
		}
	}
	return inputs, outputs
}

// WriteSimGlue writes the C++ header that tells hw/sim's generic Verilator
// wrapper (hw/sim/cxx/block.cpp) the module's class and port list, in the
// order of SimPorts.
func WriteSimGlue(w io.Writer, m *Module) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if m.Port("clk") == nil {
		return fmt.Errorf("%w %s: co-simulation needs a clk port", ErrInvalid, m.Name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// %s: port list for the co-simulation wrapper hw/sim/cxx/block.cpp.\n\n", m.Name)
	fmt.Fprintf(&b, "#define IW_SIM_NAME \"%s\"\n#define IW_SIM_TOP V%s\n\n", m.Name, m.Name)
	ins, outs := SimPorts(m)
	list := func(macro string, ports []*Signal) {
		fmt.Fprintf(&b, "#define %s(X) \\\n", macro)
		for _, p := range ports {
			fmt.Fprintf(&b, "    X(%s, %d) \\\n", p.Name, p.W)
		}
		b.WriteString("    /* end */\n\n")
	}
	list("IW_SIM_INPUTS", ins)
	list("IW_SIM_OUTPUTS", outs)
	_, err := io.WriteString(w, b.String())
	return err
}
