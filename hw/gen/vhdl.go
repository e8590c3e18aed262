package gen

import (
	"fmt"
	"io"
	"math/big"
	"strings"
)

// WriteVHDL writes m as synthesisable VHDL-2008 (ieee.numeric_std). Width-1
// signals are std_logic, wider ones std_logic_vector(W-1 downto 0).
func WriteVHDL(w io.Writer, m *Module) error {
	if err := m.Validate(); err != nil {
		return err
	}
	var b strings.Builder
	header(&b, "--", m)
	b.WriteString("library ieee;\nuse ieee.std_logic_1164.all;\nuse ieee.numeric_std.all;\n\n")
	fmt.Fprintf(&b, "entity %s is\n    port (\n", m.Name)
	for i, p := range m.Ports {
		sep := ";"
		if i == len(m.Ports)-1 {
			sep = ""
		}
		dir := "in "
		if p.Dir == Out {
			dir = "out"
		}
		b.WriteString(commented(fmt.Sprintf("        %s : %s %s%s", p.Name, dir, vhdlType(p.W), sep), "--", p.Comment))
	}
	fmt.Fprintf(&b, "    );\nend entity %s;\n\narchitecture rtl of %s is\n", m.Name, m.Name)

	// Helper functions, declared only when used.
	used := map[string]bool{}
	var walk func(Expr)
	walk = func(e Expr) {
		switch x := e.(type) {
		case Binary:
			if x.Op == OpEq || x.Op == OpNe || x.Op == OpLt {
				used["b2l"] = true
			}
			walk(x.A)
			walk(x.B)
		case Mux:
			if x.T.Width() == 1 {
				used["mux1"] = true
			} else {
				used["muxv"] = true
			}
			walk(x.Sel)
			walk(x.T)
			walk(x.F)
		case Unary:
			walk(x.X)
		case Concat:
			for _, p := range x.Parts {
				walk(p)
			}
		case Repeat:
			walk(x.X)
		case Decoded:
			walk(x.X)
		case Index:
			walk(x.I)
		}
	}
	eachExpr(m, walk)
	if used["b2l"] {
		b.WriteString("    -- 1 when the comparison holds\n")
		b.WriteString("    function b2l(c : boolean) return std_logic is\n    begin\n        if c then\n            return '1';\n        end if;\n        return '0';\n    end function;\n\n")
	}
	if used["mux1"] {
		b.WriteString("    -- sel ? t : f\n")
		b.WriteString("    function mux(sel : std_logic; t, f : std_logic) return std_logic is\n    begin\n        if sel = '1' then\n            return t;\n        end if;\n        return f;\n    end function;\n\n")
	}
	if used["muxv"] {
		b.WriteString("    -- sel ? t : f\n")
		b.WriteString("    function mux(sel : std_logic; t, f : std_logic_vector) return std_logic_vector is\n    begin\n        if sel = '1' then\n            return t;\n        end if;\n        return f;\n    end function;\n\n")
	}
	for _, p := range m.Params {
		if p.Comment != "" {
			fmt.Fprintf(&b, "    -- %s\n", p.Comment)
		}
		fmt.Fprintf(&b, "    constant %s : %s := %s;\n", p.Name, vhdlType(p.W), hconst(p.W, p.Value))
	}
	for _, s := range m.Signals {
		init := ""
		if r := regOf(m, s); r != nil && r.Reset != nil {
			// Power up in the reset state, as FPGA flip-flops do (and as
			// Verilator's zero-initialised registers look from outside).
			init = " := " + hconst(s.W, r.Reset)
		}
		b.WriteString(commented(fmt.Sprintf("    signal %s : %s%s;", s.Name, vhdlType(s.W), init), "--", s.Comment))
	}
	for _, mem := range m.Memories {
		fmt.Fprintf(&b, "    type %s_t is array (0 to %d) of std_logic_vector(%d downto 0);\n", mem.Name, mem.Depth-1, mem.W-1)
		b.WriteString(commented(fmt.Sprintf("    signal %s : %s_t;", mem.Name, mem.Name), "--", mem.Comment))
	}
	b.WriteString("begin\n")
	for _, a := range m.Assigns {
		fmt.Fprintf(&b, "    %s <= %s;\n", a.Dst.Name, hexpr(a.Src, true))
	}
	for _, r := range m.Registers {
		fmt.Fprintf(&b, "\n    %s_reg : process (clk)\n    begin\n        if rising_edge(clk) then\n", r.Q.Name)
		kw := "if"
		ind := "            "
		if r.Reset != nil {
			fmt.Fprintf(&b, "            if rst = '1' then\n                %s <= %s;\n", r.Q.Name, hconst(r.Q.W, r.Reset))
			kw = "elsif"
		}
		switch {
		case r.En != nil:
			fmt.Fprintf(&b, "            %s %s = '1' then\n", kw, hexpr(r.En, false))
			ind = "                "
		case r.Reset != nil:
			b.WriteString("            else\n")
			ind = "                "
		}
		fmt.Fprintf(&b, "%s%s <= %s;\n", ind, r.Q.Name, indentLines(hexpr(r.D, true), ind))
		if r.Reset != nil || r.En != nil {
			b.WriteString("            end if;\n")
		}
		b.WriteString("        end if;\n    end process;\n")
	}
	for _, mem := range m.Memories {
		fmt.Fprintf(&b, "\n    -- %s: synchronous write, synchronous read (block RAM)\n", mem.Name)
		fmt.Fprintf(&b, "    %s_ram : process (clk)\n    begin\n        if rising_edge(clk) then\n", mem.Name)
		fmt.Fprintf(&b, "            if %s = '1' then\n                %s(to_integer(unsigned(%s))) <= %s;\n            end if;\n",
			hexpr(mem.WrEn, false), mem.Name, hexpr(mem.WrAddr, true), hexpr(mem.WrData, true))
		rd := fmt.Sprintf("%s <= %s(to_integer(unsigned(%s)));", mem.RdData.Name, mem.Name, hexpr(mem.RdAddr, true))
		if mem.RdEn != nil {
			fmt.Fprintf(&b, "            if %s = '1' then\n                %s\n            end if;\n", hexpr(mem.RdEn, false), rd)
		} else {
			fmt.Fprintf(&b, "            %s\n", rd)
		}
		b.WriteString("        end if;\n    end process;\n")
	}
	for _, in := range m.Instances {
		fmt.Fprintf(&b, "\n    %s : entity work.%s\n        port map (\n", in.Name, in.Of.Name)
		for i, c := range in.Conns {
			sep := ","
			if i == len(in.Conns)-1 {
				sep = ""
			}
			fmt.Fprintf(&b, "            %s => %s%s\n", c.Port, hexpr(c.Expr, true), sep)
		}
		b.WriteString("        );\n")
	}
	fmt.Fprintf(&b, "end architecture rtl;\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func regOf(m *Module, q *Signal) *Register {
	for i := range m.Registers {
		if m.Registers[i].Q == q {
			return &m.Registers[i]
		}
	}
	return nil
}

// unsignedOf views e as numeric_std unsigned: a literal is qualified (a type
// conversion of a string literal is illegal), anything else converted.
func unsignedOf(e Expr) string {
	if c, ok := e.(Const); ok {
		return "unsigned'(" + hconst(c.W, c.V) + ")"
	}
	return "unsigned(" + hexpr(e, true) + ")"
}

func eachExpr(m *Module, fn func(Expr)) {
	for _, a := range m.Assigns {
		fn(a.Src)
	}
	for _, r := range m.Registers {
		fn(r.D)
		if r.En != nil {
			fn(r.En)
		}
	}
	for _, mem := range m.Memories {
		for _, e := range []Expr{mem.WrEn, mem.WrAddr, mem.WrData, mem.RdEn, mem.RdAddr} {
			if e != nil {
				fn(e)
			}
		}
	}
	for _, in := range m.Instances {
		for _, c := range in.Conns {
			fn(c.Expr)
		}
	}
}

func vhdlType(w int) string {
	if w == 1 {
		return "std_logic"
	}
	return fmt.Sprintf("std_logic_vector(%d downto 0)", w-1)
}

// hconst prints a constant: '0'/'1' for one bit, a bit-string literal otherwise.
func hconst(w int, v *big.Int) string {
	if w == 1 {
		return fmt.Sprintf("'%d'", v.Bit(0))
	}
	if w%4 == 0 {
		return fmt.Sprintf("x\"%0*s\"", w/4, v.Text(16))
	}
	return fmt.Sprintf("\"%0*s\"", w, v.Text(2))
}

var hops = map[Op]string{OpNot: "not", OpRedAnd: "and", OpRedOr: "or", OpRedXor: "xor", OpAnd: "and",
	OpOr: "or", OpXor: "xor", OpAdd: "+", OpSub: "-", OpEq: "=", OpNe: "/=", OpLt: "<"}

func hexpr(e Expr, top bool) string {
	paren := func(s string) string {
		if top {
			return s
		}
		return "(" + s + ")"
	}
	switch x := e.(type) {
	case *Signal:
		return x.Name
	case Const:
		return hconst(x.W, x.V)
	case Slice:
		if x.Hi == x.Lo {
			return fmt.Sprintf("%s(%d)", x.X.Name, x.Lo)
		}
		return fmt.Sprintf("%s(%d downto %d)", x.X.Name, x.Hi, x.Lo)
	case Concat:
		parts := make([]string, len(x.Parts))
		for i, p := range x.Parts {
			parts[i] = hexpr(p, false)
		}
		// Qualified so that the result type is never ambiguous.
		return joinLong("std_logic_vector'(", parts, " &", ")")
	case Repeat:
		return fmt.Sprintf("std_logic_vector'(%d downto 0 => %s)", x.N-1, hexpr(x.X, true))
	case Index:
		return fmt.Sprintf("%s(to_integer(%s))", x.X.Name, unsignedOf(x.I))
	case Decoded:
		return fmt.Sprintf("std_logic_vector(shift_left(to_unsigned(1, %d), to_integer(%s)))", x.N, unsignedOf(x.X))
	case Unary:
		return paren(hops[x.Op] + " " + hexpr(x.X, false))
	case Binary:
		a, bb := hexpr(x.A, false), hexpr(x.B, false)
		switch x.Op {
		case OpAdd, OpSub:
			return fmt.Sprintf("std_logic_vector(%s %s %s)", unsignedOf(x.A), hops[x.Op], unsignedOf(x.B))
		case OpLt:
			return fmt.Sprintf("b2l(%s < %s)", unsignedOf(x.A), unsignedOf(x.B))
		case OpEq, OpNe:
			return fmt.Sprintf("b2l(%s %s %s)", a, hops[x.Op], bb)
		}
		return paren(a + " " + hops[x.Op] + " " + bb)
	case Mux:
		return fmt.Sprintf("mux(%s, %s, %s)", hexpr(x.Sel, true), hexpr(x.T, true), hexpr(x.F, true))
	}
	panic(fmt.Sprintf("gen: unknown expression %T", e)) // unreachable after Validate
}
