package rdmap

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/openiwarp/openiwarp/golden/ddp"
)

// Terminate header, after the untagged DDP header of a Terminate message
// (RFC 5040 §4.8, Fig. 7 and 8). Offsets from the start of the DDP payload:
//
//	0       Layer (4 bits) | EType (4 bits)
//	1       Error Code
//	2       M | D | R | 5 reserved bits      (Hdr Ctrl)
//	3       reserved (13 reserved bits in all: send 0, ignore on receive)
//	4..5    DDP Segment Length               present if M or D
//	6..     Terminated DDP header (14 or 18) present if D; sized by its T bit
//	..      Terminated RDMA header (28)      present if R and the copied opcode is a Read Request
const (
	TerminateMinLen = 4

	termSegLen = 4
	termHdrs   = 6

	HdrCtrlM = 0x80 // DDP Segment Length valid
	HdrCtrlD = 0x40 // Terminated DDP header present
	HdrCtrlR = 0x20 // Terminated RDMA header present

	// siw 6.1 writes the control word with little-endian C bit fields:
	// octet 0 is EType<<4|Layer and M, D, R are bits 0, 1, 2 of octet 2.
	siwM = 0x01
	siwD = 0x02
	siwR = 0x04
)

// Layout names the bit layout a received Terminate Control field used.
type Layout uint8

// Terminate Control layouts.
const (
	// LayoutRFC is RFC 5040 Fig. 8; the only layout we send.
	LayoutRFC Layout = iota
	// LayoutSiw is Linux soft-iWARP 6.1's swapped layout (see ParseTerminate).
	LayoutSiw
)

func (l Layout) String() string {
	if l == LayoutSiw {
		return "siw"
	}
	return "RFC"
}

// Terminate is a decoded Terminate header and its copied headers.
type Terminate struct {
	Cause Cause
	// M: SegLen is valid. D: DDPHeader is present. R: the RDMA header is present.
	M, D, R bool
	// SegLen is the DDP Segment Length of the failing segment. We send the
	// MPA ULPDU_Length of the failing FPDU (the whole DDP segment).
	SegLen uint16
	// DDPHeader is the failing segment's DDP header (14 or 18 bytes) if D.
	DDPHeader []byte
	// RDMAHeader is the failing Read Request header (28 bytes) if R and the
	// copied opcode is a Read Request; nil otherwise (siw sets R on Send
	// with Invalidate errors but has no RDMA header to copy).
	RDMAHeader []byte
	// Layout is how the Terminate Control was encoded (parse only).
	Layout Layout
}

// Sentinel errors for a malformed Terminate (match with errors.Is).
var (
	ErrTerminateShort  = errors.New("rdmap: Terminate shorter than its header flags announce")
	ErrTerminateHeader = errors.New("rdmap: Terminate copies a malformed header")
)

// TerminateError describes a Terminate that cannot be parsed.
type TerminateError struct {
	Err  error // ErrTerminateShort or ErrTerminateHeader
	Len  int   // bytes available
	Need int   // bytes the flags require
	Msg  string
}

func (e *TerminateError) Error() string {
	if e.Msg != "" {
		return fmt.Sprintf("%v: %s", e.Err, e.Msg)
	}
	return fmt.Sprintf("%v: have %d bytes, need %d", e.Err, e.Len, e.Need)
}

func (e *TerminateError) Unwrap() error { return e.Err }

// Len is the encoded length of the Terminate header and copied headers.
func (t *Terminate) Len() int {
	n := TerminateMinLen
	if t.M || t.D {
		n += 2
	}
	if t.D {
		n += len(t.DDPHeader)
	}
	if t.R {
		n += len(t.RDMAHeader)
	}
	return n
}

// Append appends the Terminate header (RFC layout) and its copied headers
// to dst. The DDP header is copied if D, the RDMA header if R.
func (t *Terminate) Append(dst []byte) []byte {
	var hc byte
	if t.M {
		hc |= HdrCtrlM
	}
	if t.D {
		hc |= HdrCtrlD
	}
	if t.R {
		hc |= HdrCtrlR
	}
	dst = append(dst, byte(t.Cause>>8), byte(t.Cause), hc, 0)
	if t.M || t.D {
		dst = binary.BigEndian.AppendUint16(dst, t.SegLen)
	}
	if t.D {
		dst = append(dst, t.DDPHeader...)
	}
	if t.R {
		dst = append(dst, t.RDMAHeader...)
	}
	return dst
}

// AppendMessage appends a whole Terminate ULPDU: the untagged DDP header
// (QN 2, the given MSN, MO 0, L=1) and the Terminate header.
func (t *Terminate) AppendMessage(dst []byte, v Version, dv ddp.Version, msn uint32) []byte {
	dst = ddp.UntaggedFields{Last: true, Version: dv, RsvdULP0: uint8(NewControl(v, OpTerminate)),
		QN: QNTerminate, MSN: msn}.Append(dst)
	return t.Append(dst)
}

// ParseTerminate decodes an untrusted Terminate header (the DDP payload of
// a Terminate message). The returned slices alias b. Trailing bytes after
// the headers the flags announce are ignored.
//
// siw 6.1 sends the Terminate Control with its nibbles and flag bits
// swapped (see LayoutSiw). ParseTerminate accepts that layout where it is
// unambiguous: the Hdr Ctrl bits are the strong signal (RFC flags live in
// the three high bits, siw's in the three low ones); with no flag set, the
// reading whose Layer/EType/Code is in the tables wins, and if both are,
// the RFC reading wins (for example 20 05 reads as MPA Local catastrophic
// error, not siw's Invalid RDMAP version).
func ParseTerminate(b []byte) (Terminate, error) {
	if len(b) < TerminateMinLen {
		return Terminate{}, &TerminateError{Err: ErrTerminateShort, Len: len(b), Need: TerminateMinLen}
	}
	rfc := Cause(b[0])<<8 | Cause(b[1])
	siw := Cause(b[0]&0xF)<<12 | Cause(b[0]>>4)<<8 | Cause(b[1])
	hc := b[2]
	t := Terminate{Cause: rfc}
	switch {
	case hc&0xE0 != 0:
		t.M, t.D, t.R = hc&HdrCtrlM != 0, hc&HdrCtrlD != 0, hc&HdrCtrlR != 0
	case hc&0x07 != 0:
		t.Layout, t.Cause = LayoutSiw, siw
		t.M, t.D, t.R = hc&siwM != 0, hc&siwD != 0, hc&siwR != 0
	case !rfc.Known() && siw.Known():
		t.Layout, t.Cause = LayoutSiw, siw
	}
	need := TerminateMinLen
	if t.M || t.D {
		need = termHdrs
		if len(b) < need {
			return Terminate{}, &TerminateError{Err: ErrTerminateShort, Len: len(b), Need: need}
		}
		t.SegLen = binary.BigEndian.Uint16(b[termSegLen:])
	}
	copiedOp := OpReadRequest // without a copied DDP header, R can only mean a Read Request
	if t.D {
		if len(b) <= need {
			return Terminate{}, &TerminateError{Err: ErrTerminateShort, Len: len(b), Need: need + 1}
		}
		seg, err := ddp.Parse(b[need:])
		if err != nil {
			return Terminate{}, &TerminateError{Err: ErrTerminateShort, Len: len(b), Need: need + ddp.Control(b[need]).HeaderLen()}
		}
		t.DDPHeader = seg.Header
		need += len(seg.Header)
		copiedOp = Control(seg.RsvdULP0()).Opcode()
		if seg.Control.Tagged() {
			copiedOp = OpWrite // no RDMA header follows a tagged header
		}
	}
	if t.R && copiedOp == OpReadRequest {
		if len(b) < need+ReadRequestLen {
			return Terminate{}, &TerminateError{Err: ErrTerminateShort, Len: len(b), Need: need + ReadRequestLen}
		}
		t.RDMAHeader = b[need : need+ReadRequestLen : need+ReadRequestLen]
	}
	return t, nil
}

// CopiedTagged reports whether the copied DDP header is tagged.
func (t *Terminate) CopiedTagged() bool {
	return len(t.DDPHeader) > 0 && ddp.Control(t.DDPHeader[0]).Tagged()
}

func (t *Terminate) String() string {
	s := fmt.Sprintf("Terminate %v", t.Cause)
	if t.M {
		s += fmt.Sprintf(" seglen=%d", t.SegLen)
	}
	if t.D {
		s += fmt.Sprintf(" ddp=%x", t.DDPHeader)
	}
	if len(t.RDMAHeader) > 0 {
		s += fmt.Sprintf(" rdma=%x", t.RDMAHeader)
	}
	if t.Layout != LayoutRFC {
		s += " (siw layout)"
	}
	return s
}
