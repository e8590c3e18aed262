package gen

import (
	"fmt"
	"math/big"
)

// Terminate causes of the Send path (RFC 5040 Fig. 9, RFC 5041 §7.2), as
// golden/rdmap names them; the co-simulation checks them against the card
// model.
const (
	causeRDMAPLocalCatastrophic = 0x00FF
	causeRDMAPCannotInvalidate  = 0x0109
	causeDDPNoBuffer            = 0x1202
	causeDDPInvalidMSNRange     = 0x1203
	causeDDPInvalidMO           = 0x1204
	causeDDPMessageTooLong      = 0x1205
)

// cardStreamRXLost is the bit of QP_DB STREAM that reports the connection
// lost (RX_LOST, docs/card.md).
const cardStreamRXLost = 1

// cardStreamRXFin is the bit of QP_DB STREAM that reports the peer's end
// of stream (the FIN after the last byte of RXS_PI).
const cardStreamRXFin = 0

// rxSendIn is what the Send engine takes from the rest of card_rx.
type rxSendIn struct {
	create  Expr    // QP_CMD CREATE taken this cycle
	errCmd  Expr    // QP_CMD ERROR taken this cycle
	flRoom  *Signal // driven here: a command or doorbell may be taken (the flush queue has room)
	cQPN    *Signal // its QP number
	cPD     *Signal
	dbTake  Expr // a doorbell is taken this cycle
	dbKind  *Signal
	dbIndex *Signal
	dbValue *Signal
	dbHold  *Signal // driven here: a bad RQ_PI doorbell waits on m_baddb, no doorbell may be taken
	// A QP whose Terminate record of placement (m_term) or of an MPA
	// error (m_err) card_tx took: its RQ is flushed as for m_rxterm's.
	flExtV  Expr    // a QP waits to join the flush queue
	flExtQP Expr    // which
	flExtGo *Signal // driven here: it joins this cycle
	sndIdle *Signal // driven here: no segment is in progress or waiting on s_host
	res     *Signal // driven here: the engine is done with a segment (stored, refused or dropped)
	resErr  *Signal // driven here: ... and the segment failed (or its QP had)
	kill    *Signal // driven here: placement drops the failed QP's later segments
	killQP  *Signal // driven here
	// A payload write of a QP got an error response: the QP fails as
	// on QP_CMD ERROR (wfGo, taken when wfCan) and its record goes to
	// card_tx (m_rxterm, DMA fault).
	wfCan Expr    // a card failure may be taken this cycle
	wfGo  *Signal // driven here: it is taken
	wfQP  *Signal // driven here
	wfRdy *Signal // driven here: no fault report waits (doorbells may be taken)
}

// cardRxSend builds the receive engine's untagged path: placement's m_host
// stream in, RQ WQEs fetched by DMA, payload written into the WQEs' SGE
// buffers after the lkey checks of placement's check port, receive
// completions out. It returns the bits no logic reads.
func cardRxSend(m *Module, W int, x rxSendIn) ([]Expr, error) {
	L := W / 8
	LB := log2(L)
	QB := cardRxQPBits
	var unused []Expr
	dbRQPI, err := CardDBKind("QP_DB", "RQ_PI")
	if err != nil {
		return nil, err
	}
	dbStream, err := CardDBKind("QP_DB", "STREAM")
	if err != nil {
		return nil, err
	}
	one := C(1, 1)

	// Ports.
	rqLo := m.Input("qp_rq_base_lo", 32, "RQ ring address (aligned to its size)")
	rqHi := m.Input("qp_rq_base_hi", 32, "")
	rqLog := m.Input("qp_sizes_rq_log", 5, "RQ basic blocks, log2 (0..16)")
	rcq := m.Input("qp_cqs_recv_cq", 16, "CQ of receive completions (below 1024)")
	hData := m.Input("s_host_tdata", W, "untagged ULPDUs (placement m_host)")
	hKeep := m.Input("s_host_tkeep", L, "")
	hValid := m.Input("s_host_tvalid", 1, "")
	hReady := m.Output("s_host_tready", 1, "")
	hLast := m.Input("s_host_tlast", 1, "")
	hQP := m.Input("s_host_qp", 32, "connection, every beat")
	hLen := m.Input("s_host_len", 16, "ULPDU length, every beat")
	kValid := m.Output("m_rxk_valid", 1, "an lkey check or a Send with Invalidate's STag check (placement s_rxk)")
	kReady := m.Input("m_rxk_ready", 1, "")
	kSTag := m.Output("m_rxk_stag", 32, "")
	kPD := m.Output("m_rxk_pd", 32, "")
	kQP := m.Output("m_rxk_qp", 32, "")
	kTO := m.Output("m_rxk_to", 64, "")
	kLen := m.Output("m_rxk_len", 32, "")
	kUse := m.Output("m_rxk_use", 3, fmt.Sprintf("%d local write (an SGE), %d remote invalidation", RxkUseLocalWrite, RxkUseInvalidate))
	aValid := m.Input("s_rxk_valid", 1, "placement's answer (m_rxk), PlacementRxkLatency cycles after the request")
	aFault := m.Input("s_rxk_fault", 3, "mem.Fault")
	aAddr := m.Input("s_rxk_addr", 64, "host address of the checked offset")
	iValid := m.Output("m_inv_valid", 1, "invalidate an STag (placement s_inv)")
	iReady := m.Input("m_inv_ready", 1, "")
	iIndex := m.Output("m_inv_index", 24, "the STag's index")
	cValid := m.Output("m_cpl_valid", 1, "a receive completion (card_stat s_rc, which writes RQ_CI and passes it on to card_cq)")
	cReady := m.Input("m_cpl_ready", 1, "")
	cCQ := m.Output("m_cpl_cq", 10, "")
	cQPN := m.Output("m_cpl_qpn", 16, "")
	cWRID := m.Output("m_cpl_wr_id", 64, "")
	cLen := m.Output("m_cpl_byte_len", 32, "")
	cOp := m.Output("m_cpl_opcode", 8, "WC_OPCODE RECV")
	cSt := m.Output("m_cpl_status", 8, "WC_STATUS")
	cInv := m.Output("m_cpl_inv_stag", 32, "")
	cSol := m.Output("m_cpl_solicited", 1, "")
	cInvd := m.Output("m_cpl_invalidated", 1, "")
	cSilent := m.Output("m_cpl_silent", 1, "no CQE: the record only moves RQ_CI (receive WQEs dropped after their read faulted)")
	cTL := m.Output("m_cpl_term_layer", 4, "0: receive completions are not caused by a Terminate")
	cTT := m.Output("m_cpl_term_type", 4, "")
	cTC := m.Output("m_cpl_term_code", 8, "")
	cRQCI := m.Output("m_cpl_rq_ci", 16, "the QP's RQ_CI past the completed WQE (its status record)")
	tValid := m.Output("m_rxterm_valid", 1, "an untagged segment failed a receive check: the QP's receive path stops and its RQ is flushed; card_tx sends the Terminate (s_term)")
	tReady := m.Input("m_rxterm_ready", 1, "")
	tQP := m.Output("m_rxterm_qp", QB, "")
	tCause := m.Output("m_rxterm_cause", 16, "Layer (15:12), EType (11:8), Error Code (7:0)")
	tHdr := m.Output("m_rxterm_hdr", 8*untaggedHdr, "the segment's DDP header, byte 0 in bits 7:0")
	tSegLen := m.Output("m_rxterm_seglen", 16, "the segment's length")
	tRDMA := m.Output("m_rxterm_rdma", 8*cardTxReadReqBytes, "a Read Request's RDMAP header (byte 0 in bits 7:0; meaningful for a Read Request only)")
	tRecv := m.Output("m_rxterm_recv", 1, "the record is a Terminate the peer sent (QN 2; cause: its own): card_tx raises TERM_RECV and sends none")
	tFault := m.Output("m_rxterm_fault", 1, "the record is a DMA fault's (a receive WQE read's, or a payload write's: m_rxterm_fault_write; cause Local Catastrophic): card_tx raises DMA_FAULT, then QP_ERROR DMA instead of TERM_SENT")
	tFaultAddr := m.Output("m_rxterm_fault_addr", 64, "the faulted block's address (a payload write's: its first byte)")
	tFaultWr := m.Output("m_rxterm_fault_write", 1, "the fault is a payload write's (DMA_FAULT_INFO.WRITE)")
	arID := m.Output("m_axi_rq_arid", 6, "RQ WQE reads: always 0 (one burst in flight)")
	arAddr := m.Output("m_axi_rq_araddr", 64, "")
	arLen := m.Output("m_axi_rq_arlen", 8, "one 64-byte basic block")
	arSize := m.Output("m_axi_rq_arsize", 3, "")
	arBurst := m.Output("m_axi_rq_arburst", 2, "INCR")
	arValid := m.Output("m_axi_rq_arvalid", 1, "")
	arReady := m.Input("m_axi_rq_arready", 1, "")
	rID := m.Input("m_axi_rq_rid", 6, "not checked")
	rData := m.Input("m_axi_rq_rdata", W, "")
	rResp := m.Input("m_axi_rq_rresp", 2, "")
	rLast := m.Input("m_axi_rq_rlast", 1, "")
	rValid := m.Input("m_axi_rq_rvalid", 1, "")
	rReady := m.Output("m_axi_rq_rready", 1, "always 1")
	m.Assign(rReady, one)
	unused = append(unused, rID, rLast, Bits(rqLo, 5, 0), Bits(rcq, 15, 10), Bits(hQP, 31, QB), hKeep)

	// Engine states.
	const (
		sIdle = iota
		sRead
		sLoad
		sWQE
		sFetch
		sChk
		sSGE
		sLook
		sWait
		sMove
		sFin
		sInvChk
		sInvWait
		sInv
		sCpl
		sStore
		sDrop
		sDropSt
		sRRq    // a Read Request's or Terminate's body beats are taken
		sRRChk  // its checks
		sRRLook // its source's remote-read check is asked
		sRRWait // ... and answered
		sRROut  // the record to card_tx
		sRRSt   // the next MSN is stored
		sFlSt   // a flushed WQE's RQ_CI is stored
	)
	st := m.RegDecl("snd_state", 5, "Send engine state")
	in := func(s int) Expr { return Eq(st, C(5, uint64(s))) }
	next := m.Wire("snd_next", 5, "")
	m.Drive(st, big.NewInt(0), next, nil)

	// Flush requests (QP_CMD ERROR, STREAM.RX_LOST, and an RQ_PI doorbell
	// of a QP in error): a queue of QP numbers the engine serves between
	// segments. A QP may be in it twice; a flush with nothing posted ends
	// at once.
	bi := m.RegDecl("snd_beat", 13, "index of the next s_host beat in its ULPDU")
	lost := m.WireOf("fl_lost", And(x.dbTake, Eq(x.dbKind, C(3, dbStream)), Bit(x.dbValue, cardStreamRXLost)), "STREAM.RX_LOST: the QP goes to error")
	failHost := m.WireOf("fl_fail_host", Or(x.errCmd, lost), "the host puts a QP in error this cycle")
	termPush := m.Wire("fl_term_push", 1, "a QP whose Terminate record was taken joins the flush queue")
	termPushQP := m.Wire("fl_term_qp", QB, "")
	failNow := m.WireOf("fl_fail", Or(failHost, termPush), "a QP goes to error this cycle")
	failQPN := m.WireOf("fl_fail_qp", Sel(x.errCmd, Bits(x.cQPN, QB-1, 0), Sel(lost, Bits(x.dbIndex, QB-1, 0), termPushQP)), "")
	errWr := Or(x.create, failNow)
	errAddr := Sel(x.create, Bits(x.cQPN, QB-1, 0), failQPN)
	errData := Cat(C(1, 0), Not(x.create))
	rqDB := m.WireOf("snd_db_rqpi", And(x.dbTake, Eq(x.dbKind, C(3, dbRQPI))), "an RQ_PI doorbell")
	errDB := m.Mem("rq_err_db", 2, 1<<QB, errWr, errAddr, errData, rqDB, Bits(x.dbIndex, QB-1, 0), "bit 0 per QP: in error (the doorbell path's copy)")
	rqDBq := m.Reg("fl_dbq", 1, big.NewInt(0), rqDB, nil, "an RQ_PI doorbell's error bit is being read")
	rqDBqp := m.Reg("fl_dbq_qp", QB, nil, Bits(x.dbIndex, QB-1, 0), rqDB, "")
	rqDBpi := m.Reg("rq_dbq_pi", 16, nil, Bits(x.dbValue, 15, 0), rqDB, "the RQ_PI it asks for")
	rqBad := m.Wire("rq_db_bad", 1, "the RQ_PI doorbell being decided is bad: RQ_PI stays, the QP goes to error")
	rqOK := m.WireOf("rq_db_ok", And(rqDBq, Not(rqBad)), "an RQ_PI doorbell takes effect (RQ_PI is written)")
	pushDB := m.WireOf("fl_push_db", And(rqOK, Bit(errDB, 0)), "an RQ_PI doorbell of a QP in error: flush what it posts")
	const flDepth = 4
	flPush := m.WireOf("fl_push", Or(failNow, pushDB), "")
	flPop := m.Wire("fl_pop", 1, "the engine takes the head of the flush queue")
	fq := ShiftQueue(m, "flq", flDepth, []string{"qp"}, []int{QB}, flPush, []Expr{Sel(failNow, failQPN, rqDBqp)}, zext(flPop, addrWidth(flDepth+1)))
	termBusy := m.WireOf("fl_term_busy", Or(failHost, x.create, rqDBq, rqDB, Not(Lt(fq.Count, C(addrWidth(flDepth+1), flDepth-1)))), "the flush queue is pushed or read otherwise, or nearly full")
	// One take per cycle, none while a doorbell's error bit is read, so
	// at most one push a cycle and never into a full queue.
	m.Assign(x.flRoom, And(Not(rqDBq), Lt(fq.Count, C(addrWidth(flDepth+1), flDepth))))
	m.Assign(flPop, And(in(sIdle), RedOr(fq.Count), Eq(bi, C(13, 0))))
	fl := m.RegDecl("fl", 1, "the engine is flushing the QP's RQ (not serving a segment)")
	unused = append(unused, Bit(errDB, 1))

	// Header capture.
	HB := (untaggedHdr - 1) / L // the beat with the last header byte, also the first payload byte's
	hdr := m.RegDecl("snd_hdr", 8*untaggedHdr, "the segment's DDP/RDMAP header, byte 0 in bits 7:0")
	hPop := m.Wire("snd_pop", 1, "an s_host beat is taken")
	m.Assign(hReady, hPop)
	m.Drive(bi, big.NewInt(0), Sel(hLast, C(13, 0), Add(bi, C(13, 1))), And(hPop, hValid))
	capEn := m.WireOf("snd_hdr_cap", And(hValid, in(sIdle), Not(flPop), Not(Lt(C(13, uint64(HB)), bi))), "a header beat is seen")
	var hb []Expr
	for k := untaggedHdr - 1; k >= 0; k-- {
		hb = append(hb, Sel(And(capEn, Eq(bi, C(13, uint64(k/L)))), Bits(hData, 8*(k%L)+7, 8*(k%L)), Bits(hdr, 8*k+7, 8*k)))
	}
	m.Drive(hdr, nil, Cat(hb...), nil)
	hbyte := func(k int) Expr { return Bits(hdr, 8*k+7, 8*k) }
	be32 := func(k int) Expr { return Cat(hbyte(k), hbyte(k+1), hbyte(k+2), hbyte(k+3)) }
	eV := m.RegDecl("rxterm_v", 1, "an error record (m_rxterm) waits to be taken")
	hdrDone := m.WireOf("snd_hdr_done", And(in(sIdle), Not(flPop), Not(eV), hValid, Eq(bi, C(13, uint64(HB)))),
		"the header is whole: serve the segment (once the last error record is taken: a segment that fails must not overwrite it)")
	m.Drive(fl, big.NewInt(0), flPop, Or(flPop, hdrDone))
	sqp := m.Reg("snd_qp", QB, nil, Sel(flPop, fq.Fields[0][0], Bits(hQP, QB-1, 0)), Or(hdrDone, flPop), "the segment's QP, or the QP whose RQ is flushed")
	slen := m.Reg("snd_len", 16, nil, hLen, hdrDone, "the segment's ULPDU length")
	op := m.WireOf("snd_op", Bits(hdr, 11, 8), "RDMAP opcode")
	lflag := m.WireOf("snd_lflag", Bit(hdr, 6), "DDP L flag")
	qn := m.WireOf("snd_qn", be32(6), "")
	msnH := m.WireOf("snd_msn_h", be32(10), "")
	moH := m.WireOf("snd_mo_h", be32(14), "")
	invSTag := m.WireOf("snd_inv_stag", be32(2), "Send with Invalidate: the STag")
	n := m.WireOf("snd_n", Sub(slen, C(16, untaggedHdr)), "payload bytes")
	isRR := m.WireOf("snd_is_rreq", Eq(qn, C(32, 1)), "a Read Request (QN 1)")
	isTm := m.WireOf("snd_is_term", Eq(qn, C(32, 2)), "a Terminate (QN 2; placement's header checks let no other QN through)")
	unused = append(unused, Bits(hdr, 7, 7), Bits(hdr, 5, 0), Bits(hdr, 15, 12))

	// Contexts: RQ (CREATE), RQ_PI (doorbells), receive state (the engine).
	rdEn := in(sRead)
	ctxW := 58 + 5 + 10 + 32
	ctx := m.Mem("rq_ctx", ctxW, 1<<QB, x.create, Bits(x.cQPN, QB-1, 0),
		Cat(rqHi, Bits(rqLo, 31, 6), rqLog, Bits(rcq, 9, 0), x.cPD), rdEn, sqp, "RQ base (63:6), log2 blocks, receive CQ, PD")
	// An RQ_PI doorbell is decided in the cycle after it is taken (no
	// command or doorbell is taken in that cycle: x.flRoom), and written
	// then unless it is bad.
	piRd := m.Mem("rq_pi", 16, 1<<QB, Or(x.create, rqOK), Sel(x.create, Bits(x.cQPN, QB-1, 0), rqDBqp),
		Sel(x.create, C(16, 0), rqDBpi), rdEn, sqp, "RQ_PI per QP")
	unused = append(unused, Bits(x.dbValue, 31, 16))
	sstW := 32 + 32 + 5 + 32 + 16 + 1 + 1
	stWr := m.Wire("snd_st_wr", 1, "the engine stores the QP's receive state")
	stData := m.Wire("snd_st_data", sstW, "")
	stRd := m.Mem("rq_st", sstW, 1<<QB, Or(x.create, stWr), Sel(x.create, Bits(x.cQPN, QB-1, 0), sqp),
		Sel(x.create, Cat(C(32, 1), C(sstW-32, 0)), stData), rdEn, sqp, "MSN expected, bytes placed in the head WQE, SGE cursor (index, offset), RQ_CI, head WQE too short, failed")
	errRd := m.Mem("rq_err", 2, 1<<QB, errWr, errAddr, errData, rdEn, sqp, "bit 0 per QP: in error (the engine's copy): its segments are dropped")
	unused = append(unused, Bit(errRd, 1))
	ld := in(sLoad)
	base := m.Reg("snd_base", 58, nil, Bits(ctx, ctxW-1, 47), ld, "")
	lg := m.Reg("snd_log", 5, nil, Bits(ctx, 46, 42), ld, "")
	cq := m.Reg("snd_cq", 10, nil, Bits(ctx, 41, 32), ld, "")
	pd := m.Reg("snd_pd", 32, nil, Bits(ctx, 31, 0), ld, "")
	pi := m.RegDecl("snd_pi", 16, "RQ_PI")
	dbHere := m.WireOf("snd_db_here", And(rqOK, Eq(rqDBqp, sqp)), "an RQ_PI doorbell of the QP served is written")
	dbLate := m.Reg("snd_db_late", 1, big.NewInt(0), And(dbHere, rdEn), nil, "it came while the context was read: the RAM's word is stale")
	dbLateV := m.Reg("snd_db_late_v", 16, nil, rqDBpi, And(dbHere, rdEn), "")
	m.Drive(pi, nil, Sel(dbHere, rqDBpi, Sel(dbLate, dbLateV, piRd)), Or(ld, And(dbHere, Not(in(sIdle)), Not(rdEn))))
	msn := m.RegDecl("snd_msn", 32, "MSN expected")
	got := m.RegDecl("snd_got", 32, "bytes placed in the head WQE")
	curI := m.RegDecl("snd_cur_i", 5, "SGE cursor: index")
	curOff := m.RegDecl("snd_cur_off", 32, "SGE cursor: offset")
	ci := m.RegDecl("snd_ci", 16, "RQ_CI: blocks done with")
	failed := m.RegDecl("snd_failed", 1, "the QP's receive path failed")
	lenErr := m.RegDecl("snd_len_err", 1, "a Send was longer than the head WQE's buffers: its flush completes LOC_LEN_ERR (the model's CheckSend)")

	// WQE cache: the head WQE of the last QP served.
	cValidQ := m.RegDecl("wqe_v", 1, "the WQE buffer holds the head WQE of wqe_qp at wqe_ci")
	cacheQP := m.RegDecl("wqe_qp", QB, "")
	cacheCI := m.RegDecl("wqe_ci", 16, "")
	hit := m.WireOf("wqe_hit", And(cValidQ, Eq(cacheQP, sqp), Eq(cacheCI, ci)), "")
	posted := m.WireOf("snd_posted", Ne(ci, pi), "a receive WQE is posted")
	var sh []Expr
	for i := 16; i >= 0; i-- {
		sh = append(sh, Lt(C(5, uint64(i)), lg))
	}
	sizeM1 := m.WireOf("snd_rq_size_m1", Bits(m.WireOf("snd_rq_szm", Cat(sh[1:]...), ""), 15, 0), "RQ blocks - 1")

	// WQE fetch: one 64-byte block per burst, one burst in flight.
	BPB := 64 / L // beats per block
	fBlk := m.RegDecl("f_blk", 4, "blocks of the WQE read so far")
	fNeed := m.RegDecl("f_need", 4, "blocks the WQE has (1 until its header is read)")
	fBeat := m.RegDecl("f_beat", max(1, log2(BPB)), "beat within the block")
	fIss := m.RegDecl("f_iss", 1, "a burst is issued and not yet read back")
	arV := m.RegDecl("f_arv", 1, "")
	fStart := m.WireOf("f_start", And(in(sWQE), Or(fl, And(Not(failed), Not(isRR), Not(isTm))), Not(hit), posted), "the head WQE must be read")
	issue := m.WireOf("f_issue", And(in(sFetch), Not(fIss), Lt(fBlk, fNeed)), "")
	m.Drive(arV, big.NewInt(0), Or(issue, And(arV, Not(arReady))), nil)
	blkIdx := m.WireOf("f_blk_idx", Add(ci, zext(fBlk, 16)), "")
	aAddrQ := m.Reg("f_araddr", 64, nil, Add(Cat(base, C(6, 0)), Cat(C(42, 0), And(blkIdx, sizeM1), C(6, 0))), issue, "")
	m.Assign(arID, C(6, 0))
	m.Assign(arAddr, gate(arV, aAddrQ))
	m.Assign(arLen, gate(arV, C(8, uint64(BPB-1))))
	m.Assign(arSize, gate(arV, C(3, uint64(LB))))
	m.Assign(arBurst, Cat(C(1, 0), arV))
	m.Assign(arValid, arV)
	rGo := m.WireOf("f_rbeat", And(rValid, in(sFetch)), "a WQE beat")
	rErr := m.RegDecl("f_err", 1, "a WQE read got an error response")
	m.Drive(rErr, big.NewInt(0), Sel(fStart, C(1, 0), Or(rErr, And(rGo, Bit(rResp, 1)))), nil)
	// The first faulted block (one burst, one block, in flight at a time).
	rErrAddr := m.Reg("f_err_addr", 64, nil, aAddrQ, And(rGo, Bit(rResp, 1), Not(rErr)), "the first faulted block's address")
	unused = append(unused, Bit(rResp, 0))
	blkEnd := m.WireOf("f_blk_end", And(rGo, Eq(fBeat, C(fBeat.W, uint64(BPB-1)))), "")
	if BPB > 1 {
		m.Drive(fBeat, big.NewInt(0), Sel(fStart, C(fBeat.W, 0), Add(fBeat, C(fBeat.W, 1))), Or(fStart, rGo))
	} else {
		m.Drive(fBeat, big.NewInt(0), C(1, 0), nil)
	}
	m.Drive(fIss, big.NewInt(0), Sel(issue, one, Sel(blkEnd, C(1, 0), fIss)), nil)
	m.Drive(fBlk, big.NewInt(0), Sel(fStart, C(4, 0), Add(fBlk, C(4, 1))), Or(fStart, blkEnd))
	// Word position of the beat: bytes 16*j.. of the WQE.
	wpos := m.WireOf("f_bytepos", Add(Cat(fBlk, C(6, 0)), zext(Cat(fBeat, C(LB, 0)), 10)), "byte offset of the beat in the WQE")
	// Header fields from the beats that hold bytes 0-15.
	isB := func(k int) Expr { return And(rGo, Eq(wpos, C(10, uint64(k/L*L)))) }
	lane := func(k int) Expr { return Bits(rData, 8*(k%L)+7, 8*(k%L)) }
	w0 := m.Reg("wqe_w0", 32, nil, Cat(lane(3), lane(2), lane(1), lane(0)), isB(0), "WQE bytes 0-3: opcode, flags, BBS, NSGE")
	wrid := m.Reg("wqe_wrid", 64, nil, Cat(lane(15), lane(14), lane(13), lane(12), lane(11), lane(10), lane(9), lane(8)), isB(8), "WR_ID")
	w0live := m.WireOf("wqe_w0_live", Sel(isB(0), Cat(lane(3), lane(2), lane(1), lane(0)), w0), "WQE bytes 0-3 as they come in")
	opc := m.WireOf("wqe_opcode", Bits(w0, 7, 0), "")
	inl := Bit(w0, 11)
	bbs := m.WireOf("wqe_bbs", Bits(w0, 19, 16), "")
	nsge := m.WireOf("wqe_nsge", Bits(w0, 28, 24), "")
	bbsL := m.WireOf("wqe_bbs_live", Bits(w0live, 19, 16), "")
	nsgeL := m.WireOf("wqe_nsge_live", Bits(w0live, 28, 24), "")
	unused = append(unused, Bits(w0, 31, 29), Bits(w0, 23, 20), Bits(w0, 15, 12), Bits(w0, 10, 8), Bits(w0live, 31, 29), Bits(w0live, 23, 20), Bits(w0live, 15, 0))
	avail := m.WireOf("f_avail", Sub(pi, ci), "blocks posted past RQ_CI")
	bbsOKf := func(b Expr) Expr {
		return And(RedOr(b), Not(Lt(C(4, 8), b)), Not(Lt(sizeM1, Sub(zext(b, 16), C(16, 1)))), Not(Lt(avail, zext(b, 16))))
	}
	bbsOK := m.WireOf("wqe_bbs_ok", bbsOKf(bbs), "BBS 1..8, within the ring and what is posted")
	bbsOKL := m.WireOf("wqe_bbs_ok_live", bbsOKf(bbsL), "")
	// fNeed: 1, then BBS once the header block's first beat is in.
	m.Drive(fNeed, big.NewInt(1), Sel(fStart, C(4, 1), Sel(bbsOKL, bbsL, C(4, 1))), Or(fStart, isB(0)))
	// SGE words (16 bytes), stored in NB banks.
	NB := max(1, L/16)
	wordsDepth := 32 / NB
	var words []Expr // the words completed by this beat, one per bank
	var wordWr Expr
	var wordAddr Expr
	if L == 8 {
		even := m.Reg("f_even", 64, nil, rData, rGo, "the first half of a word")
		words = []Expr{Cat(rData, even)}
		wordWr = And(rGo, Bit(fBeat, 0))
		wordAddr = Bits(wpos, 8, 4)
	} else {
		for k := 0; k < NB; k++ {
			words = append(words, Bits(rData, 128*k+127, 128*k))
		}
		wordWr = rGo
		wordAddr = Bits(wpos, 8, 4+log2(NB))
	}
	wordWrS := m.WireOf("f_word_wr", wordWr, "")
	wordAddrS := m.WireOf("f_word_addr", wordAddr, "")
	sgeIdx := m.Wire("sge_rd_idx", 5, "word index of the SGE to read: SGE i is word i + 2")
	sgeRdEn := m.Wire("sge_rd", 1, "")
	var bankRd []Expr
	for k := 0; k < NB; k++ {
		bankRd = append(bankRd, m.Mem(fmt.Sprintf("wqe_words%d", k), 128, wordsDepth, wordWrS, wordAddrS, words[k],
			sgeRdEn, Bits(sgeIdx, 4, log2(NB)), "16-byte words of the WQE"))
	}
	var word Expr
	if NB == 1 {
		word = bankRd[0]
	} else {
		bsel := m.Reg("sge_bank", log2(NB), nil, Bits(sgeIdx, log2(NB)-1, 0), sgeRdEn, "")
		word = muxTree(selBits(bsel, 0, log2(NB)), bankRd)
	}
	sgeW := m.WireOf("sge_word", word, "the SGE read: ADDR (63:0), LENGTH (95:64), LKEY (127:96), little endian")
	sAddr := m.WireOf("sge_addr", Bits(sgeW, 63, 0), "")
	sLen := m.WireOf("sge_len", Bits(sgeW, 95, 64), "")
	sKey := m.WireOf("sge_lkey", Bits(sgeW, 127, 96), "")
	// Capacity: the sum of the SGE lengths, accumulated as the words come.
	capR := m.RegDecl("wqe_cap", 37, "bytes the WQE's SGEs hold")
	var capAdd Expr = C(37, 0)
	for k := 0; k < len(words); k++ {
		var j, ln Expr
		if L == 8 {
			j = zext(Bits(wpos, 8, 4), 6)
			ln = Bits(rData, 31, 0) // word bytes 8-11: the second beat's first four
		} else {
			j = Add(zext(Bits(wpos, 8, 4), 6), C(6, uint64(k)))
			ln = Bits(rData, 128*k+95, 128*k+64)
		}
		isSGE := And(Not(Lt(j, C(6, 2))), Lt(Sub(j, C(6, 2)), zext(nsgeL, 6)))
		capAdd = Add(capAdd, gate(isSGE, zext(ln, 37)))
	}
	m.Drive(capR, big.NewInt(0), Sel(fStart, C(37, 0), Add(capR, capAdd)), Or(fStart, wordWrS))
	fetched := m.WireOf("f_done", And(in(sFetch), Not(fIss), Not(arV), Not(Lt(fBlk, fNeed))), "every block of the WQE is in")
	malformed := m.WireOf("wqe_bad", Or(Not(bbsOK), Ne(opc, C(8, 8)), inl, Lt(C(5, 30), nsge),
		Lt(Sub(Cat(bbs, C(6, 0)), C(10, 32)), Cat(C(1, 0), nsge, C(4, 0)))), "a malformed receive WQE")
	done := m.WireOf("snd_msg_done", Or(And(in(sStore), lflag), in(sFlSt)), "the message completed or its WQE was flushed: its WQE is consumed")
	m.Drive(cValidQ, big.NewInt(0), Sel(fetched, Not(rErr), And(cValidQ, Not(done))), nil)
	m.Drive(cacheQP, nil, sqp, fetched)
	m.Drive(cacheCI, nil, ci, fetched)

	// Receive checks of a Send (QN 0), in the model's order.
	e := func(v uint64) Expr { return C(16, v) }
	capOK := Not(Lt(zext(capR, 48), Add(zext(got, 48), zext(n, 48))))
	bad := m.WireOf("snd_cause", Sel(And(posted, Or(rErr, malformed)), e(causeRDMAPLocalCatastrophic),
		Sel(Ne(msnH, msn), e(causeDDPInvalidMSNRange), Sel(Not(posted), e(causeDDPNoBuffer), Sel(Ne(moH, got), e(causeDDPInvalidMO),
			Sel(Not(capOK), e(causeDDPMessageTooLong), e(0)))))), "the Terminate cause, 0 if the segment passes")

	// SGL walk: a check pass over every piece, then a write pass.
	pass := m.RegDecl("w_pass", 1, "0: checking the pieces, 1: writing them")
	rem := m.RegDecl("w_rem", 16, "payload bytes of the segment not yet walked")
	wI := m.RegDecl("w_i", 5, "SGE index")
	wOff := m.RegDecl("w_off", 32, "offset in the SGE")
	sgeV := m.RegDecl("w_sge_v", 1, "the SGE's word is read")
	pAddr := m.RegDecl("w_host", 64, "host address of the next byte")
	pLeft := m.RegDecl("w_piece", 16, "bytes of the piece still to write")
	u := m.RegDecl("w_u", 16, "ULPDU offset of the next payload byte")
	sgeLeft := m.WireOf("w_sge_left", Sub(sLen, wOff), "")
	sgeEmpty := m.WireOf("w_sge_empty", Eq(sLen, wOff), "")
	pieceLen := m.WireOf("w_piece_len", Sel(Lt(sgeLeft, zext(rem, 32)), sgeLeft, zext(rem, 32)), "the model's SGE piece: min(SGE left, payload left)")
	pgLeft := m.WireOf("w_page_left", Sub(C(13, 4096), zext(Bits(aAddr, 11, 0), 13)), "bytes to the host page's end")
	toPage := m.WireOf("w_to_page", Sel(Lt(zext(pgLeft, 32), pieceLen), zext(pgLeft, 32), pieceLen), "")
	m.Assign(sgeIdx, Add(wI, C(5, 2)))
	m.Assign(sgeRdEn, in(sSGE))
	m.Drive(sgeV, big.NewInt(0), in(sSGE), nil)
	rr := cardRxRead(m, W, rxReadIn{create: x.create, cQPN: x.cQPN, rdEn: rdEn, ld: ld, qp: sqp, bi: bi, hData: hData,
		take: And(in(sRRq), hPop, hValid), hdr: hdr, slen: slen, msnH: msnH, moH: moH, lflag: lflag,
		out: in(sRROut), store: in(sRRSt)})
	unused = append(unused, rr.unused...)
	rrLook := in(sRRLook)
	m.Assign(kValid, Or(in(sLook), in(sInvChk), rrLook))
	m.Assign(kSTag, Sel(rrLook, rr.srcSTag, Sel(in(sInvChk), invSTag, sKey)))
	m.Assign(kPD, pd)
	m.Assign(kQP, zext(sqp, 32))
	m.Assign(kTO, Sel(rrLook, rr.srcTO, Sel(in(sInvChk), C(64, 0), Add(sAddr, zext(wOff, 64)))))
	m.Assign(kLen, Sel(rrLook, rr.size, Sel(in(sInvChk), C(32, 0), pieceLen)))
	m.Assign(kUse, Sel(rrLook, C(3, RxkUseRemoteRead), Sel(in(sInvChk), C(3, RxkUseInvalidate), C(3, RxkUseLocalWrite))))
	rrAns := m.WireOf("rr_answer", And(in(sRRWait), aValid), "the source check's answer")
	rrFault := m.WireOf("rr_fault", And(rrAns, RedOr(aFault)), "the source failed its remote-read check")
	rrBad := m.WireOf("rr_bad", And(in(sRRChk), Not(isTm), Ne(rr.cause, C(16, 0))), "the Read Request failed a check")
	tmIn := m.WireOf("tm_recv", And(in(sRRChk), isTm), "a Terminate from the peer: the QP's receive path ends")
	tmCause := termRecvCause(m, rr.body, slen, msnH, moH, lflag)
	ans := m.WireOf("w_answer", And(in(sWait), aValid), "")
	fault := m.WireOf("w_fault", And(ans, RedOr(aFault)), "")
	invAns := m.WireOf("w_inv_answer", And(in(sInvWait), aValid), "")
	invFault := m.WireOf("w_inv_fault", And(invAns, RedOr(aFault)), "")
	chkAdv := m.WireOf("w_chk_adv", And(ans, Not(fault), Not(pass)), "a piece passed its check")
	wrStart := m.WireOf("w_wr_start", And(ans, Not(fault), pass), "a piece is written")
	// Block generation.
	hMod := m.WireOf("w_hmod", Bits(pAddr, LB-1, 0), "")
	uMod := m.WireOf("w_umod", Bits(u, LB-1, 0), "")
	rot := m.WireOf("w_rot", Sub(hMod, uMod), "lane rotation from the beat to the host block")
	nBlk0 := m.WireOf("w_n0", Sub(C(LB+1, uint64(L)), zext(hMod, LB+1)), "")
	nBlk1 := m.WireOf("w_n1", Sub(C(LB+1, uint64(L)), zext(uMod, LB+1)), "")
	nMin := m.WireOf("w_n01", Sel(Lt(nBlk1, nBlk0), nBlk1, nBlk0), "")
	nb := m.WireOf("w_nb", Sel(Lt(pLeft, zext(nMin, 16)), Bits(pLeft, LB, 0), nMin), "bytes this block takes")
	blkV := m.RegDecl("blk_v", 1, "a block for the payload writer")
	blkReady := m.Wire("blk_ready", 1, "")
	blkFree := m.WireOf("blk_free", Or(Not(blkV), blkReady), "")
	emit := m.WireOf("w_emit", And(in(sMove), RedOr(pLeft), hValid, blkFree), "a block is made")
	uNext := m.WireOf("w_u_next", Add(u, zext(nb, 16)), "")
	beatDone := m.WireOf("w_beat_done", And(emit, Or(Eq(Bits(uNext, LB-1, 0), C(LB, 0)), Eq(uNext, slen))), "the beat's payload is used up")
	rotd := rotateLanes(m, "w_rotd", hData, rot, 8)
	var strb []Expr
	hiEx := m.WireOf("w_hi", Add(zext(hMod, LB+1), nb), "")
	for i := L - 1; i >= 0; i-- {
		if i == L-1 {
			strb = append(strb, Lt(C(LB+1, uint64(i)), hiEx))
			continue
		}
		strb = append(strb, And(Not(Lt(C(LB, uint64(i)), hMod)), Lt(C(LB+1, uint64(i)), hiEx)))
	}
	blkStrb := m.Reg("blk_strb", L, nil, Cat(strb...), emit, "")
	blkData := m.Reg("blk_data", W, nil, rotd, emit, "")
	blkAddr := m.Reg("blk_addr", 64, nil, Cat(Bits(pAddr, 63, LB), C(LB, 0)), emit, "")
	blkQP := m.Reg("blk_qp", QB, nil, sqp, emit, "the block's QP (the engine may be on the next segment while it waits)")
	m.Drive(blkV, big.NewInt(0), Or(emit, And(blkV, Not(blkReady))), nil)
	m.Drive(pAddr, nil, Sel(wrStart, aAddr, Add(pAddr, zext(nb, 64))), Or(wrStart, emit))
	m.Drive(pLeft, big.NewInt(0), Sel(wrStart, Bits(toPage, 15, 0), Sub(pLeft, zext(nb, 16))), Or(wrStart, emit))
	m.Drive(u, nil, Sel(in(sChk), C(16, untaggedHdr), uNext), Or(in(sChk), emit))
	unused = append(unused, Bits(toPage, 31, 16))

	// Cursor and remaining bytes.
	adv := m.WireOf("w_adv", Sel(chkAdv, Bits(pieceLen, 15, 0), Sel(emit, zext(nb, 16), C(16, 0))), "bytes the cursor moves this cycle")
	skip := m.WireOf("w_skip", And(in(sLook), sgeEmpty), "an SGE with no room left: the next one")
	restart := m.WireOf("w_restart", And(chkAdv, Eq(rem, Bits(pieceLen, 15, 0))), "the check pass is over: the write pass starts from the same cursor")
	chkStart := m.WireOf("w_start", And(in(sChk), Eq(bad, C(16, 0))), "")
	m.Drive(pass, nil, Sel(chkStart, C(1, 0), one), Or(chkStart, restart))
	m.Drive(rem, nil, Sel(Or(chkStart, restart), n, Sub(rem, adv)), Or(chkStart, restart, chkAdv, emit))
	m.Drive(wI, nil, Sel(Or(chkStart, restart), curI, Sel(skip, Add(wI, C(5, 1)), wI)), Or(chkStart, restart, skip))
	m.Drive(wOff, nil, Sel(Or(chkStart, restart), curOff, Sel(skip, C(32, 0), Add(wOff, zext(adv, 32)))), Or(chkStart, restart, skip, chkAdv, emit))
	unused = append(unused, sgeV)

	// The receive side's one AXI write master: placement's blocks (RDMA
	// Writes, Read Responses) and the Send payload blocks merged, placement
	// first, into one place_axi (in-order responses on ID 0).
	plAddr := m.Input("s_pl_dma_addr", 64, "placement's m_dma: its blocks are written through card_rx's write master")
	plData := m.Input("s_pl_dma_data", W, "")
	plStrb := m.Input("s_pl_dma_strb", L, "")
	plValid := m.Input("s_pl_dma_valid", 1, "")
	plReady := m.Output("s_pl_dma_ready", 1, "")
	plQP := m.Input("s_pl_dma_qp", 32, "the block's connection")
	pa, err := PlaceAXI(W)
	if err != nil {
		return nil, err
	}
	pwReady := m.Wire("pw_ready", 1, "place_axi takes a block")
	m.Assign(plReady, pwReady)
	m.Assign(blkReady, And(pwReady, Not(plValid)))
	paConns := []Conn{{"clk", m.Port("clk")}, {"rst", m.Port("rst")},
		{"s_dma_addr", Sel(plValid, plAddr, blkAddr)}, {"s_dma_data", Sel(plValid, plData, blkData)},
		{"s_dma_strb", Sel(plValid, plStrb, blkStrb)}, {"s_dma_valid", Or(plValid, blkV)}, {"s_dma_ready", pwReady},
		{"s_dma_qp", Sel(plValid, Bits(plQP, QB-1, 0), blkQP)}}
	unused = append(unused, Bits(plQP, 31, QB))
	berr := m.Wire("pw_berr", 1, "")
	for _, p := range pa.Ports {
		if len(p.Name) < 6 || p.Name[:6] != "m_axi_" {
			continue
		}
		if p.Dir == In {
			paConns = append(paConns, Conn{p.Name, m.Input(p.Name, p.W, "the receive side's payload writes (placement's and the Sends'): AXI4 write channels, one-beat bursts, ID 0")})
			continue
		}
		o := m.Output(p.Name, p.W, "")
		w := m.Wire("pw_"+p.Name[6:], p.W, "")
		m.Assign(o, w)
		paConns = append(paConns, Conn{p.Name, w})
	}
	berrQP := m.Wire("pw_berr_qp", QB, "")
	berrAddr := m.Wire("pw_berr_addr", 64, "")
	wfV := m.RegDecl("wf_v", 1, "a faulted payload write waits to be reported (write responses are held meanwhile)")
	paConns = append(paConns, Conn{"m_berr", berr}, Conn{"m_berr_qp", berrQP}, Conn{"m_berr_addr", berrAddr}, Conn{"s_b_hold", wfV})
	m.Instantiate("pw", pa, paConns...)
	// A completion waits until every write issued before its message's
	// last block (placement's earlier ones included) has its response.
	issued := m.RegDecl("pw_issued", 16, "blocks taken by place_axi")
	answered := m.RegDecl("pw_answered", 16, "write responses")
	pwTake := m.WireOf("pw_take", And(pwReady, Or(plValid, blkV)), "place_axi takes a block")
	m.Drive(issued, big.NewInt(0), Add(issued, C(16, 1)), pwTake)
	m.Drive(answered, big.NewInt(0), Add(answered, C(16, 1)), And(m.Port("m_axi_bvalid"), m.Port("m_axi_bready")))
	snapV := m.RegDecl("pw_snap_v", 1, "the completion's write count is taken")
	snap := m.RegDecl("pw_snap", 16, "writes the completion waits for")
	snapGo := m.WireOf("pw_snap_go", And(in(sCpl), Not(blkV), Not(snapV)), "")
	m.Drive(snapV, big.NewInt(0), And(in(sCpl), Or(snapV, snapGo)), nil)
	m.Drive(snap, nil, issued, snapGo)
	left := m.WireOf("pw_left", Sub(snap, answered), "responses still awaited (negative: past)")
	wrIdle := m.WireOf("pw_idle", And(snapV, Or(Eq(left, C(16, 0)), Bit(left, 15))), "every write before the completion has its response")

	// Payload write faults. A faulted response is held in wf_v (place_axi
	// holds the later responses back meanwhile); two cycles later the
	// QP's first-fault record (wf_at, read at wf_qp) says whether it is
	// the QP's first since CREATE. A first one records the faulted
	// write's number (its response's place among all of them) in the three
	// copies of wf_at and is reported: the QP fails as on QP_CMD ERROR
	// (card_rx, x.wfGo) and its record goes to card_tx through m_rxterm
	// (DMA_FAULT, QP_ERROR DMA, a Local Catastrophic Terminate). A later
	// one of the same QP is dropped. A completion (a Send's, a Read done)
	// whose writes are all answered asks wf_at, once no report has waited
	// for two cycles, whether its QP faulted on a write before its own
	// last: if so the Send completes WR_FLUSH_ERR and the Read done is
	// dropped (card_tx's flush completes the Read), as the card model,
	// which stops at the faulted write, flushes them.
	wfQP := m.Reg("wf_qp", QB, nil, berrQP, berr, "")
	wfAddr := m.Reg("wf_addr", 64, nil, berrAddr, berr, "")
	wfIdx := m.Reg("wf_idx", 16, nil, answered, berr, "the faulted write's number")
	wfAge := m.RegDecl("wf_age", 2, "cycles since the fault was held (its first-fault record is read meanwhile)")
	wfOK := m.RegDecl("wf_first", 1, "the held fault is its QP's first: it waits to be taken")
	const wfW = 17
	wfWr := m.Wire("wf_at_wr", 1, "")
	wfWrQP := m.WireOf("wf_at_wr_qp", Sel(x.create, Bits(x.cQPN, QB-1, 0), wfQP), "")
	wfWrD := m.WireOf("wf_at_wr_data", Sel(x.create, C(wfW, 0), Cat(one, wfIdx)), "CREATE clears the QP's record")
	wfAt := func(name string, at Expr) *Signal {
		return m.Mem(name, wfW, 1<<QB, wfWr, wfWrQP, wfWrD, nil, at, "per QP: {faulted, the number of its first faulted write}")
	}
	wfChk := wfAt("wf_at", wfQP)
	unused = append(unused, Bits(wfChk, 15, 0))
	decide := m.WireOf("wf_decide", And(wfV, Not(wfOK), Eq(wfAge, C(2, 2)), Not(x.create)), "the held fault's record is read")
	wfFirst := m.WireOf("wf_is_first", And(decide, Not(Bit(wfChk, wfW-1))), "")
	m.Assign(wfWr, Or(x.create, wfFirst))
	m.Drive(wfAge, big.NewInt(0), Sel(Or(berr, x.create), C(2, 0), Sel(Eq(wfAge, C(2, 2)), wfAge, Add(wfAge, C(2, 1)))), Or(berr, x.create, wfV))
	m.Drive(wfOK, big.NewInt(0), Sel(wfFirst, one, And(wfOK, Not(x.wfGo))), nil)
	m.Drive(wfV, big.NewInt(0), Or(berr, And(wfV, Not(And(decide, Not(wfFirst))), Not(x.wfGo))), nil)
	m.Assign(x.wfQP, wfQP)
	m.Assign(x.wfRdy, Not(wfOK))
	wfQuiet := m.WireOf("wf_quiet", And(Not(wfV), m.Reg("wf_quiet_q", 1, big.NewInt(0), Not(wfV), nil, "")), "no fault report has waited for two cycles: wf_at's read data is current")
	faultedBefore := func(name string, rec *Signal, snap Expr) Expr {
		d := m.WireOf(name+"_d", Sub(Bits(rec, 15, 0), snap), "the QP's first faulted write's number less the completion's count (negative: before its last write)")
		unused = append(unused, Bits(d, 14, 0))
		return m.WireOf(name, And(Bit(rec, wfW-1), Bit(d, 15)), "the QP faulted on a write before the completion's last")
	}
	cplFault := faultedBefore("snd_cpl_faulted", wfAt("wf_at_cpl", sqp), snap)

	// Read dones (placement's m_done) wait the same way: a Read's
	// completion reaches card_tx only once every write issued up to its
	// response's last block (taken by place_axi in the done's cycle) has
	// its response, so its CQE cannot overtake the data it announces.
	const dnDepth = 4
	dnCW := addrWidth(dnDepth + 1)
	dnValid := m.Input("s_pl_done_valid", 1, "placement's m_done: a Read Response message's last segment is placed")
	dnReady := m.Output("s_pl_done_ready", 1, fmt.Sprintf("taken while one of %d slots is free", dnDepth))
	dnQP := m.Input("s_pl_done_qp", 32, "")
	dnSTag := m.Input("s_pl_done_stag", 32, "")
	dnTO := m.Input("s_pl_done_to", 64, "")
	dnLen := m.Input("s_pl_done_len", 16, "")
	rdnValid := m.Output("m_rdone_valid", 1, "a Read done for card_tx (s_rdone), once its writes have their responses")
	rdnReady := m.Input("m_rdone_ready", 1, "")
	dnCnt := m.Wire("dn_count_w", dnCW, "dones waiting")
	dnRoom := m.WireOf("dn_room", Lt(dnCnt, C(dnCW, dnDepth)), "")
	dnPush := m.WireOf("dn_push", And(dnValid, dnRoom), "")
	dnPop := m.Wire("dn_pop", 1, "")
	dq := ShiftQueue(m, "dnq", dnDepth, []string{"qp", "stag", "to", "len", "snap"}, []int{QB, 32, 64, 16, 16}, dnPush,
		[]Expr{Bits(dnQP, QB-1, 0), dnSTag, dnTO, dnLen, Add(issued, zext(pwTake, 16))}, zext(dnPop, dnCW))
	m.Assign(dnCnt, dq.Count)
	m.Assign(dnReady, dnRoom)
	unused = append(unused, Bits(dnQP, 31, QB))
	dnLeft := m.WireOf("dn_left", Sub(dq.Fields[0][4], answered), "responses the oldest done still waits for (negative: past)")
	dnStable := m.Reg("dn_stable", 1, big.NewInt(0), And(RedOr(dq.Count), Not(dnPop)), nil, "the head is last cycle's: wf_at_dn's read data is its")
	dnFault := faultedBefore("dn_faulted", wfAt("wf_at_dn", dq.Fields[0][0]), dq.Fields[0][4])
	dnDue := m.WireOf("dn_due", And(dnStable, wfQuiet, Or(Eq(dnLeft, C(16, 0)), Bit(dnLeft, 15))), "the oldest done's writes all have their responses")
	dnOut := m.WireOf("dn_out", And(dnDue, Not(dnFault)), "")
	m.Assign(dnPop, And(dnDue, Or(rdnReady, dnFault)))
	m.Assign(m.Output("m_rdone_busy", 1, "a Read done waits here (the card top holds a stream-end record and receive-side Terminates behind it)"), RedOr(dq.Count))
	m.Assign(rdnValid, dnOut)
	for k, f := range []struct {
		name string
		w    int
	}{{"qp", QB}, {"stag", 32}, {"to", 64}, {"len", 16}} {
		m.Assign(m.Output("m_rdone_"+f.name, f.w, ""), gate(dnOut, dq.Fields[0][k]))
	}

	// Completion, invalidation, error records.
	isInv := m.WireOf("snd_is_inv", Or(Eq(op, C(4, 4)), Eq(op, C(4, 6))), "Send with Invalidate (SE)")
	isSE := m.WireOf("snd_is_se", Or(Eq(op, C(4, 5)), Eq(op, C(4, 6))), "Send with Solicited Event")
	gotN := m.WireOf("snd_got_n", Add(got, zext(n, 32)), "")
	cplV := m.WireOf("snd_cpl_v", And(in(sCpl), wrIdle, wfQuiet), "the completion waits for its payload's write responses")
	m.Assign(cValid, cplV)
	m.Assign(cCQ, gate(cplV, cq))
	m.Assign(cQPN, gate(cplV, zext(sqp, 16)))
	m.Assign(cWRID, gate(cplV, wrid))
	nfl := m.WireOf("snd_cpl_msg", And(cplV, Not(fl), Not(cplFault)), "a message's completion with success (not a flush, no faulted write before it)")
	// A flushed WQE: WR_FLUSH_ERR, length 0; RQ_CI past its blocks, or
	// past every block posted when its BBS is bad or its read failed (a
	// record without a CQE then: m_cpl_silent), as the card model's
	// fetchRQ does.
	ciFl := m.WireOf("fl_ci", Sel(Or(rErr, Not(bbsOK)), pi, Add(ci, zext(bbs, 16))), "RQ_CI past the flushed WQE")
	m.Assign(cLen, gate(nfl, gotN))
	m.Assign(cOp, gate(cplV, C(8, 3)))
	m.Assign(cSt, gate(cplV, Sel(fl, Sel(lenErr, C(8, cardRxStatLocLen), C(8, cardTxStatFlush)), Sel(cplFault, C(8, cardTxStatFlush), C(8, 0)))))
	m.Assign(cInv, gate(And(nfl, isInv), invSTag))
	m.Assign(cSol, And(nfl, isSE))
	m.Assign(cInvd, And(nfl, isInv))
	m.Assign(cSilent, And(cplV, fl, rErr))
	m.Assign(cTL, C(4, 0))
	m.Assign(cTT, C(4, 0))
	m.Assign(cTC, C(8, 0))
	m.Assign(cRQCI, gate(cplV, Sel(fl, ciFl, Add(ci, zext(bbs, 16))))) // the completion comes before sStore (sFlSt) moves RQ_CI past the WQE
	m.Assign(iValid, in(sInv))
	m.Assign(iIndex, gate(in(sInv), Bits(invSTag, 31, 8)))
	// Error record.
	eCause := m.RegDecl("rxterm_cause", 16, "")
	eSeg := m.WireOf("rxterm_seg", Or(And(in(sChk), Ne(bad, C(16, 0)), Not(failed)), fault, invFault, rrBad, rrFault, tmIn), "an untagged segment failed")
	wfGo := m.WireOf("wf_go", And(wfOK, x.wfCan, Not(eV), Not(eSeg)), "the first fault of a QP's payload write is taken (the record is free)")
	m.Assign(x.wfGo, wfGo)
	eSet := m.WireOf("rxterm_set", Or(eSeg, wfGo), "")
	// The record is offered while no earlier record's QP waits to join
	// the flush queue (below).
	tPend := m.RegDecl("rxterm_fl_pend", 1, "a taken record's QP waits to join the flush queue")
	tOffer := m.WireOf("rxterm_offer", And(eV, Not(tPend)), "")
	tTake := m.WireOf("rxterm_take", And(tOffer, tReady), "")
	m.Drive(eV, big.NewInt(0), Or(eSet, And(eV, Not(tTake))), nil)
	m.Drive(eCause, nil, Sel(wfGo, C(16, causeRDMAPLocalCatastrophic), Sel(in(sChk), bad, Sel(tmIn, tmCause, Sel(rrBad, rr.cause, Sel(rrFault, readSourceCause(aFault),
		Sel(fault, C(16, causeRDMAPLocalCatastrophic), C(16, causeRDMAPCannotInvalidate))))))), eSet)
	eQP := m.Reg("rxterm_qpq", QB, nil, Sel(wfGo, wfQP, sqp), eSet, "")
	eHdr := m.Reg("rxterm_hdrq", 8*untaggedHdr, nil, hdr, eSet, "")
	eLen := m.Reg("rxterm_lenq", 16, nil, slen, eSet, "")
	m.Assign(tValid, tOffer)
	m.Assign(tQP, gate(eV, eQP))
	m.Assign(tCause, gate(eV, eCause))
	m.Assign(tHdr, gate(eV, eHdr))
	m.Assign(tSegLen, gate(eV, eLen))
	m.Assign(tRDMA, gate(eV, m.Reg("rxterm_rdmaq", 8*cardTxReadReqBytes, nil, rr.body, eSet, "")))
	m.Assign(tRecv, And(eV, m.Reg("rxterm_recvq", 1, nil, tmIn, eSet, "")))
	// A Send whose receive WQE could not be read (the model's fetchRQ):
	// the record says so, and the RQ's flush drops what was posted.
	eFlt := m.Reg("rxterm_faultq", 1, nil, Or(wfGo, And(in(sChk), posted, rErr, Not(failed))), eSet, "")
	m.Assign(tFault, And(eV, eFlt))
	m.Assign(tFaultAddr, gate(eV, m.Reg("rxterm_fault_addrq", 64, nil, Sel(wfGo, wfAddr, rErrAddr), eSet, "")))
	m.Assign(tFaultWr, And(eV, m.Reg("rxterm_fault_wrq", 1, nil, wfGo, eSet, "")))
	// Once the record is taken the QP is in error: its RQ is flushed (the
	// model's errorStep) as QP_CMD ERROR flushes it, when no command or
	// doorbell pushes the flush queue.
	tPendQP := m.Reg("rxterm_fl_qp", QB, nil, eQP, tTake, "")
	// The other Terminates' QPs (x.flExtV) join it behind m_rxterm's.
	rxPush := m.WireOf("fl_rxterm_push", And(tPend, Not(termBusy)), "m_rxterm's QP joins the flush queue")
	m.Assign(x.flExtGo, And(x.flExtV, Not(tPend), Not(termBusy)))
	m.Assign(termPush, Or(rxPush, x.flExtGo))
	m.Drive(tPend, big.NewInt(0), Or(tTake, And(tPend, Not(rxPush))), nil)
	m.Assign(termPushQP, Sel(tPend, tPendQP, x.flExtQP))
	m.Assign(x.sndIdle, And(in(sIdle), Eq(bi, C(13, 0)), Not(hValid)))

	// Receive state: loaded with the context, stored after each segment
	// (sStore: the next values; sDropSt: failed).
	m.Drive(msn, nil, Bits(stRd, sstW-1, sstW-32), ld)
	m.Drive(got, nil, Bits(stRd, sstW-33, sstW-64), ld)
	m.Drive(curI, nil, Bits(stRd, sstW-65, sstW-69), ld)
	m.Drive(curOff, nil, Bits(stRd, sstW-70, sstW-101), ld)
	m.Drive(ci, nil, Sel(ld, Bits(stRd, 17, 2), ciFl), Or(ld, in(sFlSt)))
	m.Drive(failed, nil, Sel(ld, Or(Bit(stRd, 0), Bit(errRd, 0)), one), Or(ld, eSeg))
	lenSet := m.WireOf("snd_len_err_set", And(in(sChk), Eq(bad, e(causeDDPMessageTooLong)), Not(failed)), "")
	m.Drive(lenErr, nil, Sel(ld, Bit(stRd, 1), Not(in(sFlSt))), Or(ld, lenSet, in(sFlSt)))
	m.Assign(stWr, Or(in(sStore), in(sDropSt), in(sFlSt)))

	// What an RQ_PI doorbell is checked against (the card model's
	// ringMoved): the new RQ_PI may not be more than the RQ's size past
	// RQ_CI, nor behind the blocks the engine has taken (the head WQE of a
	// message in progress). RQ_CI and those blocks are copied from the
	// engine's stores (a store in the doorbell's cycle is passed on
	// directly: the RAM reads first), the size from CREATE. A QP whose
	// receive failed stores no taken blocks: an RQ_PI moved back into its
	// head WQE is taken there, where the model refuses it.
	cfData := m.WireOf("rq_db_cf_data", Sel(in(sStore), Cat(Add(ci, zext(bbs, 16)), Sel(lflag, Add(ci, zext(bbs, 16)), ci)),
		Sel(in(sFlSt), Cat(ciFl, ciFl), Cat(ci, ci))), "{blocks taken up to, RQ_CI} as the engine stores them")
	cfDB := m.Mem("rq_db_cf", 32, 1<<QB, Or(x.create, stWr), Sel(x.create, Bits(x.cQPN, QB-1, 0), sqp), Sel(x.create, C(32, 0), cfData),
		rqDB, Bits(x.dbIndex, QB-1, 0), "{blocks taken up to, RQ_CI}, read by the doorbell path")
	logDB := m.Mem("rq_db_log", 5, 1<<QB, x.create, Bits(x.cQPN, QB-1, 0), rqLog, rqDB, Bits(x.dbIndex, QB-1, 0), "the RQ's log2 size, read by the doorbell path")
	cfByp := m.Reg("rq_db_byp", 1, big.NewInt(0), And(rqDB, stWr, Eq(sqp, Bits(x.dbIndex, QB-1, 0))), nil, "the engine stored the doorbell's QP in its cycle")
	cfBypV := m.Reg("rq_db_byp_v", 32, nil, cfData, rqDB, "")
	cf := m.WireOf("rq_db_cf_now", Sel(cfByp, cfBypV, cfDB), "")
	dbCI := Bits(cf, 15, 0)
	m.Assign(rqBad, And(rqDBq, producerMoveBad(m, "rq_db", "RQ", rqDBpi, dbCI, Bits(cf, 31, 16), thermo(logDB, 16))))
	bdbV := m.RegDecl("baddb_v", 1, "a bad RQ_PI's QP waits to go to error")
	bdbReady := m.Input("m_baddb_ready", 1, "")
	m.Drive(bdbV, big.NewInt(0), Or(rqBad, And(bdbV, Not(bdbReady))), nil)
	m.Assign(m.Output("m_baddb_valid", 1, "an RQ_PI doorbell moved RQ_PI more than the RQ's size past RQ_CI, or behind the blocks the engine has taken (RQ_PI unchanged): the QP goes to error with QP_ERROR BAD_DOORBELL (the top's QP command fork); doorbells wait until it is taken"), bdbV)
	m.Assign(m.Output("m_baddb_qpn", QB, ""), gate(bdbV, m.Reg("baddb_qpn", QB, big.NewInt(0), rqDBqp, rqBad, "")))
	m.Assign(x.dbHold, bdbV)
	z := func(w int, x Expr) Expr { return Sel(lflag, C(w, 0), x) }
	m.Assign(stData, Sel(in(sStore),
		Cat(Sel(lflag, Add(msn, C(32, 1)), msn), z(32, gotN), z(5, wI), z(32, wOff), Sel(lflag, Add(ci, zext(bbs, 16)), ci), lenErr, failed),
		Sel(in(sFlSt), Cat(msn, C(32+5+32, 0), ciFl, C(1, 0), one), Cat(msn, got, curI, curOff, ci, lenErr, failed))))

	// Beats: header beats before HB are taken at once; the held beat and
	// the payload beats go as the writer uses them; a failed or finished
	// segment's remaining beats are dropped.
	segEnd := m.RegDecl("snd_seg_end", 1, "the segment's last beat is taken")
	m.Drive(segEnd, big.NewInt(0), Sel(hdrDone, C(1, 0), Or(segEnd, And(hPop, hValid, hLast))), nil)
	var hdrPop Expr = C(1, 0)
	if HB > 0 {
		hdrPop = And(in(sIdle), hValid, Lt(bi, C(13, uint64(HB))))
	}
	m.Assign(hPop, Or(hdrPop, And(in(sMove), beatDone), And(Or(in(sDrop), in(sStore), in(sRRq)), Not(segEnd))))

	// State machine.
	nx := func(c Expr, s int, f Expr) Expr { return Sel(c, C(5, uint64(s)), f) }
	cur := func(s int) Expr { return C(5, uint64(s)) }
	trans := []struct {
		s    int
		next Expr
	}{
		{sIdle, nx(Or(flPop, hdrDone), sRead, cur(sIdle))},
		{sRead, cur(sLoad)},
		{sLoad, cur(sWQE)},
		{sWQE, Sel(fl, nx(Not(posted), sIdle, nx(fStart, sFetch, cur(sCpl))), nx(failed, sDrop, nx(Or(isRR, isTm), sRRq, nx(fStart, sFetch, cur(sChk)))))},
		{sFetch, Sel(fetched, Sel(fl, cur(sCpl), cur(sChk)), cur(sFetch))},
		{sChk, nx(Ne(bad, C(16, 0)), sDrop, nx(Eq(n, C(16, 0)), sFin, cur(sSGE)))},
		{sSGE, cur(sLook)},
		{sLook, nx(skip, sSGE, nx(kReady, sWait, cur(sLook)))},
		{sWait, nx(fault, sDrop, nx(wrStart, sMove, nx(chkAdv, sSGE, cur(sWait))))},
		{sMove, Sel(And(emit, Eq(pLeft, zext(nb, 16))), Sel(Eq(rem, zext(nb, 16)), cur(sFin), cur(sSGE)), cur(sMove))},
		{sFin, nx(And(lflag, isInv), sInvChk, nx(lflag, sCpl, cur(sStore)))},
		{sInvChk, nx(kReady, sInvWait, cur(sInvChk))},
		{sInvWait, nx(invFault, sDrop, nx(invAns, sInv, cur(sInvWait)))},
		{sInv, nx(iReady, sCpl, cur(sInv))},
		{sCpl, Sel(And(cReady, cplV), Sel(fl, cur(sFlSt), cur(sStore)), cur(sCpl))},
		{sFlSt, cur(sWQE)},
		{sStore, nx(Or(segEnd, hValid), sIdle, cur(sStore))},
		{sDrop, nx(Or(segEnd, And(hValid, hLast)), sDropSt, cur(sDrop))},
		{sDropSt, cur(sIdle)},
		{sRRq, nx(Or(segEnd, And(hValid, hLast)), sRRChk, cur(sRRq))},
		{sRRChk, nx(Or(rrBad, tmIn), sDrop, nx(rr.sizeZero, sRROut, cur(sRRLook)))},
		{sRRLook, nx(kReady, sRRWait, cur(sRRLook))},
		{sRRWait, nx(rrFault, sDrop, nx(rrAns, sRROut, cur(sRRWait)))},
		{sRROut, nx(rr.taken, sRRSt, cur(sRROut))},
		{sRRSt, nx(rr.storeOK, sIdle, cur(sRRSt))},
	}
	// Done with a segment: card_rx reports its RXS_CI and lets the next
	// segment go to placement; a failed one's QP is killed in placement
	// in the same cycle, before any later segment of it is decided.
	m.Assign(x.res, Or(And(in(sStore), Or(segEnd, hValid)), in(sDropSt), And(in(sRRSt), rr.storeOK)))
	m.Assign(x.resErr, in(sDropSt))
	m.Assign(x.kill, in(sDropSt))
	m.Assign(x.killQP, gate(in(sDropSt), zext(sqp, 32)))
	var nextE Expr = cur(sIdle)
	for i := len(trans) - 1; i >= 0; i-- {
		nextE = Sel(in(trans[i].s), trans[i].next, nextE)
	}
	m.Assign(next, nextE)
	return unused, nil
}
