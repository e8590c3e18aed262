package gen

import (
	"fmt"
	"math/big"
)

// card_tx's gather: SGEs kept as the WQE comes in, every non-empty SGE's
// lkey checked through placement's check port before a byte is read, then
// the payload read by dma_rd piece by piece (one piece per check-port
// lookup: an SGE's contiguous host range, or its part in one page of a
// paged region, at most 64 KiB; read as one dma_rd request per 4 KiB page
// it touches, so that a page the host refuses is one faulted request) and
// packed into full beats for ddp_tx. A message's first request may stand
// in a payload slot read ahead (card_tx_payahead.go): it is then taken
// from the slot, not read, and the slot's beats go to the packer first;
// a slot may hold the first few pages (cardTxSlotBytes), taken as one.

const (
	cardTxMaxSGE  = 30      // SGEs per WQE (docs/card.md MaxSGE)
	cardTxRdPiece = 1 << 16 // bytes of one check-port lookup at most
	cardTxRdReqs  = 8       // payload requests in flight (their addresses kept to name a fault)
)

// txGatherIn is what the gather needs of card_tx.
type txGatherIn struct {
	W, L, LB         int
	bufWrEn          Expr    // a WQE word past the header is written (the buffer's write port)
	bufWrAddr        Expr    // its word index
	bufWrData        Expr    // the word: WQE bytes 32+L*k .. 32+L*k+L-1
	start            *Signal // the WQE starts (clears the gather's state)
	chkPhase         *Signal // the engine is in txChk: check every SGE
	preRd            Expr    // SGE 0 is in the store before txChk (txHdr at 512 bits): its check may read it now
	feedPhase        *Signal // the engine feeds ddp_tx from the gather (txFeed, not inline)
	nsge             *Signal // NSGE (5 bits)
	qp               *Signal // QP number
	pd               *Signal // the QP's PD
	rdReqReady       *Signal // dma_rd takes a request
	rdData           *Signal // dma_rd's output beat
	rdKeep           *Signal
	rdLast, rdBErr   *Signal // a request's last beat; an error response up to this beat (dma_rd's tuser_berr)
	rdValid, rdIsPay Expr    // a beat, and it belongs to a payload read (tag 1)
	outReady         *Signal // ddp_tx's s_axis_tready
	chkReady         *Signal // placement's s_chk_ready
	chkValid         *Signal // a verdict from placement (s_chk_valid of card_tx)
	chkFault         *Signal
	chkAddr          *Signal
	chkPiece         *Signal // cardTxVerdictBytes of the verdict: its first piece
	chkSlotN         *Signal // ... and the bytes of it a payload slot holds
	// The payload read ahead (card_tx_payahead.go): the message's first
	// request in one of its slots.
	slotHit, slotWait Expr // landed whole (the request is taken from it) / still landing (the request waits)
	slotSrc           Expr // the packer's input is the slot in use
	slotV             Expr // its beat
	slotData          Expr
	slotKeep          Expr
	// A one-SGE WQE's verdict taken from a slot's lookup (the payload read
	// ahead's verdict reuse; nil where it is not built): no check phase,
	// the first piece opened with the slot's verdict, the message's bytes
	// the SGE's length.
	skip    *Signal
	skipLen Expr
	verdict txSlotVerdict
}

// txGather is what the gather gives card_tx.
type txGather struct {
	chkDone, fault   *Signal // every SGE checked (fault: one failed, registered)
	faultNow         *Signal // fault, with this cycle's verdict (for chkDone's cycle)
	faultCode        *Signal // the first failed verdict (mem.Fault)
	total            *Signal // the message's bytes (sum of the SGE lengths)
	chkV             Expr    // a request to placement's check port
	chkSTag, chkTO   Expr
	chkLen           Expr
	rdV              Expr // a payload read request to dma_rd
	rdAddr, rdLen    Expr
	rdTake           Expr // dma_rd's payload beat is taken
	outV, outLast    *Signal
	outData          *Signal
	lateFault        *Signal // a lookup during the gather failed (the table changed): zeros stand in for the rest
	rdFault          *Signal // a payload read got an error response: zeros stand in for the rest (sticky for the message)
	rdFaultNew       *Signal // pulse, the cycle after the first faulted beat was taken: rdFault, rdFaultAddr and rdFaultOff are set
	rdFaultAddr      *Signal // the faulted request's host address (its page, or the piece's first byte in it)
	rdFaultOff       *Signal // the message's payload offset of that request's first byte
	unused           []Expr
	chkNeed, chkQPPD []Expr // need, qp, pd
	firstAsk         Expr   // the message's first request is offered
	reqAddr, reqN    Expr   // the request offered: host address, bytes as a slot would hold them (17 bits)
	reqGo            Expr   // it goes (to dma_rd or from a slot)
	slotTake         Expr   // the packer takes the slot's beat
	reqMore          Expr   // the message has payload reads still to issue
}

// thermoCount is the number of set bits of a mask contiguous from bit 0.
func thermoCount(m *Module, name string, keep *Signal, L, LB int) *Signal {
	var acc Expr = C(LB+1, 0)
	for i := 0; i < L; i++ {
		edge := Bit(keep, i)
		if i+1 < L {
			edge = And(edge, Not(Bit(keep, i+1)))
		}
		acc = Or(acc, And(Rep(edge, LB+1), C(LB+1, uint64(i+1))))
	}
	return m.WireOf(name, acc, "set bits of a thermometer mask")
}

func cardTxGather(m *Module, g txGatherIn) *txGather {
	W, L, LB := g.W, g.L, g.LB
	out := &txGather{}

	// --- the SGE store: written beside the WQE buffer ---
	// Word k of the buffer is WQE bytes 32+L*k on; SGE i is bytes 32+16i.
	const SW = 128
	nBank, depth := 1, cardTxMaxSGE+2
	if W < SW {
		nBank = SW / W // an SGE spans nBank words: bank j holds word j of each
	} else {
		nBank = W / SW // a word holds nBank SGEs: bank j holds SGE j of each word
		depth = (cardTxMaxSGE + nBank) / nBank
	}
	AW := addrWidth(depth)
	sgeIdx := m.Wire("g_sge_idx", 5, "the SGE read from the store")
	sgeRd := m.Wire("g_sge_rd", 1, "read it")
	waS := m.WireOf("g_st_wa", zext(g.bufWrAddr, 8), "the buffer word written")
	var banks []*Signal
	var sge Expr
	if W < SW {
		lb := log2(nBank)
		for j := 0; j < nBank; j++ {
			en := And(g.bufWrEn, Eq(Bits(waS, lb-1, 0), C(lb, uint64(j))))
			banks = append(banks, m.Mem(fmt.Sprintf("g_sge_b%d", j), W, depth, en, Bits(waS, AW+lb-1, lb), g.bufWrData, sgeRd,
				zext(sgeIdx, AW), fmt.Sprintf("SGE store: word %d of each SGE", j)))
		}
		parts := make([]Expr, nBank)
		for j := 0; j < nBank; j++ {
			parts[nBank-1-j] = banks[j]
		}
		sge = Cat(parts...)
		out.unused = append(out.unused, Bits(waS, 7, AW+lb))
	} else {
		lb := log2(nBank)
		data := m.WireOf("g_st_wd", g.bufWrData, "")
		sel := m.Reg("g_sge_sel", lb, nil, Bits(sgeIdx, lb-1, 0), sgeRd, "which bank the read SGE is in")
		var cands []Expr
		for j := 0; j < nBank; j++ {
			banks = append(banks, m.Mem(fmt.Sprintf("g_sge_b%d", j), SW, depth, g.bufWrEn, Bits(waS, AW-1, 0), Bits(data, SW*j+SW-1, SW*j), sgeRd,
				Bits(m.WireOf(fmt.Sprintf("g_sge_ra%d", j), zext(Bits(sgeIdx, 4, lb), AW), ""), AW-1, 0), fmt.Sprintf("SGE store: SGE %d of each word", j)))
			cands = append(cands, banks[j])
		}
		var s []Expr
		for i := 0; i < lb; i++ {
			s = append(s, Bit(sel, i))
		}
		sge = muxTree(s, cands)
		out.unused = append(out.unused, Bits(waS, 7, AW))
	}
	sgeW := m.WireOf("g_sge", sge, "the SGE read (registered): ADDR 63:0, LENGTH 95:64, LKEY 127:96")
	sAddr := m.WireOf("g_sge_addr", Bits(sgeW, 63, 0), "")
	sLen := m.WireOf("g_sge_len", Bits(sgeW, 95, 64), "")
	sKey := m.WireOf("g_sge_lkey", Bits(sgeW, 127, 96), "")

	// --- check phase: every non-empty SGE, in order ---
	ci := m.RegDecl("ck_i", 6, "next SGE to check")
	cph := m.RegDecl("ck_ph", 1, "the SGE ck_i has been read")
	sent := m.RegDecl("ck_sent", 6, "check requests sent")
	got := m.RegDecl("ck_got", 6, "verdicts back")
	fault := m.RegDecl("ck_fault", 1, "a verdict was not OK")
	total := m.RegDecl("g_total", 32, "the message's bytes")
	ckMore := m.WireOf("ck_more", Lt(ci, zext(g.nsge, 6)), "")
	ckPre := m.WireOf("ck_pre", And(g.preRd, Eq(ci, C(6, 0)), ckMore), "SGE 0 is read for its check before txChk")
	ckRd := m.WireOf("ck_rd", And(Or(g.chkPhase, ckPre), Not(cph), ckMore), "")
	ckHave := m.WireOf("ck_have", And(g.chkPhase, cph), "the SGE is out of the store")
	ckEmpty := m.WireOf("ck_empty", Eq(sLen, C(32, 0)), "")
	ckReq := m.WireOf("ck_req", And(ckHave, Not(ckEmpty)), "")
	ckGo := m.WireOf("ck_go", And(ckReq, g.chkReady), "")
	ckNext := m.WireOf("ck_next", Or(ckGo, And(ckHave, ckEmpty)), "")
	m.Drive(ci, big.NewInt(0), Sel(g.start, C(6, 0), incr(ci)), Or(g.start, ckNext))
	m.Drive(cph, big.NewInt(0), And(Not(g.start), Not(ckNext), Or(cph, ckRd)), nil)
	m.Drive(sent, big.NewInt(0), Sel(g.start, C(6, 0), incr(sent)), Or(g.start, ckGo))
	ckV := m.WireOf("ck_verdict", And(g.chkPhase, g.chkValid), "a verdict of the check phase")
	m.Drive(got, big.NewInt(0), Sel(g.start, C(6, 0), incr(got)), Or(g.start, ckV))
	m.Drive(fault, big.NewInt(0), And(Not(g.start), Or(fault, And(ckV, RedOr(g.chkFault)))), nil)
	fcode := m.RegDecl("ck_fault_code", 3, "the first failed verdict")
	m.Drive(fcode, big.NewInt(0), Sel(g.start, C(3, 0), g.chkFault), Or(g.start, And(ckV, RedOr(g.chkFault), Not(fault))))
	out.faultCode = fcode
	if g.skip != nil {
		m.Drive(total, nil, Sel(g.start, C(32, 0), Sel(g.skip, g.skipLen, Add(total, sLen))), Or(g.start, ckGo, g.skip))
	} else {
		m.Drive(total, nil, Sel(g.start, C(32, 0), Add(total, sLen)), Or(g.start, ckGo))
	}
	// Done in the cycle of the last verdict, which then counts as taken.
	gotNow := m.WireOf("ck_got_now", Sel(ckV, incr(got), got), "verdicts back, this cycle's included")
	out.chkDone = m.WireOf("ck_done", And(g.chkPhase, Not(cph), Not(ckMore), Eq(gotNow, sent)), "every SGE is checked")
	out.faultNow = m.WireOf("ck_fault_now", Or(fault, And(ckV, RedOr(g.chkFault))), "a verdict was not OK, this cycle's included")
	out.fault, out.total = fault, total

	// --- gather: lookups and reads, piece by piece ---
	gi := m.RegDecl("g_i", 6, "SGE being gathered")
	goff := m.RegDecl("g_off", 32, "bytes of it requested")
	gph := m.RegDecl("g_ph", 2, "0: read the SGE; 1: look its next piece up; 2: wait for the verdict; 3: read request")
	gAddr := m.RegDecl("g_addr", 64, "host address of the piece")
	gN := m.RegDecl("g_n", 17, "bytes of the piece")
	gLate := m.RegDecl("g_late_fault", 1, "a lookup failed: stop reading, zeros for the rest")
	gReq := m.RegDecl("g_req", 32, "payload bytes requested")
	ph := func(v uint64) Expr { return And(g.feedPhase, Eq(gph, C(2, v))) }
	gMore := m.WireOf("g_more", And(Lt(gi, zext(g.nsge, 6)), Not(gLate)), "")
	gRd := m.WireOf("g_rd", And(ph(0), gMore), "")
	gLeft := m.WireOf("g_left", Sub(sLen, goff), "bytes of the SGE not yet requested")
	gSkip := m.WireOf("g_skip", And(ph(1), Eq(gLeft, C(32, 0))), "the SGE is done: the next one")
	gLook := m.WireOf("g_look", And(ph(1), Not(Eq(gLeft, C(32, 0)))), "")
	gLookGo := m.WireOf("g_look_go", And(gLook, g.chkReady), "")
	gV := m.WireOf("g_verdict", And(ph(2), g.chkValid), "")
	gOK := m.WireOf("g_ok", And(gV, Not(RedOr(g.chkFault))), "")
	// A piece is read one page at a time: each request ends at the piece's
	// end or its page's, whichever comes first. Their addresses wait in
	// g_pq until their last beat is taken, so that a faulted one is named.
	gFault := m.RegDecl("g_rd_fault", 1, "a payload read got an error response: stop reading, zeros for the rest")
	pqPop := m.Wire("g_pq_pop", 1, "a payload request's last beat is taken")
	pgLeft := m.WireOf("g_pg_left", Sub(C(13, 4096), zext(Bits(gAddr, 11, 0), 13)), "bytes from the piece's address to its page's end")
	lastOfPiece := m.WireOf("g_req_whole", Not(Lt(zext(pgLeft, 17), gN)), "the rest of the piece lies in this page")
	pageN := m.WireOf("g_req_page_n", Sel(lastOfPiece, gN, zext(pgLeft, 17)), "bytes of this request, read")
	// A payload slot holds the message's first requests up to its size
	// (from the first byte's page): taken from a slot, they go as one.
	// Kept from the piece's lookup (it matters for its first request only),
	// so that the slot's match starts at registers.
	slotN := m.RegDecl("g_req_slot_n", 17, "bytes of the piece's first requests, as a slot holds them")
	pqRoomW := addrWidth(cardTxRdReqs + 1)
	reqV := m.Wire("g_req_v", 1, "a payload read request is offered")
	gReqGo := m.WireOf("g_req_go", And(reqV, Or(g.rdReqReady, g.slotHit)), "")
	pq := ShiftQueue(m, "g_pq", cardTxRdReqs, []string{"addr"}, []int{64}, m.WireOf("g_pq_push", And(gReqGo, Not(g.slotHit)), "a read goes to dma_rd"),
		[]Expr{gAddr}, zext(pqPop, pqRoomW))
	first := m.WireOf("g_req_first", And(ph(3), Eq(gReq, C(32, 0))), "the message's first request is offered")
	m.Assign(reqV, And(ph(3), Lt(pq.Count, C(pqRoomW, cardTxRdReqs)), Not(gFault), Not(g.slotWait)))
	fromSlot := m.WireOf("g_req_slot", And(reqV, g.slotHit), "the request is taken from a payload slot, not read")
	// The hit selects among sums, rather than feeding the adders.
	step := func(name string, x *Signal) Expr {
		w := x.W
		return m.WireOf(name, Sel(fromSlot, Add(x, zext(slotN, w)), Add(x, zext(pageN, w))), "")
	}
	pieceDone := m.WireOf("g_piece_done", And(gReqGo, Sel(fromSlot, Eq(slotN, gN), lastOfPiece)), "the piece's last request goes")
	// A one-SGE WQE's check is its first piece's lookup (the same STag,
	// PD, TO and length): its verdict is taken as that lookup's, so the
	// feed starts at the piece's first request.
	reuse := m.WireOf("g_reuse", And(ckV, Eq(g.nsge, C(5, 1)), Not(RedOr(g.chkFault))), "the check's verdict opens the gather's first piece")
	next := Sel(gRd, C(2, 1), Sel(gSkip, C(2, 0), Sel(gLookGo, C(2, 2), Sel(gV, Sel(gOK, C(2, 3), C(2, 0)), Sel(pieceDone, C(2, 1), gph)))))
	sv := g.verdict
	open := Expr(reuse)
	var openPh Expr = C(2, 3)
	var skip, skipHit Expr = C(1, 0), C(1, 0)
	if g.skip != nil {
		skip = m.WireOf("g_skip_check", g.skip, "the verdict was a slot's lookup's: the first piece opens with its results")
		skipHit = m.WireOf("g_skip_hit", sv.hit, "... and its first requests are taken from the slot now")
		open = Or(reuse, skip)
		openPh = Sel(And(skipHit, sv.done), C(2, 1), C(2, 3))
	}
	m.Drive(gph, big.NewInt(0), Sel(g.start, C(2, 0), Sel(open, openPh, next)), nil)
	m.Drive(gi, big.NewInt(0), Sel(g.start, C(6, 0), incr(gi)), Or(g.start, gSkip))
	reqStep := func(name string, x *Signal) Expr {
		if g.skip == nil {
			return step(name, x)
		}
		return Sel(skipHit, zext(sv.n, 32), step(name, x))
	}
	m.Drive(goff, nil, Sel(Or(g.start, gSkip), C(32, 0), reqStep("g_off_next", goff)), Or(g.start, gSkip, gReqGo, skipHit))
	looked := m.WireOf("g_looked", Or(gOK, reuse), "a piece's lookup is in")
	addrIn, runIn := Expr(g.chkAddr), Expr(g.chkPiece)
	slotIn := Expr(g.chkSlotN)
	if g.skip != nil {
		addrIn = Sel(skip, Sel(skipHit, sv.addr1, sv.addr), addrIn)
		runIn = Sel(skip, Sel(skipHit, sv.rest, sv.run), runIn)
		slotIn = Sel(skip, sv.n, slotIn)
		looked = m.WireOf("g_opened", Or(looked, skip), "a piece's lookup is in, or a slot's stands for it")
	}
	m.Drive(gAddr, nil, Sel(looked, addrIn, step("g_addr_next", gAddr)), Or(looked, gReqGo))
	m.Drive(gN, nil, Sel(looked, runIn, Sel(fromSlot, Sub(gN, slotN), Sub(gN, pageN))), Or(looked, gReqGo))
	m.Drive(slotN, nil, slotIn, looked)
	m.Drive(gLate, big.NewInt(0), And(Not(g.start), Or(gLate, And(gV, Not(gOK)))), nil)
	m.Drive(gReq, big.NewInt(0), Sel(g.start, C(32, 0), reqStep("g_req_next", gReq)), Or(g.start, gReqGo, skipHit))
	out.lateFault = gLate
	out.reqMore = m.WireOf("g_req_more", And(Or(g.chkPhase, g.feedPhase), Not(gFault), Or(RedOr(gph), gMore)), "the message has payload reads still to issue")
	m.Assign(sgeRd, Or(ckRd, gRd))
	m.Assign(sgeIdx, Sel(Or(g.chkPhase, ckPre), Bits(ci, 4, 0), Bits(gi, 4, 0)))
	out.unused = append(out.unused, Bit(ci, 5), Bit(gi, 5))

	// Check-port requests: the check phase's whole SGEs, the gather's pieces.
	out.chkV = Or(ckReq, gLook)
	out.chkSTag = sKey
	out.chkTO = Sel(g.chkPhase, sAddr, Add(sAddr, zext(goff, 64)))
	out.chkLen = Sel(g.chkPhase, sLen, gLeft)
	out.chkNeed = []Expr{C(4, 0), zext(g.qp, 32), g.pd}
	out.rdV = And(reqV, Not(fromSlot))
	out.firstAsk, out.reqAddr, out.reqN, out.reqGo = first, gAddr, slotN, gReqGo
	out.rdAddr = gAddr
	rl := m.WireOf("g_rd_len", Sub(pageN, C(17, 1)), "length minus one")
	out.rdLen = Bits(rl, 15, 0)
	out.unused = append(out.unused, Bit(rl, 16))

	// --- packer: dma_rd's beats (each request from lane 0) to full beats ---
	acc := m.RegDecl("pk_acc", W, "bytes held, from lane 0")
	cnt := m.RegDecl("pk_cnt", LB, "how many")
	pIn := m.RegDecl("pk_in", 32, "payload bytes taken in")
	flush := m.RegDecl("pk_flush", 1, "the message's last bytes wait in pk_acc")
	ov := m.RegDecl("pk_v", 1, "the output beat is valid")
	od := m.RegDecl("pk_data", W, "")
	ol := m.RegDecl("pk_last", 1, "")
	free := m.WireOf("pk_free", Or(Not(ov), g.outReady), "the output register can be loaded")
	rest := m.WireOf("pk_rest", Sub(total, pIn), "payload bytes still to come")
	zfill := m.WireOf("pk_zero", And(g.feedPhase, Or(gLate, gFault), Eq(pIn, gReq), RedOr(rest)), "a failed lookup or a faulted read: zeros for the rest")
	// Input beats: a payload slot's while one is in use (the message's
	// first request), else dma_rd's.
	inV := m.WireOf("pk_in_v", Or(And(g.feedPhase, Sel(g.slotSrc, g.slotV, And(g.rdValid, g.rdIsPay))), zfill), "")
	take := m.WireOf("pk_take", And(inV, free, Not(flush)), "an input beat is taken")
	out.slotTake = And(take, g.slotSrc)
	inKeep := m.WireOf("pk_in_keep", Sel(g.slotSrc, g.slotKeep, g.rdKeep), "")
	kn := thermoCount(m, "pk_keep_n", inKeep, L, LB)
	restSmall := m.WireOf("pk_rest_small", Lt(rest, C(32, uint64(L))), "")
	zn := Sel(restSmall, Bits(rest, LB, 0), C(LB+1, uint64(L)))
	n := m.WireOf("pk_n", Sel(zfill, zn, kn), "bytes in the input beat")
	masks := make([]Expr, L)
	for i := 0; i < L; i++ {
		masks[L-1-i] = Rep(And(Bit(inKeep, i), Not(zfill)), 8)
	}
	inD := m.WireOf("pk_in_data", And(Sel(g.slotSrc, g.slotData, g.rdData), Cat(masks...)), "")
	wide := m.WireOf("pk_wide_in", zext(inD, 2*W), "")
	shifted := rotateLanes(m, "pk_sh", wide, cnt, 8)
	comb := m.WireOf("pk_comb", Or(zext(acc, 2*W), shifted), "held bytes, then the input's")
	sum := m.WireOf("pk_sum", Add(zext(cnt, LB+1), n), "")
	full := m.WireOf("pk_full", Not(Lt(sum, C(LB+1, uint64(L)))), "a whole beat is there")
	final := m.WireOf("pk_final", Eq(zext(n, 32), rest), "the input beat holds the message's last byte")
	emit := m.WireOf("pk_emit", And(take, Or(full, final)), "a beat goes out")
	more := m.WireOf("pk_more", And(take, final, Not(Eq(sum, C(LB+1, uint64(L)))), full), "the last bytes spill into one more beat")
	fl := m.WireOf("pk_flush_go", And(flush, free), "")
	m.Drive(acc, big.NewInt(0), Sel(Or(g.start, fl), C(W, 0), Sel(full, Bits(comb, 2*W-1, W), Sel(final, C(W, 0), Bits(comb, W-1, 0)))),
		Or(g.start, fl, take))
	sumLo := m.WireOf("pk_sum_lo", Sub(sum, C(LB+1, uint64(L))), "bytes past a whole beat")
	m.Drive(cnt, big.NewInt(0), Sel(Or(g.start, fl), C(LB, 0), Sel(full, Bits(sumLo, LB-1, 0),
		Sel(final, C(LB, 0), Bits(sum, LB-1, 0)))), Or(g.start, fl, take))
	m.Drive(pIn, big.NewInt(0), Sel(g.start, C(32, 0), Add(pIn, zext(n, 32))), Or(g.start, take))
	m.Drive(flush, big.NewInt(0), And(Not(g.start), Or(more, And(flush, Not(fl)))), nil)
	m.Drive(ov, big.NewInt(0), And(Not(g.start), Or(emit, fl, And(ov, Not(g.outReady)))), nil)
	m.Drive(od, nil, Sel(fl, acc, Bits(comb, W-1, 0)), Or(emit, fl))
	m.Drive(ol, nil, Or(fl, And(final, Not(more))), Or(emit, fl))
	out.rdTake = And(g.feedPhase, g.rdIsPay, free, Not(flush), Not(g.slotSrc))

	// A payload beat with an error response (dma_rd's berr: this request's
	// responses had one up to this beat) names its request: the message
	// is cut at the FPDU holding that request's first byte (card_tx), as
	// the card model, which reads a segment's pieces page by page before
	// framing it, fails at the segment holding the refused page.
	payTake := m.WireOf("pk_pay_take", And(g.rdValid, out.rdTake), "a payload beat is taken")
	m.Assign(pqPop, And(payTake, g.rdLast))
	reqFirst := m.RegDecl("pk_req_first", 1, "the next payload beat opens a request")
	m.Drive(reqFirst, big.NewInt(1), Or(g.start, g.rdLast), Or(g.start, payTake))
	reqOff := m.RegDecl("pk_req_off", 32, "payload offset of the current request's first byte")
	m.Drive(reqOff, nil, pIn, And(payTake, reqFirst))
	hit := m.WireOf("pk_fault_hit", And(payTake, g.rdBErr, Not(gFault)), "the message's first faulted beat")
	m.Drive(gFault, big.NewInt(0), And(Not(g.start), Or(gFault, hit)), nil)
	out.rdFault = gFault
	out.rdFaultNew = m.Reg("g_rd_fault_new", 1, big.NewInt(0), hit, nil, "")
	out.rdFaultAddr = m.Reg("g_rd_fault_addr", 64, nil, pq.Fields[0][0], hit, "")
	out.rdFaultOff = m.Reg("g_rd_fault_off", 32, nil, Sel(reqFirst, pIn, reqOff), hit, "")
	out.outV, out.outData, out.outLast = ov, od, ol
	out.unused = append(out.unused, Bit(sumLo, LB))
	return out
}

// CardTxBench builds card_tx_tb_w<width>, the transmit engine's
// co-simulation wrapper: card_tx with placement (the STag table, at the
// card's top in the card) behind its lkey check port, wired as in the
// card; every other port is the wrapper's.
func CardTxBench(width int) (*Module, error) {
	tx, err := CardTx(width)
	if err != nil {
		return nil, err
	}
	pl, err := Placement(PlacementDefault(width))
	if err != nil {
		return nil, err
	}
	m := NewModule(fmt.Sprintf("card_tx_tb_w%d", width), "docs/card-rtl.md",
		"Co-simulation wrapper of the transmit engine: card_tx's lkey checks go to placement's check port and its Local Invalidates and binds to placement's mop port (the STag table, programmed through placement's register port), as in the card's top. Not part of the card itself.")
	clk := m.Clock()
	rst := m.ResetPort()
	w := func(n string, b int) *Signal { return m.Wire(n, b, "") }
	req := map[string]*Signal{"valid": w("chk_req_valid", 1), "ready": w("chk_req_ready", 1), "stag": w("chk_stag", 32),
		"pd": w("chk_pd", 32), "qp": w("chk_qp", 32), "need": w("chk_need", 4), "to": w("chk_to", 64), "len": w("chk_len", 32), "tag": w("chk_tag", 8)}
	rsp := map[string]*Signal{"valid": w("chk_rsp_valid", 1), "ready": w("chk_rsp_ready", 1), "tag": w("chk_rsp_tag", 8),
		"fault": w("chk_fault", 3), "addr": w("chk_addr", 64), "run": w("chk_run", 32)}
	txc := map[string]Expr{"clk": clk, "rst": rst}
	plc := map[string]Expr{"clk": clk, "rst": rst}
	for k, s := range req {
		txc["m_chk_"+k] = s
		plc["s_chk_"+k] = s
	}
	for k, s := range rsp {
		txc["s_chk_"+k] = s
		plc["m_chk_"+k] = s
	}
	// Local Invalidate and bind: card_tx's mop port to placement's.
	mv := w("mop_valid", 1)
	txc["m_mop_valid"], plc["s_mop_valid"] = mv, mv
	for _, f := range mopReqFields {
		s := w("mop_"+f.name, f.w)
		txc["m_mop_"+f.name] = s
		plc["s_mop_"+f.name] = s
	}
	tw := w("tbl_wr", 1)
	txc["s_tbl_wr"], plc["m_tbl_wr"] = tw, tw
	mr := w("mop_ready", 1)
	txc["m_mop_ready"], plc["s_mop_ready"] = mr, mr
	for _, f := range []string{"valid", "ok"} {
		s := w("mop_done_"+f, 1)
		txc["s_mop_"+f] = s
		plc["m_mop_"+f] = s
	}
	exposeInstance(m, "tx", tx, txc)
	exposeInstance(m, "pl", pl, plc)
	return m, m.Validate()
}
