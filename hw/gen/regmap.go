package gen

import (
	"fmt"
	"go/format"
	"io"
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
	Doc     string
	Fields  []RegField
}

// RegMap is a block's register map: the one definition from which the RTL
// decoder, the Go driver constants and the Markdown reference are generated.
type RegMap struct {
	Name     string // block name, lower snake case
	Doc      []string
	AddrBits int // width of the byte address the block decodes
	Regs     []Reg
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
	return nil
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
	b.WriteString("// offsets of its 32-bit registers and the shift and mask of every field.\n//\n")
	for _, p := range m.Doc {
		for _, l := range wrap(p, 76) {
			fmt.Fprintf(&b, "// %s\n", l)
		}
		b.WriteString("//\n")
	}
	fmt.Fprintf(&b, "// %s\npackage %s\n\n", Generated, pkg)
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
	fmt.Fprintf(&b, "# Register map: %s\n\n<!-- %s -->\n\n", m.Name, Generated)
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

// GenFile is one generated file at a path relative to the repository root.
type GenFile struct {
	Path string
	Data []byte
}

// RegMapFiles renders the register maps for the host side: the Markdown
// reference (docs/regmap.md) and the driver's Go constants
// (host/driver/regs/regs.go). The RTL decoders are built from the same maps
// by the block generators.
func RegMapFiles() ([]GenFile, error) {
	rm := PlacementRegMap()
	var md, goSrc strings.Builder
	if err := WriteRegMapMarkdown(&md, rm); err != nil {
		return nil, err
	}
	if err := WriteRegMapGo(&goSrc, rm, "regs"); err != nil {
		return nil, err
	}
	return []GenFile{
		{Path: "docs/regmap.md", Data: []byte(md.String())},
		{Path: "host/driver/regs/regs.go", Data: []byte(goSrc.String())},
	}, nil
}
