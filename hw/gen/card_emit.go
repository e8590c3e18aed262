package gen

import (
	"fmt"
	"go/format"
	"io"
	"strings"
)

// The emitters of the card's host interface (card_spec.go): a Go package
// for the driver and the card model, Verilog and VHDL constants for the
// RTL, and the Markdown reference.

// cardInitialisms are spelled in capitals in Go names, as Go style wants.
var cardInitialisms = map[string]bool{"ID": true, "QP": true, "CQ": true, "EQ": true, "SQ": true, "RQ": true,
	"PD": true, "WQE": true, "CQE": true, "EQE": true, "SGE": true, "DB": true, "PI": true, "CI": true,
	"TXS": true, "RXS": true, "MPA": true, "RD": true, "QPN": true, "CQN": true, "DMA": true, "IRQ": true,
	"WC": true, "MW": true, "MR": true, "RX": true, "TX": true, "CRC": true, "LLP": true, "WR": true,
	"ORD": true, "IRD": true, "SGES": false, "BBS": true, "RDMA": true, "QPSTAT": false, "STAG": false}

// cardName turns UPPER_SNAKE into a Go name, initialisms in capitals
// ("QP_SQ_BASE_LO" -> "QPSQBaseLo", "QPSTAT" -> "QPStat").
func cardName(s string) string {
	switch s {
	case "QPSTAT":
		return "QPStat"
	case "NSGE":
		return "NSGE"
	}
	var b strings.Builder
	for _, p := range strings.Split(s, "_") {
		switch {
		case p == "":
		case cardInitialisms[p]:
			b.WriteString(p)
		case p == "STAG":
			b.WriteString("STag")
		case p == "RKEY" || p == "LKEY":
			b.WriteString(p[:1] + "Key")
		default:
			b.WriteString(p[:1] + strings.ToLower(p[1:]))
		}
	}
	return b.String()
}

// goType is the Go type of an unsigned field of w bits.
func goType(w int) string {
	switch {
	case w == 1:
		return "bool"
	case w <= 8:
		return "uint8"
	case w <= 16:
		return "uint16"
	case w <= 32:
		return "uint32"
	}
	return "uint64"
}

// WriteCardGo writes package pkg: the card's limits, register offsets and
// fields, enums as typed constants with String methods, and one byte-slice
// view per record layout with an accessor pair per field.
func WriteCardGo(w io.Writer, pkg string) error {
	m, layouts, enums, err := CardSpec()
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Package %s is the openiwarp card's host interface, as the driver and\n// the card model see it: BAR0 register offsets and fields, the enums of\n// the records' fields, and a byte-slice view of each record the card and\n// the driver exchange through host memory. Reference: docs/card.md.\n", pkg)
	for _, p := range m.Doc {
		b.WriteString("//\n")
		for _, l := range wrap(p, 76) {
			fmt.Fprintf(&b, "// %s\n", l)
		}
	}
	fmt.Fprintf(&b, "package %s\n\nimport \"encoding/binary\"\n\n", pkg)

	b.WriteString("// Limits and sizes.\nconst (\n")
	for _, c := range cardConsts() {
		fmt.Fprintf(&b, "\t%s = %#x // %s\n", c.name, c.v, c.doc)
	}
	b.WriteString(")\n\n// Register byte offsets.\nconst (\n")
	for _, r := range m.Regs {
		fmt.Fprintf(&b, "\t%s = %#04x // %s\n", cardName(r.Name), r.Offset, firstSentence(r.Doc))
	}
	for _, win := range m.Windows {
		fmt.Fprintf(&b, "\t%sWindow = %#04x // %s\n", cardName(win.Name), win.Base, firstSentence(win.Doc))
	}
	for _, a := range m.Arrays {
		fmt.Fprintf(&b, "\t%sBase = %#x // %s\n\t%sStride = %#x\n", cardName(a.Name), a.Base, firstSentence(a.Doc), cardName(a.Name), a.Stride)
		for _, r := range a.Regs {
			fmt.Fprintf(&b, "\t%s%s = %#02x // %s\n", cardName(a.Name), cardName(r.Name), r.Offset, firstSentence(r.Doc))
		}
	}
	b.WriteString(")\n")
	writeFields := func(prefix string, r Reg) {
		if len(r.Fields) == 0 || (len(r.Fields) == 1 && r.Fields[0].Lo == 0 && r.Fields[0].Width == 32) {
			return
		}
		fmt.Fprintf(&b, "\n// Fields of %s.\nconst (\n", prefix)
		for _, f := range r.Fields {
			n := prefix + cardName(f.Name)
			fmt.Fprintf(&b, "\t%sShift = %d // %s\n\t%sMask = %#x\n", n, f.Lo, firstSentence(f.Doc), n, f.Mask())
		}
		b.WriteString(")\n")
	}
	for _, r := range m.Regs {
		writeFields(cardName(r.Name), r)
	}
	for _, a := range m.Arrays {
		for _, r := range a.Regs {
			writeFields(cardName(a.Name)+cardName(r.Name), r)
		}
	}

	enumByName := map[string]*Enum{}
	for _, e := range enums {
		enumByName[e.Name] = e
		t := cardName(e.Name)
		fmt.Fprintf(&b, "\n// %s: %s\ntype %s %s\n\n// %s values.\nconst (\n", t, e.Doc, t, goType(max(e.Width, 2)), t)
		for _, v := range e.Values {
			fmt.Fprintf(&b, "\t%s%s %s = %d // %s\n", t, cardName(v.Name), t, v.Value, v.Doc)
		}
		fmt.Fprintf(&b, ")\n\nfunc (v %s) String() string {\n\tswitch v {\n", t)
		for _, v := range e.Values {
			fmt.Fprintf(&b, "\tcase %s%s:\n\t\treturn %q\n", t, cardName(v.Name), v.Name)
		}
		fmt.Fprintf(&b, "\t}\n\treturn \"%s(\" + itoa(uint64(v)) + \")\"\n}\n", e.Name)
	}
	b.WriteString("\nfunc itoa(v uint64) string {\n\tvar d [20]byte\n\ti := len(d)\n\tfor {\n\t\ti--\n\t\td[i] = byte('0' + v%10)\n\t\tv /= 10\n\t\tif v == 0 {\n\t\t\treturn string(d[i:])\n\t\t}\n\t}\n}\n")

	for _, l := range layouts {
		t := cardName(l.Name)
		fmt.Fprintf(&b, "\n// %sSize is the size in bytes of a %s record.\nconst %sSize = %d\n\n", t, l.Name, t, l.Size)
		for _, line := range wrap(fmt.Sprintf("%s is a view of a %s record (at least %sSize bytes): %s", t, l.Name, t, l.Doc), 76) {
			fmt.Fprintf(&b, "// %s\n", line)
		}
		fmt.Fprintf(&b, "type %s []byte\n", t)
		for _, f := range l.sortedFields() {
			fn := cardName(f.Name)
			typ := goType(f.Width)
			if f.Enum != "" {
				typ = cardName(f.Enum)
			}
			fmt.Fprintf(&b, "\n// %s is %s.\nfunc (r %s) %s() %s {\n", fn, strings.TrimSuffix(f.Doc, "."), t, fn, typ)
			switch {
			case f.Width == 64:
				fmt.Fprintf(&b, "\treturn binary.LittleEndian.Uint64(r[%d:])\n}\n", f.Off)
				fmt.Fprintf(&b, "\n// Set%s sets %s.\nfunc (r %s) Set%s(v uint64) { binary.LittleEndian.PutUint64(r[%d:], v) }\n", fn, fn, t, fn, f.Off)
			case f.Width == 32:
				fmt.Fprintf(&b, "\treturn %s(binary.LittleEndian.Uint32(r[%d:]))\n}\n", typ, f.Off)
				fmt.Fprintf(&b, "\n// Set%s sets %s.\nfunc (r %s) Set%s(v %s) { binary.LittleEndian.PutUint32(r[%d:], uint32(v)) }\n", fn, fn, t, fn, typ, f.Off)
			case f.Width == 1:
				fmt.Fprintf(&b, "\treturn binary.LittleEndian.Uint32(r[%d:])>>%d&1 != 0\n}\n", f.Off, f.Lo)
				fmt.Fprintf(&b, "\n// Set%s sets %s.\nfunc (r %s) Set%s(v bool) {\n\tw := binary.LittleEndian.Uint32(r[%d:]) &^ (1 << %d)\n\tif v {\n\t\tw |= 1 << %d\n\t}\n\tbinary.LittleEndian.PutUint32(r[%d:], w)\n}\n", fn, fn, t, fn, f.Off, f.Lo, f.Lo, f.Off)
			default:
				mask := uint64(1)<<f.Width - 1
				fmt.Fprintf(&b, "\treturn %s(binary.LittleEndian.Uint32(r[%d:]) >> %d & %#x)\n}\n", typ, f.Off, f.Lo, mask)
				fmt.Fprintf(&b, "\n// Set%s sets %s (bits past its width are dropped).\nfunc (r %s) Set%s(v %s) {\n\tw := binary.LittleEndian.Uint32(r[%d:]) &^ (%#x << %d)\n\tbinary.LittleEndian.PutUint32(r[%d:], w|(uint32(v)&%#x)<<%d)\n}\n", fn, fn, t, fn, typ, f.Off, mask, f.Lo, f.Off, mask, f.Lo)
			}
		}
	}
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		return fmt.Errorf("gen: card spec: formatting Go: %w", err)
	}
	_, err = w.Write(src)
	return err
}

type cardConst struct {
	name string
	v    uint64
	doc  string
}

// cardConsts are the limits the generated code exports.
func cardConsts() []cardConst {
	return []cardConst{
		{"VendorID", CardVendorID, "PCI vendor ID"},
		{"DeviceID", CardDeviceID, "PCI device ID"},
		{"InterfaceVersion", CardVersion, "host interface version (major << 16 | minor)"},
		{"AddrBits", CardAddrBits, "BAR0 address bits"},
		{"MaxQP", CardMaxQP, "QP numbers (1..MaxQP-1 are usable)"},
		{"MaxCQ", CardMaxCQ, "CQ numbers"},
		{"STags", CardSTags, "STag table entries"},
		{"BB", CardBB, "bytes per work-queue basic block"},
		{"MaxWQEBBs", CardMaxWQEBBs, "basic blocks per WQE"},
		{"WQEHdr", CardWQEHdr, "bytes of WQE header"},
		{"MaxSGE", CardMaxSGE, "SGEs per WQE"},
		{"MaxInline", CardMaxInline, "inline bytes per WQE"},
		{"PushInline", CardPushInline, "inline bytes of a pushed WQE"},
		{"MaxRd", CardMaxRd, "ORD and IRD limit"},
		{"MinRingLog", CardMinRingLog, "smallest stream ring, log2 bytes"},
		{"MaxRingLog", CardMaxRingLog, "largest stream ring, log2 bytes"},
		{"MaxQueueLog", CardMaxQueLog, "deepest SQ, RQ, CQ or EQ, log2"},
	}
}

// cardHDLConsts lists every constant the HDL packages carry: name, value,
// width (0: an integer) and comment.
func cardHDLConsts() ([]struct {
	name string
	v    uint64
	w    int
	doc  string
}, error) {
	m, layouts, enums, err := CardSpec()
	if err != nil {
		return nil, err
	}
	type c = struct {
		name string
		v    uint64
		w    int
		doc  string
	}
	var out []c
	for _, k := range cardConsts() {
		out = append(out, c{"CARD_" + strings.ToUpper(snake(k.name)), k.v, 0, k.doc})
	}
	reg := func(prefix string, r Reg, off uint32, w int) {
		out = append(out, c{prefix + r.Name, uint64(off), w, firstSentence(r.Doc)})
		for _, f := range r.Fields {
			out = append(out, c{prefix + r.Name + "_" + f.Name + "_LSB", uint64(f.Lo), 0, ""}, c{prefix + r.Name + "_" + f.Name + "_W", uint64(f.Width), 0, ""})
		}
	}
	for _, r := range m.Regs {
		reg("CARD_", r, r.Offset, m.AddrBits)
	}
	for _, win := range m.Windows {
		out = append(out, c{"CARD_" + win.Name + "_WINDOW", uint64(win.Base), m.AddrBits, firstSentence(win.Doc)})
	}
	for _, a := range m.Arrays {
		out = append(out, c{"CARD_" + a.Name + "_BASE", uint64(a.Base), m.AddrBits, firstSentence(a.Doc)}, c{"CARD_" + a.Name + "_STRIDE", uint64(a.Stride), 0, ""})
		for _, r := range a.Regs {
			reg("CARD_"+a.Name+"_", r, r.Offset, bitsFor(uint64(a.Stride)))
		}
	}
	for _, e := range enums {
		for _, v := range e.Values {
			out = append(out, c{e.Name + "_" + v.Name, v.Value, e.Width, v.Doc})
		}
	}
	for _, l := range layouts {
		out = append(out, c{l.Name + "_BYTES", uint64(l.Size), 0, "record size"})
		for _, f := range l.sortedFields() {
			out = append(out, c{l.Name + "_" + f.Name + "_LSB", uint64(f.Bit()), 0, "bit in the record"}, c{l.Name + "_" + f.Name + "_W", uint64(f.Width), 0, ""})
		}
	}
	return out, nil
}

// snake turns UpperCamel into upper_snake ("MaxQP" -> "max_qp").
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		up := r >= 'A' && r <= 'Z'
		if up && i > 0 {
			prevLower := s[i-1] >= 'a' && s[i-1] <= 'z' || s[i-1] >= '0' && s[i-1] <= '9'
			nextLower := i+1 < len(s) && s[i+1] >= 'a' && s[i+1] <= 'z'
			if prevLower || nextLower && s[i-1] >= 'A' && s[i-1] <= 'Z' {
				b.WriteByte('_')
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

// WriteCardVerilog writes hw/rtl/regmap_card.vh: the card's constants as
// Verilog localparams.
func WriteCardVerilog(w io.Writer) error {
	cs, err := cardHDLConsts()
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("// The card's host interface (docs/card.md): BAR0 offsets and fields, enum values, record field positions.\n\n`ifndef REGMAP_CARD_VH\n`define REGMAP_CARD_VH\n\n")
	for _, c := range cs {
		cm := ""
		if c.doc != "" {
			cm = " // " + c.doc
		}
		if c.w == 0 {
			fmt.Fprintf(&b, "localparam integer %s = %d;%s\n", c.name, c.v, cm)
		} else {
			fmt.Fprintf(&b, "localparam [%d:0] %s = %d'h%x;%s\n", c.w-1, c.name, c.w, c.v, cm)
		}
	}
	b.WriteString("\n`endif\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// WriteCardVHDL writes the same constants as package regmap_card_pkg.
func WriteCardVHDL(w io.Writer) error {
	cs, err := cardHDLConsts()
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("-- The card's host interface (docs/card.md).\n\nlibrary ieee;\nuse ieee.std_logic_1164.all;\n\npackage regmap_card_pkg is\n")
	for _, c := range cs {
		cm := ""
		if c.doc != "" {
			cm = " -- " + c.doc
		}
		if c.w == 0 {
			fmt.Fprintf(&b, "    constant %s : natural := %d;%s\n", c.name, c.v, cm)
		} else {
			fmt.Fprintf(&b, "    constant %s : std_logic_vector(%d downto 0) := %s;%s\n", c.name, c.w-1, vhdlBits(c.v, c.w), cm)
		}
	}
	b.WriteString("end package regmap_card_pkg;\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// vhdlBits is v as a VHDL bit-string literal of w bits.
func vhdlBits(v uint64, w int) string {
	if w%4 == 0 {
		return fmt.Sprintf("x\"%0*x\"", w/4, v)
	}
	return fmt.Sprintf("\"%0*b\"", w, v)
}

// WriteCardMarkdown writes docs/card.md, the card's host interface reference.
func WriteCardMarkdown(w io.Writer) error {
	m, layouts, enums, err := CardSpec()
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# The card's host interface\n\n")
	for _, p := range m.Doc {
		b.WriteString(p + "\n\n")
	}
	b.WriteString("## Limits\n\n| Name | Value | What |\n| --- | ---: | --- |\n")
	for _, c := range cardConsts() {
		fmt.Fprintf(&b, "| `%s` | %d | %s |\n", c.name, c.v, c.doc)
	}
	fmt.Fprintf(&b, "\n## BAR0 registers\n\n%d-bit byte addresses; every register is 32 bits.\n\n| Offset | Register | Kind | Description |\n| --- | --- | --- | --- |\n", m.AddrBits)
	kind := func(r Reg) string {
		switch {
		case r.Command:
			return "command"
		case r.ReadOnly:
			return "read only"
		}
		return "register"
	}
	for _, r := range m.Regs {
		fmt.Fprintf(&b, "| `0x%04x` | `%s` | %s | %s |\n", r.Offset, r.Name, kind(r), r.Doc)
	}
	for _, win := range m.Windows {
		fmt.Fprintf(&b, "| `0x%04x` | `%s` | window | %s |\n", win.Base, win.Name, win.Doc)
	}
	for _, a := range m.Arrays {
		fmt.Fprintf(&b, "| `0x%05x` | `%s[%d]` | array | %s |\n", a.Base, a.Name, a.Count, a.Doc)
	}
	fields := func(title string, r Reg) {
		if len(r.Fields) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n### `%s`\n\n%s\n\n| Bits | Field | Description |\n| --- | --- | --- |\n", title, r.Doc)
		for _, f := range r.Fields {
			fmt.Fprintf(&b, "| %s | `%s` | %s |\n", bitRange(f.Lo, f.Width), f.Name, f.Doc)
		}
	}
	for _, r := range m.Regs {
		fields(fmt.Sprintf("%s` (`0x%04x", r.Name, r.Offset), r)
	}
	for _, a := range m.Arrays {
		fmt.Fprintf(&b, "\n## `%s`: %s\n\nElement stride %d bytes.\n\n| Offset | Register | Description |\n| --- | --- | --- |\n", a.Name, a.Doc, a.Stride)
		for _, r := range a.Regs {
			fmt.Fprintf(&b, "| `+0x%02x` | `%s` | %s |\n", r.Offset, r.Name, r.Doc)
		}
		for _, r := range a.Regs {
			fields(fmt.Sprintf("%s.%s` (`+0x%02x", a.Name, r.Name, r.Offset), r)
		}
	}
	b.WriteString("\n## Records in host memory\n")
	for _, l := range layouts {
		fmt.Fprintf(&b, "\n### `%s` (%d bytes)\n\n%s\n\n| Byte | Bits | Field | Description |\n| ---: | --- | --- | --- |\n", l.Name, l.Size, l.Doc)
		for _, f := range l.sortedFields() {
			doc := f.Doc
			if f.Enum != "" {
				doc += fmt.Sprintf(" (`%s`)", f.Enum)
			}
			fmt.Fprintf(&b, "| %d | %s | `%s` | %s |\n", f.Off, bitRange(f.Lo, f.Width), f.Name, doc)
		}
	}
	b.WriteString("\n## Enums\n")
	for _, e := range enums {
		fmt.Fprintf(&b, "\n### `%s`\n\n%s\n\n| Value | Name | Meaning |\n| ---: | --- | --- |\n", e.Name, e.Doc)
		for _, v := range e.Values {
			fmt.Fprintf(&b, "| %d | `%s` | %s |\n", v.Value, v.Name, v.Doc)
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func bitRange(lo, w int) string {
	if w == 1 {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d:%d", lo+w-1, lo)
}
