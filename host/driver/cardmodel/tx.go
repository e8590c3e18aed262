package cardmodel

import (
	"slices"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// readWQE reads the WQE whose first block is at index idx of a ring of
// size blocks at base (or, for the send queue, the block pushed through
// BAR0 at that index). It returns the WQE's blocks, or nil after a DMA
// fault. avail is the number of posted blocks from idx on.
func (q *qp) readWQE(base uint64, size uint16, idx, avail uint16, sq bool) ([]byte, uint16) {
	buf := q.wqeBuf[:] // decoded before the next read: no allocation per WQE
	first := buf[:cs.BB]
	if p := q.pushedBlk[idx]; sq && p != nil {
		copy(first, p[:])
		delete(q.pushedBlk, idx)
	} else if !q.readBlock(base, size, idx, first) {
		return nil, 0
	}
	bbs := uint16(cs.WQE(first).BBS())
	if bbs == 0 || bbs > cs.MaxWQEBBs || bbs > size || bbs > avail {
		return first, 0 // malformed: the caller consumes what was posted
	}
	for i := uint16(1); i < bbs; i++ {
		if !q.readBlock(base, size, idx+i, buf[int(i)*cs.BB:int(i+1)*cs.BB]) {
			return nil, 0
		}
	}
	return buf[:int(bbs)*cs.BB], bbs
}

func (q *qp) readBlock(base uint64, size, idx uint16, p []byte) bool {
	addr := base + uint64(uint32(idx)&(uint32(size)-1))*cs.BB
	if size == 0 { // 2^16 blocks
		addr = base + uint64(idx)*cs.BB
	}
	if err := q.c.dmaRead(q.n, addr, p); err != nil {
		q.dmaFailed(addr)
		return false
	}
	return true
}

// fetchSQ reads the next posted send WQE and decodes it. A malformed
// WQE comes back done with LOC_QP_OP_ERR; nil means a DMA fault.
func (q *qp) fetchSQ() *wqe {
	avail := blocks(q.sqFetch, q.sqPI)
	b, bbs := q.readWQE(q.sqBase, q.sqSize, q.sqFetch, avail, true)
	if b == nil {
		// The SQ cannot be read (DMA_FAULT said why): what is posted
		// there is dropped without completions, never read again.
		q.sq = append(q.sq, &wqe{idx: q.sqFetch, bbs: avail, done: true, silent: true})
		q.sqFetch = q.sqPI
		return nil
	}
	h := cs.WQE(b)
	w := &wqe{idx: q.sqFetch, bbs: bbs, op: h.Opcode(), signaled: h.Signaled(), solicited: h.Solicited(), fence: h.Fence(),
		wrID: h.WRID(), raddr: h.RemoteAddr(), rkey: h.RKey(), inv: h.InvSTag()}
	if bbs == 0 {
		// A bad BBS hides where the next WQE starts: the rest of what was
		// posted goes with this one.
		w.bbs = avail
		w.done, w.status = true, cs.WCStatusLocQPOpErr
	} else if !q.decode(w, b) {
		w.done, w.status = true, cs.WCStatusLocQPOpErr
	}
	q.sqFetch += w.bbs
	return w
}

// decode checks and decodes the body of a send WQE of w.bbs blocks.
func (q *qp) decode(w *wqe, b []byte) bool {
	h := cs.WQE(b)
	room := len(b) - cs.WQEHdr
	nsge := int(h.NSGE())
	switch w.op {
	case cs.WQEOpcodeSend, cs.WQEOpcodeSendInv, cs.WQEOpcodeRDMAWrite, cs.WQEOpcodeRDMARead:
	case cs.WQEOpcodeLocalInv:
		return !h.Inline()
	case cs.WQEOpcodeBindMW:
		copy(w.bind[:], b[cs.WQEHdr:])
		return !h.Inline()
	default:
		return false
	}
	if h.Inline() {
		n := int(h.InlineLen())
		if w.op == cs.WQEOpcodeRDMARead || n > cs.MaxInline || n > room {
			return false
		}
		if n > 0 { // b is the QP's scratch: copy the bytes (an empty payload leaves inline nil)
			w.inline = append(w.inlineBuf[:0:min(n, len(w.inlineBuf))], b[cs.WQEHdr:cs.WQEHdr+n]...)
		}
		w.total = uint64(n)
		return true
	}
	if nsge > cs.MaxSGE || nsge*cs.SGESize > room || w.op == cs.WQEOpcodeRDMARead && nsge > 1 {
		return false
	}
	w.sgl = sgl(w.sglBuf[:], nsge)
	for i := range w.sgl {
		s := cs.SGE(b[cs.WQEHdr+i*cs.SGESize:])
		w.sgl[i] = sge{addr: s.Addr(), length: s.Length(), lkey: s.LKey()}
		w.total += uint64(s.Length())
	}
	return true
}

// blocked reports whether w must wait: a fenced WQE for every earlier
// RDMA Read, a Read for room within ORD.
func (q *qp) blocked(w *wqe) bool {
	if w.started {
		return false
	}
	return w.fence && len(q.orq) > 0 || w.op == cs.WQEOpcodeRDMARead && len(q.orq) >= q.ord
}

// txStep puts the next FPDU on the way (a Read Response segment, a
// segment of the current WQE) or takes the next WQE.
func (q *qp) txStep() bool {
	if len(q.irq) > 0 {
		q.readResponse()
		return true
	}
	if q.next < len(q.sq) {
		w := q.sq[q.next]
		if q.blocked(w) {
			return false
		}
		if !w.started {
			q.start(w)
		} else {
			q.segment(w)
		}
		return true
	}
	if q.sqFetch == q.sqPI {
		return false
	}
	w := q.fetchSQ()
	if w == nil {
		q.retire()
		return true
	}
	q.sq = append(q.sq, w)
	if w.done { // malformed
		q.localError(w, cs.WCStatusLocQPOpErr)
		q.retire()
	}
	return true
}

// start begins WQE w: memory operations take effect, a Read sends its
// request, a Send or Write has every SGE checked (lkey, PD, rights,
// bounds) before a byte is read and sends its first segment.
func (q *qp) start(w *wqe) {
	w.started = true
	switch w.op {
	case cs.WQEOpcodeLocalInv:
		q.next++
		e := q.c.tab.lookup(mem.STag(w.inv))
		if e == nil || !e.Valid || e.Key != mem.STag(w.inv).Key() || e.PD != q.pd {
			q.localError(w, cs.WCStatusLocProtErr)
		} else {
			e.Valid = false
			w.done = true
		}
		q.retire()
		return
	case cs.WQEOpcodeBindMW:
		q.next++
		if !q.bindMW(w) {
			q.localError(w, cs.WCStatusMWBindErr)
		} else {
			w.done = true
		}
		q.retire()
		return
	case cs.WQEOpcodeRDMARead:
		rr := rdmap.ReadRequestFields{SrcSTag: w.rkey, SrcTO: w.raddr}
		if len(w.sgl) == 1 {
			rr.SinkSTag, rr.SinkTO, rr.Size = w.sgl[0].lkey, w.sgl[0].addr, w.sgl[0].length
		}
		w.msn = q.txMSN[rdmap.QNReadRequest]
		q.txMSN[rdmap.QNReadRequest]++
		q.ulp = ddp.UntaggedFields{Last: true, Version: q.dv, RsvdULP0: uint8(rdmap.NewControl(q.rv, rdmap.OpReadRequest)),
			QN: rdmap.QNReadRequest, MSN: w.msn}.Append(q.ulpHead())
		q.ulp = rr.Append(q.ulp)
		q.next++
		q.orq = append(q.orq, w)
		q.frame(nil)
		q.drain()
		return
	}
	for _, s := range w.sgl {
		if s.length == 0 {
			continue
		}
		if f := q.c.tab.check(mem.Request{STag: mem.STag(s.lkey), PD: q.pd, QP: q.n, TO: s.addr, Len: uint64(s.length), Use: mem.UseLocalRead}); f != mem.OK {
			q.next++
			q.localError(w, cs.WCStatusLocProtErr)
			q.retire()
			return
		}
	}
	if w.op != cs.WQEOpcodeRDMAWrite {
		w.msn = q.txMSN[rdmap.QNSend]
		q.txMSN[rdmap.QNSend]++
	}
	q.segment(w)
}

// segment frames the next DDP segment of Send or RDMA Write w and starts
// writing it to the ring.
func (q *qp) segment(w *wqe) {
	hl := ddp.UntaggedHeaderLen
	if w.op == cs.WQEOpcodeRDMAWrite {
		hl = ddp.TaggedHeaderLen
	}
	n := min(uint64(ddp.MaxPayload(q.mulpdu, hl)), w.total-w.off)
	last := w.off+n == w.total
	if w.op == cs.WQEOpcodeRDMAWrite {
		q.ulp = ddp.TaggedFields{Last: last, Version: q.dv, RsvdULP: uint8(rdmap.NewControl(q.rv, rdmap.OpWrite)),
			STag: w.rkey, TO: w.raddr + w.off}.Append(q.ulpHead())
	} else {
		op, inv := rdmap.OpSend, uint32(0)
		if w.op == cs.WQEOpcodeSendInv {
			op, inv = rdmap.OpSendInvalidate, w.inv
		}
		if w.solicited {
			op += rdmap.OpSendSE - rdmap.OpSend
		}
		q.ulp = ddp.UntaggedFields{Last: last, Version: q.dv, RsvdULP0: uint8(rdmap.NewControl(q.rv, op)), RsvdULP1: inv,
			QN: rdmap.QNSend, MSN: w.msn, MO: uint32(w.off)}.Append(q.ulpHead())
	}
	if w.inline != nil {
		q.ulp = append(q.ulp, w.inline[w.off:w.off+n]...)
	} else if !q.gather(w, n) {
		return
	}
	w.off += n
	var done *wqe
	if last {
		q.next++
		done = w
	}
	q.frame(done)
	q.drain()
}

// gather appends the next n payload bytes of w to q.ulp, read by DMA
// through the STag table. Every piece of the segment is checked again (the
// table may have changed since the WQE started) before any of it is read.
func (q *qp) gather(w *wqe, n uint64) bool {
	req := func(s sge, off, k uint32) mem.Request {
		return mem.Request{STag: mem.STag(s.lkey), PD: q.pd, QP: q.n, TO: s.addr + uint64(off), Len: uint64(k), Use: mem.UseLocalRead}
	}
	if f := w.cur.check(&q.c.tab, w.sgl, n, req); f != mem.OK {
		q.next++
		q.localError(w, cs.WCStatusLocProtErr)
		q.retire()
		return false
	}
	return w.cur.next(w.sgl, n, func(s sge, off, k uint32) bool {
		return q.readTagged(req(s, off, k), k)
	})
}

// readTagged appends k bytes at req.TO of req.STag to q.ulp by DMA.
func (q *qp) readTagged(req mem.Request, k uint32) bool {
	e := q.c.tab.lookup(req.STag)
	at := len(q.ulp)
	q.ulp = slices.Grow(q.ulp, int(k))[:at+int(k)]
	err := q.c.tab.ranges(e, req.TO, uint64(k), func(addr, off, n uint64) error {
		return q.c.dmaRead(q.n, addr, q.ulp[at+int(off):at+int(off+n)])
	})
	if err != nil {
		q.dmaFailed(q.c.faultAddr)
		return false
	}
	return true
}

// readResponse sends the next segment of the oldest inbound Read.
func (q *qp) readResponse() {
	ir := &q.irq[0]
	rr := ir.rr
	n := min(uint64(ddp.MaxPayload(q.mulpdu, ddp.TaggedHeaderLen)), uint64(rr.Size)-ir.sent)
	last := ir.sent+n == uint64(rr.Size)
	q.ulp = ddp.TaggedFields{Last: last, Version: q.dv, RsvdULP: uint8(rdmap.NewControl(q.rv, rdmap.OpReadResponse)),
		STag: rr.SinkSTag, TO: rr.SinkTO + ir.sent}.Append(q.ulpHead())
	if n > 0 {
		req := mem.Request{STag: mem.STag(rr.SrcSTag), PD: q.pd, QP: q.n, TO: rr.SrcTO + ir.sent, Len: n, Use: mem.UseRemoteRead}
		if f := q.c.tab.check(req); f != mem.OK {
			// The source was revoked while the Read was being answered.
			q.terminate(iwarp.ReadSourceRevoked(f, rr, uint32(ir.sent), ir.hdr))
			return
		}
		if !q.readTagged(req, uint32(n)) {
			return
		}
	}
	ir.sent += n
	if last {
		q.irq = q.irq[1:]
	}
	q.frame(nil)
	q.drain()
}

// bindMW binds the window named by w.inv (its new STag) as the BIND
// record asks, with the rules of mem.MW.Bind: the region is a valid MR of
// the QP's PD that allows binding, the window's rights are remote rights
// the region has, and its range lies inside the region. The window's
// entry must not hold a valid region.
func (q *qp) bindMW(w *wqe) bool {
	b := cs.Bind(w.bind[:])
	mr := mem.STag(b.MRSTag())
	p := q.c.tab.lookup(mr)
	win := mem.STag(w.inv)
	s := q.c.tab.lookup(win)
	access := mem.Access(b.Access())
	addr, length := b.Addr(), b.Length()
	switch {
	case p == nil || s == nil || !p.Valid || p.Kind != mem.KindMR || p.Key != mr.Key():
		return false
	case s.Valid && s.Kind == mem.KindMR, s.Kind != mem.KindMR && s.PD != q.pd:
		return false
	case p.PD != q.pd:
		return false
	case p.Access&mem.Bind == 0 || access&^(mem.RemoteRead|mem.RemoteWrite) != 0 || access&^p.Access != 0:
		return false
	case addr < p.Base || addr+length < addr || addr+length > p.Base+p.Length:
		return false
	}
	kind, qpn := mem.KindMW1, uint32(0)
	if b.Type2() {
		kind, qpn = mem.KindMW2, q.n
	}
	v := p.addr + (addr - p.Base)
	e := stagEntry{Entry: mem.Entry{Valid: true, Key: win.Key(), Kind: kind, PD: q.pd, QP: qpn, Base: addr, Length: length, Access: access}, paged: p.paged}
	if p.paged {
		e.addr, e.pbl = v%pageSize, uint32((uint64(p.pbl)+v/pageSize)%pblDepth)
	} else {
		e.addr = v
	}
	*s = e
	return true
}
