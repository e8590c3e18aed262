package gen

import (
	"fmt"
	"go/format"
	"io"
	"sort"
	"strings"
)

// RegField is a bit field of a 32-bit register.
type RegField struct {
	Name  string // upper snake case, unique in its register
	Lo    int    // least significant bit
	Width int
	Doc   string
}

// Mask is the field's mask once shifted down to bit 0.
func (f RegField) Mask() uint32 { return uint32(1<<f.Width - 1) }

// Reg is one 32-bit register of a register map.
type Reg struct {
	Name   string // upper snake case, unique in the map
	Offset uint32 // byte offset, a multiple of 4
	// Command registers act when written (the written value is an argument);
	// the others are staging registers that hold what was written.
	Command bool
	// ReadOnly registers show a value of the block (a constant or a status
	// input); writes to them are ignored.
	ReadOnly bool
	// Strobe, on a staging register, adds an output <register>_wr_pulse that is
	// high in the cycle the register is written (for a staging register
	// whose write also acts, as EQ_CFG's ENABLE does).
	Strobe bool
	Doc    string
	Fields []RegField
}

// RegMap is a block's register map: the one definition from which the RTL
// decoder, the Go driver constants and the Markdown reference are generated.
type RegMap struct {
	Name     string // block name, lower snake case
	Doc      []string
	AddrBits int // width of the byte address the block decodes
	Regs     []Reg
	// Arrays are registers repeated per object (per-QP doorbells).
	Arrays []RegArray
	// Windows place another block's map inside this one.
	Windows []RegWindow
}

// RegArray is a group of registers repeated Count times, Stride bytes
// apart from Base; each Reg's Offset is relative to its element.
type RegArray struct {
	Name   string // upper snake case
	Base   uint32
	Stride uint32
	Count  int
	Doc    string
	Regs   []Reg
}

// RegWindow maps another register map at Base: its register at offset o is
// this map's register at Base+o.
type RegWindow struct {
	Name string // upper snake case
	Base uint32
	Map  *RegMap
	Doc  string
}

// span is a byte range [lo, hi) of the address space and what occupies it.
type span struct {
	lo, hi uint64
	what   string
}

// Reg returns the register called name; it panics if there is none (the
// maps are fixed at compile time, so a wrong name is a programming error).
func (m *RegMap) Reg(name string) Reg {
	for _, r := range m.Regs {
		if r.Name == name {
			return r
		}
	}
	panic("gen: register map " + m.Name + " has no register " + name)
}

// Field returns the field called name of register reg.
func (m *RegMap) Field(reg, name string) RegField {
	for _, f := range m.Reg(reg).Fields {
		if f.Name == name {
			return f
		}
	}
	panic("gen: register " + reg + " has no field " + name)
}

// Validate checks offsets (aligned, unique, inside the address space) and
// fields (inside 32 bits, not overlapping, unique names).
func (m *RegMap) Validate() error {
	offs := map[uint32]string{}
	names := map[string]bool{}
	for _, r := range m.Regs {
		if r.Offset%4 != 0 || r.Offset>>m.AddrBits != 0 {
			return fmt.Errorf("%w: register map %s: %s at offset %#x", ErrInvalid, m.Name, r.Name, r.Offset)
		}
		if o, dup := offs[r.Offset]; dup {
			return fmt.Errorf("%w: register map %s: %s and %s share offset %#x", ErrInvalid, m.Name, o, r.Name, r.Offset)
		}
		if names[r.Name] {
			return fmt.Errorf("%w: register map %s: two registers called %s", ErrInvalid, m.Name, r.Name)
		}
		offs[r.Offset], names[r.Name] = r.Name, true
		if r.Strobe && (r.Command || r.ReadOnly) {
			return fmt.Errorf("%w: %s: register %s: only a staging register has a write strobe", ErrInvalid, m.Name, r.Name)
		}
		if r.Command && r.ReadOnly {
			return fmt.Errorf("%w: register map %s: %s is both a command and read only", ErrInvalid, m.Name, r.Name)
		}
		var used uint32
		fnames := map[string]bool{}
		for _, f := range r.Fields {
			if f.Width < 1 || f.Lo < 0 || f.Lo+f.Width > 32 {
				return fmt.Errorf("%w: register %s field %s: bits %d+%d", ErrInvalid, r.Name, f.Name, f.Lo, f.Width)
			}
			bits := f.Mask() << f.Lo
			if used&bits != 0 || fnames[f.Name] {
				return fmt.Errorf("%w: register %s field %s overlaps another", ErrInvalid, r.Name, f.Name)
			}
			used |= bits
			fnames[f.Name] = true
		}
	}
	return m.validateSpans()
}

// validateSpans checks that registers, arrays and windows do not overlap
// and stay inside the address space.
func (m *RegMap) validateSpans() error {
	var sp []span
	for _, r := range m.Regs {
		sp = append(sp, span{uint64(r.Offset), uint64(r.Offset) + 4, r.Name})
	}
	for _, a := range m.Arrays {
		if a.Count < 1 || a.Stride%4 != 0 || a.Stride == 0 || a.Base%4 != 0 {
			return fmt.Errorf("%w: register map %s: array %s (base %#x, stride %#x, count %d)", ErrInvalid, m.Name, a.Name, a.Base, a.Stride, a.Count)
		}
		for _, r := range a.Regs {
			if r.Offset >= a.Stride {
				return fmt.Errorf("%w: register map %s: array %s register %s at %#x is past the stride %#x", ErrInvalid, m.Name, a.Name, r.Name, r.Offset, a.Stride)
			}
		}
		inner := &RegMap{Name: m.Name + "." + a.Name, AddrBits: bitsFor(uint64(a.Stride)), Regs: a.Regs}
		if err := inner.Validate(); err != nil {
			return err
		}
		sp = append(sp, span{uint64(a.Base), uint64(a.Base) + uint64(a.Stride)*uint64(a.Count), a.Name})
	}
	for _, w := range m.Windows {
		if err := w.Map.Validate(); err != nil {
			return err
		}
		sp = append(sp, span{uint64(w.Base), uint64(w.Base) + 1<<w.Map.AddrBits, w.Name})
	}
	sort.Slice(sp, func(i, j int) bool { return sp[i].lo < sp[j].lo })
	for i, s := range sp {
		if s.hi > 1<<m.AddrBits {
			return fmt.Errorf("%w: register map %s: %s ends at %#x, past its %d-bit address space", ErrInvalid, m.Name, s.what, s.hi, m.AddrBits)
		}
		if i > 0 && s.lo < sp[i-1].hi {
			return fmt.Errorf("%w: register map %s: %s overlaps %s", ErrInvalid, m.Name, s.what, sp[i-1].what)
		}
	}
	return nil
}

// bitsFor is the number of address bits that cover n bytes.
func bitsFor(n uint64) int {
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

// goName turns UPPER_SNAKE into UpperCamel.
func goName(s string) string {
	var b strings.Builder
	for _, p := range strings.Split(strings.ToLower(s), "_") {
		if p == "" {
			continue
		}
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	return b.String()
}

// WriteRegMapGo writes a Go package of constants for the driver: each
// register's offset, and each field's shift and mask.
func WriteRegMapGo(w io.Writer, m *RegMap, pkg string) error {
	if err := m.Validate(); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Package %s holds the register map of the card's %s block: byte\n", pkg, m.Name)
	b.WriteString("// offsets of its 32-bit registers and the shift and mask of every field.\n")
	for _, p := range m.Doc {
		b.WriteString("//\n")
		for _, l := range wrap(p, 76) {
			fmt.Fprintf(&b, "// %s\n", l)
		}
	}
	fmt.Fprintf(&b, "package %s\n\n", pkg)
	fmt.Fprintf(&b, "// AddrBits is the width of the byte address the block decodes.\nconst AddrBits = %d\n\n", m.AddrBits)
	b.WriteString("// Register byte offsets.\nconst (\n")
	for _, r := range m.Regs {
		fmt.Fprintf(&b, "\t%s = %#02x // %s\n", goName(r.Name), r.Offset, firstSentence(r.Doc))
	}
	b.WriteString(")\n")
	for _, r := range m.Regs {
		if len(r.Fields) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n// Fields of %s.\nconst (\n", goName(r.Name))
		for _, f := range r.Fields {
			n := goName(r.Name) + goName(f.Name)
			fmt.Fprintf(&b, "\t%sShift = %d // %s\n", n, f.Lo, firstSentence(f.Doc))
			fmt.Fprintf(&b, "\t%sMask  = %#x\n", n, f.Mask())
		}
		b.WriteString(")\n")
	}
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		return fmt.Errorf("gen: register map %s: formatting Go: %w", m.Name, err)
	}
	_, err = w.Write(src)
	return err
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	return strings.TrimSpace(s)
}

// WriteRegMapMarkdown writes the register reference.
func WriteRegMapMarkdown(w io.Writer, m *RegMap) error {
	if err := m.Validate(); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Register map: %s\n\n", m.Name)
	for _, p := range m.Doc {
		b.WriteString(p + "\n\n")
	}
	fmt.Fprintf(&b, "Registers are 32 bits wide, at byte offsets in a %d-bit address space, written with `reg_wr_valid`/`reg_wr_addr`/`reg_wr_data`.\n\n", m.AddrBits)
	b.WriteString("| Offset | Register | Kind | Description |\n| --- | --- | --- | --- |\n")
	for _, r := range m.Regs {
		kind := "staging"
		if r.Command {
			kind = "command"
		}
		fmt.Fprintf(&b, "| `0x%02x` | `%s` | %s | %s |\n", r.Offset, r.Name, kind, r.Doc)
	}
	for _, r := range m.Regs {
		if len(r.Fields) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## `%s` (`0x%02x`)\n\n%s\n\n| Bits | Field | Description |\n| --- | --- | --- |\n", r.Name, r.Offset, r.Doc)
		for _, f := range r.Fields {
			bits := fmt.Sprint(f.Lo)
			if f.Width > 1 {
				bits = fmt.Sprintf("%d:%d", f.Lo+f.Width-1, f.Lo)
			}
			fmt.Fprintf(&b, "| %s | `%s` | %s |\n", bits, f.Name, f.Doc)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteRegMapVerilog writes a Verilog include file of localparams: each
// register's byte offset (<MAP>_<REG>), and each field's least significant
// bit and width (<MAP>_<REG>_<FIELD>_LSB / _W), for RTL written by hand
// around the block (a board top, a register bridge).
func WriteRegMapVerilog(w io.Writer, m *RegMap) error {
	if err := m.Validate(); err != nil {
		return err
	}
	var b strings.Builder
	up := strings.ToUpper(m.Name)
	fmt.Fprintf(&b, "// Register map of %s (docs/regmap.md).\n\n", m.Name)
	fmt.Fprintf(&b, "`ifndef REGMAP_%s_VH\n`define REGMAP_%s_VH\n\n", up, up)
	for _, r := range m.Regs {
		fmt.Fprintf(&b, "localparam [%d:0] %s_%s = %d'h%02x; // %s\n", m.AddrBits-1, up, r.Name, m.AddrBits, r.Offset, firstSentence(r.Doc))
		for _, f := range r.Fields {
			fmt.Fprintf(&b, "localparam integer %s_%s_%s_LSB = %d;\n", up, r.Name, f.Name, f.Lo)
			fmt.Fprintf(&b, "localparam integer %s_%s_%s_W = %d;\n", up, r.Name, f.Name, f.Width)
		}
	}
	b.WriteString("\n`endif\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteRegMapVHDL writes the same constants as a VHDL-2008 package,
// regmap_<map>_pkg.
func WriteRegMapVHDL(w io.Writer, m *RegMap) error {
	if err := m.Validate(); err != nil {
		return err
	}
	var b strings.Builder
	up := strings.ToUpper(m.Name)
	fmt.Fprintf(&b, "-- Register map of %s (docs/regmap.md).\n\n", m.Name)
	fmt.Fprintf(&b, "library ieee;\nuse ieee.std_logic_1164.all;\n\npackage regmap_%s_pkg is\n", m.Name)
	for _, r := range m.Regs {
		fmt.Fprintf(&b, "    constant %s_%s : std_logic_vector(%d downto 0) := x\"%02x\"; -- %s\n", up, r.Name, m.AddrBits-1, r.Offset, firstSentence(r.Doc))
		for _, f := range r.Fields {
			fmt.Fprintf(&b, "    constant %s_%s_%s_LSB : natural := %d;\n", up, r.Name, f.Name, f.Lo)
			fmt.Fprintf(&b, "    constant %s_%s_%s_W : natural := %d;\n", up, r.Name, f.Name, f.Width)
		}
	}
	fmt.Fprintf(&b, "end package regmap_%s_pkg;\n", m.Name)
	_, err := io.WriteString(w, b.String())
	return err
}

// GenFile is one generated file at a path relative to the repository root.
type GenFile struct {
	Path string
	Data []byte
}

// RegMapFiles renders the register maps, each through Render: the card's
// host interface (docs/card.md, host/driver/cardspec, hw/rtl/regmap_card*),
// the placement block's Markdown reference
// (docs/regmap.md), the driver's Go constants (host/driver/regs/regs.go),
// and Verilog and VHDL constants for hand-written RTL around the blocks
// (hw/rtl/regmap_*.vh, hw/rtl/regmap_*_pkg.vhd). The blocks' own decoders
// are built from the same maps by their generators.
func RegMapFiles() ([]GenFile, error) {
	rm := PlacementRegMap()
	var files []GenFile
	for _, out := range []struct {
		path  string
		write func(io.Writer) error
	}{
		{"docs/card.md", WriteCardMarkdown},
		{"host/driver/cardspec/cardspec.go", func(w io.Writer) error { return WriteCardGo(w, "cardspec") }},
		{"hw/rtl/regmap_card.vh", WriteCardVerilog},
		{"hw/rtl/regmap_card_pkg.vhd", WriteCardVHDL},
		{"docs/regmap.md", func(w io.Writer) error { return WriteRegMapMarkdown(w, rm) }},
		{"host/driver/regs/regs.go", func(w io.Writer) error { return WriteRegMapGo(w, rm, "regs") }},
		{"hw/rtl/regmap_placement.vh", func(w io.Writer) error { return WriteRegMapVerilog(w, rm) }},
		{"hw/rtl/regmap_placement_pkg.vhd", func(w io.Writer) error { return WriteRegMapVHDL(w, rm) }},
	} {
		f, err := Render(out.path, out.write)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}
