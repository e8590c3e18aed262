package gen

import (
	"fmt"
	"math/big"
)

// card_tx's payload read ahead. The engine gathers one message at a time,
// so each gathered message used to wait a whole DMA round trip for its
// first payload read after the message before it was fed: at 512 bits a
// 4 KiB message is 64 beats against a 270-cycle round trip. The read
// ahead takes the first reads of the next messages off that path:
//
//   - as the WQE prefetcher's blocks land, each WQE start in them is
//     parsed (a read ahead from a WQE starts at it, one that extends an
//     entry's window where the parse of the entry's previous read left
//     off; each header's BBS names the next), and a gathered Send or RDMA Write with a non-empty SGE 0
//     becomes a candidate {QP, SQ index, SGE 0, the QP's PD};
//   - a candidate's lkey is looked up on the check port when the gather
//     does not use it (tag 1), and its first requests, as the gather would
//     issue them (to the SGE's end, its contiguous run's or the slot's),
//     are read as one into one of CardTxPaySlots slots (tag bit 2 of
//     dma_rd): a slot holds a page, or a round trip's beats where that is
//     more (cardTxSlotBytes: four pages at 512 bits), so that a long
//     message's next reads, issued when it starts, land before the slot
//     is fed;
//   - when the WQE starts, its lkey checks and its first lookup run as
//     ever; its first requests are taken from a slot whose QP, SQ index,
//     host address and length match, once the slot has landed whole
//     without an error response (the gather waits for a slot still
//     landing), and its beats go to the packer from the slot. Any other
//     slot of that key is dropped then, and so is every slot of the QP
//     behind a WQE that starts.
//
// The card model reads a segment when it frames it; a slot reads it
// earlier, which the verbs contract allows (the host may not change a
// posted buffer before its WQE completes), and every verdict is still the
// one taken when the WQE starts: a slot only stands in for the bytes of a
// request the gather has decided to issue. A slot's read that gets an
// error response is never used, so the gather's own read then faults as
// the model's does. Slot reads go to dma_rd behind the engine's, the
// gather's and the prefetcher's requests, and not while the gather has
// reads of its message still to issue; their beats are always taken.

const (
	CardTxPaySlots = 8  // payload slots
	cardTxPaCands  = 16 // candidates waiting for their lookup
	cardTxPaTag    = 4  // dma_rd tag bit 2: a slot's read
	cardTxPaChkTag = 1  // the check-port tag of a slot's lookup
)

// cardTxSlotBytes is a payload slot's size at L lanes: a page, or 256
// beats (a DMA round trip at 250 cycles) where that is more. A slot's
// read ends at the SGE's end, its contiguous run's or the slot's (from
// the first byte's page).
func cardTxSlotBytes(L int) int { return max(4096, 256*L) }

// cardTxVerdictBytes is what a check-port verdict (its host address and
// contiguous run) gives the gather's first requests: the piece (the run,
// at most cardTxRdPiece bytes) and, of it, the bytes a payload slot
// holds (to the piece's end or the slot's, from the address's page). The
// gather and the payload read ahead both take them from here: a slot
// matches the gather's first requests only if they agree.
func cardTxVerdictBytes(m *Module, addr, run *Signal, L int) (piece, slot *Signal) {
	piece = m.WireOf("ck_piece", Sel(Lt(run, C(32, cardTxRdPiece)), Bits(run, 16, 0), C(17, cardTxRdPiece)), "a verdict's first piece: its run, at most a lookup's bytes")
	left := m.WireOf("ck_slot_left", Sub(C(17, uint64(cardTxSlotBytes(L))), zext(Bits(addr, 11, 0), 17)), "bytes from the verdict's address to a slot's end (from its page)")
	slot = m.WireOf("ck_slot_n", Sel(Lt(left, piece), left, piece), "... and of the piece, the bytes a slot holds")
	return piece, slot
}

// txSlotVerdict is a payload slot's lookup standing for its one-SGE
// WQE's check (the verdict reuse, at 512 bits): what the gather opens the
// message's first piece with. All are registers of the read ahead but
// hit, taken in the skip's cycle.
type txSlotVerdict struct {
	addr, run, n *Signal // the lookup's host address and run (its first piece); the bytes of it the slot holds
	hit          *Signal // the slot has landed whole: its bytes are taken as the check is skipped
	addr1, rest  *Signal // past those bytes: the address, and the run's bytes left
	done         *Signal // none are left
}

// slotVerdictWires declares the wires that carry a txSlotVerdict to the
// gather, which card_tx builds before the read ahead.
func slotVerdictWires(m *Module) txSlotVerdict {
	return txSlotVerdict{
		addr: m.Wire("chk_skip_addr", 64, ""), run: m.Wire("chk_skip_run", 17, ""), n: m.Wire("chk_skip_n", 17, ""),
		hit:   m.Wire("chk_skip_hit", 1, "... and its slot has landed whole: its first requests are taken now"),
		addr1: m.Wire("chk_skip_addr1", 64, ""), rest: m.Wire("chk_skip_rest", 17, ""), done: m.Wire("chk_skip_done", 1, ""),
	}
}

// assign drives v's wires from the read ahead's registers.
func (v txSlotVerdict) assign(m *Module, from txSlotVerdict) {
	for _, p := range [][2]*Signal{{v.addr, from.addr}, {v.run, from.run}, {v.n, from.n}, {v.hit, from.hit},
		{v.addr1, from.addr1}, {v.rest, from.rest}, {v.done, from.done}} {
		m.Assign(p[0], p[1])
	}
}

// gatheredOp says whether a WQE header (bytes 0..3) is a Send, Send with
// Invalidate or RDMA Write whose payload is gathered (not inline).
func gatheredOp(hdr *Signal) Expr {
	op := Bits(hdr, 7, 0)
	return And(Or(Eq(op, C(8, 0)), Eq(op, C(8, 1)), Eq(op, C(8, 2))), Not(Bit(hdr, 11)))
}

// txPayAheadIn is what the payload read ahead needs of card_tx.
type txPayAheadIn struct {
	W, L, LB int
	// The prefetcher's blocks as they land.
	blkDone  Expr    // a block of a read ahead is whole
	blkOK    Expr    // ... and no beat of the read ahead so far had an error response
	blk      *Signal // the block, byte 0 in bits 7:0
	blkOff   Expr    // its place in the read ahead (3 bits: 0 is a WQE start)
	blkQP    Expr    // the read ahead's QP
	blkIdx   Expr    // its SQ index (unmasked, 16 bits)
	blkFresh Expr    // the read ahead starts at a WQE (else it extends its entry's window)
	blkLast  Expr    // the block is the read ahead's last
	// QPs: PDs at CREATE; any command drops the QP's slots.
	create, cmdGo, qpNum, qpPD Expr
	// The engine.
	cur, cNext Expr // its QP and its WQE's first block (unmasked)
	wqeGo      Expr // a WQE of cur starts at cNext
	start      Expr // a message starts (the gather's state clears)
	// The gather's first request of a message.
	reqAsk        Expr // offered (not a Read Response's)
	reqAddr, reqN Expr // its host address and bytes as a slot holds them (17 bits: to the piece's end or the slot's)
	reqGo         Expr // a gather request goes (with reqAsk: the first)
	take          Expr // the packer takes the slot's beat
	// The check port.
	chkFree                              Expr // free for a lookup this cycle (the gather does not ask)
	chkReady, chkValid, chkTag, chkFault Expr
	chkAddr                              *Signal
	chkPiece, chkSlotN                   *Signal // cardTxVerdictBytes of the verdict
	rdGrant                              Expr    // dma_rd takes the slot's read
	rdHold                               Expr    // the gather has reads of its message still to issue
	rdValid, rdData, rdLast, rdErr, rdB  Expr    // dma_rd's output (any tag); rdB its tuser_berr
	rdTag                                *Signal
	// Verdict reuse (reuse: built at 512 bits): placement's m_tbl_wr, and
	// the WQE that starts with its first block on chip (txDecide), its
	// header and SGE 0.
	reuse  bool
	tblWr  Expr
	decide Expr
	decHdr *Signal
	decSGE Expr
	skipGo Expr // txHdr: the engine takes pa_skip's verdict (txChk skipped)
}

// txPayAhead is what the payload read ahead gives card_tx.
type txPayAhead struct {
	hit, wait              Expr // the first request is in a slot landed whole / in a slot still landing
	chkV                   Expr // a lookup for the check port
	chkSTag, chkTO, chkLen Expr
	chkQP, chkPD           Expr
	rdV, rdAddr, rdLen     Expr // a slot's read for dma_rd
	beat                   Expr // dma_rd's beat is a slot's (taken)
	src                    Expr // the packer's input is the slot in use
	v, data, keep          Expr // its beat
	// Verdict reuse: the WQE that started last cycle is a one-SGE
	// gathered one whose SGE 0 a slot's lookup checked, and the table has
	// not been written since (skip); the slot's verdict for the gather.
	skip    *Signal
	verdict txSlotVerdict
	unused  []Expr
}

func cardTxPayAhead(m *Module, in txPayAheadIn) txPayAhead {
	const S = CardTxPaySlots
	SB := log2(S)
	// lowest is the index of the lowest set term.
	lowest := func(ts []Expr) Expr {
		var e Expr = C(SB, uint64(S-1))
		for i := S - 2; i >= 0; i-- {
			e = Sel(ts[i], C(SB, uint64(i)), e)
		}
		return e
	}
	W, L, LB := in.W, in.L, in.LB
	SBy := cardTxSlotBytes(L)
	BPS := SBy / L // beats of a slot
	PB := log2(BPS)
	NB := log2(SBy) + 1 // bits of a slot's byte count
	out := txPayAhead{}

	// --- candidates: the WQE starts of the blocks read ahead ---
	// The blocks are parsed a cycle after they land (stage 1), once the
	// entry's parse record is read: where the read's first WQE starts, 0
	// for a fresh read (from a WQE), else what the parse of the entry's
	// previous read left (a read that extends a window may start inside a
	// WQE; the entry's reads land in order). Each start's BBS names the
	// next; what is left past the read's last block is written back.
	r1 := func(name string, w int, d Expr) *Signal { return m.Reg("pa_p1_"+name, w, nil, d, nil, "") }
	done1 := m.Reg("pa_p1_done", 1, big.NewInt(0), in.blkDone, nil, "stage 1: a block landed last cycle")
	ok1, off1 := r1("ok", 1, in.blkOK), r1("off", in.blkOff.Width(), in.blkOff)
	hdr := r1("hdr", 32, Bits(in.blk, 31, 0))      // WQE header bytes 0..3
	sge := r1("sge0", 128, Bits(in.blk, 383, 256)) // SGE 0
	qp1, idx1, fresh1, last1 := r1("qp", in.cur.Width(), in.blkQP), r1("idx", 16, in.blkIdx), r1("fresh", 1, in.blkFresh), r1("last", 1, in.blkLast)
	off5 := zext(off1, 5)
	pWr := m.WireOf("pa_parse_wr", And(done1, last1), "the read's last block is parsed: its record is written")
	pNext := m.Wire("pa_parse_left", 4, "the next WQE start past the read, in blocks from its end (15: not known)")
	rdAt := m.WireOf("pa_parse_rd_go", And(in.blkDone, Eq(in.blkOff, C(in.blkOff.Width(), 0))), "a read's first block lands: its entry's record is read")
	rec := m.Mem("pa_parse", 4, CardTxQPs, pWr, qp1, pNext, rdAt, in.blkQP, "per entry of the WQE read ahead: its first WQE start past its window, in blocks from its end (15: not known)")
	// A record written in the cycle it is read is taken from the write.
	byp := m.Reg("pa_parse_byp", 1, big.NewInt(0), And(pWr, rdAt, Eq(qp1, in.blkQP)), nil, "")
	bypV := m.Reg("pa_parse_byp_v", 4, nil, pNext, nil, "")
	recNow := m.WireOf("pa_parse_rec", Sel(byp, bypV, rec), "")
	bbs := m.WireOf("pa_blk_bbs", Bits(hdr, 19, 16), "BBS of the block's header (if it starts a WQE)")
	psNext := m.RegDecl("pa_parse_next", 5, "the next WQE start in the read being parsed, in blocks from its first (31: not known)")
	s0 := m.WireOf("pa_blk_first_start", Sel(fresh1, C(5, 0), Sel(Eq(recNow, C(4, 15)), C(5, 31), zext(recNow, 5))), "")
	psCur := m.WireOf("pa_parse_cur", Sel(Eq(off5, C(5, 0)), s0, psNext), "")
	isStart := m.WireOf("pa_blk_start", And(done1, Eq(off5, psCur)), "the block starts a WQE")
	bbsOK := m.WireOf("pa_blk_bbs_ok", And(RedOr(bbs), Not(Lt(C(4, 8), bbs))), "")
	psN := m.WireOf("pa_parse_after", Sel(isStart, Sel(bbsOK, Add(off5, zext(bbs, 5)), C(5, 31)), psCur), "")
	m.Drive(psNext, big.NewInt(31), psN, done1)
	rel := m.WireOf("pa_parse_rel", Sub(Sub(psN, off5), C(5, 1)), "")
	m.Assign(pNext, Sel(Eq(psN, C(5, 31)), C(4, 15), Bits(rel, 3, 0)))
	sAddr, sLen, sKey := Bits(sge, 63, 0), Bits(sge, 95, 64), Bits(sge, 127, 96)
	gathered := And(gatheredOp(hdr), RedOr(Bits(hdr, 28, 24)))
	out.unused = append(out.unused, Bits(hdr, 31, 29), Bits(hdr, 23, 20), Bits(hdr, 15, 12), Bits(hdr, 10, 8))
	cand := m.WireOf("pa_cand", And(isStart, ok1, bbsOK, gathered, RedOr(sLen)), "a gathered Send or Write with a non-empty SGE 0")
	cv := m.Reg("pa_cand_v", 1, big.NewInt(0), cand, nil, "a candidate (its PD is read)")
	cQP := m.Reg("pa_cand_qp", qp1.W, nil, qp1, cand, "")
	cIdx := m.Reg("pa_cand_idx", 16, nil, Add(idx1, zext(off1, 16)), cand, "its WQE's SQ index")
	cAddr := m.Reg("pa_cand_addr", 64, nil, sAddr, cand, "SGE 0")
	cLen := m.Reg("pa_cand_len", 32, nil, sLen, cand, "")
	cKey := m.Reg("pa_cand_lkey", 32, nil, sKey, cand, "")
	pd := m.Mem("pa_pd", 32, CardTxQPs, in.create, in.qpNum, in.qpPD, cand, qp1, "per QP: its PD, for the lookups of its candidates")
	cw := addrWidth(cardTxPaCands + 1)
	cPop := m.Wire("pa_cq_pop", 1, "the head candidate is looked up or dropped")
	cPush := m.Wire("pa_cq_push", 1, "a candidate is queued (one that finds the queue full is dropped)")
	cq := ShiftQueue(m, "pa_cq", cardTxPaCands, []string{"qp", "idx", "addr", "len", "lkey", "pd"}, []int{cQP.W, 16, 64, 32, 32, 32},
		cPush, []Expr{cQP, cIdx, cAddr, cLen, cKey, pd}, zext(cPop, cw))
	m.Assign(cPush, And(cv, Lt(cq.Count, C(cw, cardTxPaCands))))
	h := cq.Fields[0]
	hv := m.WireOf("pa_cq_v", RedOr(cq.Count), "a candidate waits")

	// --- slots ---
	type slot struct{ alloc, fl, done, bad, qp, idx, addr, n, sge, run, fresh *Signal }
	sl := make([]slot, S)
	for s := range sl {
		p := fmt.Sprintf("pa_s%d_", s)
		sl[s] = slot{alloc: m.RegDecl(p+"alloc", 1, "the slot is keyed (its lookup, read or data is the key's)"),
			fl: m.RegDecl(p+"inflight", 1, "its read is in dma_rd"), done: m.RegDecl(p+"landed", 1, "its read landed"),
			bad: m.RegDecl(p+"bad", 1, "... with an error response"),
			qp:  m.RegDecl(p+"qp", in.cur.Width(), "key: QP"), idx: m.RegDecl(p+"idx", 16, "key: SQ index of the WQE"),
			addr: m.RegDecl(p+"addr", 64, "host address read"), n: m.RegDecl(p+"n", NB, fmt.Sprintf("bytes read (1..%d)", SBy))}
		if in.reuse {
			sl[s].sge = m.RegDecl(p+"sge", 128, "key: the SGE looked up (LKEY, LENGTH, ADDR)")
			sl[s].run = m.RegDecl(p+"run", 17, fmt.Sprintf("the lookup's contiguous run, at most %d bytes (the gather's first piece)", cardTxRdPiece))
			sl[s].fresh = m.RegDecl(p+"fresh", 1, "the lookup's verdict was OK and the table has not been written since it was asked")
		}
	}
	// The slot the packer reads (from the hit to its last beat): src and su.
	src := m.RegDecl("pa_src", 1, "the packer's input is the slot in use")
	su := m.RegDecl("pa_use_slot", SB, "")
	uHot := oneHot(m, "pa_use", su, S)
	inUse := func(s int) Expr { return And(src, Bit(uHot, s)) }
	st := m.RegDecl("pa_state", 2, "0: idle; 1: the lookup's verdict is awaited; 2: the read waits for dma_rd")
	cur := m.RegDecl("pa_slot", SB, "the slot being filled")
	var dupT, freeT []Expr
	for i, s := range sl {
		dupT = append(dupT, And(s.alloc, Eq(s.qp, h[0]), Eq(s.idx, h[1])))
		freeT = append(freeT, And(Not(s.alloc), Not(s.fl), Not(inUse(i))))
	}
	dup := m.WireOf("pa_dup", RedOr(Cat(dupT...)), "the head candidate's key has a slot")
	anyFree := m.WireOf("pa_any_free", RedOr(Cat(freeT...)), "")
	fsel := m.WireOf("pa_free_sel", lowest(freeT), "the lowest free slot")
	idle := m.WireOf("pa_idle", Eq(st, C(2, 0)), "")
	out.chkV = m.WireOf("pa_chk_v", And(idle, hv, Not(dup), anyFree, in.chkFree), "a lookup for the head candidate")
	lookGo := m.WireOf("pa_look_go", And(out.chkV, in.chkReady), "")
	m.Assign(cPop, And(idle, hv, Or(dup, lookGo)))
	out.chkQP, out.chkTO, out.chkLen, out.chkSTag, out.chkPD = h[0], h[2], h[3], h[4], h[5]
	verdict := m.WireOf("pa_verdict", And(Eq(st, C(2, 1)), in.chkValid, Eq(in.chkTag, C(8, cardTxPaChkTag))), "")
	vOK := m.WireOf("pa_verdict_ok", And(verdict, Eq(in.chkFault, C(3, 0))), "")
	nRd := Bits(in.chkSlotN, NB-1, 0) // at most a slot's bytes
	if NB < 17 {
		out.unused = append(out.unused, Bits(in.chkSlotN, 16, NB))
	}
	curHot := oneHot(m, "pa_cur", cur, S)
	var clean Expr
	if in.reuse {
		// A verdict holds only if the table was not written from the
		// lookup's request to its verdict (placement reads it in between).
		c := m.RegDecl("pa_look_clean", 1, "no table write since the lookup in flight was asked")
		m.Drive(c, big.NewInt(0), And(Not(in.tblWr), Or(lookGo, c)), nil)
		clean = c
	}
	var allocCur []Expr
	for s := range sl {
		allocCur = append(allocCur, And(Bit(curHot, s), sl[s].alloc))
	}
	curAlloc := m.WireOf("pa_cur_alloc", RedOr(Cat(allocCur...)), "the slot being filled is still keyed")
	// A slot's read waits while the gather has reads of its message to
	// issue: dma_rd returns reads in order, so a slot's beats landing
	// between them would starve the packer for as long (a round trip's
	// beats at 512 bits); issued behind the message's last read, they land
	// while the next message is fed from its own slot.
	rdAsk := m.WireOf("pa_rd_ask", And(Eq(st, C(2, 2)), curAlloc, Not(in.rdHold)), "")
	rdGo := m.WireOf("pa_rd_go", And(rdAsk, in.rdGrant), "")
	m.Drive(st, big.NewInt(0), Sel(lookGo, C(2, 1), Sel(verdict, Sel(And(vOK, curAlloc), C(2, 2), C(2, 0)),
		Sel(And(Eq(st, C(2, 2)), Or(rdGo, Not(curAlloc))), C(2, 0), st))), nil)
	m.Drive(cur, nil, fsel, lookGo)
	var addrs, ns []Expr
	for _, s := range sl {
		addrs, ns = append(addrs, s.addr), append(ns, s.n)
	}
	curSel := selBits(cur, 0, SB)
	out.rdV = rdAsk
	out.rdAddr = muxTree(curSel, addrs)
	rl := m.WireOf("pa_rd_len", Sub(zext(muxTree(curSel, ns), 16), C(16, 1)), "length minus one")
	out.rdLen = rl

	// --- landing: dma_rd returns requests whole and in issue order ---
	beat := m.WireOf("pa_beat", And(in.rdValid, Bit(in.rdTag, 2)), "dma_rd's beat is a slot's")
	out.beat = beat
	landLast := m.WireOf("pa_land_last", And(beat, in.rdLast), "")
	flq := ShiftQueue(m, "pa_flight", S, []string{"slot"}, []int{SB}, rdGo, []Expr{cur}, zext(landLast, addrWidth(S+1)))
	lSlot := flq.Fields[0][0]
	lc := m.RegDecl("pa_land_beat", PB, "beats of the landing read taken")
	m.Drive(lc, big.NewInt(0), Sel(landLast, C(PB, 0), incr(lc)), beat)
	lErr := m.RegDecl("pa_land_err", 1, "a beat of the landing read had an error response")
	m.Drive(lErr, big.NewInt(0), And(Not(landLast), Or(lErr, in.rdErr, in.rdB)), beat)
	landBad := m.WireOf("pa_land_bad", Or(lErr, in.rdErr, in.rdB), "")
	lHot := oneHot(m, "pa_land", lSlot, S)

	// --- the gather's first request ---
	// With the verdict reuse, a slot landed whole is taken as the check
	// is skipped (txHdr), a cycle before the gather could ask for it.
	var skipHit Expr = C(1, 0)
	var skipSlot *Signal
	if in.reuse {
		skipSlot = m.RegDecl("pa_skip_slot", SB, "the slot whose lookup stands for the WQE's check")
		var rdy []Expr
		for i := S - 1; i >= 0; i-- {
			rdy = append(rdy, And(sl[i].done, Not(sl[i].bad)))
		}
		out.verdict.hit = m.WireOf("pa_skip_hit", And(in.skipGo, Not(src), BitAt(m.WireOf("pa_landed_ok", Cat(rdy...), ""), skipSlot)), "the check is skipped and its slot has landed whole: the message's first requests are taken from it now")
	}
	if in.reuse {
		skipHit = out.verdict.hit
	}
	var hitT, waitT, keyT []Expr
	for _, s := range sl {
		key := And(s.alloc, Eq(s.qp, in.cur), Eq(s.idx, in.cNext))
		keyT = append(keyT, key)
		match := And(key, Or(s.fl, s.done), Eq(s.addr, in.reqAddr), Eq(zext(s.n, 17), in.reqN))
		hitT = append(hitT, And(match, s.done, Not(s.bad)))
		waitT = append(waitT, And(match, s.fl))
	}
	hitAny := m.WireOf("pa_hit_any", RedOr(Cat(hitT...)), "a slot holds the request")
	out.hit = m.WireOf("pa_hit", And(in.reqAsk, hitAny), "the first request is in a slot landed whole")
	out.wait = m.WireOf("pa_wait", And(in.reqAsk, RedOr(Cat(waitT...))), "the first request is in a slot still landing")
	var hsel Expr = lowest(hitT)
	if in.reuse {
		hsel = Sel(skipHit, skipSlot, hsel)
	}
	hsel = m.WireOf("pa_hit_sel", hsel, "")
	first := m.WireOf("pa_first_go", Or(And(in.reqAsk, in.reqGo), skipHit), "the message's first request goes")
	hitGo := m.WireOf("pa_hit_go", Or(And(in.reqAsk, in.reqGo, hitAny), skipHit), "... from a slot")
	hHot := oneHot(m, "pa_hit", hsel, S)

	// --- the slot in use: its beats to the packer ---
	ptr := m.RegDecl("pa_ptr", PB, "its beat at the memory's output")
	primed := m.RegDecl("pa_primed", 1, "the memory's output holds beat pa_ptr")
	uN := m.WireOf("pa_use_n", Sub(muxTree(selBits(su, 0, SB), ns), C(NB, 1)), "its bytes - 1")
	last := m.WireOf("pa_last", Eq(ptr, Bits(uN, PB+LB-1, LB)), "the slot's last beat")
	takeS := m.WireOf("pa_take", And(src, in.take), "")
	useEnd := m.WireOf("pa_use_end", And(takeS, last), "the slot's last beat is taken: it is free")
	m.Drive(src, big.NewInt(0), Sel(hitGo, C(1, 1), And(src, Not(useEnd), Not(in.start))), nil)
	m.Drive(su, nil, hsel, hitGo)
	m.Drive(ptr, nil, Sel(hitGo, C(PB, 0), incr(ptr)), Or(hitGo, takeS))
	// The hit reads the slot's first beat, so the packer has it the cycle
	// after; then each take reads the next.
	m.Drive(primed, big.NewInt(0), Or(hitGo, src), nil)
	dataAt := m.WireOf("pa_data_rd_at", Sel(hitGo, Cat(hsel, C(PB, 0)), Cat(su, Sel(takeS, incr(ptr), ptr))), "")
	data := m.Mem("pa_data", W, S*BPS, beat, Cat(lSlot, lc), in.rdData, Or(src, hitGo), dataAt,
		fmt.Sprintf("the slots' bytes: %d beats each", BPS))
	out.src, out.v, out.data = src, And(src, primed), data
	lastN := Add(zext(Bits(uN, LB-1, 0), LB+1), C(LB+1, 1)) // bytes in the last beat
	out.keep = m.WireOf("pa_keep", Or(Rep(Not(last), L), laneMask(m, "pa_keep_last", lastN, L)), "lanes of the beat: all but in the last")

	// --- per slot ---
	for s, x := range sl {
		at := func(hot *Signal) Expr { return Bit(hot, s) }
		mine := m.WireOf(fmt.Sprintf("pa_s%d_new", s), And(lookGo, Eq(fsel, C(SB, uint64(s)))), "the slot is keyed for the head candidate")
		behind := m.WireOf(fmt.Sprintf("pa_s%d_behind", s), Sub(in.cNext, x.idx), "the engine's WQE past the key's: 1..32767")
		drop := m.WireOf(fmt.Sprintf("pa_s%d_drop", s), And(Not(inUse(s)), Or(
			And(in.cmdGo, Eq(x.qp, in.qpNum)),
			And(in.wqeGo, Eq(x.qp, in.cur), RedOr(behind), Not(Bit(behind, 15))),
			And(first, keyT[s], Not(And(Or(hitAny, skipHit), at(hHot)))),
			And(verdict, at(curHot), Not(vOK)))), "the key is dropped: a command of its QP, a WQE of its QP starts past it, its WQE's first request went without it, its lookup failed")
		useEndS := And(useEnd, at(uHot))
		m.Drive(x.alloc, big.NewInt(0), Or(mine, And(x.alloc, Not(drop), Not(useEndS))), nil)
		m.Drive(x.qp, nil, h[0], mine)
		m.Drive(x.idx, nil, h[1], mine)
		m.Drive(x.addr, nil, in.chkAddr, And(vOK, at(curHot)))
		m.Drive(x.n, nil, nRd, And(vOK, at(curHot)))
		landS := And(landLast, at(lHot))
		m.Drive(x.fl, big.NewInt(0), Or(And(rdGo, at(curHot)), And(x.fl, Not(landS))), nil)
		m.Drive(x.done, big.NewInt(0), And(Not(mine), Or(landS, x.done)), nil)
		m.Drive(x.bad, big.NewInt(0), And(Not(mine), Or(And(landS, landBad), x.bad)), nil)
		if in.reuse {
			m.Drive(x.sge, nil, Cat(h[4], h[3], h[2]), mine)
			m.Drive(x.run, nil, in.chkPiece, And(vOK, at(curHot)))
			m.Drive(x.fresh, big.NewInt(0), And(Not(in.tblWr), Not(mine), Or(And(vOK, at(curHot), clean), x.fresh)), nil)
		}
	}
	if in.reuse {
		// --- verdict reuse ---
		// A one-SGE gathered Send or Write that starts with its block on
		// chip (txDecide) whose SGE 0 a fresh slot's lookup checked (same
		// QP and PD, STag, TO and length; no right needed: a local read)
		// has that verdict now: placement would give the same one until
		// its table is written. The engine then skips txChk, and the
		// gather opens its first piece with the lookup's results, kept in
		// the slot (its address, its contiguous run).
		one := And(gatheredOp(in.decHdr), Eq(Bits(in.decHdr, 28, 24), C(5, 1)))
		out.unused = append(out.unused, Bits(in.decHdr, 31, 29), Bits(in.decHdr, 23, 12), Bits(in.decHdr, 10, 8))
		var rT []Expr
		for _, x := range sl {
			rT = append(rT, And(x.alloc, x.fresh, Eq(x.qp, in.cur), Eq(x.idx, in.cNext), Eq(x.sge, in.decSGE)))
		}
		rsel := lowest(rT)
		out.skip = m.Reg("pa_skip", 1, big.NewInt(0), And(in.decide, one, RedOr(Cat(rT...)), Not(in.tblWr)), nil, "the WQE that started last cycle has its SGE's verdict from a slot's lookup")
		var runs []Expr
		for _, x := range sl {
			runs = append(runs, x.run)
		}
		rs := selBits(m.WireOf("pa_skip_sel", rsel, ""), 0, SB)
		skN := m.WireOf("pa_skip_n_sel", zext(muxTree(rs, ns), 17), "")
		skRun := m.WireOf("pa_skip_run_sel", muxTree(rs, runs), "")
		skAddr := m.WireOf("pa_skip_addr_sel", muxTree(rs, addrs), "")
		v := &out.verdict
		v.addr = m.Reg("pa_skip_addr", 64, nil, skAddr, nil, "its slot's host address (the lookup's)")
		v.run = m.Reg("pa_skip_run", 17, nil, skRun, nil, "... and contiguous run")
		v.n = m.Reg("pa_skip_n", 17, nil, skN, nil, "... and bytes (the first requests' as a slot holds them)")
		m.Drive(skipSlot, nil, rsel, nil)
		v.addr1 = m.Reg("pa_skip_addr1", 64, nil, Add(skAddr, zext(skN, 64)), nil, "the address past the slot's bytes")
		v.rest = m.Reg("pa_skip_rest", 17, nil, Sub(skRun, skN), nil, "the run's bytes past them")
		v.done = m.Reg("pa_skip_done", 1, nil, Eq(skRun, skN), nil, "the slot holds the whole run")
	}
	out.unused = append(out.unused, Bit(uN, NB-1))
	out.unused = append(out.unused, Bit(rel, 4))
	if PB+LB < NB-1 {
		out.unused = append(out.unused, Bits(uN, NB-2, PB+LB))
	}
	return out
}
