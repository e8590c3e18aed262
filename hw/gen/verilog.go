package gen

import (
	"fmt"
	"io"
	"math/big"
	"strings"
)

// WriteVerilog writes m as synthesisable Verilog-2005.
func WriteVerilog(w io.Writer, m *Module) error {
	if err := m.Validate(); err != nil {
		return err
	}
	var b strings.Builder
	header(&b, "//", m)
	b.WriteString("`resetall\n`default_nettype none\n\n")
	fmt.Fprintf(&b, "module %s (\n", m.Name)
	width := func(s *Signal) string {
		if s.W == 1 {
			return ""
		}
		return fmt.Sprintf("[%d:0]", s.W-1)
	}
	for i, p := range m.Ports {
		sep := ","
		if i == len(m.Ports)-1 {
			sep = ""
		}
		decl := fmt.Sprintf("    %-6s wire %-9s %s%s", p.Dir, width(p), p.Name, sep)
		b.WriteString(commented(decl, "//", p.Comment))
	}
	b.WriteString(");\n")
	if len(m.Params) > 0 {
		b.WriteString("\n")
	}
	for _, p := range m.Params {
		if p.Comment != "" {
			fmt.Fprintf(&b, "    // %s\n", p.Comment)
		}
		fmt.Fprintf(&b, "    localparam %s %s = %s;\n", width(p), p.Name, vconst(p.W, p.Value))
	}
	if len(m.Signals) > 0 {
		b.WriteString("\n")
	}
	for _, s := range m.Signals {
		kw := "wire"
		if s.Kind == KindReg || s.Kind == KindMem {
			kw = "reg "
		}
		b.WriteString(commented(fmt.Sprintf("    %s %-9s %s;", kw, width(s), s.Name), "//", s.Comment))
	}
	for _, mem := range m.Memories {
		b.WriteString(commented(fmt.Sprintf("    reg  [%d:0] %s [0:%d];", mem.W-1, mem.Name, mem.Depth-1), "//", mem.Comment))
	}
	if len(m.Assigns) > 0 {
		b.WriteString("\n")
	}
	for _, a := range m.Assigns {
		fmt.Fprintf(&b, "    assign %s = %s;\n", a.Dst.Name, vexpr(a.Src, true))
	}
	for _, r := range m.Registers {
		b.WriteString("\n    always @(posedge clk) begin\n")
		ind := "        "
		open := false
		if r.Reset != nil {
			fmt.Fprintf(&b, "        if (rst) begin\n            %s <= %s;\n        end", r.Q.Name, vconst(r.Q.W, r.Reset))
			open = true
		}
		switch {
		case r.En != nil && open:
			fmt.Fprintf(&b, " else if (%s) begin\n", vexpr(r.En, true))
			ind = "            "
		case r.En != nil:
			fmt.Fprintf(&b, "        if (%s) begin\n", vexpr(r.En, true))
			ind = "            "
			open = true
		case open:
			b.WriteString(" else begin\n")
			ind = "            "
		}
		fmt.Fprintf(&b, "%s%s <= %s;\n", ind, r.Q.Name, indentLines(vexpr(r.D, true), ind))
		if open {
			b.WriteString("        end\n")
		}
		b.WriteString("    end\n")
	}
	for _, mem := range m.Memories {
		fmt.Fprintf(&b, "\n    // %s: synchronous write, synchronous read (block RAM)\n", mem.Name)
		b.WriteString("    always @(posedge clk) begin\n")
		fmt.Fprintf(&b, "        if (%s) begin\n            %s[%s] <= %s;\n        end\n",
			vexpr(mem.WrEn, true), mem.Name, vexpr(mem.WrAddr, true), vexpr(mem.WrData, true))
		if mem.RdEn != nil {
			fmt.Fprintf(&b, "        if (%s) begin\n            %s <= %s[%s];\n        end\n",
				vexpr(mem.RdEn, true), mem.RdData.Name, mem.Name, vexpr(mem.RdAddr, true))
		} else {
			fmt.Fprintf(&b, "        %s <= %s[%s];\n", mem.RdData.Name, mem.Name, vexpr(mem.RdAddr, true))
		}
		b.WriteString("    end\n")
	}
	for _, in := range m.Instances {
		fmt.Fprintf(&b, "\n    %s %s (\n", in.Of.Name, in.Name)
		for i, c := range in.Conns {
			sep := ","
			if i == len(in.Conns)-1 {
				sep = ""
			}
			fmt.Fprintf(&b, "        .%s(%s)%s\n", c.Port, vexpr(c.Expr, true), sep)
		}
		b.WriteString("    );\n")
	}
	b.WriteString("\nendmodule\n\n`resetall\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// header writes the comment block that opens every emitted module (Render
// puts the generated-file marker above it).
func header(b *strings.Builder, cmt string, m *Module) {
	fmt.Fprintf(b, "%s %s\n%s\n", cmt, m.Name, cmt)
	for i, para := range m.Doc {
		if i > 0 {
			fmt.Fprintf(b, "%s\n", cmt)
		}
		for _, line := range wrap(para, 76) {
			fmt.Fprintf(b, "%s %s\n", cmt, line)
		}
	}
	if m.Spec != "" {
		fmt.Fprintf(b, "%s\n%s Implements: %s\n", cmt, cmt, m.Spec)
	}
	b.WriteString("\n")
}

func commented(decl, cmt, comment string) string {
	if comment == "" {
		return decl + "\n"
	}
	return fmt.Sprintf("%-44s %s %s\n", decl, cmt, comment)
}

func wrap(s string, n int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > n {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// joinLong joins parts between open and close, one part per line when the
// result would be too long to read on one; a part still too long for one
// line is wrapped at its spaces (both languages ignore where a line breaks
// between tokens).
func joinLong(open string, parts []string, sep, close string) string {
	one := open + strings.Join(parts, sep+" ") + close
	if len(one) <= 100 || strings.Contains(one, "\n") {
		return one
	}
	lines := make([]string, len(parts))
	for i, p := range parts {
		lines[i] = wrapTokens(p, "\n            ", 120)
	}
	return open + "\n        " + strings.Join(lines, sep+"\n        ") + "\n    " + close
}

// indentLines shifts the continuation lines of a multi-line expression
// (laid out for an assign at 4 spaces) under a statement indented by ind.
func indentLines(e, ind string) string {
	return strings.ReplaceAll(e, "\n", "\n"+ind[4:])
}

// wrapTokens breaks s at spaces into lines of about n characters when it is
// longer than maxLine, each continuation starting with cont.
func wrapTokens(s, cont string, n int) string {
	const maxLine = 160
	if len(s) <= maxLine || strings.Contains(s, "\n") {
		return s
	}
	const glue = "\x00" // keeps "a downto b" on one line
	s = strings.ReplaceAll(s, " downto ", glue+"downto"+glue)
	var b strings.Builder
	line := 0
	for i, tok := range strings.Split(s, " ") {
		tok = strings.ReplaceAll(tok, glue, " ")
		if i > 0 {
			if line+1+len(tok) > n {
				b.WriteString(cont)
				line = 0
			} else {
				b.WriteByte(' ')
				line++
			}
		}
		b.WriteString(tok)
		line += len(tok)
	}
	return b.String()
}

func vconst(w int, v *big.Int) string { return fmt.Sprintf("%d'h%0*s", w, (w+3)/4, v.Text(16)) }

var vops = map[Op]string{OpNot: "~", OpRedAnd: "&", OpRedOr: "|", OpRedXor: "^", OpAnd: "&", OpOr: "|",
	OpXor: "^", OpAdd: "+", OpSub: "-", OpEq: "==", OpNe: "!=", OpLt: "<"}

// vparts prints the parts of a concatenation.
func vparts(c Concat) []string {
	parts := make([]string, len(c.Parts))
	for i, p := range c.Parts {
		parts[i] = vexpr(p, true)
	}
	return parts
}

// vexpr prints e; top says no enclosing operator needs parentheses.
func vexpr(e Expr, top bool) string {
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
		return vconst(x.W, x.V)
	case Slice:
		if x.Hi == x.Lo {
			return fmt.Sprintf("%s[%d]", x.X.Name, x.Lo)
		}
		return fmt.Sprintf("%s[%d:%d]", x.X.Name, x.Hi, x.Lo)
	case Concat:
		return joinLong("{", vparts(x), ",", "}")
	case Repeat:
		return fmt.Sprintf("{%d{%s}}", x.N, vexpr(x.X, false))
	case Index:
		return fmt.Sprintf("%s[%s]", x.X.Name, vexpr(x.I, true))
	case Decoded:
		one := "1'b1" // a one as wide as the decode: the shift's width is its left operand's
		if x.N > 1 {
			one = fmt.Sprintf("{{%d{1'b0}}, 1'b1}", x.N-1)
		}
		return paren(one + " << " + vexpr(x.X, false))
	case Unary:
		if c, ok := x.X.(Concat); ok && x.Op == OpRedXor {
			// A parity over a concatenation (MatVecWords) reads as one
			// term: one line, which the statement around it wraps.
			return vops[x.Op] + "{" + strings.Join(vparts(c), ", ") + "}"
		}
		return vops[x.Op] + vexpr(x.X, false)
	case Binary:
		return paren(vexpr(x.A, false) + " " + vops[x.Op] + " " + vexpr(x.B, false))
	case Mux:
		return paren(vexpr(x.Sel, false) + " ? " + vexpr(x.T, false) + " : " + vexpr(x.F, false))
	}
	panic(fmt.Sprintf("gen: unknown expression %T", e)) // unreachable after Validate
}
