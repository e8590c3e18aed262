package ddp

import "encoding/binary"

// Tagged buffer model header, 14 octets (RFC 5041 §4.2):
//
//	0        1         2..5     6..13
//	Control  RsvdULP   STag     TO (64 bits)
//	payload at 14
const (
	TaggedHeaderLen = 14

	taggedRsvdULP = 1
	taggedSTag    = 2
	taggedTO      = 6
)

// Tagged is a view of a tagged DDP header. It must be at least
// TaggedHeaderLen bytes long (Parse guarantees it).
type Tagged []byte

// Control returns the DDP control byte.
func (h Tagged) Control() Control { return Control(h[0]) }

// RsvdULP returns the 8-bit field reserved for the ULP (RDMAP's control field).
func (h Tagged) RsvdULP() uint8 { return h[taggedRsvdULP] }

// STag returns the steering tag of the data sink's buffer.
func (h Tagged) STag() uint32 { return binary.BigEndian.Uint32(h[taggedSTag:]) }

// TO returns the tagged offset of the segment's first payload byte.
func (h Tagged) TO() uint64 { return binary.BigEndian.Uint64(h[taggedTO:]) }

// Fields returns the header's fields.
func (h Tagged) Fields() TaggedFields {
	c := h.Control()
	return TaggedFields{Last: c.Last(), Version: c.Version(), RsvdULP: h.RsvdULP(), STag: h.STag(), TO: h.TO()}
}

// TaggedFields are the contents of a tagged header.
type TaggedFields struct {
	Last    bool
	Version Version
	RsvdULP uint8
	STag    uint32
	TO      uint64
}

// Append appends the encoded header to dst.
func (f TaggedFields) Append(dst []byte) []byte {
	dst = append(dst, byte(NewControl(true, f.Last, f.Version)), f.RsvdULP)
	dst = binary.BigEndian.AppendUint32(dst, f.STag)
	return binary.BigEndian.AppendUint64(dst, f.TO)
}
