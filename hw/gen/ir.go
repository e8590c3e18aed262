// Package gen is openiwarp's HDL generator: a small intermediate
// representation (IR) of synchronous hardware, two emitters (Verilog-2005 and
// VHDL-2008) and the block generators that build the card's data path.
//
// Blocks are ordinary Go functions that build a *Module: ports, wires,
// registers (with enable and synchronous reset), memories (inferred as block
// RAM), combinational expressions and instances of other modules. Nothing
// about a block's behaviour lives in a string template; the emitters only
// print the IR.
//
// Conventions shared by every module: one clock "clk" (rising edge), one
// synchronous active-high reset "rst", AXI-Stream port names in the style of
// Corundum (s_axis_* in, m_axis_* out).
package gen

import (
	"errors"
	"fmt"
	"math/big"
)

// ErrInvalid is wrapped by every error about a malformed module.
var ErrInvalid = errors.New("gen: invalid module")

// Dir is the direction of a port.
type Dir int

// Port directions.
const (
	In Dir = iota
	Out
)

func (d Dir) String() string {
	if d == In {
		return "input"
	}
	return "output"
}

// Kind says what declares a signal.
type Kind int

// Signal kinds.
const (
	KindPort  Kind = iota // a module port (driven by an Assign when it is an output)
	KindWire              // driven by exactly one Assign
	KindReg               // driven by exactly one Register
	KindMem               // the registered read data of a Memory
	KindParam             // a named constant (localparam / VHDL constant)
)

// Signal is a named bit vector: a port, a wire or a register.
type Signal struct {
	Name    string
	W       int
	Kind    Kind
	Dir     Dir      // ports only
	Comment string   // one line, printed next to the declaration
	Value   *big.Int // KindParam only
}

// Width implements Expr.
func (s *Signal) Width() int { return s.W }

// Register is a clocked register: on each rising clock edge,
// if rst then Q <= Reset; else if En then Q <= D.
type Register struct {
	Q     *Signal
	D     Expr
	En    Expr     // nil: load every cycle
	Reset *big.Int // nil: not reset
}

// Assign drives a wire or an output port with a combinational expression.
type Assign struct {
	Dst *Signal
	Src Expr
}

// Memory is a simple dual-port RAM with one synchronous write port and one
// synchronous read port (read-first), the shape synthesis tools infer as
// block RAM.
type Memory struct {
	Name    string
	W       int
	Depth   int
	Comment string
	WrEn    Expr
	WrAddr  Expr
	WrData  Expr
	RdEn    Expr // nil: read every cycle
	RdAddr  Expr
	RdData  *Signal
}

// Conn connects an instance port to an expression (inputs) or a signal (outputs).
type Conn struct {
	Port string
	Expr Expr
}

// Instance places another module inside this one.
type Instance struct {
	Name  string
	Of    *Module
	Conns []Conn
}

// Module is one hardware block; it becomes one Verilog file and one VHDL file.
type Module struct {
	Name string
	// Doc says what the block does, one paragraph per element; printed in the
	// header comment of both emitted files.
	Doc []string
	// Spec names the RFC sections the block implements.
	Spec string

	Ports     []*Signal
	Params    []*Signal // named constants
	Signals   []*Signal // wires, registers and memory read data, in declaration order
	Assigns   []Assign
	Registers []Register
	Memories  []*Memory
	Instances []Instance

	names map[string]bool
	errs  []error
}

// NewModule starts an empty module.
func NewModule(name, spec string, doc ...string) *Module {
	m := &Module{Name: name, Spec: spec, Doc: doc, names: map[string]bool{}}
	m.checkName(name)
	return m
}

func (m *Module) errorf(format string, a ...any) {
	m.errs = append(m.errs, fmt.Errorf("%w %s: %s", ErrInvalid, m.Name, fmt.Sprintf(format, a...)))
}

func (m *Module) checkName(name string) {
	if !validIdent(name) {
		m.errorf("name %q is not a portable identifier (lower case letter, then lower case letters, digits, single underscores)", name)
	}
	if reserved[name] {
		m.errorf("name %q is a Verilog or VHDL reserved word", name)
	}
}

func (m *Module) declare(name string, w int, k Kind, comment string) *Signal {
	m.checkName(name)
	if m.names[name] {
		m.errorf("signal %q declared twice", name)
	}
	if w < 1 {
		m.errorf("signal %q has width %d", name, w)
	}
	m.names[name] = true
	return &Signal{Name: name, W: w, Kind: k, Comment: comment}
}

// Input adds an input port.
func (m *Module) Input(name string, w int, comment string) *Signal {
	s := m.declare(name, w, KindPort, comment)
	s.Dir = In
	m.Ports = append(m.Ports, s)
	return s
}

// Output adds an output port; drive it with Assign.
func (m *Module) Output(name string, w int, comment string) *Signal {
	s := m.declare(name, w, KindPort, comment)
	s.Dir = Out
	m.Ports = append(m.Ports, s)
	return s
}

// Clock adds the module's clock input "clk".
func (m *Module) Clock() *Signal { return m.Input("clk", 1, "clock, rising edge") }

// ResetPort adds the module's synchronous active-high reset input "rst".
func (m *Module) ResetPort() *Signal {
	return m.Input("rst", 1, "synchronous reset, active high")
}

// Param declares a named constant of w bits (a Verilog localparam, a VHDL
// constant): generated blocks are specialised per width, so parameters are
// fixed at generation time and named for readability.
func (m *Module) Param(name string, w int, v *big.Int, comment string) *Signal {
	s := m.declare(name, w, KindParam, comment)
	if v == nil || v.Sign() < 0 || v.BitLen() > w {
		m.errorf("parameter %q: value does not fit in %d bits", name, w)
		v = new(big.Int)
	}
	s.Value = new(big.Int).Set(v)
	m.Params = append(m.Params, s)
	return s
}

// Wire declares a combinational signal; drive it with Assign.
func (m *Module) Wire(name string, w int, comment string) *Signal {
	s := m.declare(name, w, KindWire, comment)
	m.Signals = append(m.Signals, s)
	return s
}

// WireOf declares a wire and drives it with e in one step.
func (m *Module) WireOf(name string, e Expr, comment string) *Signal {
	s := m.Wire(name, e.Width(), comment)
	m.Assign(s, e)
	return s
}

// Assign drives dst (a wire or an output port) with e.
func (m *Module) Assign(dst *Signal, e Expr) {
	if dst.Kind == KindReg || dst.Kind == KindMem || dst.Kind == KindParam || (dst.Kind == KindPort && dst.Dir == In) {
		m.errorf("assign to %q, which is not a wire or an output port", dst.Name)
	}
	m.Assigns = append(m.Assigns, Assign{Dst: dst, Src: e})
}

// Reg declares a register with an optional synchronous reset value (nil:
// none) and drives it from d when en is 1 (en nil: every cycle).
func (m *Module) Reg(name string, w int, reset *big.Int, d, en Expr, comment string) *Signal {
	s := m.declare(name, w, KindReg, comment)
	m.Signals = append(m.Signals, s)
	m.Registers = append(m.Registers, Register{Q: s, D: d, En: en, Reset: reset})
	return s
}

// RegDecl declares a register whose input is given later with Drive (for
// feedback paths, where D reads Q).
func (m *Module) RegDecl(name string, w int, comment string) *Signal {
	s := m.declare(name, w, KindReg, comment)
	m.Signals = append(m.Signals, s)
	return s
}

// Drive gives a register declared with RegDecl its input.
func (m *Module) Drive(q *Signal, reset *big.Int, d, en Expr) {
	if q.Kind != KindReg {
		m.errorf("drive of %q, which is not a register", q.Name)
	}
	m.Registers = append(m.Registers, Register{Q: q, D: d, En: en, Reset: reset})
}

// Mem adds a memory of depth words of w bits; the returned signal is its
// registered read data.
func (m *Module) Mem(name string, w, depth int, wrEn, wrAddr, wrData, rdEn, rdAddr Expr, comment string) *Signal {
	m.checkName(name)
	if m.names[name] {
		m.errorf("memory %q declared twice", name)
	}
	m.names[name] = true
	rd := m.declare(name+"_rd", w, KindMem, "read data of "+name)
	m.Signals = append(m.Signals, rd)
	m.Memories = append(m.Memories, &Memory{Name: name, W: w, Depth: depth, Comment: comment,
		WrEn: wrEn, WrAddr: wrAddr, WrData: wrData, RdEn: rdEn, RdAddr: rdAddr, RdData: rd})
	return rd
}

// Instantiate places module of inside m. conns maps every port of of to an
// expression (inputs) or to a wire of m (outputs).
func (m *Module) Instantiate(name string, of *Module, conns ...Conn) {
	m.checkName(name)
	if m.names[name] {
		m.errorf("instance %q declared twice", name)
	}
	m.names[name] = true
	m.Instances = append(m.Instances, Instance{Name: name, Of: of, Conns: conns})
}

// Port returns the port called name, or nil.
func (m *Module) Port(name string) *Signal {
	for _, p := range m.Ports {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func validIdent(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' || s[len(s)-1] == '_' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '_' && s[i-1] != '_':
		default:
			return false
		}
	}
	return true
}

var reserved = map[string]bool{}

func init() {
	for _, w := range []string{
		// Verilog-2005
		"always", "and", "assign", "begin", "buf", "case", "casex", "casez", "default", "defparam", "else",
		"end", "endcase", "endfunction", "endgenerate", "endmodule", "endtask", "for", "function", "generate",
		"genvar", "if", "initial", "inout", "input", "integer", "localparam", "module", "nand", "negedge",
		"nor", "not", "or", "output", "parameter", "posedge", "real", "reg", "signed", "task", "time", "tri",
		"while", "wire", "xnor", "xor", "logic", "bit", "int", "byte",
		// VHDL-2008
		"abs", "access", "after", "alias", "all", "architecture", "array", "assert", "attribute", "block",
		"body", "buffer", "bus", "component", "configuration", "constant", "context", "disconnect", "downto",
		"elsif", "entity", "exit", "file", "force", "group", "guarded", "impure", "in", "inertial", "is",
		"label", "library", "linkage", "literal", "loop", "map", "mod", "new", "next", "null", "of", "on",
		"open", "others", "out", "package", "port", "postponed", "procedure", "process", "protected", "pure",
		"range", "record", "register", "reject", "release", "rem", "report", "return", "rol", "ror", "select",
		"severity", "shared", "sla", "sll", "sra", "srl", "subtype", "then", "to", "transport", "type",
		"unaffected", "units", "until", "use", "variable", "wait", "when", "with", "signal", "vunit", "vmode",
		"vprop", "sequence", "property", "fairness", "strong", "assume", "cover", "restrict", "default_clock",
	} {
		reserved[w] = true
	}
}
