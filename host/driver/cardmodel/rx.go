package cardmodel

import (
	"encoding/binary"
	"errors"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// errStop ends a deframer Feed after the QP failed on a segment.
var errStop = errors.New("cardmodel: QP failed on a segment")

func (q *qp) headerSpan() uint32 {
	if q.markersRX && q.rxsCI%mpa.MarkerPeriod == 0 {
		return mpa.MarkerLen + mpa.HeaderLen
	}
	return mpa.HeaderLen
}

func (q *qp) wireLen(n int) uint32 {
	if n == 0 || n > mpa.MaxULPDULength {
		return 0
	}
	return uint32(mpa.FPDUWireLen(q.rxsCI, q.markersRX, n))
}

// peekLen reads the ULPDU_Length of the next FPDU (a DMA read of the
// header span); ok is false after a DMA fault.
func (q *qp) peekLen(hs uint32) (int, bool) {
	b := &q.hdrBuf
	if !q.readRing(q.rxsCI, b[:hs]) {
		return 0, false
	}
	return int(binary.BigEndian.Uint16(b[hs-2:])), true
}

// readRing reads len(p) receive-ring bytes from stream offset at.
func (q *qp) readRing(at uint32, p []byte) bool {
	for len(p) > 0 {
		pos := at & (q.rxsSize - 1)
		k := min(uint32(len(p)), q.rxsSize-pos)
		if err := q.c.dmaRead(q.n, q.rxsBase+uint64(pos), p[:k]); err != nil {
			q.dmaFailed(q.c.faultAddr)
			return false
		}
		p, at = p[k:], at+k
	}
	return true
}

// rxStep takes one whole FPDU from the receive ring, or acts on the
// stream's end. A partial FPDU stays in the ring until the rest arrives.
func (q *qp) rxStep() bool {
	if q.rxEnded || q.state == cs.QPStateError {
		return false
	}
	avail := q.rxsPI - q.rxsCI
	if avail > q.rxsSize {
		q.toError(cs.QPErrBadDoorbell, nil)
		return true
	}
	if avail == 0 {
		if !q.rxFin {
			return false
		}
		q.rxEnded = true
		q.c.qpEvent(cs.EQETypeStreamEnd, q, 0, 0)
		// No Read Response can come any more: outstanding Reads are
		// flushed (in posting order, behind what precedes them).
		for _, w := range q.orq {
			w.done, w.status = true, cs.WCStatusWRFlushErr
		}
		q.orq = nil
		q.retire()
		return true
	}
	hs := q.headerSpan()
	if avail < hs {
		return q.cut()
	}
	n, ok := q.peekLen(hs)
	if !ok {
		return true
	}
	wire := q.wireLen(n)
	if wire == 0 {
		// ULPDU_Length out of range: the deframer reports it from the header.
		hdr := make([]byte, hs)
		if q.readRing(q.rxsCI, hdr) {
			q.consume(hs, q.defr.Feed(hdr, q.onULPDU))
		}
		return true
	}
	if wire > q.rxsSize {
		// An FPDU larger than the ring can never be taken whole.
		q.terminate(localCatastrophic())
		return true
	}
	if avail < wire {
		return q.cut()
	}
	raw, ok := q.ringFPDU(wire)
	if !ok {
		return true
	}
	q.consume(wire, q.defr.Feed(raw, q.onULPDU))
	return true
}

// ringFPDU is the wire bytes of the FPDU at RXS_CI: the ring itself where
// the host can be read in place and the FPDU does not wrap, otherwise a
// copy read into q.raw (which also reports the DMA fault a refused read
// is); ok is false after a fault.
func (q *qp) ringFPDU(wire uint32) ([]byte, bool) {
	if pos := q.rxsCI & (q.rxsSize - 1); q.c.view != nil && pos+wire <= q.rxsSize {
		if b, err := q.c.view.ViewMem(q.rxsBase+uint64(pos), int(wire)); err == nil {
			return b, true
		}
	}
	if cap(q.raw) < int(wire) {
		q.raw = make([]byte, wire)
	}
	raw := q.raw[:wire]
	return raw, q.readRing(q.rxsCI, raw)
}

// cut handles a partial FPDU at the ring's end: wait for the rest, or, if
// the peer's stream has ended, QP_ERROR STREAM_CUT.
func (q *qp) cut() bool {
	if !q.rxFin {
		return false
	}
	q.rxEnded = true
	q.toError(cs.QPErrStreamCut, nil)
	return true
}

// consume moves RXS_CI past n bytes taken from the ring, and reports an
// MPA error of the deframer (err) with its Terminate.
func (q *qp) consume(n uint32, err error) {
	q.rxsCI += n
	q.dirty = true
	if q.armRX {
		q.armRX = false
		q.writeStatus()
		q.c.qpEvent(cs.EQETypeRXSpace, q, 0, 0)
	}
	if err == nil || errors.Is(err, errStop) {
		return
	}
	c, t := iwarp.MPATerminate(err)
	if t == nil {
		t = &rdmap.Terminate{Cause: c}
	}
	q.terminate(t)
}

// reject answers a segment the receive checks refused.
func (q *qp) reject(r *iwarp.Reject) error {
	q.terminate(r.Terminate())
	return errStop
}

// onULPDU handles one validated ULPDU, in the order of the reference
// endpoint's receive path.
func (q *qp) onULPDU(u mpa.ULPDU) error {
	if q.state == cs.QPStateError {
		return errStop
	}
	d := u.Data
	seg, op, rj := iwarp.CheckHeaders(d, q.dv, q.rv)
	if rj != nil {
		return q.reject(rj)
	}
	switch op {
	case rdmap.OpWrite:
		h := seg.Tagged()
		req := mem.Request{STag: mem.STag(h.STag()), PD: q.pd, QP: q.n, TO: h.TO(), Len: uint64(len(seg.Payload)), Use: mem.UseRemoteWrite}
		if rj := iwarp.CheckWrite(seg, d, q.c.tab.check(req)); rj != nil {
			return q.reject(rj)
		}
		return q.place(req, seg.Payload)
	case rdmap.OpReadResponse:
		return q.rxReadResponse(seg, d)
	case rdmap.OpReadRequest:
		return q.rxReadRequest(seg, d)
	case rdmap.OpTerminate:
		c, _, _, _ := iwarp.TerminateReceived(seg, q.rxMSN[rdmap.QNTerminate])
		q.c.qpEvent(cs.EQETypeTermRecv, q, 0, c)
		q.fail(nil, c) // never answer a Terminate with a Terminate
		return errStop
	}
	return q.rxSend(seg, op, d)
}

// place writes a checked tagged payload through the STag table: one DMA
// write per host-contiguous piece.
func (q *qp) place(req mem.Request, p []byte) error {
	if len(p) == 0 {
		return nil
	}
	e := q.c.tab.lookup(req.STag)
	err := q.c.tab.ranges(e, req.TO, uint64(len(p)), func(addr, off, k uint64) error {
		return q.c.dmaWrite(WritePayload, q.n, addr, p[off:off+k])
	})
	if err != nil {
		q.dmaFailed(q.c.faultAddr)
		return errStop
	}
	return nil
}

func (q *qp) rxSend(seg ddp.Segment, op rdmap.Opcode, d []byte) error {
	h := seg.Untagged()
	if len(q.rq) == 0 && q.rqFetch != q.rqPI {
		r := q.fetchRQ()
		if r == nil {
			return errStop
		}
		q.rq = append(q.rq, r)
		if r.status == cs.WCStatusLocQPOpErr {
			q.terminate(localCatastrophic())
			return errStop
		}
	}
	st := iwarp.RecvState{MSN: q.rxMSN[rdmap.QNSend], Posted: len(q.rq) > 0}
	var r *rwqe
	if st.Posted {
		r = q.rq[0]
		st.Got, st.Cap = r.got, r.cap
	}
	if rj := iwarp.CheckSend(seg, op, d, st); rj != nil {
		if rj.Cause == rdmap.DDPMessageTooLong {
			r.status = cs.WCStatusLocLenErr
		}
		return q.reject(rj)
	}
	n := uint64(len(seg.Payload))
	p := seg.Payload
	req := func(s sge, off, k uint32) mem.Request {
		return mem.Request{STag: mem.STag(s.lkey), PD: q.pd, QP: q.n, TO: s.addr + uint64(off), Len: uint64(k), Use: mem.UseLocalWrite}
	}
	// Every piece is checked before any is written: a segment that fails
	// a check writes no byte anywhere.
	if fault := r.cur.check(&q.c.tab, r.sgl, n, req); fault != mem.OK {
		return q.reject(iwarp.SendPlacementFailed(op, d, r.wrID, fault))
	}
	ok := r.cur.next(r.sgl, n, func(s sge, off, k uint32) bool {
		if q.place(req(s, off, k), p[:k]) != nil {
			return false
		}
		p = p[k:]
		return true
	})
	if !ok {
		return errStop
	}
	r.got += n
	if !seg.Control.Last() {
		return nil
	}
	info, _ := op.Info()
	w := completion{wrID: r.wrID, op: cs.WCOpcodeRecv, byteLen: uint32(r.got), solicited: info.Solicited}
	if info.Invalidate {
		stag := mem.STag(h.RsvdULP1())
		e := q.c.tab.lookup(stag)
		if e == nil || !mem.CanInvalidate(&e.Entry, stag, q.pd, q.n) {
			return q.reject(iwarp.CannotInvalidate(op, d, stag))
		}
		e.Valid = false
		w.inv, w.invSTag = true, uint32(stag)
	}
	q.rxMSN[rdmap.QNSend]++
	q.popRQ()
	q.c.complete(q.recvCQ, q, w)
	return nil
}

// fetchRQ reads the next posted receive WQE; a malformed one comes back
// with status LOC_QP_OP_ERR. nil means a DMA fault.
func (q *qp) fetchRQ() *rwqe {
	avail := blocks(q.rqFetch, q.rqPI)
	b, bbs := q.readWQE(q.rqBase, q.rqSize, q.rqFetch, avail, false)
	if b == nil {
		q.rq = append(q.rq, &rwqe{idx: q.rqFetch, bbs: avail, silent: true})
		q.rqFetch = q.rqPI
		return nil
	}
	h := cs.WQE(b)
	r := &rwqe{idx: q.rqFetch, bbs: bbs, wrID: h.WRID()}
	nsge := int(h.NSGE())
	if bbs == 0 {
		r.bbs = avail
		r.status = cs.WCStatusLocQPOpErr
	} else if h.Opcode() != cs.WQEOpcodeRecv || h.Inline() || nsge > cs.MaxSGE || nsge*cs.SGESize > len(b)-cs.WQEHdr {
		r.status = cs.WCStatusLocQPOpErr
	} else {
		r.sgl = sgl(r.sglBuf[:], nsge)
		for i := range r.sgl {
			s := cs.SGE(b[cs.WQEHdr+i*cs.SGESize:])
			r.sgl[i] = sge{addr: s.Addr(), length: s.Length(), lkey: s.LKey()}
			r.cap += uint64(s.Length())
		}
	}
	q.rqFetch += r.bbs
	return r
}

func (q *qp) rxReadRequest(seg ddp.Segment, d []byte) error {
	rr, hdr, rj := iwarp.CheckReadRequest(seg, d, q.rxMSN[rdmap.QNReadRequest], len(q.irq), q.ird)
	if rj != nil {
		return q.reject(rj)
	}
	if rr.Size > 0 {
		f := q.c.tab.check(mem.Request{STag: mem.STag(rr.SrcSTag), PD: q.pd, QP: q.n, TO: rr.SrcTO, Len: uint64(rr.Size), Use: mem.UseRemoteRead})
		if rj := iwarp.ReadSourceFault(d, hdr, rr, f); rj != nil {
			return q.reject(rj)
		}
	}
	q.rxMSN[rdmap.QNReadRequest]++
	q.irq = append(q.irq, inRead{rr: rr, hdr: append([]byte(nil), seg.Header...)})
	return nil
}

func (q *qp) rxReadResponse(seg ddp.Segment, d []byte) error {
	h := seg.Tagged()
	rs := iwarp.ReadSink{Outstanding: len(q.orq) > 0}
	var w *wqe
	if rs.Outstanding {
		w = q.orq[0]
		if len(w.sgl) == 1 {
			s := w.sgl[0]
			rs.Sink = iwarp.SGE{Addr: s.addr, Length: s.length, LKey: mem.STag(s.lkey)}
		}
		rs.Got = w.got
	}
	if rj := iwarp.CheckReadResponse(seg, d, rs); rj != nil {
		return q.reject(rj)
	}
	if n := uint64(len(seg.Payload)); n > 0 {
		req := mem.Request{STag: rs.Sink.LKey, PD: q.pd, QP: q.n, TO: h.TO(), Len: n, Use: mem.UseReadResponse}
		if rj := iwarp.ReadResponsePlacement(d, q.c.tab.check(req)); rj != nil {
			return q.reject(rj)
		}
		if err := q.place(req, seg.Payload); err != nil {
			return err
		}
		w.got += n
	}
	if !seg.Control.Last() {
		return nil
	}
	q.orq = popFront(q.orq)
	w.done = true
	q.retire()
	return nil
}
