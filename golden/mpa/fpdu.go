package mpa

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
)

// Sizes and limits of RFC 5044.
const (
	MaxULPDULength = 64768 // largest ULPDU DDP may hand to MPA (§3)
	MinMULPDU      = 128   // MULPDU never goes below this (§4.5)
	MarkerPeriod   = 512   // octets of stream between markers (§4.3)
	MarkerLen      = 4     // RESERVED(16) | FPDUPTR(16) (§4.2)
	HeaderLen      = 2     // ULPDU_Length (§4.1)
	CRCLen         = 4     // CRC field, always present (§4.1)
	// MaxFPDUWireLen bounds any FPDU on the wire: the largest body plus one
	// marker per 512 octets of it and one more at either end.
	MaxFPDUWireLen = HeaderLen + MaxULPDULength + 3 + CRCLen + MarkerLen*(MaxULPDULength/MarkerPeriod+3)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32c returns the CRC32c of b as RFC 5044 §4.4 computes it (the iSCSI
// digest: Castagnoli polynomial, reflected, initial and final inversion).
// On the wire the result is sent least significant octet first.
func CRC32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// CRCResidue is the CRC32c of any correctly protected run of octets followed
// by its little-endian CRC field: a receiver can check a frame by comparing
// against this constant instead of capturing the field.
const CRCResidue = 0x48674BC7

// PadLen returns the number of zero octets that follow a ULPDU of length n
// so that ULPDU_Length, ULPDU and PAD fill whole 4-octet words (§4.1).
func PadLen(n int) int { return (4 - (HeaderLen+n)%4) % 4 }

// FPDUWireLen returns the number of octets an FPDU carrying an n-octet
// ULPDU occupies on the wire when its first octet is at stream offset off
// (counted from SeqStart), markers included. The offset matters only with
// markers: it decides how many of them fall inside the FPDU.
func FPDUWireLen(off uint32, markers bool, n int) int {
	body := HeaderLen + n + PadLen(n)
	if !markers {
		return body + CRCLen
	}
	// A leading marker when the FPDU opens on the grid; after it, the body
	// starts off the grid. The first grid point inside the FPDU is g0
	// octets of body further on, then one every 508 octets of body (512
	// less the marker); a grid point right after the last body octet takes
	// the marker before the CRC.
	k := 0
	if off%MarkerPeriod == 0 {
		k, off = 1, off+MarkerLen
	}
	if g0 := MarkerPeriod - int(off%MarkerPeriod); body >= g0 {
		k += 1 + (body-g0)/(MarkerPeriod-MarkerLen)
	}
	return body + MarkerLen*k + CRCLen
}

// MULPDU returns the largest ULPDU that fits one FPDU in one TCP segment of
// emss octets (§4.5): EMSS − (6 + 4⌈EMSS/512⌉ + EMSS mod 4) with markers,
// EMSS − (6 + EMSS mod 4) without, clamped to [MinMULPDU, MaxULPDULength].
func MULPDU(emss int, markers bool) int {
	if emss <= 0 {
		return MinMULPDU
	}
	m := emss - (HeaderLen + CRCLen + emss%4)
	if markers {
		m -= MarkerLen * ((emss + MarkerPeriod - 1) / MarkerPeriod)
	}
	return max(MinMULPDU, min(m, MaxULPDULength))
}

// Framer is the transmit side of one MPA half connection in full operation.
// The zero Framer sends without markers and without CRC from SeqStart; set
// the fields from the negotiated [Params] before the first FPDU.
type Framer struct {
	Markers bool   // insert markers (the peer's M bit asked for them)
	CRC     bool   // compute CRC32c; otherwise the CRC field is sent as zero
	Offset  uint32 // octets sent since SeqStart, modulo 2^32
}

// AppendFPDU appends to dst the FPDU that carries ulpdu and advances
// f.Offset past it. The ULPDU must be 1 to MaxULPDULength octets. When dst
// has room for the FPDU it does not allocate.
func (f *Framer) AppendFPDU(dst, ulpdu []byte) ([]byte, error) {
	n := len(ulpdu)
	if n == 0 || n > MaxULPDULength {
		return dst, newError(KindLength, uint64(f.Offset), nil,
			"cannot frame a ULPDU of %d octets (MPA carries 1 to %d)", n, MaxULPDULength)
	}
	start := len(dst)
	dst = slices.Grow(dst, FPDUWireLen(f.Offset, f.Markers, n))
	c := txCursor{dst: dst, off: f.Offset, hdr: f.Offset, markers: f.Markers}
	c.markerIfDue() // a leading marker has pointer 0 and opens this FPDU
	c.hdr = c.off
	var hdr [HeaderLen]byte
	binary.BigEndian.PutUint16(hdr[:], uint16(n))
	c.write(hdr[:])
	c.write(ulpdu)
	c.write(zeroPad[:PadLen(n)])
	c.markerIfDue() // a marker right after the PAD belongs to this FPDU
	var crc uint32
	if f.CRC {
		crc = crc32.Checksum(c.dst[start:], castagnoli)
	}
	c.dst = binary.LittleEndian.AppendUint32(c.dst, crc)
	f.Offset = c.off + CRCLen
	return c.dst, nil
}

var zeroPad [3]byte

// txCursor writes one FPDU's octets, inserting markers on the grid.
type txCursor struct {
	dst      []byte
	off, hdr uint32 // stream offset of the next octet; of this FPDU's header
	markers  bool
}

// markerIfDue emits a marker if the next octet falls on the marker grid.
// Its FPDUPTR is the distance back to this FPDU's ULPDU_Length field, or 0
// before the header is written (hdr == off then).
func (c *txCursor) markerIfDue() {
	if c.markers && c.off%MarkerPeriod == 0 {
		ptr := c.off - c.hdr
		c.dst = append(c.dst, 0, 0, byte(ptr>>8), byte(ptr))
		c.off += MarkerLen
	}
}

func (c *txCursor) write(b []byte) {
	for len(b) > 0 {
		n := len(b)
		if c.markers {
			c.markerIfDue()
			n = min(n, MarkerPeriod-int(c.off%MarkerPeriod))
		}
		c.dst = append(c.dst, b[:n]...)
		c.off += uint32(n)
		b = b[n:]
	}
}

// ErrMarkersAround is returned by FrameAround on a connection with
// markers: they would fall inside the payload, which it does not copy.
var ErrMarkersAround = errors.New("mpa: cannot frame around a payload with markers on")

// FrameAround frames a ULPDU whose payload is not copied, for a gathering
// write (writev) straight from the payload's memory. dst[start:start+HeaderLen]
// is a slot for ULPDU_Length (its contents are ignored), dst[start+HeaderLen:]
// the head of the ULPDU (the DDP headers, say) and payload the rest of it,
// in pieces. FrameAround fills the length, appends PAD and CRC to dst and
// advances f.Offset. The FPDU on the wire is dst[start:mid], then the
// pieces of payload, then dst[mid:], where mid is len(dst) on entry: the
// octets AppendFPDU produces. With Markers it returns ErrMarkersAround.
func (f *Framer) FrameAround(dst []byte, start int, payload [][]byte) ([]byte, error) {
	if f.Markers {
		return dst, ErrMarkersAround
	}
	n := len(dst) - start - HeaderLen
	for _, p := range payload {
		n += len(p)
	}
	if start < 0 || len(dst)-start < HeaderLen || n <= 0 || n > MaxULPDULength {
		return dst, newError(KindLength, uint64(f.Offset), nil,
			"cannot frame a ULPDU of %d octets (MPA carries 1 to %d)", max(n, 0), MaxULPDULength)
	}
	binary.BigEndian.PutUint16(dst[start:], uint16(n))
	pad := zeroPad[:PadLen(n)]
	var crc uint32
	if f.CRC {
		crc = crc32.Update(0, castagnoli, dst[start:])
		for _, p := range payload {
			crc = crc32.Update(crc, castagnoli, p)
		}
		crc = crc32.Update(crc, castagnoli, pad)
	}
	dst = binary.LittleEndian.AppendUint32(append(dst, pad...), crc)
	f.Offset += uint32(HeaderLen + n + len(pad) + CRCLen)
	return dst, nil
}

// FrameInPlace frames a ULPDU that the caller has already written into dst,
// saving the copy AppendFPDU makes: dst[start:start+HeaderLen] is a slot for
// ULPDU_Length (its contents are ignored) and dst[start+HeaderLen:] is the
// ULPDU. FrameInPlace fills the length, inserts the markers that fall inside
// the FPDU (moving the ULPDU up when they do), appends PAD and CRC, and
// advances f.Offset. The result is the same octets AppendFPDU produces.
func (f *Framer) FrameInPlace(dst []byte, start int) ([]byte, error) {
	n := len(dst) - start - HeaderLen
	if start < 0 || n <= 0 || n > MaxULPDULength {
		return dst, newError(KindLength, uint64(f.Offset), nil,
			"cannot frame a ULPDU of %d octets (MPA carries 1 to %d)", max(n, 0), MaxULPDULength)
	}
	binary.BigEndian.PutUint16(dst[start:], uint16(n))
	dst = append(dst, zeroPad[:PadLen(n)]...)
	if f.Markers {
		dst = f.insertMarkers(dst, start)
	}
	var crc uint32
	if f.CRC {
		crc = crc32.Checksum(dst[start:], castagnoli)
	}
	dst = binary.LittleEndian.AppendUint32(dst, crc)
	f.Offset += uint32(len(dst) - start)
	return dst, nil
}

// insertMarkers spreads the body dst[start:] (header, ULPDU, PAD) over the
// wire layout with its markers, from the last chunk back so that every move
// goes to a higher address (copy is a memmove).
func (f *Framer) insertMarkers(dst []byte, start int) []byte {
	body := len(dst) - start
	wire := FPDUWireLen(f.Offset, true, body-HeaderLen-PadLen(body-HeaderLen)) - CRCLen
	if wire == body {
		return dst
	}
	dst = slices.Grow(dst, wire-body)[:start+wire]
	// Walk the wire layout forward to find each chunk's source and target.
	type chunk struct{ from, to, n int }
	var chunks [MaxULPDULength/(MarkerPeriod-MarkerLen) + 3]chunk
	var markerAt [len(chunks) + 1]int
	k, m := 0, 0
	off, src, w := f.Offset, 0, 0
	for src < body || off%MarkerPeriod == 0 && w < wire {
		if off%MarkerPeriod == 0 {
			markerAt[m] = w
			m++
			off, w = off+MarkerLen, w+MarkerLen
			continue
		}
		n := min(body-src, MarkerPeriod-int(off%MarkerPeriod))
		chunks[k] = chunk{src, w, n}
		k++
		src, w, off = src+n, w+n, off+uint32(n)
	}
	for i := k - 1; i >= 0; i-- {
		c := chunks[i]
		copy(dst[start+c.to:start+c.to+c.n], dst[start+c.from:start+c.from+c.n])
	}
	hdr := 0 // wire position of ULPDU_Length: after a leading marker
	if m > 0 && markerAt[0] == 0 {
		hdr = MarkerLen
	}
	for _, at := range markerAt[:m] {
		ptr := 0
		if at > 0 {
			ptr = at - hdr
		}
		binary.BigEndian.PutUint32(dst[start+at:], uint32(ptr))
	}
	return dst
}
