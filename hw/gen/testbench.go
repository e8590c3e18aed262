package gen

import (
	"fmt"
	"io"
	"strings"
)

// HexDigits is how many hex digits a port takes in a vector file.
func HexDigits(w int) int { return (w + 3) / 4 }

// WriteVHDLTestbench writes <name>_tb, a self-checking VHDL-2008 test bench
// for m. It reads a vector file (generic "vectors"): one line per cycle,
// the inputs then the expected outputs in the order of SimPorts, each as
// HexDigits(W) hex digits, separated by one space. Each cycle it drives
// the inputs with clk low, lets them settle, compares every output with
// its expected value (a difference is reported with the cycle, the port, the
// expected and the actual value, severity failure, which stops the run with
// an error), then raises clk. At the end it reports "PASS: <n> cycles".
// An output that belongs to a channel with a valid output (Qualifier) is
// compared only in the cycles its valid is expected high: what a channel
// carries while not valid is nobody's, and where it comes from registers
// with no reset the two simulators may differ (GHDL's 'U' against
// Verilator's zeros) without either being wrong.
func WriteVHDLTestbench(w io.Writer, m *Module) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if m.Port("clk") == nil {
		return fmt.Errorf("%w %s: a test bench needs a clk port", ErrInvalid, m.Name)
	}
	ins, outs := SimPorts(m)
	var b strings.Builder
	fmt.Fprintf(&b, "-- %s_tb: self-checking test bench of %s, driven by a vector file.\n", m.Name, m.Name)
	fmt.Fprintf(&b, "-- Vector line: inputs then expected outputs, in hex:\n--  ")
	for _, p := range append(append([]*Signal(nil), ins...), outs...) {
		fmt.Fprintf(&b, " %s", p.Name)
	}
	b.WriteString("\n\n")
	b.WriteString("library ieee;\nuse ieee.std_logic_1164.all;\nuse std.textio.all;\n\n")
	fmt.Fprintf(&b, "entity %s_tb is\n    generic (vectors : string := \"vectors.txt\");\nend entity %s_tb;\n\n", m.Name, m.Name)
	fmt.Fprintf(&b, "architecture sim of %s_tb is\n    signal clk : std_logic := '0';\n", m.Name)
	for _, p := range append(append([]*Signal(nil), ins...), outs...) {
		fmt.Fprintf(&b, "    signal %s : %s;\n", p.Name, vhdlType(p.W))
	}
	b.WriteString("begin\n")
	fmt.Fprintf(&b, "    dut : entity work.%s\n        port map (\n", m.Name)
	for i, p := range m.Ports {
		sep := ","
		if i == len(m.Ports)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "            %s => %s%s\n", p.Name, p.Name, sep)
	}
	b.WriteString("        );\n\n    run : process\n        file f : text;\n        variable l : line;\n        variable cycle : natural := 0;\n")
	for _, p := range append(append([]*Signal(nil), ins...), outs...) {
		fmt.Fprintf(&b, "        variable v_%s : std_logic_vector(%d downto 0);\n", p.Name, 4*HexDigits(p.W)-1)
	}
	b.WriteString("    begin\n        file_open(f, vectors, read_mode);\n        while not endfile(f) loop\n            readline(f, l);\n")
	for _, p := range ins {
		fmt.Fprintf(&b, "            hread(l, v_%s);\n", p.Name)
		if p.W == 1 {
			fmt.Fprintf(&b, "            %s <= v_%s(0);\n", p.Name, p.Name)
		} else {
			fmt.Fprintf(&b, "            %s <= v_%s(%d downto 0);\n", p.Name, p.Name, p.W-1)
		}
	}
	for _, p := range outs {
		fmt.Fprintf(&b, "            hread(l, v_%s);\n", p.Name)
	}
	b.WriteString("            clk <= '0';\n            wait for 1 ns;\n")
	qual := Qualifier(outs)
	for _, p := range outs {
		cond := ""
		if v, ok := qual[p.Name]; ok {
			cond = fmt.Sprintf("v_%s(0) = '0' or ", v)
		}
		if p.W == 1 {
			fmt.Fprintf(&b, "            assert "+cond+"%s = v_%s(0)\n                report \"cycle \" & integer'image(cycle) & \": port %s: expected \" & std_logic'image(v_%s(0)) & \", got \" & std_logic'image(%s)\n                severity failure;\n",
				p.Name, p.Name, p.Name, p.Name, p.Name)
		} else {
			fmt.Fprintf(&b, "            assert "+cond+"%s = v_%s(%d downto 0)\n                report \"cycle \" & integer'image(cycle) & \": port %s: expected \" & to_hstring(v_%s(%d downto 0)) & \", got \" & to_hstring(%s)\n                severity failure;\n",
				p.Name, p.Name, p.W-1, p.Name, p.Name, p.W-1, p.Name)
		}
	}
	b.WriteString("            clk <= '1';\n            wait for 1 ns;\n            cycle := cycle + 1;\n        end loop;\n")
	b.WriteString("        report \"PASS: \" & integer'image(cycle) & \" cycles\" severity note;\n        std.env.finish;\n    end process;\nend architecture sim;\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Qualifier maps each output that belongs to a channel with a valid
// output to that valid's name: the longest prefix of its name that,
// followed by "valid" or "_valid", names another output (m_ev_type to
// m_ev_valid, m_axi_awaddr to m_axi_awvalid, m_axis_tdata to
// m_axis_tvalid). Valids and readies themselves have none.
func Qualifier(outs []*Signal) map[string]string {
	names := map[string]bool{}
	for _, p := range outs {
		names[p.Name] = true
	}
	q := map[string]string{}
	for _, p := range outs {
		n := p.Name
		if strings.HasSuffix(n, "valid") || strings.HasSuffix(n, "ready") {
			continue
		}
		for i := len(n) - 1; i > 0; i-- {
			if v := n[:i] + "valid"; names[v] {
				q[n] = v
				break
			}
			if v := n[:i] + "_valid"; names[v] {
				q[n] = v
				break
			}
		}
	}
	return q
}
