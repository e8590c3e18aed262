package gen

import (
	"fmt"
	"math/big"
)

// card_tx's WQE prefetcher. Each QP has an entry (one per QP, so QPs
// never evict each other's): a window of up to CardTxPfBlocks of its SQ's
// posted blocks, SQ block x in block slot x mod CardTxPfBlocks. As soon as
// the engine knows a WQE's size (txHdr) on a live QP with more posted
// behind it, a read is queued: from the next WQE on if the window does
// not hold it (and no read of the entry is in flight; up to eight
// blocks), else from the window's end into the slots behind the next WQE
// (at most two reads of an entry in flight), once four of them are, or
// twelve while eight read aheads or more are in flight. Reads go behind
// whatever dma_rd already has in flight and ahead of the WQE's own
// payload reads; the QP's next turns find their WQEs there and start
// without a WQE read, as from a pushed block. A QP served alone keeps
// twelve to sixteen blocks read ahead: for 4 KiB Writes at 512 bits that
// is what the payload read ahead needs to have a message's first page
// read before the engine reaches it (a WQE read, then a payload read,
// each a DMA round trip behind the beats before it); with many QPs busy,
// four to eight, as the entries held before they grew from eight to
// sixteen blocks (30 Nov), since reading further ahead for every QP only
// queues their reads behind each other's. The host may not change a
// posted block before its WQE completes, and the entry is the QP's and
// keyed by SQ index, so a block read ahead is the block the engine would
// have read when it starts the WQE, which is when the card model reads
// it. An entry lives while its QP's WQEs start inside its window: one
// that starts elsewhere drops it. A read ahead that gets an error
// response drops the window without a fault: the engine reads the block
// itself, and faults as the model does.
//
// An SQ_PI doorbell that posts the first WQE of a live QP with nothing
// else posted (the engine has started every block before it and does not
// hold the QP) reads ahead from that WQE too, so that QPs rung together
// have their first WQEs read together rather than one turn at a time.
// Both kinds wait for dma_rd in one queue; the engine's goes first: a
// doorbell's is skipped when both come in one cycle or its entry has a
// read in flight.

const (
	CardTxPrefetch = CardTxQPs // prefetch entries: one per QP
	CardTxPfBlocks = 16        // blocks an entry holds (a power of two): see cardTxPfExtend
	cardTxPfExtend = 4         // a window grows once this many of its blocks are behind the next WQE
	cardTxPfBusy   = 8         // read aheads in flight from which a window grows only once NB - cardTxPfExtend blocks are behind
	cardTxPfFresh  = 8         // blocks a read from a WQE brings at most (the window grows from there)
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
	popRead  Expr    // the engine reads the popped QP's context this cycle (txPop, or txDrain before a quick txWB)
	ctx      *Signal // the engine loads the popped QP's context (txCtx, or a quick txWB): the entry's verdict is taken
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
	data    *Signal // in txCtx: those two blocks of the entry (taken only with hit), byte 0 in bits 7:0
	pend    *Signal // from txCtx on: that block is being read ahead into the entry (queued or in flight, still wanted)
	// Its blocks as they land, for the payload read ahead.
	blkDone, blkOK Expr // a block is whole (no error response in its read ahead so far)
	blk            *Signal
	blkOff         Expr // its place in its read ahead
	blkQP          Expr // the read ahead's QP
	blkIdx         Expr // the read ahead's first SQ index (unmasked)
	blkFresh       Expr // the read ahead starts at a WQE (else it extends its entry's window)
	blkLast        Expr // the block is the read ahead's last
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
	// is backed up (at 64 bits its reorder buffer holds 512 beats, eight
	// reads of a whole entry) they wait here rather than being skipped.
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
	// Per entry: reads in flight (fl: one or more, fl2: two), still wanted
	// (want: not dropped since), and its blocks held (v). A read writes only
	// its own blocks' slots, so reads of one entry may overlap (two at most).
	fl := m.RegDecl("pf_inflight", E, "a read ahead of the entry is in flight")
	fl2 := m.RegDecl("pf_inflight2", E, "two are")
	want := m.RegDecl("pf_want", E, "the entry's read in flight is still wanted")
	v := m.RegDecl("pf_valid", E, "the entry's window holds its blocks (with a read in flight: those below the read's)")
	const NB = CardTxPfBlocks
	CB := log2(NB) // bits of an entry's block count - 1
	if 1<<CB != NB || cardTxPfExtend < 2 || cardTxPfExtend > NB/2 || cardTxPfFresh > NB {
		panic("gen: card_tx prefetch entry size")
	}
	// An entry is a window of the SQ: the blocks [end - n, end) (n = 1..NB),
	// block x in block slot x mod NB, the top k of them (k = 1..n) brought
	// by its latest read, the top k2 by its latest two. Its key: {k2 - 1,
	// k - 1, n - 1, end (unmasked)}. With a read in flight the top k
	// blocks are coming (the top k2 with two: dma_rd returns them in
	// order), and the blocks below are held if the entry is valid; a read
	// that extends a window writes only block slots the engine has passed.
	KW := 16 + 3*CB
	keyOf := func(end, n1, k1, k21 Expr) Expr { return Cat(k21, k1, n1, end) }
	kEnd := func(k *Signal) Expr { return Bits(k, 15, 0) }
	kN := func(k *Signal) Expr { return Bits(k, 16+CB-1, 16) }
	kK := func(k *Signal) Expr { return Bits(k, 16+2*CB-1, 16+CB) }
	kK2 := func(k *Signal) Expr { return Bits(k, KW-1, 16+2*CB) }
	// inWin: x in [end - n, end); coming: x in a read still in flight.
	below := func(x, end, m1 Expr) Expr { return Not(Lt(zext(m1, 16), Sub(Sub(end, x), C(16, 1)))) }
	inWin := func(x Expr, key *Signal) Expr { return below(x, kEnd(key), kN(key)) }
	coming := func(x Expr, key *Signal, f1, f2 Expr) Expr {
		return Sel(f2, below(x, kEnd(key), kK2(key)), And(f1, below(x, kEnd(key), kK(key))))
	}
	// Blocks read from a block on: as many as are posted, up to most,
	// never wrapping the ring (a WQE of up to 96 bytes of inline data, or
	// two SGEs, is two blocks: a read from a WQE brings up to four such WQEs).
	countOf := func(name string, pi, next, mask Expr, most Expr) *Signal {
		m1 := m.WireOf(name+"_posted_m1", Sub(Sub(pi, next), C(16, 1)), "blocks posted from the first on, - 1")
		toEnd := m.WireOf(name+"_to_end_m1", Sub(mask, And(next, mask)), "blocks to the ring's end, - 1")
		lim := m.WireOf(name+"_lim_m1", Sel(Lt(m1, toEnd), m1, toEnd), "")
		return m.WireOf(name+"_cnt_m1", Sel(Lt(lim, zext(most, 16)), Bits(lim, CB-1, 0), most), "blocks to read - 1")
	}
	curSlot := slotOf("pf_cur_slot", in.qp)
	curHot := oneHot(m, "pf_cur", curSlot, E)
	flCur := m.WireOf("pf_cur_inflight", BitAt(fl, curSlot), "")
	fl2Cur := m.WireOf("pf_cur_inflight2", BitAt(fl2, curSlot), "")
	popSlot := slotOf("pf_pop_slot", in.popped)
	push := m.Wire("pf_q_push", 1, "a read ahead is queued")
	pSlot := m.Wire("pf_q_in_slot", EB, "its entry")
	pIdx := m.Wire("pf_q_in_next", 16, "its first block (unmasked SQ index)")
	pCnt := m.Wire("pf_q_in_cnt", CB, "its blocks - 1")
	pKey := m.Wire("pf_q_in_key", KW, "the entry's key once it lands")
	pFresh := m.Wire("pf_q_in_fresh", 1, "it starts at a WQE")
	tags := m.Mem("pf_tag", KW, E, push, pSlot, pKey, nil, popSlot,
		"per entry: its key {k2 - 1, k - 1, n - 1, end}: the window [end - n, end) of the SQ, the top k from its latest read, k2 from its latest two")
	// The engine's QP's entry as its turn found it (txCtx): its key, to
	// tell at txHdr whether the next WQE is already there or coming.
	curKey := m.Reg("pf_cur_key", KW, nil, tags, in.ctx, "the engine's QP's entry's key, read with its context")
	curLive := m.WireOf("pf_cur_live", Or(BitAt(v, curSlot), And(flCur, BitAt(want, curSlot))), "the engine's QP's entry holds blocks, or has them on the way")
	nextIn := m.WireOf("pf_next_in", And(curLive, inWin(in.next, curKey)), "the entry holds (or will) the next WQE's first block")
	// A fresh read from the next WQE when the entry does not hold it (and
	// has no read in flight); else a read that extends the window from its
	// end into the block slots behind the next WQE, once cardTxPfExtend of
	// them are (NB - cardTxPfExtend while dma_rd has cardTxPfBusy read
	// aheads or more) and more blocks are posted past it, while fewer than
	// two are in flight.
	curEnd := m.WireOf("pf_cur_end", kEnd(curKey), "")
	ahead := m.WireOf("pf_cur_ahead", Sub(curEnd, in.next), "blocks of the window from the next WQE on (1..NB)")
	free := m.WireOf("pf_cur_free", Sub(C(CB+1, uint64(NB)), Bits(ahead, CB, 0)), "block slots the engine has passed")
	busy := m.WireOf("pf_busy", Not(Lt(flUsed, C(FB+2, cardTxPfBusy))), "many read aheads are in flight: windows grow later")
	extAt := m.WireOf("pf_ext_at", Sel(busy, C(CB+1, uint64(NB-cardTxPfExtend)), C(CB+1, cardTxPfExtend)), "block slots behind the next WQE from which the window grows")
	extOK := m.WireOf("pf_ext_ok", And(nextIn, Not(Lt(free, extAt)), Ne(in.pi, curEnd), Not(fl2Cur)), "the window can grow")
	load := m.WireOf("pf_load", And(in.load, flRoom, Sel(nextIn, extOK, Not(flCur))), "a read ahead of the engine's QP is queued")
	ext := m.WireOf("pf_load_ext", And(load, nextIn), "... extending its window")
	free1 := m.WireOf("pf_cur_free_m1", Sub(free, C(CB+1, 1)), "")
	cnt := countOf("pf", in.pi, Sel(nextIn, curEnd, in.next), in.sqMask, Sel(nextIn, Bits(free1, CB-1, 0), C(CB, cardTxPfFresh-1)))
	// A doorbell's read ahead is queued unless the engine's is this cycle.
	dbSlot := slotOf("pf_db_slot", in.dbQP)
	dbHot := oneHot(m, "pf_db", dbSlot, E)
	dbLoad := m.WireOf("pf_db_load", And(in.dbAsk, Not(load), Not(BitAt(fl, dbSlot)), flRoom), "a doorbell's read ahead is queued")
	dbCnt := countOf("pf_db", in.dbPI, in.dbNext, in.dbSQMask, C(CB, 1))
	m.Assign(push, Or(load, dbLoad))
	m.Assign(pSlot, Sel(load, curSlot, dbSlot))
	m.Assign(pIdx, Sel(load, Sel(ext, curEnd, in.next), in.dbNext))
	m.Assign(pCnt, Sel(load, cnt, dbCnt))
	pEnd := m.WireOf("pf_q_in_end", Add(Add(pIdx, zext(pCnt, 16)), C(16, 1)), "")
	extN1 := m.WireOf("pf_ext_n_m1", Add(zext(Bits(ahead, CB, 0), CB+2), zext(cnt, CB+2)), "the window after the extension, - 1: the blocks from the next WQE on and the read's")
	k2 := m.WireOf("pf_ext_k2_m1", Add(Add(zext(pCnt, CB+1), zext(kK(curKey), CB+1)), C(CB+1, 1)), "with a read in flight: the blocks of both - 1")
	m.Assign(pKey, keyOf(pEnd, Sel(ext, Bits(extN1, CB-1, 0), pCnt), pCnt, Sel(And(ext, flCur), Bits(k2, CB-1, 0), pCnt)))
	m.Assign(pFresh, Not(ext))
	pBase := m.WireOf("pf_q_in_base", Sel(load, in.sqBase, in.dbSQBase), "")
	pMask := m.WireOf("pf_q_in_mask", Sel(load, in.sqMask, in.dbSQMask), "")
	var qSlots, qIdxs, qKeys, qFresh, qBases, qCnts []Expr
	qHot := oneHot(m, "pf_q_wr", Bits(qWP, QDB-1, 0), cardTxPfQueue)
	for i := 0; i < cardTxPfQueue; i++ {
		at := m.WireOf(fmt.Sprintf("pf_q%d_w", i), And(push, Bit(qHot, i)), "")
		qSlots = append(qSlots, m.Reg(fmt.Sprintf("pf_q%d_slot", i), EB, nil, pSlot, at, "the read ahead's entry"))
		qIdxs = append(qIdxs, m.Reg(fmt.Sprintf("pf_q%d_idx", i), 16, nil, And(pIdx, pMask), at, "its first SQ block (masked)"))
		qKeys = append(qKeys, m.Reg(fmt.Sprintf("pf_q%d_key", i), 16, nil, pIdx, at, "... unmasked"))
		qFresh = append(qFresh, m.Reg(fmt.Sprintf("pf_q%d_fresh", i), 1, nil, pFresh, at, "it starts at a WQE"))
		qBases = append(qBases, m.Reg(fmt.Sprintf("pf_q%d_base", i), 58, nil, pBase, at, "its SQ's base, bits 63:6"))
		qCnts = append(qCnts, m.Reg(fmt.Sprintf("pf_q%d_cnt", i), CB, nil, pCnt, at, "its blocks - 1"))
	}
	m.Drive(qWP, big.NewInt(0), Add(qWP, zext(push, QDB+1)), nil)
	m.Drive(qRP, big.NewInt(0), Add(qRP, zext(in.reqGrant, QDB+1)), nil)
	hSel := selBits(qRP, 0, QDB)
	reqSlot := m.WireOf("pf_req_slot", muxTree(hSel, qSlots), "the head read ahead's entry")
	reqIdx := m.WireOf("pf_req_idx", muxTree(hSel, qIdxs), "")
	reqBase := m.WireOf("pf_req_base", muxTree(hSel, qBases), "")
	reqCnt := m.WireOf("pf_req_cnt", muxTree(hSel, qCnts), "")
	reqKey := m.WireOf("pf_req_key", muxTree(hSel, qKeys), "")
	reqFresh := m.WireOf("pf_req_fresh", muxTree(hSel, qFresh), "")
	// The landing: dma_rd returns requests whole and in issue order, so
	// a read ahead's beats come together, block after block; below 512
	// bits each block's beats are gathered first.
	beat := m.WireOf("pf_beat", And(in.rdValid, Bit(in.rdTag, 1)), "dma_rd's beat is a read ahead's")
	unused := []Expr{Bit(in.rdTag, 0), RedOr(Bits(in.rdTag, in.rdTag.W-1, 2))}
	landErr := m.RegDecl("pf_land_err", 1, "a beat of the landing read ahead got an error response")
	land := m.WireOf("pf_land", And(beat, in.rdLast), "a read ahead's last beat")
	m.Drive(flTail, big.NewInt(0), Add(flTail, zext(in.reqGrant, FB+1)), nil)
	flHeadNext := m.WireOf("pf_flight_head_next", Add(flHead, zext(land, FB+1)), "")
	m.Drive(flHead, big.NewInt(0), flHeadNext, nil)
	landRec := m.Mem("pf_flight", EB+17, cardTxPfFlight, in.reqGrant, Bits(flTail, FB-1, 0), Cat(reqFresh, reqKey, reqSlot), nil, Bits(flHeadNext, FB-1, 0),
		"the entry, first SQ index (unmasked) and kind (fresh: from a WQE) of each read ahead in flight, in issue order (read at the next head: the read ahead landing next)")
	landSlot := m.WireOf("pf_land_entry", Bits(landRec, EB-1, 0), "")
	landIdx := m.WireOf("pf_land_idx", Bits(landRec, EB+15, EB), "")
	m.Drive(landErr, big.NewInt(0), And(Not(land), Or(landErr, in.rdErr)), beat)
	if in.W != 64 && in.W != 512 {
		panic("gen: card_tx prefetch at 64 or 512 bits")
	}
	bpb := 512 / in.W
	BPB := log2(bpb)
	lb := m.RegDecl("pf_land_beat", CB+BPB, "beats of the landing read ahead taken")
	m.Drive(lb, big.NewInt(0), Sel(land, C(lb.W, 0), incr(lb)), beat)
	blkIdx := m.WireOf("pf_land_blk", Bits(lb, CB+BPB-1, BPB), "the block the beat belongs to, in its read ahead")
	var blkDone, blk Expr = beat, in.rdData
	if bpb > 1 {
		stage := m.RegDecl("pf_stage", 512-in.W, "the block's beats so far, the latest on top")
		m.Drive(stage, nil, Cat(in.rdData, Bits(stage, 512-in.W-1, in.W)), beat)
		blkDone = And(beat, Eq(Bits(lb, BPB-1, 0), C(BPB, uint64(bpb-1))))
		blk = Cat(in.rdData, stage)
	}
	blkDoneW := m.WireOf("pf_land_blk_done", blkDone, "the beat completes a block")
	blkW := m.WireOf("pf_land_blk_data", blk, "that block")
	landOK := m.WireOf("pf_land_ok", And(land, Not(landErr), Not(in.rdErr)), "the blocks are whole")
	// Per entry and block slot: SQ block x in slot x mod NB, written as it
	// lands; the blocks count only once every block of the read has.
	landSq := m.WireOf("pf_land_sq", Add(landIdx, zext(blkIdx, 16)), "the block's SQ index")
	blkHot := oneHot(m, "pf_land_slot", Bits(landSq, CB-1, 0), NB)
	var slotRd []Expr
	for k := 0; k < NB; k++ {
		// Read only with the context (txPop or txDrain; the data is taken
		// with the load, txCtx or a quick txWB):
		// 4,096 bits copied every cycle cost the co-simulation a fifth.
		slotRd = append(slotRd, m.Mem(fmt.Sprintf("pf_data%d", k), 512, E, And(blkDoneW, Bit(blkHot, k)), landSlot, blkW, in.popRead, popSlot,
			fmt.Sprintf("per entry: its SQ block %di + %d read ahead", NB, k)))
	}
	landHot := oneHot(m, "pf_landing", landSlot, E)
	freshHot := m.WireOf("pf_fresh_1h", Or(And(curHot, Rep(And(load, Not(ext)), E)), And(dbHot, Rep(dbLoad, E))), "a fresh read replaces the entry's window")
	loadHot := m.WireOf("pf_load_1h", Or(And(curHot, Rep(load, E)), And(dbHot, Rep(dbLoad, E))), "")
	land1h := m.WireOf("pf_land_1h", And(landHot, Rep(land, E)), "")
	createHot := oneHot(m, "pf_created", slotOf("pf_create_slot", in.createQP), E)
	// The verdict at the load (txCtx, or a quick txWB), keyed by the QP
	// and the SQ index its next WQE starts at: inside the window, and not
	// in a read still in flight in the read cycle before (a block read
	// then is the one landed). It holds until the next load.
	vPop := m.Reg("pf_pop_valid", 1, big.NewInt(0), BitAt(v, popSlot), nil, "the popped QP's entry held blocks")
	flRaw := m.Reg("pf_pop_inflight", 1, big.NewInt(0), BitAt(fl, popSlot), nil, "the popped QP's entry had a read in flight")
	flRaw2 := m.Reg("pf_pop_inflight2", 1, big.NewInt(0), BitAt(fl2, popSlot), nil, "... two")
	held := func(x Expr) Expr { return And(vPop, inWin(x, tags), Not(coming(x, tags, flRaw, flRaw2))) }
	next1 := m.WireOf("pf_pop_next1", Add(in.ctxNext, C(16, 1)), "")
	in1 := m.WireOf("pf_pop_inside", inWin(in.ctxNext, tags), "the popped QP's next WQE's first block is in its entry's window")
	hit := m.Reg("pf_hit", 1, big.NewInt(0), held(in.ctxNext), in.ctx, "the engine's QP's next WQE's first block is in its entry")
	hit2 := m.Reg("pf_hit_two", 1, big.NewInt(0), held(next1), in.ctx, "... and the block after it")
	rng := m.Reg("pf_inside", 1, big.NewInt(0), in1, in.ctx, "the engine's QP's next WQE starts inside its entry's window (held or not)")
	ctxNext := m.WireOf("pf_pop_next", in.ctxNext, "the block the popped QP's next WQE starts at")
	offSel := selBits(m.WireOf("pf_pop_off", Bits(ctxNext, CB-1, 0), "its block slot"), 0, CB)
	off2Sel := selBits(m.WireOf("pf_pop_off_next", Bits(next1, CB-1, 0), ""), 0, CB)
	data := m.WireOf("pf_pop_blocks", Cat(muxTree(off2Sel, slotRd), muxTree(offSel, slotRd)), "the entry's blocks of the popped QP's next WQE, the first in bits 511:0")
	// A QP popped again before its read ahead has landed (a few QPs busy:
	// their turns come round faster than a DMA read) is told so, and
	// waits for it rather than reading the block a second time.
	flPop := m.Reg("pf_pop_pending", 1, big.NewInt(0), And(BitAt(fl, popSlot), BitAt(want, popSlot)), nil, "the popped QP's entry has a wanted read ahead queued or in flight")
	pend := m.Reg("pf_pend", 1, big.NewInt(0), And(flPop, coming(in.ctxNext, tags, flRaw, flRaw2)), in.ctx, "the engine's QP's next WQE's first block is being read ahead")
	// Dropped: the entry of a QP whose WQE starts outside it (its blocks
	// are behind the QP, or it never held them), and of a QP created.
	clr := m.WireOf("pf_clear_1h", Or(And(curHot, Rep(And(in.consume, Not(rng)), E)), And(createHot, Rep(in.create, E))), "")
	// Reads in flight per entry: 0, 1 (fl) or 2 (fl and fl2).
	m.Drive(fl, big.NewInt(0), Or(loadHot, And(fl, Not(land1h)), fl2), nil)
	m.Drive(fl2, big.NewInt(0), And(Or(And(fl, loadHot), fl2), Not(land1h)), nil)
	// A read with an error response drops the whole window, and what is
	// still coming for it.
	landBad := m.WireOf("pf_land_bad_1h", And(land1h, Rep(Not(landOK), E)), "")
	m.Drive(want, big.NewInt(0), And(Or(loadHot, And(want, Or(Not(land1h), fl2))), Not(clr), Not(landBad)), nil)
	m.Drive(v, big.NewInt(0), And(Or(And(v, Not(freshHot)), And(land1h, want, Rep(landOK, E))), Not(clr), Not(landBad)), nil)
	addr := m.WireOf("pf_req_addr", Add(Cat(reqBase, C(6, 0)), Cat(C(42, 0), reqIdx, C(6, 0))), "")
	for _, x := range []struct {
		s      *Signal
		hi, lo int
	}{{ahead, 15, CB + 1}, {free1, CB, CB}, {extN1, CB + 1, CB}, {landSq, 15, CB}, {ctxNext, 15, CB}, {curKey, KW - 1, 16 + 2*CB}, {k2, CB, CB}} {
		unused = append(unused, Bits(x.s, x.hi, x.lo))
	}
	m.WireOf("pf_unused", RedOr(Cat(unused...)), "bits the prefetch does not use")
	return txPrefetch{reqV: reqV, reqAddr: addr,
		reqLen: Cat(C(16-CB-6, 0), reqCnt, C(6, 63)), reqTag: C(in.rdTag.W, cardTxPfTag),
		beat: beat, hit: hit, two: hit2, data: data, pend: pend,
		blkDone: blkDoneW, blkOK: Not(Or(landErr, in.rdErr)), blk: blkW, blkOff: blkIdx, blkQP: landSlot, blkIdx: landIdx,
		blkFresh: Bit(landRec, EB+16), blkLast: land}
}
