package gen

import (
	"fmt"
	"sort"
)

// Layout is the format of a record the card and the driver exchange
// through host memory or a register window: a work-queue entry, a
// completion, an event, a status record. Fields are little-endian unsigned
// integers: a field of up to 32 bits lies inside the aligned 32-bit word at
// Off, bits Lo..Lo+Width-1; a 64-bit field is the aligned 64-bit word at Off.
// The RTL sees a record as one bit vector whose bit Off*8+Lo is the field's
// least significant bit.
type Layout struct {
	Name   string // upper snake case
	Size   int    // bytes
	Doc    string
	Fields []LayoutField
}

// LayoutField is one field of a Layout.
type LayoutField struct {
	Name  string // upper snake case, unique in its layout
	Off   int    // byte offset of the containing word
	Lo    int    // least significant bit inside that word
	Width int    // bits
	Doc   string
	Enum  string // the Enum whose values the field holds, if any
}

// Bit is the field's least significant bit in the record's bit vector.
func (f LayoutField) Bit() int { return f.Off*8 + f.Lo }

// Validate checks that every field lies inside one aligned word of the
// record and that no two fields share a bit.
func (l *Layout) Validate() error {
	used := make([]bool, l.Size*8)
	names := map[string]bool{}
	for _, f := range l.Fields {
		word := 32
		if f.Width == 64 {
			word = 64
		}
		if f.Width < 1 || f.Width > 64 || (f.Width > 32 && f.Width != 64) || f.Lo < 0 || f.Lo+f.Width > word ||
			f.Off < 0 || f.Off%(word/8) != 0 || f.Off+word/8 > l.Size {
			return fmt.Errorf("%w: layout %s field %s: bits %d+%d of the word at byte %d", ErrInvalid, l.Name, f.Name, f.Lo, f.Width, f.Off)
		}
		if names[f.Name] {
			return fmt.Errorf("%w: layout %s: two fields called %s", ErrInvalid, l.Name, f.Name)
		}
		names[f.Name] = true
		for b := f.Bit(); b < f.Bit()+f.Width; b++ {
			if used[b] {
				return fmt.Errorf("%w: layout %s field %s overlaps another at bit %d", ErrInvalid, l.Name, f.Name, b)
			}
			used[b] = true
		}
	}
	return nil
}

// Field returns the field called name; it panics if there is none (layouts
// are fixed at compile time).
func (l *Layout) Field(name string) LayoutField {
	for _, f := range l.Fields {
		if f.Name == name {
			return f
		}
	}
	panic("gen: layout " + l.Name + " has no field " + name)
}

// sortedFields is the fields in record order.
func (l *Layout) sortedFields() []LayoutField {
	fs := append([]LayoutField(nil), l.Fields...)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Bit() < fs[j].Bit() })
	return fs
}

// Enum is a set of named values of one field (opcodes, statuses, event
// types), defined once for the RTL, the driver and the reference.
type Enum struct {
	Name   string // upper snake case, the Go type's name in camel case
	Width  int
	Doc    string
	Values []EnumValue
}

// EnumValue is one named value.
type EnumValue struct {
	Name  string // upper snake case
	Value uint64
	Doc   string
}

// Validate checks that values fit and names and values are unique.
func (e *Enum) Validate() error {
	names, vals := map[string]bool{}, map[uint64]bool{}
	for _, v := range e.Values {
		if v.Value>>e.Width != 0 || names[v.Name] || vals[v.Value] {
			return fmt.Errorf("%w: enum %s value %s = %d (width %d) is out of range or repeated", ErrInvalid, e.Name, v.Name, v.Value, e.Width)
		}
		names[v.Name], vals[v.Value] = true, true
	}
	return nil
}

// Value returns the value called name; it panics if there is none.
func (e *Enum) Value(name string) uint64 {
	for _, v := range e.Values {
		if v.Name == name {
			return v.Value
		}
	}
	panic("gen: enum " + e.Name + " has no value " + name)
}
