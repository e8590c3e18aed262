package ddp

import "encoding/binary"

// Untagged buffer model header, 18 octets (RFC 5041 §4.3):
//
//	0        1              2..5             6..9  10..13  14..17
//	Control  RsvdULP[0:7]   RsvdULP[8:39]    QN    MSN     MO
//	payload at 18
const (
	UntaggedHeaderLen = 18

	untaggedRsvdULP0 = 1
	untaggedRsvdULP1 = 2
	untaggedQN       = 6
	untaggedMSN      = 10
	untaggedMO       = 14
)

// Untagged is a view of an untagged DDP header. It must be at least
// UntaggedHeaderLen bytes long (Parse guarantees it).
type Untagged []byte

// Control returns the DDP control byte.
func (h Untagged) Control() Control { return Control(h[0]) }

// RsvdULP0 returns the first RsvdULP octet (RDMAP's control field).
func (h Untagged) RsvdULP0() uint8 { return h[untaggedRsvdULP0] }

// RsvdULP1 returns RsvdULP octets 1 to 4 (RDMAP's Invalidate STag).
func (h Untagged) RsvdULP1() uint32 { return binary.BigEndian.Uint32(h[untaggedRsvdULP1:]) }

// QN returns the queue number.
func (h Untagged) QN() uint32 { return binary.BigEndian.Uint32(h[untaggedQN:]) }

// MSN returns the message sequence number.
func (h Untagged) MSN() uint32 { return binary.BigEndian.Uint32(h[untaggedMSN:]) }

// MO returns the message offset of the segment's first payload byte.
func (h Untagged) MO() uint32 { return binary.BigEndian.Uint32(h[untaggedMO:]) }

// Fields returns the header's fields.
func (h Untagged) Fields() UntaggedFields {
	c := h.Control()
	return UntaggedFields{Last: c.Last(), Version: c.Version(), RsvdULP0: h.RsvdULP0(),
		RsvdULP1: h.RsvdULP1(), QN: h.QN(), MSN: h.MSN(), MO: h.MO()}
}

// UntaggedFields are the contents of an untagged header.
type UntaggedFields struct {
	Last     bool
	Version  Version
	RsvdULP0 uint8  // RDMAP control field
	RsvdULP1 uint32 // RDMAP Invalidate STag, else zero
	QN       uint32
	MSN      uint32
	MO       uint32
}

// Append appends the encoded header to dst.
func (f UntaggedFields) Append(dst []byte) []byte {
	dst = append(dst, byte(NewControl(false, f.Last, f.Version)), f.RsvdULP0)
	dst = binary.BigEndian.AppendUint32(dst, f.RsvdULP1)
	dst = binary.BigEndian.AppendUint32(dst, f.QN)
	dst = binary.BigEndian.AppendUint32(dst, f.MSN)
	return binary.BigEndian.AppendUint32(dst, f.MO)
}
