package mpa

import (
	"encoding/binary"
	"hash/crc32"
)

// DeframerConfig is the negotiated receive state of one half connection.
type DeframerConfig struct {
	Markers  bool     // markers expected (this side's own M bit asked for them)
	CRC      bool     // check the CRC (C was set in either startup frame)
	Rev      Revision // Rev0 accepts draft-01 FPDUPTR values (digest §6.3 step 5)
	MaxULPDU int      // largest ULPDU_Length accepted; 0 means MaxULPDULength
	// StartOffset is the stream offset, from SeqStart, of the first octet
	// fed: 0 at SeqStart, or an FPDU boundary known some other way, such as
	// a capture that begins mid-stream.
	StartOffset uint32
}

// ULPDU is one validated ULPDU with its place in the stream.
type ULPDU struct {
	// Data is the ULPDU with markers removed. It aliases the deframer's
	// buffer or the caller's input and is valid only during the callback.
	Data         []byte
	Offset       uint32 // stream offset (from SeqStart) of the FPDU's first octet: its leading marker, if any
	HeaderOffset uint32 // stream offset of the ULPDU_Length field
	WireLen      int    // octets of the FPDU on the wire: markers, header, ULPDU, PAD, CRC
	CRC          uint32 // the CRC field as received
}

// Deframer is the receive side of one MPA half connection in full
// operation (RFC 5044 §5.2, §6). Feed it the TCP payload of that direction,
// starting at SeqStart, in pieces of any size. It finds FPDUs by chaining
// ULPDU_Length fields, the in-order method of §6; it checks the CRC when
// negotiated and the FPDUPTR of every marker, and passes a ULPDU on only
// after the whole FPDU has arrived and passed those checks.
//
// It holds at most one partial FPDU (MaxFPDUWireLen octets) whatever the
// peer sends. After an error it delivers nothing more (§8): every later
// Feed returns the same error.
type Deframer struct {
	cfg     DeframerConfig
	max     int
	pos     uint64 // octets consumed since SeqStart
	raw     []byte // the octets of a partial FPDU
	need    int    // wire length of the partial FPDU, 0 until its header is in
	scratch []byte // a ULPDU with its markers removed
	err     error  // sticky: the error that stopped delivery
}

// NewDeframer returns a deframer positioned at SeqStart.
func NewDeframer(cfg DeframerConfig) *Deframer {
	d := &Deframer{cfg: cfg, max: cfg.MaxULPDU, pos: uint64(cfg.StartOffset)}
	if d.max <= 0 || d.max > MaxULPDULength {
		d.max = MaxULPDULength
	}
	return d
}

// Offset returns the number of octets consumed since SeqStart, modulo 2^32.
func (d *Deframer) Offset() uint32 { return uint32(d.pos) }

// Buffered returns the number of octets held for an FPDU not yet complete.
func (d *Deframer) Buffered() int { return len(d.raw) }

// Err returns the error that stopped delivery, or nil.
func (d *Deframer) Err() error { return d.err }

// Feed consumes p and calls fn, in stream order, for each FPDU that
// completes and validates. It returns the first *Error found in the stream
// or the first error fn returns; either stops delivery for good.
func (d *Deframer) Feed(p []byte, fn func(ULPDU) error) error {
	if d.err != nil {
		return d.err
	}
	for len(p) > 0 {
		if len(d.raw) == 0 {
			// Fast path: a whole FPDU at the start of p needs no copy.
			need, err := d.wireLen(p)
			if err != nil {
				return d.fail(err)
			}
			if need > 0 && len(p) >= need {
				if err := d.deliver(p[:need], fn); err != nil {
					return d.fail(err)
				}
				p = p[need:]
				continue
			}
		}
		// Slow path: gather a partial FPDU, first up to its header.
		want := d.need
		if want == 0 {
			want = d.headerSpan()
		}
		take := min(want-len(d.raw), len(p))
		d.raw = append(d.raw, p[:take]...)
		p = p[take:]
		if len(d.raw) < want {
			continue // p is used up
		}
		if d.need == 0 {
			need, err := d.wireLen(d.raw)
			if err != nil {
				return d.fail(err)
			}
			d.need = need
			continue
		}
		err := d.deliver(d.raw, fn)
		d.raw, d.need = d.raw[:0], 0
		if err != nil {
			return d.fail(err)
		}
	}
	return nil
}

// End reports how the stream ended: nil at an FPDU boundary, otherwise an
// error of kind KindClosed (code 1) saying how much of an FPDU was lost.
func (d *Deframer) End() error {
	if d.err != nil {
		return d.err
	}
	if len(d.raw) > 0 {
		return d.fail(newError(KindClosed, d.pos, nil,
			"stream ended %d octets into an FPDU at stream offset %d", len(d.raw), d.pos))
	}
	return nil
}

func (d *Deframer) fail(err error) error {
	d.err = err
	return err
}

// headerSpan is how many octets of the next FPDU reveal its length: the
// ULPDU_Length field, after a leading marker when one is due.
func (d *Deframer) headerSpan() int {
	if d.cfg.Markers && uint32(d.pos)%MarkerPeriod == 0 {
		return MarkerLen + HeaderLen
	}
	return HeaderLen
}

// wireLen returns the wire length of the FPDU that starts b (at d.pos), or
// 0 if b does not hold its header yet.
func (d *Deframer) wireLen(b []byte) (int, error) {
	h := d.headerSpan() - HeaderLen
	if len(b) < h+HeaderLen {
		return 0, nil
	}
	n := int(binary.BigEndian.Uint16(b[h:]))
	if n == 0 || n > d.max {
		return 0, newError(KindLength, d.pos, nil,
			"ULPDU_Length %d outside 1..%d", n, d.max)
	}
	return FPDUWireLen(uint32(d.pos), d.cfg.Markers, n), nil
}

// deliver checks the complete FPDU raw, which starts at d.pos, and passes
// its ULPDU to fn.
func (d *Deframer) deliver(raw []byte, fn func(ULPDU) error) error {
	start := uint32(d.pos)
	covered := raw[:len(raw)-CRCLen]
	got := binary.LittleEndian.Uint32(raw[len(raw)-CRCLen:])
	if d.cfg.CRC {
		if want := crc32.Checksum(covered, castagnoli); want != got {
			return newError(KindCRC, d.pos, nil,
				"FPDU of %d octets: computed CRC %08x, received %08x", len(raw), want, got)
		}
	}
	h := d.headerSpan() - HeaderLen
	n := int(binary.BigEndian.Uint16(raw[h:]))
	u := ULPDU{Offset: start, HeaderOffset: start + uint32(h), WireLen: len(raw), CRC: got}
	if !d.cfg.Markers {
		u.Data = raw[HeaderLen : HeaderLen+n]
	} else {
		if err := d.checkMarkers(covered, h); err != nil {
			return err
		}
		d.scratch = stripMarkers(d.scratch[:0], covered[h:], start+uint32(h))
		u.Data = d.scratch[HeaderLen : HeaderLen+n]
	}
	d.pos += uint64(len(raw))
	return fn(u)
}

// checkMarkers verifies the FPDUPTR of every marker in covered, the FPDU
// without its CRC field; h is 4 when the FPDU opens with a marker.
// A marker that opens the FPDU must hold 0; every other marker must point
// back to the ULPDU_Length field (§4.3). The two low bits are ignored
// (§4.2). From a Rev 0 peer a pointer to the leading marker, as draft-01's
// wording gives, is accepted too.
func (d *Deframer) checkMarkers(covered []byte, h int) error {
	start := uint32(d.pos)
	for i := 0; i < len(covered); i += MarkerPeriod {
		if i == 0 {
			if h == 0 {
				// The FPDU does not open on the grid: find the first marker.
				i = int((MarkerPeriod - start%MarkerPeriod) % MarkerPeriod)
				if i >= len(covered) {
					break
				}
			} else {
				if ptr := binary.BigEndian.Uint16(covered[2:]) &^ 3; ptr != 0 {
					return newError(KindMarker, d.pos, nil,
						"marker at stream offset %d opens an FPDU but has FPDUPTR %d, want 0", start, ptr)
				}
				continue
			}
		}
		ptr := int(binary.BigEndian.Uint16(covered[i+2:]) &^ 3)
		want := i - h
		if ptr == want || (d.cfg.Rev == Rev0 && h == MarkerLen && ptr == i) {
			continue
		}
		return newError(KindMarker, d.pos, nil,
			"marker at stream offset %d has FPDUPTR %d, want %d (header at %d)",
			start+uint32(i), ptr, want, start+uint32(h))
	}
	return nil
}

// stripMarkers appends b, which starts at stream offset off, without the
// markers that sit on the grid.
func stripMarkers(dst, b []byte, off uint32) []byte {
	for len(b) > 0 {
		if off%MarkerPeriod == 0 {
			b = b[MarkerLen:]
			off += MarkerLen
			continue
		}
		n := min(len(b), MarkerPeriod-int(off%MarkerPeriod))
		dst = append(dst, b[:n]...)
		b = b[n:]
		off += uint32(n)
	}
	return dst
}
