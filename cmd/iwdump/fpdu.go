package main

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// half decodes the FPDUs of one direction in full operation. golden/mpa's
// Deframer does the delineation and checks; half keeps the raw octets of
// the FPDU in progress so that, when the Deframer stops at a CRC error (as
// RFC 5044 §8 requires of a receiver), the bad FPDU can still be shown.
type half struct {
	p       *printer
	w       where
	d       *mpa.Deframer
	markers bool
	crc     bool
	raw     []byte // stream octets from rawOff on, not yet part of a delivered FPDU
	rawOff  uint32
	failed  bool
	fpdus   int
	ignored uint64 // octets after the error, not decoded
}

func newHalf(p *printer, w where, markers, crc bool, rev mpa.Revision) *half {
	return &half{p: p, w: w, markers: markers, crc: crc,
		d: mpa.NewDeframer(mpa.DeframerConfig{Markers: markers, CRC: crc, Rev: rev})}
}

// feed decodes the next octets of the stream, which arrived in frame.
func (h *half) feed(b []byte, frame int) {
	if h.failed {
		h.ignored += uint64(len(b))
		return
	}
	h.w.Frame = frame
	h.raw = append(h.raw, b...)
	if err := h.d.Feed(b, h.deliver); err != nil {
		h.fail(err)
	}
}

func (h *half) deliver(u mpa.ULPDU) error {
	status := "off"
	if h.crc {
		status = "ok"
	}
	h.emitFPDU(u.Offset, u.WireLen, u.Data, u.CRC, status, 0)
	end := u.Offset + uint32(u.WireLen)
	h.raw = h.raw[end-h.rawOff:]
	if len(h.raw) == 0 {
		h.raw = h.raw[:0:0] // let a large backing array go
	}
	h.rawOff = end
	return nil
}

// fail reports the error that stopped the Deframer, after the FPDU it
// rejected when that was a CRC mismatch.
func (h *half) fail(err error) {
	h.failed = true
	var me *mpa.Error
	if !errors.As(err, &me) {
		h.p.error(h.w, nil, 0, "%v", err)
		return
	}
	off := me.Offset
	if me.Kind == mpa.KindCRC {
		if b := h.raw[min(uint32(off)-h.rawOff, uint32(len(h.raw))):]; len(b) > 0 {
			if ulpdu, wire, field, ok := rawFPDU(b, uint32(off), h.markers); ok {
				h.emitFPDU(uint32(off), wire, ulpdu, field, "bad", mpa.CRC32c(b[:wire-mpa.CRCLen]))
			}
		}
	}
	h.p.error(h.w, &off, int(me.Code), "%s", strings.TrimPrefix(me.Error(), "mpa: "))
}

// end reports a stream that stops inside an FPDU. In a capture that is how
// recordings usually end (a note); a -stream input should be whole (an
// error).
func (h *half) end(capture bool) {
	if h.failed {
		if h.ignored > 0 {
			h.p.note(h.w, "%d more octets in this direction not decoded: nothing is delivered after an MPA error (RFC 5044 §8)", h.ignored)
		}
		return
	}
	err := h.d.End()
	switch {
	case err == nil:
	case capture:
		h.p.note(h.w, "%s", strings.TrimPrefix(err.Error(), "mpa: "))
	default:
		h.fail(err)
	}
}

func (h *half) emitFPDU(off uint32, wire int, ulpdu []byte, field uint32, status string, expected uint32) {
	h.fpdus++
	e := &fpduEvent{Kind: "fpdu", where: h.w, Offset: off, WireLen: wire, ULPDULength: len(ulpdu),
		Markers: markerCount(off, wire, h.markers), CRC: status, CRCField: fmt.Sprintf("%#08x", field),
		ULPDU: hex.EncodeToString(ulpdu)}
	if status == "bad" {
		e.CRCExpected = fmt.Sprintf("%#08x", expected)
	}
	annotate(e, ulpdu)
	h.p.emit(e)
}

// markerCount is the number of marker positions (every 512 octets from
// SeqStart) inside the wire octets [off, off+wire).
func markerCount(off uint32, wire int, markers bool) int {
	if !markers || wire <= 0 {
		return 0
	}
	first := int((mpa.MarkerPeriod - off%mpa.MarkerPeriod) % mpa.MarkerPeriod)
	if first >= wire {
		return 0
	}
	return 1 + (wire-1-first)/mpa.MarkerPeriod
}

// rawFPDU takes apart the FPDU at the start of b, whose first octet is at
// stream offset off: it strips markers, and returns the ULPDU, the FPDU's
// length on the wire and its CRC field. ok is false if b holds less than a
// whole FPDU.
func rawFPDU(b []byte, off uint32, markers bool) (ulpdu []byte, wire int, field uint32, ok bool) {
	var body []byte
	i := 0
	take := func(n int) bool {
		for ; n > 0; n-- {
			if markers && (off+uint32(i))%mpa.MarkerPeriod == 0 {
				i += mpa.MarkerLen
			}
			if i >= len(b) {
				return false
			}
			body = append(body, b[i])
			i++
		}
		return true
	}
	if !take(mpa.HeaderLen) {
		return nil, 0, 0, false
	}
	n := int(binary.BigEndian.Uint16(body))
	if !take(n + mpa.PadLen(n)) {
		return nil, 0, 0, false
	}
	crcStart := len(body)
	if !take(mpa.CRCLen) {
		return nil, 0, 0, false
	}
	return body[mpa.HeaderLen : mpa.HeaderLen+n], i, binary.LittleEndian.Uint32(body[crcStart:]), true
}

// annotate adds the DDP and RDMAP headers of a ULPDU to its event.
func annotate(e *fpduEvent, ulpdu []byte) {
	seg, err := ddp.Parse(ulpdu)
	if err != nil {
		e.DDPError = strings.TrimPrefix(err.Error(), "ddp: ")
		return
	}
	c := seg.Control
	e.Tagged, e.Last, e.DDPVersion = ptr(c.Tagged()), ptr(c.Last()), ptr(uint8(c.Version()))
	if c.Tagged() {
		h := seg.Tagged()
		e.STag, e.TO = ptr(h.STag()), ptr(h.TO())
	} else {
		h := seg.Untagged()
		e.QN, e.MSN, e.MO = ptr(h.QN()), ptr(h.MSN()), ptr(h.MO())
	}
	e.PayloadLen = ptr(len(seg.Payload))

	rc := rdmap.Control(seg.RsvdULP0())
	op := rc.Opcode()
	e.RDMAPVersion, e.Opcode, e.OpcodeName = ptr(uint8(rc.Version())), ptr(uint8(op)), op.String()
	m, err := rdmap.Parse(ulpdu)
	if err != nil {
		e.RDMAPError = strings.TrimPrefix(err.Error(), "rdmap: ")
		return
	}
	if info, _ := op.Info(); info.Invalidate {
		e.InvalSTag = ptr(m.InvalidateSTag())
	}
	if op == rdmap.OpReadRequest {
		r := m.ReadRequest.Fields()
		e.SinkSTag, e.SinkTO, e.ReadSize, e.SrcSTag, e.SrcTO = ptr(r.SinkSTag), ptr(r.SinkTO), ptr(r.Size), ptr(r.SrcSTag), ptr(r.SrcTO)
	}
	if t := m.Terminate; t != nil {
		cause := t.Cause
		e.TermLayer, e.TermEType, e.TermCode = ptr(uint8(cause.Layer())), ptr(cause.EType()), ptr(cause.Code())
		e.TermLayerName, e.TermTypeName, e.TermCodeName = cause.Layer().String(), cause.Type().String(), cause.Name()
		if e.TermCodeName == "" {
			e.TermCodeName = "unknown code"
		}
		var hdrs []string
		for _, f := range []struct {
			set  bool
			name string
		}{{t.M, "M"}, {t.D, "D"}, {t.R, "R"}} {
			if f.set {
				hdrs = append(hdrs, f.name)
			}
		}
		e.TermHdrs, e.TermLayout = strings.Join(hdrs, ""), t.Layout.String()
	}
}

func ptr[T any](v T) *T { return &v }
