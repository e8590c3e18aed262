package sim

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"strings"
	"unsafe"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// Port is where one port sits in a per-cycle vector.
type Port struct {
	Name   string
	Width  int
	Offset int // first 32-bit word
	Words  int
}

// Layout is the per-cycle vector format of a block, the one cmd/iwgen's
// port lists give the C++ wrapper (gen.SimPorts).
type Layout struct {
	Inputs, Outputs   []Port
	InWords, OutWords int
}

// LayoutOf derives the vector layout of m.
func LayoutOf(m *gen.Module) Layout {
	ins, outs := gen.SimPorts(m)
	var l Layout
	place := func(sigs []*gen.Signal, total *int) []Port {
		ports := make([]Port, len(sigs))
		for i, s := range sigs {
			w := (s.W + 31) / 32
			ports[i] = Port{Name: s.Name, Width: s.W, Offset: *total, Words: w}
			*total += w
		}
		return ports
	}
	l.Inputs = place(ins, &l.InWords)
	l.Outputs = place(outs, &l.OutWords)
	return l
}

// In returns the input port called name.
func (l Layout) In(name string) (Port, error) { return find(l.Inputs, name) }

// Out returns the output port called name.
func (l Layout) Out(name string) (Port, error) { return find(l.Outputs, name) }

// lookup sets *dst to the input (in) or output port called name, unless
// *err already holds an error; it keeps the first error in *err, so that a
// list of lookups is checked once at its end.
func (l Layout) lookup(dst *Port, name string, in bool, err *error) {
	if *err != nil {
		return
	}
	if in {
		*dst, *err = l.In(name)
	} else {
		*dst, *err = l.Out(name)
	}
}

func find(ports []Port, name string) (Port, error) {
	for _, p := range ports {
		if p.Name == name {
			return p, nil
		}
	}
	return Port{}, fmt.Errorf("sim: no port %q", name)
}

// Set writes v (at most 64 bits) into port p of vector vec.
func (p Port) Set(vec []uint32, v uint64) {
	vec[p.Offset] = uint32(v)
	if p.Words > 1 {
		vec[p.Offset+1] = uint32(v >> 32)
	}
}

// Get reads port p (its low 64 bits).
func (p Port) Get(vec []uint32) uint64 {
	v := uint64(vec[p.Offset])
	if p.Words > 1 {
		v |= uint64(vec[p.Offset+1]) << 32
	}
	return v
}

// littleEndian: a vector's words are laid out in memory as its bytes in
// lane order, so SetBytes and Bytes can copy them whole.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// LaneBytes is the memory of data port p of vec seen as its byte lanes (lane
// 0 first), without a copy; nil on a big-endian machine, where the lanes are
// not in that order.
func (p Port) LaneBytes(vec []uint32) []byte {
	if !littleEndian {
		return nil
	}
	w := vec[p.Offset : p.Offset+p.Words]
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), 4*len(w))
}

// SetBytes writes b into a data port, b[0] in bits 7:0 (byte lane 0);
// lanes past len(b) become zero.
func (p Port) SetBytes(vec []uint32, b []byte) {
	if lanes := p.LaneBytes(vec); lanes != nil {
		clear(lanes[copy(lanes, b):])
		return
	}
	w := vec[p.Offset : p.Offset+p.Words]
	full := min(len(b)/4, len(w))
	for i := 0; i < full; i++ {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	for i := full; i < len(w); i++ {
		var x uint32
		for k := 0; k < 4; k++ {
			if j := 4*i + k; j < len(b) {
				x |= uint32(b[j]) << (8 * k)
			}
		}
		w[i] = x
	}
}

// Bytes reads a data port into dst (len(dst) lanes).
func (p Port) Bytes(vec []uint32, dst []byte) {
	if lanes := p.LaneBytes(vec); lanes != nil {
		copy(dst, lanes)
		return
	}
	full := len(dst) / 4
	for i := 0; i < full; i++ {
		binary.LittleEndian.PutUint32(dst[4*i:], vec[p.Offset+i])
	}
	for j := 4 * full; j < len(dst); j++ {
		dst[j] = byte(vec[p.Offset+j/4] >> (8 * (j % 4)))
	}
}

// Hex prints port p of vec as a Verilog-style hex literal.
func (p Port) Hex(vec []uint32) string {
	v := new(big.Int)
	for i := p.Words - 1; i >= 0; i-- {
		v.Lsh(v, 32).Or(v, big.NewInt(int64(vec[p.Offset+i])))
	}
	return fmt.Sprintf("%d'h%0*s", p.Width, (p.Width+3)/4, v.Text(16))
}

// Describe prints every port of a vector, one name=value per port.
func Describe(ports []Port, vec []uint32) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = p.Name + "=" + p.Hex(vec)
	}
	return strings.Join(parts, " ")
}
