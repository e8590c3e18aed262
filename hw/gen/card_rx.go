package gen

import (
	"fmt"
	"math/big"
)

// CardRxWidths lists the data widths of the card's receive engine.
var CardRxWidths = []int{64, 512}

// Receive engine sizing.
const (
	cardRxQPBits   = 10   // 1024 QP contexts
	cardRxChunk    = 4096 // largest stream ring read request, bytes
	cardRxReqLimit = 31   // ring read requests in flight, at most
	cardRxEndsBits = 6    // log2 of the FPDUs taken whole and not delivered yet, at most
)

// Error kinds on card_rx's m_err record: mpa_rx's (1 CRC, 2 marker,
// 3 length) and the engine's own.
const (
	CardRxErrDMA         = 4 // a read of the ring got an error response (m_err_addr: the address the card model names)
	CardRxErrTooLarge    = 5 // an FPDU longer than the ring: it can never be taken whole
	CardRxErrStreamCut   = 6 // the peer's stream ended (RX_FIN) inside an FPDU
	CardRxErrBadDoorbell = 7 // RXS_PI moved more than the ring's size past RXS_CI
)

// CardRxWireMagic returns (M, s) such that floor(y/127) = (y*M) >> s for
// every y below 2^14: the receive engine divides by 508 (the octets of
// FPDU body between two markers) with a constant multiply.
func CardRxWireMagic() (uint64, uint) {
	for s := uint(7); s < 40; s++ {
		mul := (uint64(1)<<s + 126) / 127
		ok := true
		for y := uint64(0); y < 1<<14; y++ {
			if y*mul>>s != y/127 {
				ok = false
				break
			}
		}
		if ok {
			return mul, s
		}
	}
	panic("gen: no constant divides by 127")
}

// wireLen builds the octets an FPDU with a ULPDU of n octets occupies on
// the wire from stream offset off (a multiple of 4), markers on or off:
// golden/mpa.FPDUWireLen in logic. It returns the length (18 bits) and
// whether n is a valid ULPDU_Length (1..64768).
func wireLen(m *Module, name string, off, mk, n Expr) (Expr, Expr) {
	b4 := m.WireOf(name+"_b4", Add(zext(n, 18), C(18, 5)), "")
	body := m.WireOf(name+"_body", Cat(Bits(b4, 17, 2), C(2, 0)), "header, ULPDU and PAD octets")
	lead := m.WireOf(name+"_lead", And(mk, Eq(bitsOf(m, name+"_off", off, 8, 0), C(9, 0))), "a marker opens the FPDU")
	offl := m.WireOf(name+"_offl", Sel(lead, C(10, 4), zext(bitsOf(m, name+"_offx", off, 8, 0), 10)), "offset in the marker period after a leading marker")
	g0 := m.WireOf(name+"_g0", Sub(C(10, 512), offl), "body octets before the first marker inside")
	ge := m.WireOf(name+"_ge", Not(Lt(body, zext(g0, 18))), "a marker falls inside")
	x := m.WireOf(name+"_x", Sub(body, zext(g0, 18)), "")
	mul, sh := CardRxWireMagic()
	y := m.WireOf(name+"_y", zext(Bits(x, 15, 2), 40), "")
	var prod Expr = C(40, 0)
	for b := 0; b < 20; b++ {
		switch {
		case mul>>b&1 == 0:
		case b == 0:
			prod = Add(prod, y)
		default:
			prod = Add(prod, Cat(Bits(y, 39-b, 0), C(b, 0)))
		}
	}
	if mul>>20 != 0 {
		panic("gen: divide-by-127 constant too wide")
	}
	q := m.WireOf(name+"_q", prod, "")
	k := m.WireOf(name+"_k", Add(Add(zext(lead, 9), Sel(ge, C(9, 1), C(9, 0))), Sel(ge, Bits(q, int(sh)+8, int(sh)), C(9, 0))), "markers inside")
	w := m.WireOf(name, Add(Add(body, C(18, 4)), Sel(mk, Cat(C(7, 0), k, C(2, 0)), C(18, 0))), "wire octets of the FPDU")
	ok := m.WireOf(name+"_ok", And(RedOr(n), Not(Lt(C(16, 64768), n))), "ULPDU_Length 1..64768")
	m.WireOf(name+"_unused", RedOr(Cat(Bits(b4, 1, 0), Bits(body, 1, 0), Bits(x, 17, 16), Bits(x, 1, 0), Bits(q, 39, int(sh)+9), Bits(q, int(sh)-1, 0))), "bits no logic reads")
	return w, ok
}

// bitsOf slices an expression through a wire (Bits needs a signal).
func bitsOf(m *Module, name string, e Expr, hi, lo int) Expr {
	if s, ok := e.(*Signal); ok {
		return Bits(s, hi, lo)
	}
	return Bits(m.WireOf(name, e, ""), hi, lo)
}

// CardRx builds card_rx_w<width>, the card's receive engine: per-QP
// receive contexts, RXS_PI doorbells, the receive stream ring reader that
// takes whole FPDUs only, and mpa_rx, whose ULPDUs it hands on with their
// QP, PD and version for placement.
func CardRx(width int) (*Module, error) {
	W := width
	if W != 64 && W != 512 {
		return nil, fmt.Errorf("%w: card_rx data width %d (64 or 512)", ErrInvalid, W)
	}
	mpa, err := MPARx(W)
	if err != nil {
		return nil, err
	}
	rd, err := DMARd(DMARdDefault(W))
	if err != nil {
		return nil, err
	}
	L := W / 8
	LB := log2(L)
	QB := cardRxQPBits
	dbRXSPI, err := CardDBKind("QP_DB", "RXS_PI")
	if err != nil {
		return nil, err
	}
	dbStreamK, err := CardDBKind("QP_DB", "STREAM")
	if err != nil {
		return nil, err
	}
	m := NewModule(fmt.Sprintf("card_rx_w%d", W), "RFC 5044 §6-§7 (FPDU framing, markers), docs/card.md (receive stream ring, RXS_PI), docs/card-rtl.md",
		fmt.Sprintf("The card's receive engine, %d-bit data path: per-QP receive contexts for %d QPs in block RAM (written by QP_CMD CREATE from the staged context), RXS_PI doorbells, and the receive stream ring reader. The reader serves one QP at a time: it reads the QP's ring through a dma_rd (requests of at most %d bytes, beat aligned, %d in flight), finds each FPDU's end from its ULPDU_Length and the stream offset (markers included, as golden/mpa.FPDUWireLen) and hands mpa_rx only whole FPDUs: an FPDU whose end lies past RXS_PI stays in the ring until a doorbell brings the rest. mpa_rx is reset with the QP's context (stream offset = RXS_CI, markers, CRC, rev 0) at the start of each QP's turn, and a turn ends only once mpa_rx has delivered every ULPDU it was given, so no state of one QP is left in it when the next QP's FPDUs come.", W, 1<<QB, cardRxChunk, cardRxReqLimit),
		"A turn ends when the next FPDU is not whole in the ring and another QP waits (the QP's RXS_CI and the octets it needs are stored, and it is not served again before a doorbell gives it that many), or when mpa_rx or the ring doorbell reports an error (m_err; the QP is failed and served no more). With no other QP waiting, the reader waits in the turn for the QP's next doorbell.",
		"Outputs: m_ulp, the ULPDUs (mpa_rx's stream) with the QP, PD and version placement needs; m_ci, the QP's RXS_CI each time a segment is judged (a tagged one at placement's decision, m_dec; an untagged one when the Send engine is done with it; coalesced: the latest value while the record waits), with m_ci_err when it failed; m_err, errors that end a QP's receive stream.",
		"Receive order, as the card model's: no segment goes to placement while an untagged one is not judged, so a segment is decided only after the Send with Invalidate before it has invalidated; a failed segment's QP is killed in placement (m_kill) before any later segment of it is decided, so nothing behind a failure is placed, completed or answered, and RXS_CI stops at the end of the failed FPDU. A segment dropped because its QP had failed moves nothing; the turn then ends and the QP is served no more.",
	)
	m.Clock()
	rst := m.ResetPort()

	cmdValid := m.Input("qp_cmd_valid", 1, "QP command (card_regs)")
	cmdReady := m.Output("qp_cmd_ready", 1, "")
	cmdOp := m.Input("qp_cmd_op", 4, "QP_OP: CREATE (1) loads the context; ERROR (3) flushes the RQ; the others are taken without effect here")
	cQPN := m.Input("qp_num_qpn", 16, "QP number (below 1024)")
	cPD := m.Input("qp_pd_pd", 32, "")
	cBaseLo := m.Input("qp_rxs_base_lo", 32, "receive stream ring address (aligned to its size)")
	cBaseHi := m.Input("qp_rxs_base_hi", 32, "")
	cLog := m.Input("qp_sizes_rxs_log", 5, "ring size, log2 bytes (12..24)")
	cMk := m.Input("qp_mpa_markers_rx", 1, "")
	cCRC := m.Input("qp_mpa_crc", 1, "")
	cRev0 := m.Input("qp_mpa_rev0", 1, "")
	dbValid := m.Input("s_db_valid", 1, "doorbell (card_regs m_db): RXS_PI is served, other kinds are taken and ignored")
	dbReady := m.Output("s_db_ready", 1, "")
	dbKind := m.Input("s_db_kind", 3, "DB_KIND")
	dbIndex := m.Input("s_db_index", QB, "QP number")
	dbValue := m.Input("s_db_value", 32, "")

	uData := m.Output("m_ulp_tdata", W, "ULPDUs (mpa_rx m_axis)")
	uKeep := m.Output("m_ulp_tkeep", L, "")
	uValid := m.Output("m_ulp_tvalid", 1, "")
	uReady := m.Input("m_ulp_tready", 1, "")
	uLast := m.Output("m_ulp_tlast", 1, "")
	uLen := m.Output("m_ulp_len", 16, "ULPDU_Length, every beat")
	uQP := m.Output("m_ulp_qp", 32, "QP number, every beat")
	uPD := m.Output("m_ulp_pd", 32, "its PD, every beat")
	uRev := m.Output("m_ulp_rev", 1, "1: DDP/RDMAP version 1; 0: rev 0 peer")
	ciValid := m.Output("m_ci_valid", 1, "RXS_CI moved: past a judged segment's FPDU, or past the FPDU of an MPA error (past its header for a length error) before m_err")
	ciReady := m.Input("m_ci_ready", 1, "")
	ciQP := m.Output("m_ci_qp", QB, "")
	ciVal := m.Output("m_ci_value", 32, "RXS_CI: stream octets consumed")
	ciErr := m.Output("m_ci_err", 1, "the FPDU it moved past failed (a receive check, an MPA error, a peer's Terminate): the QP is in error from here on")
	decValid := m.Input("s_dec_valid", 1, "placement's decision of a segment (m_dec): its RXS_CI is reported then, or, for an untagged one, once the Send engine is done with it")
	decDest := m.Input("s_dec_dest", 2, "")
	decDead := m.Input("s_dec_dead", 1, "")
	killValid := m.Output("m_kill_valid", 1, "the Send engine failed a segment, or the host put the QP in error: placement drops the QP's later segments (placement s_kill)")
	killQP := m.Output("m_kill_qp", 32, "")
	clrValid := m.Output("m_clear_valid", 1, "QP_CMD CREATE: placement forgets the QP's failure (placement s_clear)")
	clrQP := m.Output("m_clear_qp", 32, "")
	eValid := m.Output("m_err_valid", 1, "the QP's receive stream failed")
	eReady := m.Input("m_err_ready", 1, "")
	eQP := m.Output("m_err_qp", QB, "")
	eKind := m.Output("m_err_kind", 3, fmt.Sprintf("1 CRC, 2 marker, 3 length (mpa_rx), %d a ring read of the FPDU got an error response, %d an FPDU longer than the ring, %d the stream ended (RX_FIN) inside an FPDU, %d RXS_PI past the ring's size", CardRxErrDMA, CardRxErrTooLarge, CardRxErrStreamCut, CardRxErrBadDoorbell))
	eCode := m.Output("m_err_code", 3, "mpa_rx's RFC 5044 §8 code (0 for the engine's own)")
	eOff := m.Output("m_err_offset", 32, "stream offset of the failing FPDU (RXS_CI for the engine's own)")
	eAddr := m.Output("m_err_addr", 64, fmt.Sprintf("kind %d: the faulted address, as the card model's FPDU read names it (the FPDU's first octet, or the faulted page's if the FPDU starts before it)", CardRxErrDMA))
	sIdleOut := m.Output("snd_idle", 1, "the Send engine holds no untagged segment (none in progress, no s_host beat waiting): the card top offers m_err and placement's m_term to card_tx only then, behind the segments before them")
	flValid := m.Input("s_fl_valid", 1, "card_tx took the Terminate record of placement's m_term or of m_err for this QP: its RQ is flushed (WR_FLUSH_ERR) as for m_rxterm's")
	flReady := m.Output("s_fl_ready", 1, "no such QP waits to join the flush queue")
	flQP := m.Input("s_fl_qp", QB, "")
	failValid := m.Input("s_fail_valid", 1, "card_tx put the QP in error (its Terminate record: its own failures, the top's CQ sweep, and the receive errors above again): as QP_CMD ERROR here, the ring is read no more, placement drops the QP's segments and its RQ is flushed (the card model's errorStep)")
	failReady := m.Output("s_fail_ready", 1, "")
	failQP := m.Input("s_fail_qp", QB, "")

	var unused []Expr
	unused = append(unused, Bits(cQPN, 15, QB), Bits(cBaseLo, 11, 0))

	// Engine states.
	const (
		sIdle = iota
		sPop
		sWait
		sRead
		sLoad
		sCheck
		sRun
		sDrain
		sEnd
	)
	st := m.RegDecl("eng_state", 4, "receive engine state")
	in := func(s int) Expr { return Eq(st, C(4, uint64(s))) }

	// Doorbell path: A (taken, queued bit read), B (PI written, QP queued).
	dbB := m.RegDecl("db_b", 1, "a doorbell in its second cycle")
	dbQP := m.RegDecl("db_qp", QB, "")
	dbVal := m.RegDecl("db_val", 32, "")
	bStall := m.WireOf("db_b_stall", Or(in(sPop), in(sRead), in(sLoad)), "the engine is reading a QP's context")
	bGo := m.WireOf("db_b_go", And(dbB, Not(bStall)), "")
	endWr := m.WireOf("eng_end_wr", in(sEnd), "the engine stores a QP's stream state")
	flRoom := m.Wire("fl_room", 1, "the Send engine's flush queue can take a QP (cardRxSend)")
	hkPend := m.RegDecl("kill_host_pend", 1, "a host failure's kill waits for the Send engine's (no command or doorbell is taken meanwhile)")
	canTake := m.WireOf("cmd_can_take", And(Not(dbB), Not(in(sPop)), Not(endWr), flRoom, Not(hkPend)), "a command or a card failure may be taken")
	cmdTake := m.WireOf("cmd_take", And(cmdValid, canTake), "")
	m.Assign(cmdReady, cmdTake)
	// A card failure (s_fail) is taken as an ERROR command, after a host
	// command and before a doorbell.
	failTake := m.WireOf("fail_take", And(failValid, Not(cmdValid), canTake), "")
	m.Assign(failReady, failTake)
	// A payload write's fault (cardRxSend) is taken as one too, after
	// those, and before a doorbell (none is taken while one waits).
	wfGo := m.Wire("wf_take", 1, "a QP's first faulted payload write fails it")
	wfQP := m.Wire("wf_take_qp", QB, "")
	wfRdy := m.Wire("wf_none", 1, "no faulted payload write waits to fail its QP")
	wfCan := m.WireOf("wf_can", And(Not(failValid), Not(cmdValid), canTake), "")
	create := m.WireOf("cmd_create", And(cmdTake, Eq(cmdOp, C(4, 1))), "")
	cmdErr := m.WireOf("cmd_error", Or(And(cmdTake, Eq(cmdOp, C(4, 3))), failTake, wfGo), "QP_CMD ERROR or a card failure: the RQ is flushed")
	errQPN := m.WireOf("cmd_qpn", Sel(wfGo, zext(wfQP, 16), Sel(failTake, zext(failQP, 16), cQPN)), "the command's QP, or the failed one")
	unused = append(unused, Bits(errQPN, 15, QB))
	dbHold := m.Wire("db_hold", 1, "a bad RQ_PI doorbell waits on m_baddb (cardRxSend): no doorbell is taken")
	m.Assign(dbReady, And(Not(dbB), Not(cmdValid), Not(failValid), flRoom, Not(hkPend), Not(dbHold), wfRdy))
	dbTake := m.WireOf("db_take", And(dbValid, Not(dbB), Not(cmdValid), Not(failValid), flRoom, Not(hkPend), Not(dbHold), wfRdy), "")
	dbPI := m.WireOf("db_is_pi", And(dbTake, Eq(dbKind, C(3, dbRXSPI))), "")
	// STREAM.RX_FIN goes the same way without moving RXS_PI: the QP is
	// looked at again, and an FPDU cut by the end of the stream is found.
	dbFin := m.WireOf("db_is_fin", And(dbTake, Eq(dbKind, C(3, dbStreamK)), Bit(dbValue, cardStreamRXFin)), "STREAM.RX_FIN")
	dbIn := m.WireOf("db_in", Or(dbPI, dbFin), "")
	dbFinQ := m.RegDecl("db_fin", 1, "the doorbell in its second cycle is RX_FIN")
	m.Drive(dbB, big.NewInt(0), Or(dbIn, And(dbB, bStall)), nil)
	m.Drive(dbQP, nil, dbIndex, dbIn)
	m.Drive(dbVal, nil, dbValue, dbIn)
	m.Drive(dbFinQ, nil, dbFin, dbIn)

	// QP work FIFO (each QP at most once: its queued bit).
	fHead := m.RegDecl("fifo_head", QB+1, "")
	fTail := m.RegDecl("fifo_tail", QB+1, "")
	fCnt := m.WireOf("fifo_count", Sub(fTail, fHead), "")
	fPrev := m.Reg("fifo_nonempty_q", 1, big.NewInt(0), RedOr(fCnt), nil, "the FIFO held a QP last cycle (its head entry is readable)")
	aq := m.RegDecl("act_qp", QB, "the QP being served")
	// The next QP waits for the last turn's reports: m_ci names the QP
	// served (an MPA error's RXS_CI record outlives its turn).
	popQP := m.WireOf("eng_pop", And(in(sIdle), fPrev, Not(eValid), Not(ciValid)), "")
	push := m.Wire("fifo_push", 1, "a QP goes on the work FIFO")
	// Two bits wide: the VHDL emitter types memory words as vectors.
	qRd := m.Mem("queued", 2, 1<<QB, Or(create, in(sPop), push), Sel(create, Bits(cQPN, QB-1, 0), Sel(in(sPop), aq, dbQP)),
		Cat(C(1, 0), push), nil, Sel(dbPI, dbIndex, dbQP), "bit 0 per QP: on the work FIFO")
	m.Assign(push, And(bGo, Not(Bit(qRd, 0))))
	finRd := m.Mem("rx_fin", 2, 1<<QB, Or(create, And(bGo, dbFinQ)), Sel(create, Bits(cQPN, QB-1, 0), dbQP), Cat(C(1, 0), Not(create)), nil, aq,
		"bit 0 per QP: the peer's stream ended (RX_FIN)")
	unused = append(unused, Bit(finRd, 1))
	unused = append(unused, Bit(qRd, 1))
	fRd := m.Mem("fifo", QB, 1<<QB, push, Bits(fTail, QB-1, 0), dbQP, nil, Bits(fHead, QB-1, 0), "QPs with doorbells to serve")
	m.Drive(fTail, big.NewInt(0), Add(fTail, zext(push, QB+1)), nil)
	m.Drive(fHead, big.NewInt(0), Add(fHead, zext(popQP, QB+1)), nil)
	m.Drive(aq, big.NewInt(0), fRd, popQP)

	// Contexts.
	ctxW := 52 + 5 + 3 + 32
	ctxRd := m.Mem("ctx", ctxW, 1<<QB, create, Bits(cQPN, QB-1, 0),
		Cat(Bits(cBaseHi, 31, 0), Bits(cBaseLo, 31, 12), cLog, cMk, cCRC, cRev0, cPD), nil, aq, "RXS base (bits 63:12), log size, markers, CRC, rev 0, PD")
	piRd := m.Mem("rxs_pi", 32, 1<<QB, Or(create, And(bGo, Not(dbFinQ))), Sel(create, Bits(cQPN, QB-1, 0), dbQP), Sel(create, C(32, 0), dbVal), nil, aq, "RXS_PI per QP")
	lim := m.RegDecl("lim", 32, "end of the FPDUs taken whole (the next FPDU's start)")
	need := m.RegDecl("need", 17, "octets the next FPDU needs in the ring")
	failQ := m.RegDecl("failq", 1, "the QP's stream failed")
	stRd := m.Mem("rxs_st", 50, 1<<QB, Or(create, endWr), Sel(endWr, aq, Bits(cQPN, QB-1, 0)), Sel(endWr, Cat(lim, need, failQ), C(50, 0)), nil, aq, "RXS_CI, octets needed, failed")

	cBase := m.RegDecl("c_base", 52, "")
	cLogQ := m.RegDecl("c_log", 5, "")
	cMkQ := m.RegDecl("c_mk", 1, "")
	cCRCQ := m.RegDecl("c_crc", 1, "")
	cRev0Q := m.RegDecl("c_rev0", 1, "")
	cPDQ := m.RegDecl("c_pd", 32, "")
	ld := in(sLoad)
	m.Drive(cBase, nil, Bits(ctxRd, ctxW-1, 40), ld)
	m.Drive(cLogQ, nil, Bits(ctxRd, 39, 35), ld)
	m.Drive(cMkQ, nil, Bit(ctxRd, 34), ld)
	m.Drive(cCRCQ, nil, Bit(ctxRd, 33), ld)
	m.Drive(cRev0Q, nil, Bit(ctxRd, 32), ld)
	m.Drive(cPDQ, nil, Bits(ctxRd, 31, 0), ld)
	// Ring size.
	var maskBits []Expr
	for i := 24; i >= 0; i-- {
		maskBits = append(maskBits, Lt(C(5, uint64(i)), cLogQ))
	}
	rmask := m.WireOf("ring_mask", Cat(maskBits...), "ring size - 1")
	rsize := m.WireOf("ring_size", Add(zext(rmask, 26), C(26, 1)), "")

	// A doorbell of the QP being served goes straight to its turn, but
	// for an RXS_PI more than the ring's size past RXS_CI in a running
	// turn: that one only queues the QP (as every doorbell does), so the
	// turn ends and the check of its next turn refuses it (BAD_DOORBELL)
	// instead of the turn reading the ring's stale octets as FPDUs.
	aPI := m.RegDecl("a_pi", 32, "RXS_PI of the QP served")
	runBad := m.WireOf("db_run_bad", And(in(sRun), Not(dbFinQ), Lt(zext(rsize, 32), Sub(dbVal, lim))), "a bad RXS_PI of the QP in its turn")
	fwdPI := m.WireOf("db_fwd", And(bGo, Eq(dbQP, aq), Or(in(sCheck), in(sRun)), Not(runBad)), "a doorbell of the QP being served")
	m.Drive(aPI, nil, Sel(ld, piRd, dbVal), Or(ld, And(fwdPI, Not(dbFinQ))))
	aFin := m.RegDecl("a_fin", 1, "the served QP's stream ended (RX_FIN)")
	m.Drive(aFin, nil, Sel(ld, Bit(finRd, 0), C(1, 1)), Or(ld, And(fwdPI, dbFinQ)))

	// Check: is there anything to do?
	avail := m.WireOf("chk_avail", Sub(aPI, lim), "")
	badDB := m.WireOf("chk_bad", Lt(zext(rsize, 32), avail), "RXS_PI more than the ring's size past RXS_CI")
	enough := m.WireOf("chk_enough", And(RedOr(avail), Not(Lt(avail, zext(need, 32)))), "")
	goRun := m.WireOf("chk_go", And(in(sCheck), Not(failQ), Not(badDB), enough), "a turn starts: mpa_rx is reset with the QP's context")
	chkBad := m.WireOf("chk_fail", And(in(sCheck), Not(failQ), badDB), "")
	// The stream ended with octets in the ring that the next FPDU needs
	// more than: it is cut (the model's cut, QP_ERROR STREAM_CUT).
	chkCut := m.WireOf("chk_cut", And(in(sCheck), Not(failQ), Not(badDB), Not(enough), RedOr(avail), aFin), "")

	// Reader.
	iss := m.RegDecl("iss", 32, "stream offset up to which reads are issued")
	stopping := m.RegDecl("stopping", 1, "the turn ends: no more reads, in-flight bytes dropped")
	reqOut := m.RegDecl("req_out", 5, "ring read requests in flight")
	rS := m.WireOf("rd_start", Cat(Bits(iss, 31, LB), C(LB, 0)), "a read starts at a beat boundary")
	rLeft := m.WireOf("rd_left", Sub(aPI, rS), "")
	rToEnd := m.WireOf("rd_to_end", Sub(zext(rsize, 32), zext(And(Bits(rS, 24, 0), rmask), 32)), "")
	l1 := m.WireOf("rd_len1", Sel(Lt(rLeft, C(32, cardRxChunk)), rLeft, C(32, cardRxChunk)), "")
	rLen := m.WireOf("rd_len", Sel(Lt(rToEnd, l1), rToEnd, l1), "")
	rWant := m.WireOf("rd_want", And(in(sRun), Not(stopping), Lt(C(32, 0), Sub(aPI, iss)), Not(Lt(zext(rsize, 32), Sub(aPI, iss))), Lt(reqOut, C(5, cardRxReqLimit))), "")
	rdReqReady := m.Wire("rd_req_ready", 1, "")
	rIssue := m.WireOf("rd_issue", And(rWant, rdReqReady), "")
	rAddr := m.WireOf("rd_addr", Cat(cBase, C(12, 0)), "")
	rAddrFull := m.WireOf("rd_addr_full", Or(rAddr, zext(And(Bits(rS, 24, 0), rmask), 64)), "")
	m.Drive(iss, nil, Sel(goRun, lim, Add(rS, rLen)), Or(goRun, rIssue))

	// dma_rd.
	rdData := m.Wire("rd_tdata", W, "")
	rdKeep := m.Wire("rd_tkeep", L, "")
	rdValid := m.Wire("rd_tvalid", 1, "")
	rdReady := m.Wire("rd_tready", 1, "")
	rdLast := m.Wire("rd_tlast", 1, "")
	rdTag := m.Wire("rd_ttag", 8, "")
	rdErr := m.Wire("rd_terr", 1, "")
	rdBErr := m.Wire("rd_tberr", 1, "the beat's data may not be the host's: a ring read got an error response")
	rLenM1 := m.WireOf("rd_len_m1", Sub(rLen, C(32, 1)), "")
	unused = append(unused, rdTag, Bits(rLenM1, 31, 16))
	var rdConns []Conn
	rdConns = append(rdConns, Conn{"clk", m.Port("clk")}, Conn{"rst", rst},
		Conn{"s_req_valid", rWant}, Conn{"s_req_ready", rdReqReady}, Conn{"s_req_addr", rAddrFull},
		Conn{"s_req_len", Bits(rLenM1, 15, 0)}, Conn{"s_req_tag", C(8, 0)},
		Conn{"m_axis_tdata", rdData}, Conn{"m_axis_tkeep", rdKeep}, Conn{"m_axis_tvalid", rdValid}, Conn{"m_axis_tready", rdReady},
		Conn{"m_axis_tlast", rdLast}, Conn{"m_axis_tuser_tag", rdTag}, Conn{"m_axis_tuser_err", rdErr}, Conn{"m_axis_tuser_berr", rdBErr})
	for _, p := range rd.Ports {
		if len(p.Name) > 6 && p.Name[:6] == "m_axi_" {
			var s *Signal
			if p.Dir == In {
				s = m.Input(p.Name, p.W, "ring reads: AXI4 read channels of the engine's dma_rd")
			} else {
				s = m.Output(p.Name, p.W, "")
				w := m.Wire("rdx_"+p.Name[6:], p.W, "")
				m.Assign(s, w)
				s = w
			}
			rdConns = append(rdConns, Conn{p.Name, s})
		}
	}
	m.Instantiate("ring_rd", rd, rdConns...)

	// Cutter: forwards ring octets [P, lim) to mpa_rx.
	P := m.RegDecl("fwd_pos", 32, "next stream octet to hand mpa_rx")
	B := m.RegDecl("beat_base", 32, "stream offset of the head beat's lane 0")
	// keep is a thermometer: the number of lanes is the index of its first zero.
	var nv Expr = C(LB+1, uint64(L))
	for i := L - 1; i >= 1; i-- {
		nv = Sel(Not(Bit(rdKeep, i)), C(LB+1, uint64(i)), nv)
	}
	nvalid := m.WireOf("cut_nvalid", nv, "lanes in the head beat")
	pl := m.WireOf("cut_p_lane", Sub(P, B), "")
	accW := m.Wire("hdr_accept", 1, "the next FPDU is taken whole")
	pe := m.RegDecl("hdr_e", 32, "its end")
	limF := m.WireOf("cut_lim", Sel(accW, pe, lim), "octets before it may go to mpa_rx")
	limRel := m.WireOf("cut_lim_rel", Sub(limF, B), "")
	limRelH := m.WireOf("hdr_lim_rel", Sub(lim, B), "")
	limIn := m.WireOf("cut_lim_in", Lt(limRel, zext(nvalid, 32)), "lim lies inside the beat's lanes")
	endL := m.WireOf("cut_end", Sel(limIn, Bits(limRel, LB, 0), nvalid), "lanes handed on: up to lim or the beat's end")
	plL := m.WireOf("cut_p", Bits(pl, LB, 0), "")
	nOut := m.WireOf("cut_n", Sub(endL, plL), "")
	unused = append(unused, Bits(pl, 31, LB+1), Bit(rdKeep, 0), rdErr)

	// Header parse on the head beat.
	pv := m.RegDecl("hdr_v", 1, "the next FPDU's end is known")
	pbad := m.RegDecl("hdr_bad", 1, "its ULPDU_Length is invalid (mpa_rx will report it)")
	halt := m.RegDecl("halt", 1, "a bad header was handed on: take no more")
	leadM := m.WireOf("hdr_lead", And(cMkQ, Eq(Bits(lim, 8, 0), C(9, 0))), "a marker at lim")
	hLane := m.WireOf("hdr_lane", Add(Bits(limRelH, LB-1, 0), Sel(leadM, C(LB, 4), C(LB, 0))), "lane of ULPDU_Length")
	var nC, kC []Expr
	for j := 0; j < L/4; j++ {
		nC = append(nC, Cat(Bits(rdData, 32*j+7, 32*j), Bits(rdData, 32*j+15, 32*j+8)))
		kC = append(kC, Bit(rdKeep, 4*j+1))
	}
	hsel := selBits(hLane, 2, LB-2)
	unused = append(unused, Bits(hLane, 1, 0))
	hN := m.WireOf("hdr_n", muxTree(hsel, nC), "ULPDU_Length at lim")
	hK := m.WireOf("hdr_k", muxTree(hsel, kC), "its octets are in the beat")
	hdrOK := m.WireOf("hdr_ok", And(in(sRun), Not(stopping), Not(halt), Not(pv), rdValid, Not(rdBErr), Lt(limRelH, C(32, uint64(L))), hK), "")
	wl, wok := wireLen(m, "hdr_wire", lim, cMkQ, hN)
	// A bad ULPDU_Length: mpa_rx takes whole 4-octet groups, so its
	// group goes whole (the error's RXS_CI is 2 octets short of it).
	hEnd := m.WireOf("hdr_end", Add(lim, Sel(wok, zext(wl, 32), Sel(leadM, C(32, 8), C(32, 4)))), "")
	whole := m.WireOf("hdr_whole", And(pv, Not(Lt(Sub(aPI, lim), Sub(pe, lim)))), "the FPDU is in the ring up to RXS_PI")
	// The end of each FPDU taken whole, until its ULPDU is delivered: an
	// MPA error's FPDU is the next one to deliver, and RXS_CI moves past
	// it (past its header for a length error), as the card model's
	// consume does. At most cardRxEndsDepth FPDUs are between the two.
	accN := m.RegDecl("ends_acc", cardRxEndsBits+1, "FPDUs taken whole in the turn")
	delN := m.RegDecl("ends_del", cardRxEndsBits+1, "their ULPDUs delivered")
	endsRoom := m.WireOf("ends_room", Lt(Sub(accN, delN), C(cardRxEndsBits+1, 1<<cardRxEndsBits)), "")
	accept := accW
	m.Assign(accept, And(whole, Not(stopping), endsRoom))
	endRd := m.Mem("ends", 32, 1<<cardRxEndsBits, accept, Bits(accN, cardRxEndsBits-1, 0), Sel(pbad, Sub(pe, C(32, 2)), pe), nil, Bits(delN, cardRxEndsBits-1, 0),
		"the end (stream offset) of each FPDU taken whole whose ULPDU is not delivered yet")
	m.Drive(pv, big.NewInt(0), And(Or(pv, hdrOK), Not(accept), Not(goRun)), nil)
	m.Drive(pe, nil, hEnd, hdrOK)
	m.Drive(pbad, nil, Not(wok), hdrOK)
	m.Drive(halt, big.NewInt(0), And(Not(goRun), Or(halt, And(accept, pbad))), nil)

	// Hand-off to mpa_rx.
	mpaReady := m.Wire("mpa_in_ready", 1, "")
	fwdOK := m.WireOf("cut_fwd", And(in(sRun), Not(stopping), rdValid, Not(rdBErr), Lt(C(LB+1, 0), nOut)), "octets to hand on (never a faulted beat's)")
	fwdGo := m.WireOf("cut_fwd_go", And(fwdOK, mpaReady), "")
	pNext := m.WireOf("cut_p_next", Sel(fwdGo, Add(P, zext(nOut, 32)), P), "")
	consumed := m.WireOf("cut_consumed", Eq(Sub(pNext, B), zext(nvalid, 32)), "every lane of the beat is handed on")
	partialDrop := m.WireOf("cut_partial", And(Lt(nvalid, C(LB+1, uint64(L))), Eq(pNext, limF), Not(pv), Not(hdrOK)), "a partial beat's octets past lim come again with the next read")
	popBeat := m.WireOf("cut_pop", And(rdValid, Or(stopping, And(in(sRun), Or(consumed, partialDrop)))), "")
	m.Assign(rdReady, popBeat)
	nextB := m.WireOf("cut_next_b", Sel(And(rdLast, Lt(nvalid, C(LB+1, uint64(L)))), B, Add(B, C(32, uint64(L)))), "a partial last beat is read again by the next request")
	m.Drive(P, nil, Sel(goRun, lim, pNext), Or(goRun, fwdGo))
	m.Drive(B, nil, Sel(goRun, Cat(Bits(lim, 31, LB), C(LB, 0)), nextB), Or(goRun, popBeat))
	m.Drive(lim, nil, Sel(ld, Bits(stRd, 49, 18), pe), Or(ld, accept))
	rdDone := m.WireOf("rd_done", And(popBeat, rdLast), "a request's last beat")
	m.Drive(reqOut, big.NewInt(0), Sub(Add(reqOut, zext(rIssue, 5)), zext(rdDone, 5)), nil)
	sh := m.WireOf("cut_shift", Bits(pl, LB-1, 0), "")
	shifted := shiftDownBytes(m, "cut_sh", rdData, sh, W)
	var tk []Expr
	for i := L - 1; i >= 0; i-- {
		tk = append(tk, Lt(C(LB+1, uint64(i)), nOut))
	}
	mpaKeep := m.WireOf("mpa_in_keep", Cat(tk...), "")

	// mpa_rx.
	mrst := m.WireOf("mpa_rst", Or(rst, goRun), "mpa_rx takes the QP's context")
	ulpAllow := m.Wire("ulp_allow", 1, "a ULPDU beat may go to placement (see the pending queue below)")
	mData := m.Wire("mpa_tdata", W, "")
	mKeep := m.Wire("mpa_tkeep", L, "")
	mValid := m.Wire("mpa_tvalid", 1, "")
	mLast := m.Wire("mpa_tlast", 1, "")
	mLen := m.Wire("mpa_tlen", 16, "")
	meV := m.Wire("mpa_err_v", 1, "")
	meK := m.Wire("mpa_err_kind", 3, "")
	meC := m.Wire("mpa_err_code", 3, "")
	meO := m.Wire("mpa_err_off", 32, "")
	mEOS := m.Wire("mpa_eos", 1, "")
	unused = append(unused, mEOS)
	m.Instantiate("mpa", mpa,
		Conn{"clk", m.Port("clk")}, Conn{"rst", mrst},
		Conn{"s_axis_tdata", And(shifted, expand(mpaKeep))}, Conn{"s_axis_tkeep", mpaKeep}, Conn{"s_axis_tvalid", fwdOK},
		Conn{"s_axis_tready", mpaReady}, Conn{"s_axis_tlast", C(1, 0)},
		Conn{"cfg_offset", lim}, Conn{"cfg_markers", cMkQ}, Conn{"cfg_crc", cCRCQ}, Conn{"cfg_rev0", cRev0Q},
		Conn{"m_axis_tdata", mData}, Conn{"m_axis_tkeep", mKeep}, Conn{"m_axis_tvalid", mValid}, Conn{"m_axis_tready", And(uReady, ulpAllow)},
		Conn{"m_axis_tlast", mLast}, Conn{"m_axis_tuser_len", mLen},
		Conn{"m_err_valid", meV}, Conn{"m_err_kind", meK}, Conn{"m_err_code", meC}, Conn{"m_err_offset", meO}, Conn{"m_eos", mEOS})
	m.Assign(uData, mData)
	m.Assign(uKeep, mKeep)
	m.Assign(uValid, And(mValid, ulpAllow))
	m.Assign(uLast, mLast)
	m.Assign(uLen, mLen)
	m.Assign(uQP, gate(mValid, zext(aq, 32)))
	m.Assign(uPD, gate(mValid, cPDQ))
	m.Assign(uRev, And(mValid, Not(cRev0Q)))

	// Delivered: the stream offset of the next ULPDU to come out.
	outOff := m.RegDecl("out_off", 32, "stream offset of the next FPDU whose ULPDU mpa_rx delivers")
	ulpGo := m.WireOf("ulp_go", And(mValid, uReady, ulpAllow), "a ULPDU beat goes to placement")
	oDone := m.WireOf("ulp_done", And(ulpGo, mLast), "")
	m.Drive(accN, nil, Sel(goRun, C(cardRxEndsBits+1, 0), Add(accN, zext(accept, cardRxEndsBits+1))), nil)
	m.Drive(delN, nil, Sel(goRun, C(cardRxEndsBits+1, 0), Add(delN, zext(oDone, cardRxEndsBits+1))), nil)
	owl, owok := wireLen(m, "out_wire", outOff, cMkQ, mLen)
	unused = append(unused, owok) // mpa_rx delivers only valid lengths
	m.Drive(outOff, nil, Sel(goRun, lim, Add(outOff, zext(owl, 32))), Or(goRun, oDone))

	// Segments handed to placement and not yet judged, in order (all the
	// served QP's: a turn ends only once the queue is empty). Each one's
	// RXS_CI is reported when it is judged, as the card model's consume
	// does after its checks: a tagged one at placement's decision, an
	// untagged one once the Send engine is done with it. A segment dropped
	// because its QP had failed moves nothing. No segment goes to
	// placement while an untagged one is not judged, so a later segment is
	// decided only after an earlier Send with Invalidate has invalidated
	// and after a failure has reached placement (m_kill).
	const pqDepth = 4
	pqCW := addrWidth(pqDepth + 1)
	inUlp := m.RegDecl("ulp_mid", 1, "a ULPDU's first beat has gone and its last has not")
	m.Drive(inUlp, big.NewInt(0), Not(mLast), ulpGo)
	first := m.WireOf("ulp_first", And(ulpGo, Not(inUlp)), "a ULPDU's first beat goes")
	pqPush := m.WireOf("pq_push", first, "")
	pqPop := m.Wire("pq_pop", 1, "the head segment is judged")
	pq := ShiftQueue(m, "pq", pqDepth, []string{"ci"}, []int{32}, pqPush, []Expr{Add(outOff, zext(owl, 32))}, zext(pqPop, pqCW))
	utPend := m.RegDecl("pq_untagged", 1, "an untagged segment is in the queue (its tail): no other goes until it is judged")
	hostWait := m.RegDecl("pq_host", 1, "the head segment went to the Send engine")
	sndRes := m.Wire("snd_res", 1, "the Send engine is done with a segment")
	sndResErr := m.Wire("snd_res_err", 1, "... which failed")
	isHost := m.WireOf("dec_host", And(decValid, Eq(decDest, C(2, PlaceHost)), Not(decDead)), "")
	decPop := m.WireOf("dec_pop", And(decValid, Not(isHost)), "")
	m.Assign(pqPop, Or(decPop, And(hostWait, sndRes)))
	m.Drive(hostWait, big.NewInt(0), Or(isHost, And(hostWait, Not(sndRes))), nil)
	m.Drive(utPend, big.NewInt(0), Sel(pqPush, Not(Bit(mData, 7)), And(utPend, Not(And(pqPop, Eq(pq.Count, C(pqCW, 1)))))), nil)
	m.Assign(ulpAllow, Or(inUlp, And(Lt(pq.Count, C(pqCW, pqDepth)), Not(utPend))))
	repV := m.WireOf("ci_rep", And(pqPop, Not(And(decPop, decDead))), "a judged segment moves RXS_CI")
	repErr := m.WireOf("ci_rep_err", Sel(decPop, Eq(decDest, C(2, PlaceTerm)), sndResErr), "it failed")
	tdead := m.RegDecl("turn_dead", 1, "a segment of the turn failed, or was dropped as its QP had: the turn ends and the QP is served no more")
	deadNow := m.WireOf("turn_dead_set", And(Or(in(sRun), in(sDrain)), pqPop, Or(And(decPop, decDead), repErr)), "")
	// The host puts a QP in error (QP_CMD ERROR, STREAM.RX_LOST): the
	// model reads its ring no more. Its bit here keeps the reader away;
	// if it is the QP being served, its turn ends now; placement drops
	// its segments on the way (m_kill).
	hostLost := m.WireOf("host_lost", And(dbTake, Eq(dbKind, C(3, dbStreamK)), Bit(dbValue, cardStreamRXLost)), "STREAM.RX_LOST")
	hostFail := m.WireOf("host_fail", Or(cmdErr, hostLost), "the host puts a QP in error")
	hostFailQP := m.WireOf("host_fail_qp", Sel(cmdErr, Bits(errQPN, QB-1, 0), dbIndex), "")
	deadRd := m.Mem("rx_dead", 2, 1<<QB, Or(create, hostFail), Sel(create, Bits(cQPN, QB-1, 0), hostFailQP), Cat(C(1, 0), Not(create)), nil, aq,
		"bit 0 per QP: put in error by the host: its ring is read no more")
	unused = append(unused, Bit(deadRd, 1))
	hostKill := m.WireOf("host_kill", And(hostFail, Eq(hostFailQP, aq), Not(in(sIdle))), "the QP being served is put in error")
	hostKillPre := m.WireOf("host_kill_pre", And(hostKill, Or(in(sRead), in(sLoad), in(sCheck))), "... before its turn starts: it is failed")
	m.Drive(tdead, big.NewInt(0), Sel(goRun, hostKill, Or(tdead, deadNow, hostKill)), nil)

	// RXS_CI reports: after each judged segment, and past the FPDU of an
	// MPA error (errCI, once every segment before it is judged).
	ciV := m.RegDecl("ci_v", 1, "")
	ciQ := m.RegDecl("ci_val", 32, "")
	ciE := m.RegDecl("ci_err_q", 1, "")
	errCI := m.Wire("ci_err", 1, "an MPA error's FPDU is consumed")
	newRep := m.WireOf("ci_new", Or(repV, errCI), "")
	m.Drive(ciV, big.NewInt(0), Or(newRep, And(ciV, Not(ciReady))), nil)
	m.Drive(ciQ, nil, Sel(errCI, endRd, pq.Fields[0][0]), newRep)
	m.Drive(ciE, big.NewInt(0), Sel(newRep, Or(errCI, repErr, And(ciV, Not(ciReady), ciE)), ciE), nil)
	m.Assign(ciValid, ciV)
	m.Assign(ciQP, gate(ciV, aq))
	m.Assign(ciVal, gate(ciV, ciQ))
	m.Assign(ciErr, And(ciV, ciE))

	// The turn ends.
	hs := m.WireOf("blk_hs", Sel(leadM, C(17, 6), C(17, 2)), "header span at lim")
	hdrComing := m.WireOf("blk_hdr_coming", Not(Lt(Sub(aPI, lim), zext(hs, 32))), "the next header is in the ring")
	atLim := m.WireOf("blk_at_lim", Eq(P, lim), "")
	blocked := m.WireOf("blk", And(in(sRun), Not(halt), atLim, Or(And(pv, Not(whole)), And(Not(pv), Not(hdrComing)))), "the next FPDU is not whole in the ring")
	others := m.WireOf("blk_others", RedOr(fCnt), "another QP waits")
	// A ring read that got an error response: its first faulted beat
	// reaches the head with every octet before it handed on, and none of
	// it is. The card model reads each FPDU whole (its header span first)
	// when it is whole in the ring: the fault is its once the beat holds
	// an octet of an FPDU taken whole (P inside it) or the next FPDU's
	// header; while that header is not in the ring the reader waits as
	// for any partial FPDU (blocked), and the beat is read again later.
	// The FPDUs before it are delivered and judged; the turn then ends on
	// a DMA fault (CardRxErrDMA) with RXS_CI at the FPDU, as the model's
	// dmaFailed leaves it.
	fltNow := m.WireOf("eng_fault", And(in(sRun), Not(stopping), rdValid, rdBErr, Or(Not(atLim), hdrComing, pv)), "the head beat is a faulted read's, and the model reads it")
	fltHit := m.RegDecl("flt_hit", 1, "the turn ended on a faulted ring read")
	fltPos := m.Reg("flt_pos", 32, nil, P, fltNow, "the first octet not handed on (in the faulted beat)")
	mErr := m.WireOf("eng_mpa_err", And(Or(in(sRun), in(sDrain)), meV), "")
	yield := m.WireOf("eng_yield", And(blocked, others, Not(stopping)), "")
	// The next FPDU can never be taken whole: it is longer than the ring
	// (the model's Local Catastrophic Terminate), or the peer's stream
	// ended before its last octet (STREAM_CUT). Either ends the turn; the
	// error is reported once the FPDUs before it are judged.
	bigNow := m.WireOf("eng_too_large", And(blocked, pv, Lt(zext(rsize, 32), Sub(pe, lim)), Not(stopping)), "")
	cutNow := m.WireOf("eng_cut", And(blocked, aFin, Ne(aPI, lim), Not(bigNow), Not(stopping)), "octets of an FPDU are in the ring, and no more will come")
	bigHit := m.RegDecl("big_hit", 1, "the turn ended on an FPDU longer than the ring")
	cutHit := m.RegDecl("cut_hit", 1, "the turn ended on an FPDU cut by the end of the stream")
	m.Drive(bigHit, big.NewInt(0), Sel(goRun, C(1, 0), Or(bigHit, bigNow)), nil)
	m.Drive(cutHit, big.NewInt(0), Sel(goRun, C(1, 0), Or(cutHit, cutNow)), nil)
	m.Drive(fltHit, big.NewInt(0), Sel(goRun, C(1, 0), Or(fltHit, fltNow)), nil)
	m.Drive(stopping, big.NewInt(0), Sel(goRun, hostKill, Or(stopping, yield, mErr, deadNow, hostKill, bigNow, cutNow, fltNow)), nil)
	needPE := m.WireOf("need_pe", Sub(pe, lim), "")
	m.Drive(need, nil, Sel(ld, Bits(stRd, 17, 1), Sel(pv, Bits(needPE, 16, 0), hs)), Or(ld, yield))
	unused = append(unused, Bits(needPE, 31, 17))
	errHit := m.RegDecl("err_hit", 1, "the turn ended on an mpa_rx error")
	m.Drive(errHit, big.NewInt(0), Sel(goRun, C(1, 0), Or(errHit, mErr)), nil)
	// After a fault, every FPDU before the faulted one is out once the
	// next to deliver is the one not taken whole (at lim) or the one the
	// faulted beat cuts (its end past flt_pos), which mpa_rx never
	// completes. (ends is read a cycle late: right after a delivery it
	// shows the delivered FPDU's end, which is not past flt_pos.)
	fltOut := m.WireOf("flt_drained", Or(Eq(outOff, lim), And(Ne(accN, delN), Lt(Sub(fltPos, outOff), Sub(endRd, outOff)))), "every FPDU before the faulted one is delivered")
	drained := m.WireOf("eng_drained", And(Eq(reqOut, C(5, 0)), Not(rdValid), Sel(errHit, Eq(outOff, meO), Sel(fltHit, fltOut, Eq(outOff, lim))), Not(ciV), Not(mValid), Eq(pq.Count, C(pqCW, 0)), Not(inUlp)), "nothing in flight, every ULPDU out and judged")
	m.Drive(failQ, nil, Sel(And(ld, Not(hostKill)), Or(Bit(stRd, 0), Bit(deadRd, 0)), C(1, 1)), Or(ld, And(in(sDrain), drained, Or(errHit, tdead, deadNow, bigHit, cutHit, fltHit)), chkBad, chkCut, hostKillPre))

	// Errors.
	eV := m.RegDecl("err_v", 1, "")
	eQ := m.RegDecl("err_qp", QB, "")
	eK := m.RegDecl("err_kind", 3, "")
	eC := m.RegDecl("err_code", 3, "")
	eO := m.RegDecl("err_off", 32, "")
	mpaFail := m.WireOf("eng_mpa_fail", And(in(sDrain), drained, errHit, Not(tdead), Not(deadNow)), "the turn ends on an MPA error of a QP not failed before it")
	ownFail := m.WireOf("eng_own_fail", And(in(sDrain), drained, Not(errHit), Or(bigHit, cutHit, fltHit), Not(tdead), Not(deadNow)), "... on an FPDU too large or cut, or a faulted ring read")
	bigFail := m.WireOf("eng_big_fail", And(ownFail, bigHit), "")
	fltFail := m.WireOf("eng_flt_fail", And(ownFail, fltHit), "")
	// The address the model's read of the FPDU names: its first octet
	// (out_off, once drained), or the faulted page's when the FPDU
	// starts in an earlier page.
	fltPage := m.WireOf("flt_page", Cat(Bits(fltPos, 31, 12), C(12, 0)), "")
	fltSame := m.WireOf("flt_same_page", Not(Lt(zext(Bits(fltPos, 11, 0), 32), Sub(fltPos, outOff))), "the FPDU starts in the faulted page")
	fltAt := m.WireOf("flt_at", Sel(fltSame, outOff, fltPage), "")
	fltAddr := m.WireOf("flt_addr", Or(Cat(cBase, C(12, 0)), zext(And(Bits(fltAt, 24, 0), rmask), 64)), "")
	unused = append(unused, Bits(fltAt, 31, 25))
	own := m.WireOf("err_own", Or(chkBad, chkCut, ownFail), "the engine's own error: RXS_CI stays at the FPDU")
	eSet := m.WireOf("err_set", Or(mpaFail, own), "")
	// An MPA error's RXS_CI moves past its FPDU (with card_stat's RX_SPACE
	// and first ERROR record); an FPDU too large leaves it where it is and
	// reports none, as the model's Terminate does: card_tx's Terminate
	// record puts the status in ERROR.
	m.Assign(errCI, mpaFail)
	m.Drive(eV, big.NewInt(0), Or(eSet, And(eV, Not(eReady))), nil)
	m.Drive(eQ, nil, aq, eSet)
	m.Drive(eK, nil, Sel(chkBad, C(3, CardRxErrBadDoorbell), Sel(Or(chkCut, And(ownFail, cutHit)), C(3, CardRxErrStreamCut), Sel(bigFail, C(3, CardRxErrTooLarge), Sel(fltFail, C(3, CardRxErrDMA), meK)))), eSet)
	m.Drive(eC, nil, Sel(own, C(3, 0), meC), eSet)
	m.Drive(eO, nil, Sel(own, Sel(fltFail, outOff, lim), meO), eSet)
	eA := m.Reg("err_addr", 64, nil, fltAddr, eSet, "")
	m.Assign(eValid, eV)
	m.Assign(eQP, gate(eV, eQ))
	m.Assign(eKind, gate(eV, eK))
	m.Assign(eCode, gate(eV, eC))
	m.Assign(eOff, gate(eV, eO))
	m.Assign(eAddr, gate(And(eV, Eq(eK, C(3, CardRxErrDMA))), eA))

	// State machine.
	next := Sel(in(sIdle), Sel(popQP, C(4, sPop), C(4, sIdle)),
		Sel(in(sPop), C(4, sWait),
			Sel(in(sWait), C(4, sRead),
				Sel(in(sRead), C(4, sLoad),
					Sel(in(sLoad), C(4, sCheck),
						Sel(in(sCheck), Sel(goRun, C(4, sRun), Sel(Or(chkBad, chkCut), C(4, sEnd), C(4, sIdle))),
							Sel(in(sRun), Sel(stopping, C(4, sDrain), C(4, sRun)),
								Sel(in(sDrain), Sel(drained, C(4, sEnd), C(4, sDrain)),
									C(4, sIdle)))))))))
	m.Drive(st, big.NewInt(0), next, nil)
	// A Terminate of placement's or of m_err: its QP waits here to join
	// the Send engine's flush queue.
	flPend := m.RegDecl("fl_ext_v", 1, "a QP of s_fl waits to join the flush queue")
	flGo := m.Wire("fl_ext_go", 1, "it joins this cycle")
	m.Assign(flReady, Not(flPend))
	m.Drive(flPend, big.NewInt(0), Or(flValid, And(flPend, Not(flGo))), nil)
	flPendQP := m.Reg("fl_ext_qp", QB, nil, flQP, And(flValid, Not(flPend)), "")
	sndIdle := m.Wire("snd_idle_w", 1, "")
	sndKill := m.Wire("snd_kill", 1, "the Send engine failed a segment")
	sndKillQP := m.Wire("snd_kill_qp", 32, "")
	m.Assign(sIdleOut, sndIdle)
	su, err := cardRxSend(m, W, rxSendIn{create: create, errCmd: cmdErr, flRoom: flRoom, cQPN: errQPN, cPD: cPD, dbTake: dbTake, dbKind: dbKind, dbIndex: dbIndex, dbValue: dbValue, dbHold: dbHold,
		flExtV: flPend, flExtQP: flPendQP, flExtGo: flGo, sndIdle: sndIdle, res: sndRes, resErr: sndResErr, kill: sndKill, killQP: sndKillQP,
		wfCan: wfCan, wfGo: wfGo, wfQP: wfQP, wfRdy: wfRdy})
	if err != nil {
		return nil, err
	}
	unused = append(unused, su...)
	// Kills to placement: the Send engine's, and the host's (which waits a
	// cycle when both come at once, no other host failure taken then).
	hkPendQP := m.RegDecl("kill_host_pend_qp", QB, "")
	hkV := m.WireOf("kill_host_v", Or(hostFail, hkPend), "")
	hkQP := m.WireOf("kill_host_qp", Sel(hkPend, hkPendQP, hostFailQP), "")
	m.Drive(hkPend, big.NewInt(0), And(sndKill, hkV), nil)
	m.Drive(hkPendQP, nil, hkQP, And(sndKill, hkV))
	m.Assign(killValid, Or(sndKill, hkV))
	m.Assign(killQP, Sel(sndKill, sndKillQP, gate(hkV, zext(hkQP, 32))))
	m.Assign(clrValid, create)
	m.Assign(clrQP, gate(create, zext(Bits(cQPN, QB-1, 0), 32)))
	m.WireOf("unused_bits", RedOr(Cat(unused...)), "bits no logic reads (keeps lint quiet on purpose)")
	return m, m.Validate()
}

// PlaceAXI builds place_axi_w<width>: placement's DMA write port (one
// W/8-byte aligned block with byte strobes per beat) as AXI4 write bursts
// of one beat each.
func PlaceAXI(width int) (*Module, error) {
	W := width
	if W != 64 && W != 512 {
		return nil, fmt.Errorf("%w: place_axi data width %d (64 or 512)", ErrInvalid, W)
	}
	L := W / 8
	LB := log2(L)
	const outBits = 10 // up to 511 writes awaiting their response
	m := NewModule(fmt.Sprintf("place_axi_w%d", W), "AMBA AXI4 (write channels)",
		fmt.Sprintf("placement's DMA write port as AXI4 writes, %d-bit data: each block (a %d-byte aligned host address, data, byte strobes) becomes a one-beat INCR burst (awlen 0, awsize %d) on ID 0, so responses come back in order. Address and data are registered together and each is held until taken; a block is taken while both registers are free or being emptied and fewer than 511 writes await their response (responses come back in order on one ID, so a count is all the state they need: a 250-cycle response latency at one write per cycle needs 250).", W, L, LB),
		"m_berr pulses for one cycle when a write response is SLVERR or DECERR (the card reports a DMA fault), with m_berr_qp and m_berr_addr naming it: each write's QP (s_dma_qp) and first written byte (its address plus the lowest strobed lane, which is where the card model's refused piece starts) wait in a 512-entry RAM beside the count until its response. s_b_hold holds responses back (bready low) while the card cannot take another fault report.",
		"Outputs that belong to a valid (aw*, w*) read zero while it is low.")
	m.Clock()
	m.ResetPort()
	sAddr := m.Input("s_dma_addr", 64, "block address (placement m_dma)")
	sData := m.Input("s_dma_data", W, "")
	sStrb := m.Input("s_dma_strb", L, "")
	sValid := m.Input("s_dma_valid", 1, "")
	sReady := m.Output("s_dma_ready", 1, "")
	sQP := m.Input("s_dma_qp", cardRxQPBits, "the block's QP (reported with its write's fault)")
	bHold := m.Input("s_b_hold", 1, "hold write responses back (a fault report waits)")
	awID := m.Output("m_axi_awid", 4, "always 0")
	awAddr := m.Output("m_axi_awaddr", 64, "")
	awLen := m.Output("m_axi_awlen", 8, "always 0")
	awSize := m.Output("m_axi_awsize", 3, "")
	awBurst := m.Output("m_axi_awburst", 2, "1: INCR")
	awValid := m.Output("m_axi_awvalid", 1, "")
	awReady := m.Input("m_axi_awready", 1, "")
	wData := m.Output("m_axi_wdata", W, "")
	wStrb := m.Output("m_axi_wstrb", L, "")
	wLast := m.Output("m_axi_wlast", 1, "")
	wValid := m.Output("m_axi_wvalid", 1, "")
	wReady := m.Input("m_axi_wready", 1, "")
	bID := m.Input("m_axi_bid", 4, "not checked")
	bResp := m.Input("m_axi_bresp", 2, "")
	bValid := m.Input("m_axi_bvalid", 1, "")
	bReady := m.Output("m_axi_bready", 1, "")
	berr := m.Output("m_berr", 1, "a write got an error response")
	berrQP := m.Output("m_berr_qp", cardRxQPBits, "its QP")
	berrAddr := m.Output("m_berr_addr", 64, "its first written byte's address")

	awV := m.RegDecl("aw_v", 1, "")
	wV := m.RegDecl("w_v", 1, "")
	out := m.RegDecl("outstanding", outBits, "writes awaiting their response")
	awFree := m.WireOf("aw_free", Or(Not(awV), awReady), "")
	wFree := m.WireOf("w_free", Or(Not(wV), wReady), "")
	take := m.WireOf("take", And(sValid, awFree, wFree, Lt(out, C(outBits, 511))), "")
	m.Assign(sReady, And(awFree, wFree, Lt(out, C(outBits, 511))))
	m.Drive(awV, big.NewInt(0), Or(take, And(awV, Not(awReady))), nil)
	m.Drive(wV, big.NewInt(0), Or(take, And(wV, Not(wReady))), nil)
	aq := m.Reg("aw_addr", 64-LB, big.NewInt(0), Bits(sAddr, 63, LB), take, "")
	dq := m.Reg("w_data", W, nil, sData, take, "")
	sq := m.Reg("w_strb", L, big.NewInt(0), sStrb, take, "")
	bGo := m.WireOf("b_go", And(bValid, RedOr(out), Not(bHold)), "")
	m.Assign(bReady, And(RedOr(out), Not(bHold)))
	// Each write's QP and address, in issue order (responses come back in
	// order). The read port always reads the head after this cycle's pop:
	// an entry written at a take is read again before its response can
	// come (two cycles at the earliest), so the registered read data is
	// the head's whenever a response is taken.
	const fb = 9
	wp := m.RegDecl("ent_wp", fb, "next entry written")
	rp := m.RegDecl("ent_rp", fb, "the head entry (the oldest write awaiting its response)")
	m.Drive(wp, big.NewInt(0), Add(wp, C(fb, 1)), take)
	rpNext := m.WireOf("ent_rp_next", Sel(bGo, Add(rp, C(fb, 1)), rp), "")
	m.Drive(rp, big.NewInt(0), rpNext, nil)
	ent := m.Mem("ent", cardRxQPBits+64-LB+L, 1<<fb, take, wp, Cat(sQP, Bits(sAddr, 63, LB), sStrb), nil, rpNext,
		"per write awaiting its response: QP, block address, strobes")
	hStrb := m.WireOf("ent_strb", Bits(ent, L-1, 0), "")
	var low Expr = C(LB, 0)
	for i := L - 1; i >= 0; i-- {
		low = Sel(Bit(hStrb, i), C(LB, uint64(i)), low)
	}
	bErrNow := m.WireOf("b_err_now", And(bGo, Bit(bResp, 1)), "")
	m.Assign(berrQP, gate(bErrNow, Bits(ent, cardRxQPBits+64-LB+L-1, 64-LB+L)))
	m.Assign(berrAddr, gate(bErrNow, Cat(Bits(ent, 64-LB+L-1, L), m.WireOf("ent_low", low, "the first strobed lane"))))
	m.Drive(out, big.NewInt(0), Sub(Add(out, zext(take, outBits)), zext(bGo, outBits)), nil)
	m.Assign(awID, C(4, 0))
	m.Assign(awAddr, gate(awV, Cat(aq, C(LB, 0))))
	m.Assign(awLen, C(8, 0))
	m.Assign(awSize, gate(awV, C(3, uint64(LB))))
	m.Assign(awBurst, Cat(C(1, 0), awV))
	m.Assign(awValid, awV)
	m.Assign(wData, gate(wV, dq))
	m.Assign(wStrb, gate(wV, sq))
	m.Assign(wLast, wV)
	m.Assign(wValid, wV)
	m.Assign(berr, bErrNow)
	m.WireOf("unused_bits", RedOr(Cat(bID, Bit(bResp, 0), Bits(sAddr, LB-1, 0))), "bits no logic reads (keeps lint quiet on purpose)")
	return m, m.Validate()
}

// exposeInstance places of inside m and connects each of its ports either
// to conns[port] or, when absent, to a new port of m with the same name.
func exposeInstance(m *Module, name string, of *Module, conns map[string]Expr) {
	var cs []Conn
	for _, p := range of.Ports {
		if e, ok := conns[p.Name]; ok {
			cs = append(cs, Conn{p.Name, e})
			continue
		}
		if p.Dir == In {
			cs = append(cs, Conn{p.Name, m.Input(p.Name, p.W, "")})
			continue
		}
		o := m.Output(p.Name, p.W, "")
		w := m.Wire(name+"_"+p.Name, p.W, "")
		m.Assign(o, w)
		cs = append(cs, Conn{p.Name, w})
	}
	m.Instantiate(name, of, cs...)
}

// CardRxBench builds card_rx_tb_w<width>, the receive engine's
// co-simulation wrapper: card_rx and placement (at the card top in the
// card), wired as in the card; every other port is the wrapper's.
func CardRxBench(width int) (*Module, error) {
	rx, err := CardRx(width)
	if err != nil {
		return nil, err
	}
	pl, err := Placement(PlacementDefault(width))
	if err != nil {
		return nil, err
	}
	W, L := width, width/8
	m := NewModule(fmt.Sprintf("card_rx_tb_w%d", W), "docs/card-rtl.md",
		"Co-simulation wrapper of the receive engine: card_rx's ULPDUs go to placement (tagged segments placed through the STag table), whose untagged segments, STag checks and DMA blocks come back to card_rx, as in the card's top. Not part of the card itself.")
	clk := m.Clock()
	rst := m.ResetPort()
	w := func(n string, b int) *Signal { return m.Wire(n, b, "") }
	u := map[string]*Signal{
		"tdata": w("ulp_tdata", W), "tkeep": w("ulp_tkeep", L), "tvalid": w("ulp_tvalid", 1), "tready": w("ulp_tready", 1),
		"tlast": w("ulp_tlast", 1), "len": w("ulp_len", 16), "qp": w("ulp_qp", 32), "pd": w("ulp_pd", 32), "rev": w("ulp_rev", 1),
	}
	rxConns := map[string]Expr{"clk": clk, "rst": rst}
	plConns := map[string]Expr{"clk": clk, "rst": rst, "cfg_drop_after_fail": C(1, 1)}
	// Wires between the two, x_<card_rx's port>.
	x := map[string]*Signal{}
	for _, c := range CardRxPlacementWiring() {
		x[c[0]] = w("x_"+c[0], pl.Port(c[1]).W)
		rxConns[c[0]], plConns[c[1]] = x[c[0]], x[c[0]]
	}
	for _, n := range []string{"tdata", "tkeep", "tvalid", "tready", "tlast"} {
		rxConns["m_ulp_"+n], plConns["s_axis_"+n] = u[n], u[n]
	}
	for _, n := range []string{"len", "qp", "pd", "rev"} {
		rxConns["m_ulp_"+n], plConns["s_axis_tuser_"+n] = u[n], u[n]
	}
	exposeInstance(m, "rx", rx, rxConns)
	exposeInstance(m, "pl", pl, plConns)
	mon := m.Output("mon_ulp_beat", 1, "a ULPDU beat passes from card_rx to placement (for measurements)")
	m.Assign(mon, And(u["tvalid"], u["tready"]))
	monLast := m.Output("mon_ulp_last", 1, "... and it is a ULPDU's last")
	m.Assign(monLast, And(u["tvalid"], u["tready"], u["tlast"]))
	monInv := m.Output("mon_inv", 1, "card_rx invalidates an STag in placement's table (for the comparison)")
	m.Assign(monInv, And(x["m_inv_valid"], x["m_inv_ready"]))
	monInvIdx := m.Output("mon_inv_index", 24, "")
	m.Assign(monInvIdx, x["m_inv_index"])
	return m, m.Validate()
}

// CardRxPlacementWiring lists the connections between card_rx and
// placement besides the ULPDU stream, as (card_rx port, placement port):
// untagged segments, the STag check port, invalidations, placement's
// DMA blocks (written through card_rx's write master), its decisions and
// the failures and creations card_rx tells it of. The card top and
// card_rx_tb wire them alike.
func CardRxPlacementWiring() [][2]string {
	var w [][2]string
	for _, n := range []string{"tdata", "tkeep", "tvalid", "tready", "tlast", "qp", "len"} {
		w = append(w, [2]string{"s_host_" + n, "m_host_" + n})
	}
	for _, n := range []string{"valid", "ready", "stag", "pd", "qp", "to", "len", "use"} {
		w = append(w, [2]string{"m_rxk_" + n, "s_rxk_" + n})
	}
	for _, n := range []string{"valid", "fault", "addr"} {
		w = append(w, [2]string{"s_rxk_" + n, "m_rxk_" + n})
	}
	for _, n := range []string{"valid", "ready", "index"} {
		w = append(w, [2]string{"m_inv_" + n, "s_inv_" + n})
	}
	for _, n := range []string{"addr", "data", "strb", "valid", "ready", "qp"} {
		w = append(w, [2]string{"s_pl_dma_" + n, "m_dma_" + n})
	}
	for _, n := range []string{"valid", "ready", "qp", "stag", "to", "len"} {
		w = append(w, [2]string{"s_pl_done_" + n, "m_done_" + n})
	}
	for _, n := range []string{"valid", "dest", "dead"} {
		w = append(w, [2]string{"s_dec_" + n, "m_dec_" + n})
	}
	for _, n := range []string{"kill", "clear"} {
		w = append(w, [2]string{"m_" + n + "_valid", "s_" + n + "_valid"}, [2]string{"m_" + n + "_qp", "s_" + n + "_qp"})
	}
	return w
}
