package ddp

import (
	"errors"
	"fmt"
)

// Segment is a parsed DDP segment: a header view and its payload, both
// aliasing the ULPDU given to Parse.
type Segment struct {
	Control Control
	Header  []byte // TaggedHeaderLen or UntaggedHeaderLen bytes
	Payload []byte
}

// Tagged returns the tagged header view. Valid only if Control.Tagged().
func (s Segment) Tagged() Tagged { return Tagged(s.Header) }

// Untagged returns the untagged header view. Valid only if !Control.Tagged().
func (s Segment) Untagged() Untagged { return Untagged(s.Header) }

// RsvdULP0 returns the first RsvdULP octet of either header type: RDMAP's
// control field.
func (s Segment) RsvdULP0() uint8 { return s.Header[1] }

// ErrShort is matched (errors.Is) by a ParseError for a ULPDU too short
// for the header its control byte announces.
var ErrShort = errors.New("ddp: segment shorter than its header")

// ParseError describes a ULPDU that cannot be a DDP segment.
type ParseError struct {
	Len  int // ULPDU length
	Need int // header length required
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("ddp: %d-byte ULPDU is shorter than its %d-byte DDP header", e.Len, e.Need)
}

// Is makes errors.Is(err, ErrShort) true.
func (e *ParseError) Is(target error) bool { return target == ErrShort }

// Parse splits an untrusted ULPDU into header and payload. It fails only if
// the ULPDU is shorter than the header announced by its T bit.
func Parse(ulpdu []byte) (Segment, error) {
	if len(ulpdu) < 1 {
		return Segment{}, &ParseError{Len: 0, Need: 1}
	}
	c := Control(ulpdu[0])
	n := c.HeaderLen()
	if len(ulpdu) < n {
		return Segment{}, &ParseError{Len: len(ulpdu), Need: n}
	}
	return Segment{Control: c, Header: ulpdu[:n:n], Payload: ulpdu[n:]}, nil
}

// MaxPayload is the payload capacity of one segment whose DDP and ULP
// headers together take hdrLen octets, given the LLP's MULPDU
// (RFC 5041 §5.2: a segment MUST NOT exceed the MULPDU).
func MaxPayload(mulpdu, hdrLen int) int {
	if mulpdu <= hdrLen {
		return 0
	}
	return mulpdu - hdrLen
}

// SegmentCount is the number of segments a message of msgLen payload bytes
// takes with at most maxPayload bytes each. A zero-length message is one
// segment (RFC 5041 §5.2).
func SegmentCount(msgLen uint64, maxPayload int) uint64 {
	if msgLen == 0 || maxPayload <= 0 {
		return 1
	}
	return (msgLen + uint64(maxPayload) - 1) / uint64(maxPayload)
}
