package gen

import (
	"fmt"
	"math/big"
)

// card_tx's WQE prefetcher. As soon as the engine knows a WQE's size
// (txHdr) on a live QP with more posted behind it, the first block of the
// QP's next WQE (two when two are posted and do not wrap the ring) is
// read ahead into the QP's prefetch entry (one per QP, so QPs never evict
// each other's), behind whatever dma_rd already has in flight and ahead
// of the WQE's own payload reads; the QP's next turn finds it there and
// starts without a WQE read, as from a pushed block. The host may not
// change a posted block before its WQE completes, and the entry is the
// QP's and keyed by SQ index, so a block read ahead is the block the
// engine would have read when it starts the WQE, which is when the card
// model reads it. A read ahead
// that gets an error response is dropped without a fault: the engine
// reads the block itself, and faults as the model does.
//
// An SQ_PI doorbell that posts the first WQE of a live QP with nothing
// else posted (the engine has started every block before it and does not
// hold the QP) reads that WQE ahead too, so that QPs rung together have
// their first WQEs read together rather than one turn at a time. Both
// kinds wait for dma_rd in one queue; the engine's goes first: a
// doorbell's is skipped when both come in one cycle or its entry has a
// read in flight.

const (
	CardTxPrefetch = CardTxQPs // prefetch entries: one per QP
	cardTxPfTag    = 2         // dma_rd tag bit 1: a prefetch
	cardTxPfFlight = 128       // read aheads in flight at most (their entries, in issue order)
	cardTxPfQueue  = 32        // read aheads queued for dma_rd
)

// txPrefetchIn is what the prefetcher needs of card_tx.
type txPrefetchIn struct {
	W, QB    int
	load     Expr    // a live QP's WQE is decoded (txHdr), waits for no Read, and its QP has more posted: read ahead
	qp       *Signal // the engine's QP
	next     Expr    // the block the QP's next WQE starts at (16 bits)
	pi       *Signal // the QP's SQ_PI
	sqBase   *Signal // the QP's SQ base, bits 63:6
	sqMask   Expr    // its size - 1, in blocks (16 bits)
	popped   *Signal // the QP the engine pops now (its entry is read with its context)
	ctx      *Signal // the engine reads the popped QP's context (txCtx): the entry's verdict is taken
	ctxNext  Expr    // ... and the block its next WQE starts at
	consume  Expr    // the engine starts a WQE of its QP: the QP's entry is used or stale
	create   Expr    // a CREATE: the created QP's entry is dropped
	createQP *Signal
	dbAsk    Expr    // an SQ_PI doorbell posts the first WQE of a live QP the engine does not hold: read it ahead
	dbQP     *Signal // the doorbell's QP
	dbNext   Expr    // the block its first WQE starts at (16 bits)
	dbPI     Expr    // its new SQ_PI (16 bits)
	dbSQBase Expr    // its SQ base, bits 63:6
	dbSQMask Expr    // its SQ size - 1, in blocks (16 bits)
	reqGrant Expr    // dma_rd takes the prefetch's request this cycle
	rdValid  *Signal // dma_rd's output beat (any tag)
	rdTag    *Signal
	rdData   *Signal
	rdLast   *Signal
	rdErr    *Signal
}

// txPrefetch is what the prefetcher gives card_tx.
type txPrefetch struct {
	reqV    *Signal // a prefetch read request for dma_rd
	reqAddr Expr
	reqLen  Expr
	reqTag  Expr
	beat    Expr    // dma_rd's output beat is a prefetch's: the prefetcher takes it
	hit     *Signal // from txCtx on: the popped QP's next WQE's first block is in its entry
	two     *Signal // ... and the block after it too
	data    *Signal // in txCtx: the popped QP's entry's blocks (taken only with hit), byte 0 in bits 7:0
	pend    *Signal // from txCtx on: that block is being read ahead into the entry (queued or in flight, still wanted)
}

func cardTxPrefetch(m *Module, in txPrefetchIn) txPrefetch {
	const E = CardTxPrefetch
	EB := log2(E)
	if in.QB != EB {
		panic("gen: card_tx prefetch: one entry per QP")
	}
	slotOf := func(name string, q *Signal) *Signal { return m.WireOf(name, q, "a QP's entry: its number") }
	// The entries of the read aheads in flight, in issue order: dma_rd
	// returns requests whole and in that order, so the head names the
	// entry of the read ahead whose beats come next. Nothing is queued
	// while it could not take every read ahead queued or in flight.
	const FB = 7
	if 1<<FB != cardTxPfFlight {
		panic("gen: card_tx prefetch flight queue size")
	}
	flTail := m.RegDecl("pf_flight_tail", FB+1, "read aheads issued to dma_rd")
	flHead := m.RegDecl("pf_flight_head", FB+1, "read aheads landed")
	// Read aheads queued for dma_rd, the engine's and the doorbell's in
	// the order they came (a circular buffer of registers): while dma_rd
	// is backed up (at 64 bits its reorder buffer holds 32 two-block
	// reads) they wait here rather than being skipped.
	const QDB = 5
	if 1<<QDB != cardTxPfQueue {
		panic("gen: card_tx prefetch request queue size")
	}
	qWP := m.RegDecl("pf_q_wp", QDB+1, "read aheads queued")
	qRP := m.RegDecl("pf_q_rp", QDB+1, "read aheads issued")
	qCount := m.WireOf("pf_q_count", Sub(qWP, qRP), "")
	reqV := m.WireOf("pf_req_v", RedOr(qCount), "a read ahead waits for dma_rd")
	flUsed := m.WireOf("pf_flight_used", Add(zext(Sub(flTail, flHead), FB+2), zext(qCount, FB+2)), "read aheads in flight or queued")
	flRoom := m.WireOf("pf_flight_room", And(Lt(flUsed, C(FB+2, cardTxPfFlight-1)), Lt(qCount, C(QDB+1, cardTxPfQueue))),
		"both queues can take a read ahead")
	// Per entry: a read in flight (fl), still wanted (want: not used,
	// stale or dropped since), and a block held (v). A read is issued only
	// to an entry with none in flight, so a response lands in the entry
	// it was issued for.
	fl := m.RegDecl("pf_inflight", E, "a read ahead of the entry is in flight")
	want := m.RegDecl("pf_want", E, "the entry's read in flight is still wanted")
	v := m.RegDecl("pf_valid", E, "the entry holds its QP's next first block")
	curSlot := slotOf("pf_cur_slot", in.qp)
	curHot := oneHot(m, "pf_cur", curSlot, E)
	flCur := m.WireOf("pf_cur_inflight", BitAt(fl, curSlot), "")
	load := m.WireOf("pf_load", And(in.load, Not(flCur), flRoom), "a read ahead of the engine's QP's next WQE is queued")
	// Two blocks are read when two are posted and they do not wrap the
	// ring (a WQE of up to 96 bytes of inline data, or two SGEs, starts
	// with no read at all).
	twoOf := func(name string, pi, next, mask Expr) *Signal {
		posted := m.WireOf(name+"_posted", Sub(pi, next), "blocks posted from the next WQE on")
		return m.WireOf(name+"_two", And(Not(Lt(posted, C(16, 2))), Ne(And(next, mask), mask)), "")
	}
	two := twoOf("pf", in.pi, in.next, in.sqMask)
	// A doorbell's read ahead is queued unless the engine's is this cycle.
	dbSlot := slotOf("pf_db_slot", in.dbQP)
	dbHot := oneHot(m, "pf_db", dbSlot, E)
	dbLoad := m.WireOf("pf_db_load", And(in.dbAsk, Not(load), Not(BitAt(fl, dbSlot)), flRoom), "a doorbell's read ahead is queued")
	dbTwo := twoOf("pf_db", in.dbPI, in.dbNext, in.dbSQMask)
	push := m.WireOf("pf_q_push", Or(load, dbLoad), "")
	pSlot := m.WireOf("pf_q_in_slot", Sel(load, curSlot, dbSlot), "")
	pIdx := m.WireOf("pf_q_in_idx", Sel(load, And(in.next, in.sqMask), And(in.dbNext, in.dbSQMask)), "")
	pBase := m.WireOf("pf_q_in_base", Sel(load, in.sqBase, in.dbSQBase), "")
	pTwo := m.WireOf("pf_q_in_two", Sel(load, two, dbTwo), "")
	var qSlots, qIdxs, qBases, qTwos []Expr
	qHot := oneHot(m, "pf_q_wr", Bits(qWP, QDB-1, 0), cardTxPfQueue)
	for i := 0; i < cardTxPfQueue; i++ {
		at := m.WireOf(fmt.Sprintf("pf_q%d_w", i), And(push, Bit(qHot, i)), "")
		qSlots = append(qSlots, m.Reg(fmt.Sprintf("pf_q%d_slot", i), EB, nil, pSlot, at, "the read ahead's entry"))
		qIdxs = append(qIdxs, m.Reg(fmt.Sprintf("pf_q%d_idx", i), 16, nil, pIdx, at, "its SQ block (masked)"))
		qBases = append(qBases, m.Reg(fmt.Sprintf("pf_q%d_base", i), 58, nil, pBase, at, "its SQ's base, bits 63:6"))
		qTwos = append(qTwos, m.Reg(fmt.Sprintf("pf_q%d_two", i), 1, nil, pTwo, at, "two blocks"))
	}
	m.Drive(qWP, big.NewInt(0), Add(qWP, zext(push, QDB+1)), nil)
	m.Drive(qRP, big.NewInt(0), Add(qRP, zext(in.reqGrant, QDB+1)), nil)
	hSel := selBits(qRP, 0, QDB)
	reqSlot := m.WireOf("pf_req_slot", muxTree(hSel, qSlots), "the head read ahead's entry")
	reqIdx := m.WireOf("pf_req_idx", muxTree(hSel, qIdxs), "")
	reqBase := m.WireOf("pf_req_base", muxTree(hSel, qBases), "")
	reqTwo := m.WireOf("pf_req_two", muxTree(hSel, qTwos), "")
	popSlot := slotOf("pf_pop_slot", in.popped)
	// The entry's key: the unmasked SQ index the engine will start at.
	tags := m.Mem("pf_tag", 17, E, push, pSlot,
		Sel(load, Cat(two, in.next), Cat(dbTwo, in.dbNext)), nil, popSlot,
		"per entry: {two blocks, SQ index} of the blocks read ahead")
	// The landing: dma_rd returns requests whole and in issue order, so
	// a read ahead's beats come together; below 512 bits they are gathered
	// into a block first.
	beat := m.WireOf("pf_beat", And(in.rdValid, Bit(in.rdTag, 1)), "dma_rd's beat is a read ahead's")
	unused := []Expr{Bit(in.rdTag, 0), RedOr(Bits(in.rdTag, in.rdTag.W-1, 2))}
	landErr := m.RegDecl("pf_land_err", 1, "a beat of the landing read ahead got an error response")
	land := m.WireOf("pf_land", And(beat, in.rdLast), "a read ahead's last beat")
	m.Drive(flTail, big.NewInt(0), Add(flTail, zext(in.reqGrant, FB+1)), nil)
	flHeadNext := m.WireOf("pf_flight_head_next", Add(flHead, zext(land, FB+1)), "")
	m.Drive(flHead, big.NewInt(0), flHeadNext, nil)
	landSlot := m.Mem("pf_flight", EB, cardTxPfFlight, in.reqGrant, Bits(flTail, FB-1, 0), reqSlot, nil, Bits(flHeadNext, FB-1, 0),
		"the entry of each read ahead in flight, in issue order (read at the next head: the entry of the read ahead landing next)")
	m.Drive(landErr, big.NewInt(0), And(Not(land), Or(landErr, in.rdErr)), beat)
	// The beats so far, the latest on top: at the last beat of a two-block
	// read they are the first 1024-W bits; of a one-block read, the stage's
	// top 512-W bits.
	if in.W != 64 && in.W != 512 {
		panic("gen: card_tx prefetch at 64 or 512 bits")
	}
	bpb := 512 / in.W
	cnt := m.RegDecl("pf_land_beat", log2(2*bpb)+1, "beats of the landing read ahead taken")
	m.Drive(cnt, big.NewInt(0), Sel(land, C(cnt.W, 0), incr(cnt)), beat)
	landTwo := m.WireOf("pf_land_two", Eq(cnt, C(cnt.W, uint64(2*bpb-1))), "the landing read ahead is of two blocks")
	stage := m.RegDecl("pf_stage", 1024-in.W, "the read ahead's beats so far, the latest on top")
	var blk1 Expr
	if in.W == 512 {
		m.Drive(stage, nil, in.rdData, beat)
		blk1 = in.rdData
	} else {
		m.Drive(stage, nil, Cat(in.rdData, Bits(stage, 1024-in.W-1, in.W)), beat)
		blk1 = Cat(in.rdData, Bits(stage, 1023-in.W, 512))
	}
	blk := m.WireOf("pf_land_blocks", Sel(landTwo, Cat(in.rdData, stage), Cat(C(512, 0), blk1)), "the blocks read, the first in bits 511:0")
	landOK := m.WireOf("pf_land_ok", And(land, Not(landErr), Not(in.rdErr)), "the blocks are whole")
	data := m.Mem("pf_data", 1024, E, landOK, landSlot, blk, nil, popSlot, "per entry: the blocks read ahead")
	landHot := oneHot(m, "pf_landing", landSlot, E)
	loadHot := m.WireOf("pf_load_1h", Or(And(curHot, Rep(load, E)), And(dbHot, Rep(dbLoad, E))), "")
	land1h := m.WireOf("pf_land_1h", And(landHot, Rep(land, E)), "")
	createHot := oneHot(m, "pf_created", slotOf("pf_create_slot", in.createQP), E)
	// Used or stale: the entry of the QP whose WQE starts, and of a QP
	// created.
	clr := m.WireOf("pf_clear_1h", Or(And(curHot, Rep(in.consume, E)), And(createHot, Rep(in.create, E))), "")
	m.Drive(fl, big.NewInt(0), Or(loadHot, And(fl, Not(land1h))), nil)
	m.Drive(want, big.NewInt(0), And(Or(loadHot, And(want, Not(land1h))), Not(clr)), nil)
	m.Drive(v, big.NewInt(0), And(Or(And(v, Not(loadHot)), And(land1h, want, Rep(landOK, E))), Not(clr)), nil)
	// The verdict: the entry held a block when the QP was popped (an
	// entry holding one has no read in flight, so its data read then is
	// that block), keyed by the QP and the SQ index its next WQE starts
	// at. It holds until the next txCtx.
	vPop := m.Reg("pf_pop_valid", 1, big.NewInt(0), BitAt(v, popSlot), nil, "the popped QP's entry held a block")
	tagIdx := m.WireOf("pf_tag_idx", Bits(tags, 15, 0), "")
	match := m.WireOf("pf_match", And(vPop, Eq(tagIdx, in.ctxNext)), "")
	hit := m.Reg("pf_hit", 1, big.NewInt(0), match, in.ctx, "the engine's QP's next WQE's first block is in its entry")
	hit2 := m.Reg("pf_hit_two", 1, big.NewInt(0), And(match, Bit(tags, 16)), in.ctx, "... and the block after it")
	// A QP popped again before its read ahead has landed (a few QPs
	// busy: their turns come round faster than a DMA read) is told so,
	// and waits for it rather than reading the block a second time.
	flPop := m.Reg("pf_pop_pending", 1, big.NewInt(0), And(BitAt(fl, popSlot), BitAt(want, popSlot)), nil, "the popped QP's entry has a wanted read ahead queued or in flight")
	pend := m.Reg("pf_pend", 1, big.NewInt(0), And(flPop, Eq(tagIdx, in.ctxNext)), in.ctx, "the engine's QP's next WQE's first block is being read ahead")
	addr := m.WireOf("pf_req_addr", Add(Cat(reqBase, C(6, 0)), Cat(C(42, 0), reqIdx, C(6, 0))), "")
	m.WireOf("pf_unused", RedOrParts(unused), "tag bits the prefetch does not use")
	return txPrefetch{reqV: reqV, reqAddr: addr,
		reqLen: Sel(reqTwo, C(16, 127), C(16, 63)), reqTag: C(in.rdTag.W, cardTxPfTag),
		beat: beat, hit: hit, two: hit2, data: data, pend: pend}
}
