package gen

import (
	"fmt"
	"math/big"
)

// Sizes of card_stat.
const (
	cardStatQPBits = 10  // QP numbers
	cardStatBytes  = 32  // a QP status record (docs/card.md QPSTAT)
	cardStatPend   = 16  // status writes and events awaiting their turn
	cardStatCtx    = 185 // per QP: TXS_PI, RXS_CI, SQ_CI, STATE, TXS_CI, ARM_TX, ARM_RX, TX_CLOSED, RQ_CI, SQ_PI, RXS_PI, RX_FIN, stream ended
)

// Events card_stat writes (EQE_TYPE values, docs/card.md), and its code for
// each in a pending entry.
const (
	cardStatEvTXData    = 2  // TX_DATA
	cardStatEvRXSpace   = 3  // RX_SPACE
	cardStatEvQPClosed  = 4  // QP_CLOSED
	cardStatEvStreamEnd = 5  // STREAM_END
	cardStatEvQPError   = 8  // QP_ERROR (INFO QP_ERR_HOST)
	cardStatEvDMAFault  = 10 // DMA_FAULT (OBJ 0: a status record; the card stops)
)

// QP_ERR values of card_stat's QP_ERROR events (TestCardTxCodes ties them
// to cardspec).
const (
	cardStatErrHost      = 1 // QP_CMD ERROR
	cardStatErrLLPLost   = 2 // STREAM.RX_LOST
	cardStatErrBadDB     = 6 // an RXS_PI doorbell past the ring's size
	cardStatErrStreamCut = 3 // the peer's stream ended inside an FPDU
	cardStatErrCQOverrun = 5 // a CQ of the QP overran (card_tx's QP_ERROR: cqSweep)
	cardTxErrDMA         = 4 // a DMA of the QP faulted (card_tx's QP_ERROR after a WQE read's DMA_FAULT)
)

// CardStat builds card_stat_w<width>: the writer of the QP status records
// (docs/card.md QPSTAT) and of the stream events TX_DATA and RX_SPACE,
// between the engines and card_cq.
func CardStat(width int) (*Module, error) {
	W := width
	if W != 64 && W != 512 {
		return nil, fmt.Errorf("%w: card_stat data width %d (64 or 512)", ErrInvalid, W)
	}
	dcfg := DMAWrDefault(W)
	dma, err := DMAWr(dcfg)
	if err != nil {
		return nil, err
	}
	QB := cardStatQPBits
	m := NewModule(fmt.Sprintf("card_stat_w%d", W), "docs/card.md (QPSTAT, QPSTAT_BASE, QP_DB.STREAM, EQE_TYPE), docs/card-model.md (WriteStatus; host/driver/cardmodel qp.go step, stream, rx.go consume)",
		fmt.Sprintf("The QP status records and the QP's stream and state events, %d-bit DMA: per QP the values the driver reads from its status record (TXS_PI, RXS_CI, SQ_CI, RQ_CI, STATE, TX_CLOSED) and what the stream events need (TXS_CI, ARM_TX, ARM_RX); %d bits of block RAM for %d QPs. Updated by QP_CMD CREATE (all zero, state RTS), CLOSE (a QP in RTS: CLOSING until SQ_CI reaches SQ_PI and it owes no Read Response (s_owed), then CLOSED with TX_CLOSED and a QP_CLOSED event), ERROR (a QP in RTS, CLOSING or CLOSED goes to ERROR with TX_CLOSED, and a QP_ERROR event with INFO HOST), DESTROY (a QP in CLOSED or ERROR goes back to RESET, nothing written), card_tx's records (s_tx: SQ_CI and TXS_PI after each WQE), card_rx's RXS_CI records (s_rx; with s_rx_err, the record of a failed FPDU, a live QP goes to ERROR with no event and no TX_CLOSED, which card_tx's Terminate record adds), card_rx's receive completions (s_rc: RQ_CI, and the CQE passed on) and the doorbells SQ_PI and PUSH (SQ_PI, for CLOSE), TXS_CI, RXS_PI and STREAM (s_db: ARM_TX, ARM_RX, RX_FIN; RX_LOST puts a live QP in ERROR with TX_CLOSED and a QP_ERROR event with INFO LLP_LOST). Each record update writes the QP's whole 32-byte record at QPSTAT_BASE + 32 x QPN with one DMA write through a dma_wr.", W, cardStatCtx, 1<<QB),
		"Events, as the card model gives them: TX_DATA once ARM_TX is set and TXS_PI differs from TXS_CI (checked at each transmit record, TXS_CI doorbell and STREAM doorbell; the arm is then spent); RX_SPACE at the first RXS_CI record after ARM_RX (spent); QP_ERROR with ERROR's (INFO HOST, BAD_DOORBELL when qp_cmd_bad_db says the ERROR is card_rx's bad RXS_PI doorbell, STREAM_CUT when qp_cmd_cut says it is card_rx's cut stream) or RX_LOST's record; QP_CLOSED with CLOSED's record; STREAM_END once RX_FIN is set and RXS_CI reaches RXS_PI (card_rx reports RXS_CI at FPDU boundaries) in a QP not in error. One event per update: QP_ERROR, QP_CLOSED or STREAM_END go first and a TX_DATA or RX_SPACE of the same update keeps its arm for the next.",
		fmt.Sprintf("Ordering: a completion (s_tx_cqe) or event is passed on (m_cpl to card_cq's completion port, m_ev to its event port) only once every status write taken before it has its write response, so the driver never sees a CQE or an event before the status record that publishes its indices (the card model writes the record first). Up to %d entries (status writes and events without a write) wait in order; the writes of one QP go out in the order of their updates (dma_wr keeps order), so the latest values win.", cardStatPend),
		"Updates are serial (a context read, its write-back and, for a record, the DMA request and the 32 bytes), QP commands first, then doorbells, then transmit and receive-side records alternately (RXS_CI records and receive completions alternately among the latter). With a STREAM_END or a QP_ERROR LLP_LOST event goes a record to card_tx (m_end, released with the event, after the status writes before it): card_tx flushes the QP's outstanding Reads, or puts the QP in error and flushes its WQEs (RX_LOST), as the card model does. busy says an update is served or an entry waits (card_tx's hold on tight CQs). Not yet: coalescing of updates.",
		"A status write whose response is an error (the host's IOMMU refused it) stops the card, as the card model's writeStatus does: when its entry reaches the head, its completion, event and stream-end record are not passed on; instead a DMA_FAULT event (OBJ 0, INFO the record's address bits 31:0) goes to m_ev with m_ev_stop (card_cq stops the card once it has written it), m_fault_* names the write (the QP and the record's address, for DMA_FAULT_*), and fatal rises. From then on updates are still taken (QP commands and doorbells must not stall), but nothing more is written or passed on.")
	clk := m.Clock()
	rst := m.ResetPort()
	cmdValid := m.Input("qp_cmd_valid", 1, "QP command (card_regs, forked by the top)")
	cmdReady := m.Output("qp_cmd_ready", 1, "")
	cmdOp := m.Input("qp_cmd_op", 4, "QP_OP: CREATE (1), CLOSE (2), ERROR (3), DESTROY (4)")
	cmdQPN := m.Input("qp_num_qpn", 16, "")
	cmdBadDB := m.Input("qp_cmd_bad_db", 1, "the ERROR is card_rx's for an RXS_PI doorbell past the ring's size: its QP_ERROR says BAD_DOORBELL")
	cmdCut := m.Input("qp_cmd_cut", 1, "the ERROR is card_rx's for a stream that ended inside an FPDU: its QP_ERROR says STREAM_CUT")
	baseLo := m.Input("qpstat_base_lo", 32, "QPSTAT_BASE (32-byte aligned)")
	baseHi := m.Input("qpstat_base_hi", 32, "")
	dbValid := m.Input("s_db_valid", 1, "doorbell (card_regs m_db, forked by the top): SQ_PI, TXS_CI, RXS_PI, STREAM and PUSH act, other kinds are taken without effect")
	dbReady := m.Output("s_db_ready", 1, "")
	dbKind := m.Input("s_db_kind", 3, "DB_KIND")
	dbIndex := m.Input("s_db_index", QB, "QP number")
	dbValue := m.Input("s_db_value", 32, "the register's value as written")
	txValid := m.Input("s_tx_valid", 1, "card_tx's record (m_cpl)")
	txReady := m.Output("s_tx_ready", 1, "")
	txQPN := m.Input("s_tx_qpn", QB, "")
	txSQCI := m.Input("s_tx_sq_ci", 16, "")
	txPI := m.Input("s_tx_txs_pi", 32, "")
	txCQE := m.Input("s_tx_cqe", 1, "the record carries a CQE")
	txCQ := m.Input("s_tx_cq", QB, "")
	txWRID := m.Input("s_tx_wr_id", 64, "")
	txOpc := m.Input("s_tx_opcode", 8, "")
	txStatus := m.Input("s_tx_status", 8, "")
	txLen := m.Input("s_tx_byte_len", 32, "")
	txTermCause := m.Input("s_tx_term_cause", 16, "the CQE's TERM_LAYER (15:12), TERM_TYPE (11:8), TERM_CODE (7:0): the peer's Terminate that blames the WQE, else 0")
	txTerm := m.Input("s_tx_term", 1, "the record is card_tx's Terminate: a live QP goes to ERROR with TX_CLOSED (card_tx raised TERM_SENT; no QP_ERROR)")
	txKeep := m.Input("s_tx_keep_txs", 1, "the record leaves TXS_PI as it is (card_tx's records of a QP whose transmit ring write was refused publish no further)")
	rxValid := m.Input("s_rx_valid", 1, "card_rx's RXS_CI (m_ci)")
	rxReady := m.Output("s_rx_ready", 1, "")
	rxQPN := m.Input("s_rx_qpn", QB, "")
	rxCI := m.Input("s_rx_rxs_ci", 32, "")
	rxErr := m.Input("s_rx_err", 1, "the FPDU it moved past failed: a live QP goes to ERROR (TX_CLOSED and the events come with card_tx's Terminate record)")
	rcValid := m.Input("s_rc_valid", 1, "card_rx's receive completion (m_cpl) with its RQ_CI")
	rcReady := m.Output("s_rc_ready", 1, "")
	rcQPN := m.Input("s_rc_qpn", 16, "")
	rcRQCI := m.Input("s_rc_rq_ci", 16, "RQ_CI past the completed WQE")
	rcCQ := m.Input("s_rc_cq", QB, "")
	rcWRID := m.Input("s_rc_wr_id", 64, "")
	rcOpc := m.Input("s_rc_opcode", 8, "")
	rcStatus := m.Input("s_rc_status", 8, "")
	rcLen := m.Input("s_rc_byte_len", 32, "")
	rcInv := m.Input("s_rc_inv_stag", 32, "")
	rcSol := m.Input("s_rc_solicited", 1, "")
	rcInvd := m.Input("s_rc_invalidated", 1, "")
	rcSilent := m.Input("s_rc_silent", 1, "no CQE: only RQ_CI moves (receive WQEs dropped after a faulted read, as the card model's fetchRQ)")
	cplValid := m.Output("m_cpl_valid", 1, "a completion for card_cq, after its status write")
	cplReady := m.Input("m_cpl_ready", 1, "")
	cplCQ := m.Output("m_cpl_cq", QB, "")
	cplQPN := m.Output("m_cpl_qpn", QB, "")
	cplWRID := m.Output("m_cpl_wr_id", 64, "")
	cplOpc := m.Output("m_cpl_opcode", 8, "")
	cplStatus := m.Output("m_cpl_status", 8, "")
	cplLen := m.Output("m_cpl_byte_len", 32, "")
	cplInv := m.Output("m_cpl_inv_stag", 32, "")
	cplSol := m.Output("m_cpl_solicited", 1, "")
	cplInvd := m.Output("m_cpl_invalidated", 1, "")
	cplTL := m.Output("m_cpl_term_layer", 4, "the Terminate behind an error status (transmit completions only)")
	cplTT := m.Output("m_cpl_term_type", 4, "")
	cplTC := m.Output("m_cpl_term_code", 8, "")
	evValid := m.Output("m_ev_valid", 1, "an event for card_cq, after the status writes taken before it")
	evReady := m.Input("m_ev_ready", 1, "")
	evType := m.Output("m_ev_type", 8, "EQE_TYPE: TX_DATA, RX_SPACE, QP_CLOSED, STREAM_END or QP_ERROR")
	evQPN := m.Output("m_ev_qpn", QB, "OBJ: the QP")
	evInfo := m.Output("m_ev_info", 32, "INFO: QP_ERR_HOST or QP_ERR_LLP_LOST for QP_ERROR, a DMA_FAULT's address bits 31:0, else 0")
	evStop := m.Output("m_ev_stop", 1, "the event is the DMA_FAULT of a status write: the card stops once it is written")
	endValid := m.Output("m_end_valid", 1, "the peer's stream of a QP ended (with its STREAM_END event) or was lost (with QP_ERROR LLP_LOST): card_tx's s_end")
	endReady := m.Input("m_end_ready", 1, "")
	endQPN := m.Output("m_end_qpn", QB, "the QP")
	endLost := m.Output("m_end_lost", 1, "RX_LOST (else the stream ended)")
	faultV := m.Output("m_fault_valid", 1, "pulse: a status write got an error response (its DMA_FAULT event is taken this cycle)")
	faultQPN := m.Output("m_fault_qpn", QB, "the QP whose record it was")
	faultAddr := m.Output("m_fault_addr", 64, "the record's address")
	fatalO := m.Output("fatal", 1, "a status write got an error response: nothing more is written or passed on")
	busyO := m.Output("busy", 1, "an update is served or an entry (a status write, a completion, an event) waits: a completion taken may not have reached card_cq")
	var unused []Expr

	// The update's steps, one flag each (none: idle): read (the context
	// read in flight), calc (the context's terms registered, the update
	// acts), data (the record's beats; its request waits in req_pend).
	sRead := m.RegDecl("st_read", 1, "the context read is in flight")
	sCalc := m.RegDecl("st_calc", 1, "the update acts")
	sBeat := m.RegDecl("st_data", 1, "the record's beats go to dma_wr")
	idle := m.WireOf("st_idle", Not(Or(sRead, sCalc, sBeat)), "")
	PB := log2(cardStatPend)
	pendCnt := m.RegDecl("pend_count", PB+1, "entries waiting (status writes and events)")
	m.Assign(busyO, Or(Not(idle), RedOr(pendCnt)))
	room := m.WireOf("pend_room", Lt(pendCnt, C(PB+1, cardStatPend)), "")
	turn := m.RegDecl("rr_rx", 1, "the receive side goes first next time")
	fatal := m.RegDecl("fatal_q", 1, "a status write faulted (its DMA_FAULT event is taken): nothing more is written or passed on")
	free := m.WireOf("free", And(idle, Or(room, fatal)), "an update can be taken")
	takeCmd := m.WireOf("take_cmd", And(free, cmdValid), "")
	takeDb := m.WireOf("take_db", And(free, Not(cmdValid), dbValid), "")
	other := m.WireOf("free_rec", And(free, Not(cmdValid), Not(dbValid)), "")
	// Records round robin: after a transmit record the receive side's
	// come first, after those the transmit side's.
	rxSide := m.WireOf("rx_side_valid", Or(rxValid, rcValid), "")
	txFirst := m.WireOf("tx_first", Or(Not(turn), Not(rxSide)), "")
	takeTx := m.WireOf("take_tx", And(other, txValid, txFirst), "")
	takeRxSide := m.WireOf("take_rx_side", And(other, rxSide, Not(And(txValid, txFirst))), "")
	rcTurn := m.RegDecl("rr_rc", 1, "a receive completion goes before an RXS_CI record next time")
	takeRc := m.WireOf("take_rc", And(takeRxSide, rcValid, Or(rcTurn, Not(rxValid))), "")
	takeRx := m.WireOf("take_rx", And(takeRxSide, Not(takeRc)), "")
	m.Assign(cmdReady, takeCmd)
	m.Assign(dbReady, takeDb)
	m.Assign(txReady, takeTx)
	m.Assign(rxReady, takeRx)
	m.Assign(rcReady, takeRc)
	m.Drive(turn, big.NewInt(0), takeTx, Or(takeTx, takeRxSide))
	m.Drive(rcTurn, big.NewInt(0), takeRx, Or(takeRx, takeRc))
	take := m.WireOf("take", Or(takeCmd, takeDb, takeTx, takeRxSide), "")
	cmdActs := m.WireOf("take_cmd_acts", And(takeCmd, Or(Eq(cmdOp, C(4, 1)), Eq(cmdOp, C(4, 2)), Eq(cmdOp, C(4, 3)), Eq(cmdOp, C(4, 4)))), "CREATE, CLOSE, ERROR, DESTROY")
	dbActs := m.WireOf("take_db_acts", And(takeDb, Or(Eq(dbKind, C(3, 1)), Eq(dbKind, C(3, 3)), Eq(dbKind, C(3, 4)), Eq(dbKind, C(3, 5)), Eq(dbKind, C(3, 6)))), "SQ_PI, TXS_CI, RXS_PI, STREAM, PUSH")
	doCtx := m.WireOf("take_ctx", Or(cmdActs, dbActs, takeTx, takeRxSide), "an update that reads and writes the context")
	unused = append(unused, Bits(cmdQPN, 15, QB), Bits(rcQPN, 15, QB))

	// The operation being served: 0 CREATE, 1 transmit record, 2 receive
	// record, 3 TXS_CI, 4 STREAM, 5 ERROR, 6 DESTROY, 7 receive completion,
	// 8 CLOSE, 9 SQ_PI, 10 PUSH, 11 RXS_PI.
	const (
		kCreate = iota
		kTx
		kRx
		kTXSCI
		kStream
		kError
		kDestroy
		kRc
		kClose
		kSQPI
		kPush
		kRXSPI
	)
	cmdKind := Sel(Eq(cmdOp, C(4, 1)), C(4, kCreate), Sel(Eq(cmdOp, C(4, 2)), C(4, kClose), Sel(Eq(cmdOp, C(4, 3)), C(4, kError), C(4, kDestroy))))
	dbK := Sel(Eq(dbKind, C(3, 3)), C(4, kTXSCI), Sel(Eq(dbKind, C(3, 5)), C(4, kStream), Sel(Eq(dbKind, C(3, 1)), C(4, kSQPI), Sel(Eq(dbKind, C(3, 4)), C(4, kRXSPI), C(4, kPush)))))
	takeQPN := Sel(takeCmd, Bits(cmdQPN, QB-1, 0), Sel(takeDb, dbIndex, Sel(takeTx, txQPN, Sel(takeRc, Bits(rcQPN, QB-1, 0), rxQPN))))
	opQPN := m.Reg("op_qpn", QB, nil, takeQPN, take, "")
	opKind := m.Reg("op_kind", 4, nil, Sel(takeCmd, cmdKind, Sel(takeDb, dbK, Sel(takeTx, C(4, kTx), Sel(takeRc, C(4, kRc), C(4, kRx))))), take, "")
	base := m.WireOf("base", Cat(baseHi, baseLo), "")
	unused = append(unused, Bits(base, 4, 0))
	opV1 := m.Reg("op_v1", 32, nil, Sel(takeDb, dbValue, Sel(takeTx, txPI, rxCI)), take, "TXS_PI, RXS_CI or the doorbell's value")
	opSQCI := m.Reg("op_sq_ci", 16, nil, Sel(takeTx, txSQCI, rcRQCI), take, "SQ_CI or RQ_CI")
	opBadDB := m.Reg("op_bad_db", 1, nil, And(takeCmd, cmdBadDB), take, "the ERROR is a bad doorbell's")
	opCut := m.Reg("op_cut", 1, nil, And(takeCmd, cmdCut), take, "the ERROR is a cut stream's")
	opTerm := m.Reg("op_term", 1, nil, Or(And(takeTx, txTerm), And(takeRx, rxErr)), take, "the transmit record is a Terminate's, or the RXS_CI record a failed FPDU's")
	opKeep := m.Reg("op_keep_txs", 1, nil, And(takeTx, txKeep), take, "the transmit record leaves TXS_PI")
	// The completion: {has one, Terminate cause, invalidated, solicited,
	// inv_stag, cq, qpn, wr_id, opcode, status, byte_len}.
	cplW := QB + QB + 64 + 8 + 8 + 32 + 32 + 1 + 1 + 16 + 1
	opCpl := m.Reg("op_cpl", cplW, nil, Sel(takeTx,
		Cat(txCQE, txTermCause, C(34, 0), txCQ, txQPN, txWRID, txOpc, txStatus, txLen),
		Cat(And(takeRc, Not(rcSilent)), C(16, 0), rcInvd, rcSol, rcInv, rcCQ, Bits(rcQPN, QB-1, 0), rcWRID, rcOpc, rcStatus, rcLen)), take, "the completion to pass on, the top bit: has one")
	dataDone := m.Wire("data_done", 1, "dma_wr took the last beat")

	// Context RAM: {RQ_CI 16, TX_CLOSED, ARM_RX, ARM_TX, TXS_CI 32, STATE 4,
	// SQ_CI 16, RXS_CI 32, TXS_PI 32}.
	ctxW := cardStatCtx
	wrData := m.Wire("ctx_wr_data", ctxW, "")
	ctx := m.Mem("ctx", ctxW, 1<<QB, sCalc, opQPN, wrData, doCtx, takeQPN, "per QP status and stream-event values (read data held until the next update)")
	oldPI := m.WireOf("old_txs_pi", Bits(ctx, 31, 0), "")
	oldCI := m.WireOf("old_rxs_ci", Bits(ctx, 63, 32), "")
	oldSQ := m.WireOf("old_sq_ci", Bits(ctx, 79, 64), "")
	oldSt := m.WireOf("old_state", Bits(ctx, 83, 80), "")
	oldTCI := m.WireOf("old_txs_ci", Bits(ctx, 115, 84), "")
	oldArmTX := m.WireOf("old_arm_tx", Bit(ctx, 116), "")
	oldArmRX := m.WireOf("old_arm_rx", Bit(ctx, 117), "")
	oldTXC := m.WireOf("old_tx_closed", Bit(ctx, 118), "")
	oldRQ := m.WireOf("old_rq_ci", Bits(ctx, 134, 119), "")
	oldSQPI := m.WireOf("old_sq_pi", Bits(ctx, 150, 135), "")
	oldRXSPI := m.WireOf("old_rxs_pi", Bits(ctx, 182, 151), "")
	oldFin := m.WireOf("old_rx_fin", Bit(ctx, 183), "")
	oldEnded := m.WireOf("old_rx_ended", Bit(ctx, 184), "")

	// Read step: the update's wide comparisons, from the context and the
	// operation, registered for the calc step.
	var kinds []Expr
	for k := kRXSPI; k >= kCreate; k-- {
		kinds = append(kinds, Eq(opKind, C(4, uint64(k))))
	}
	opK := m.Reg("op_k", kRXSPI+1, nil, Cat(kinds...), sRead, "the operation, one-hot")
	isK := func(k int) Expr { return Bit(opK, k) }
	rdIs := func(k int) Expr { return Eq(opKind, C(4, uint64(k))) }
	pTxNe := m.Reg("p_txs_ne", 1, nil, Sel(rdIs(kTx), Ne(Sel(opKeep, oldPI, opV1), oldTCI), Sel(rdIs(kTXSCI), Ne(oldPI, opV1), Ne(oldPI, oldTCI))), sRead,
		"TXS_PI differs from TXS_CI after a transmit record, TXS_CI or STREAM doorbell")
	pRxEq := m.Reg("p_rxs_eq", 1, nil, Sel(rdIs(kRx), Eq(opV1, oldRXSPI), Sel(rdIs(kRXSPI), Eq(oldCI, opV1), Eq(oldCI, oldRXSPI))), sRead,
		"RXS_CI equals RXS_PI after an RXS_CI record, RXS_PI or STREAM doorbell")
	pSqEq := m.Reg("p_sq_eq", 1, nil, Sel(rdIs(kTx), Eq(opSQCI, oldSQPI), Eq(oldSQ, oldSQPI)), sRead, "SQ_CI equals SQ_PI after a transmit record or CLOSE")
	// Read Responses the QP still owes (card_tx's, asked for the QP of
	// the update being read): a closing QP is not CLOSED while it owes
	// one, as the card model's drained.
	m.Assign(m.Output("m_owed_qpn", QB, "the QP whose Read Responses owed s_owed answers (during the context read)"), gate(sRead, opQPN))
	pOwed := m.Reg("p_owed", 1, nil, m.Input("s_owed", 1, "the QP of m_owed_qpn owes a Read Response (card_tx's pool, engine, records; card_rx's record on its way)"), sRead, "")
	pSQPIInc := m.Reg("p_sq_pi_inc", 16, nil, Add(oldSQPI, C(16, 1)), sRead, "")
	pSt := m.Reg("p_state", 4, nil, Cat(Eq(oldSt, C(4, 4)), Eq(oldSt, C(4, 3)), Eq(oldSt, C(4, 2)), Eq(oldSt, C(4, 1))), sRead,
		"STATE: ERROR, CLOSED, CLOSING, RTS (one-hot, none: RESET)")
	inSt := func(q int) Expr { return Bit(pSt, q-1) } // QP_STATE q (1..4)
	// recAddr is QP qpn's record address, QPSTAT_BASE + 32 x QPN: the
	// QPN is added to base bits 14:5 only, with its carry into 63:15.
	recAddr := func(name string, qpn Expr) Expr {
		off := m.WireOf(name+"_off", Add(zext(Bits(base, 14, 5), QB+1), zext(qpn, QB+1)), "QPSTAT_BASE bits 14:5 plus the QPN, with its carry")
		return Cat(Sel(Bit(off, QB), IncBits(base, 63, 15), Bits(base, 63, 15)), Bits(off, QB-1, 0), C(5, 0))
	}
	reqAddr := m.Reg("dw_req_addr_q", 64, nil, recAddr("qp", opQPN), sRead, "QPSTAT_BASE + 32 x QPN")
	newSQPI := m.WireOf("new_sq_pi", Sel(isK(kCreate), C(16, 0), Sel(isK(kSQPI), Bits(opV1, 15, 0), Sel(isK(kPush), pSQPIInc, oldSQPI))), "SQ_PI: SQ_PI doorbells, a push posts one block more")
	// QP_STATE: RESET 0, RTS 1, CLOSING 2, CLOSED 3, ERROR 4.
	live := m.WireOf("op_live", Or(inSt(1), inSt(2), inSt(3)), "ERROR acts: the QP is in RTS, CLOSING or CLOSED")
	lost := m.WireOf("op_lost", And(isK(kStream), Bit(opV1, 1), live), "STREAM.RX_LOST: QP_ERROR LLP_LOST")
	toErr := m.WireOf("op_to_error", Or(And(isK(kError), live), lost), "")
	termErr := m.WireOf("op_term_error", And(isK(kTx), opTerm, Or(live, inSt(4))), "card_tx sent the QP's Terminate: ERROR with TX_CLOSED, no event")
	rxFail := m.WireOf("op_rx_error", And(isK(kRx), opTerm, live), "card_rx moved RXS_CI past a failed FPDU: ERROR, no event (the model's first ERROR record)")
	freed := m.WireOf("op_freed", And(isK(kDestroy), Or(inSt(3), inSt(4))), "DESTROY acts")
	newPI := m.WireOf("new_txs_pi", Sel(isK(kCreate), C(32, 0), Sel(And(isK(kTx), Not(opKeep)), opV1, oldPI)), "")
	newTCI := m.WireOf("new_txs_ci", Sel(isK(kCreate), C(32, 0), Sel(isK(kTXSCI), opV1, oldTCI)), "")
	armTX := m.WireOf("arm_tx", And(Not(isK(kCreate)), Or(oldArmTX, And(isK(kStream), Bit(opV1, 8)))), "ARM_TX, with this STREAM doorbell's")
	armRX := m.WireOf("arm_rx", And(Not(isK(kCreate)), Or(oldArmRX, And(isK(kStream), Bit(opV1, 9)))), "ARM_RX, with this STREAM doorbell's")
	evTX := m.WireOf("ev_tx_data", And(armTX, Or(isK(kTx), isK(kTXSCI), isK(kStream)), pTxNe), "TX_DATA: armed, and bytes past TXS_CI")
	evRX := m.WireOf("ev_rx_space", And(armRX, isK(kRx)), "RX_SPACE: armed, and receive stream bytes consumed")
	newCI := m.WireOf("new_rxs_ci", Sel(isK(kCreate), C(32, 0), Sel(isK(kRx), opV1, oldCI)), "")
	newRXSPI := m.WireOf("new_rxs_pi", Sel(isK(kCreate), C(32, 0), Sel(isK(kRXSPI), opV1, oldRXSPI)), "")
	newFin := m.WireOf("new_rx_fin", And(Not(isK(kCreate)), Or(oldFin, And(isK(kStream), Bit(opV1, 0)))), "STREAM.RX_FIN seen")
	// STREAM_END: the peer's stream ended and the card has consumed the
	// ring up to its end (at an FPDU boundary: card_rx reports RXS_CI
	// only there), in a QP not in error (the model's rxStep).
	streamEnd := m.WireOf("op_stream_end", And(Or(isK(kStream), isK(kRx), isK(kRXSPI)), newFin, Not(oldEnded), pRxEq, live, Not(lost), Not(rxFail)), "")
	newEnded := And(Not(isK(kCreate)), Or(oldEnded, streamEnd))
	newSQ := m.WireOf("new_sq_ci", Sel(isK(kCreate), C(16, 0), Sel(isK(kTx), opSQCI, oldSQ)), "")
	// CLOSE: CLOSING until the posted send work is done (SQ_CI reaches
	// SQ_PI), then CLOSED with TX_CLOSED and QP_CLOSED (the model's step).
	closing := m.WireOf("op_closing", Or(And(isK(kClose), inSt(1)), And(isK(kTx), Not(opTerm), inSt(2))), "CLOSE on a QP in RTS, or a record of a closing QP")
	closed := m.WireOf("op_closed", And(closing, pSqEq, Not(pOwed)), "the QP's posted send work and owed Read Responses are done: CLOSED")
	newSt := Sel(isK(kCreate), C(4, 1), Sel(Or(toErr, termErr, rxFail), C(4, 4), Sel(freed, C(4, 0), Sel(closed, C(4, 3), Sel(closing, C(4, 2), oldSt)))))
	newTXC := And(Not(isK(kCreate)), Not(freed), Or(oldTXC, toErr, termErr, closed))
	newRQ := Sel(isK(kCreate), C(16, 0), Sel(isK(kRc), opSQCI, oldRQ))
	// One event per update: QP_CLOSED goes before a TX_DATA of the same
	// record, whose arm then stays for the next update.
	firstEv := Or(closed, toErr, streamEnd)
	txSpent := And(evTX, Not(firstEv))
	rxSpent := And(evRX, Not(streamEnd))
	m.Assign(wrData, Cat(newEnded, newFin, newRXSPI, newSQPI, newRQ, newTXC, And(armRX, Not(rxSpent)), And(armTX, Not(txSpent)), newTCI, newSt, newSQ, newCI, newPI))
	writes := m.WireOf("op_writes", Or(isK(kCreate), isK(kTx), isK(kRx), isK(kRc), toErr, And(isK(kClose), closing)), "the update writes the status record")
	ev := m.WireOf("op_ev", Or(evTX, evRX, toErr, closed, streamEnd), "the update gives an event")
	evCode := m.WireOf("op_ev_code", Sel(lost, C(3, 5), Sel(toErr, Sel(opBadDB, C(3, 6), Sel(opCut, C(3, 7), C(3, 2))), Sel(closed, C(3, 3), Sel(streamEnd, C(3, 4), Sel(evRX, C(3, 1), C(3, 0)))))),
		"0 TX_DATA, 1 RX_SPACE, 2 QP_ERROR HOST, 3 QP_CLOSED, 4 STREAM_END, 5 QP_ERROR LLP_LOST, 6 QP_ERROR BAD_DOORBELL, 7 QP_ERROR STREAM_CUT")
	rec := m.Reg("rec", 128, nil, Cat(C(23, 0), Bit(wrData, 118), C(4, 0), Bits(wrData, 83, 80), Bits(wrData, 134, 119), Bits(wrData, 79, 0)), sCalc,
		"the record's first 16 bytes (the rest is zero): TXS_PI, RXS_CI, SQ_CI, RQ_CI, STATE, TX_CLOSED")
	calcWrites := m.WireOf("calc_writes", And(sCalc, writes, Not(fatal)), "")
	m.Assign(m.Output("m_done_valid", 1, "pulse: the QP reached CLOSED or ERROR (card_cmd's QP classes: DESTROY is taken from here on)"),
		And(sCalc, Or(closed, toErr, termErr, rxFail)))
	m.Assign(m.Output("m_done_qpn", QB, ""), gate(sCalc, opQPN))
	m.Assign(m.Output("m_done_closed", 1, "pulse (with m_done_valid and m_done_qpn): the QP reached CLOSED (card_tx answers its Read Requests no more)"), And(sCalc, closed))
	m.Drive(sRead, big.NewInt(0), doCtx, nil)
	m.Drive(sCalc, big.NewInt(0), sRead, nil)
	m.Drive(sBeat, big.NewInt(0), Or(calcWrites, And(sBeat, Not(dataDone))), nil)

	// dma_wr: request, then the beats.
	L := W / 8
	beats := max(1, cardStatBytes/L)
	BTW := max(1, log2(beats))
	beat := m.RegDecl("beat", BTW, "next beat of the record")
	reqV := m.RegDecl("req_pend", 1, "the record's request waits for dma_wr")
	reqR := m.Wire("dw_req_ready", 1, "")
	m.Drive(reqV, big.NewInt(0), Or(calcWrites, And(reqV, Not(reqR))), nil)
	sV := m.WireOf("dw_s_valid", sBeat, "")
	sR := m.Wire("dw_s_ready", 1, "")
	sTake := m.WireOf("dw_s_take", And(sV, sR), "")
	last := m.WireOf("beat_last", Eq(beat, C(BTW, uint64(beats-1))), "")
	m.Assign(dataDone, And(sTake, last))
	var data Expr
	if beats == 1 {
		data = zext(rec, W)
		unused = append(unused, beat)
		m.Drive(beat, big.NewInt(0), C(BTW, 0), nil)
	} else {
		var slices []Expr
		for k := 0; k < beats; k++ {
			if (k+1)*W <= 128 {
				slices = append(slices, Bits(rec, (k+1)*W-1, k*W))
			} else {
				slices = append(slices, C(W, 0))
			}
		}
		data = muxTree(selBits(beat, 0, BTW), slices)
		m.Drive(beat, big.NewInt(0), Sel(last, C(BTW, 0), Add(beat, C(BTW, 1))), sTake)
	}
	sData := m.WireOf("dw_s_data", data, "")

	// Entries in order: a status write (with the completion and event it
	// releases) or an event alone (an update that writes nothing), pushed
	// in the calc step. An entry leaves once its write has its response
	// (dma_wr's responses come in the order of the writes: done_count
	// counts those the head entries have not yet claimed) and what it
	// releases is taken.
	doneV := m.Wire("dw_done_valid", 1, "")
	doneTag := m.Wire("dw_done_tag", dcfg.TagBits, "")
	doneErr := m.Wire("dw_done_err", 1, "")
	unused = append(unused, doneTag)
	push := m.WireOf("pend_push", And(sCalc, Or(writes, ev), Not(fatal)), "")
	entW := 1 + 4 + QB + cplW
	ent := Cat(writes, ev, evCode, opQPN, gate(writes, opCpl))
	wp := m.RegDecl("pend_wp", PB, "")
	rp := m.RegDecl("pend_rp", PB, "")
	// Each entry keeps its record's address as written: a DMA_FAULT names
	// it even if QPSTAT_BASE changed while the write waited for its
	// response.
	var ents, addrs []Expr
	for i := 0; i < cardStatPend; i++ {
		at := And(push, Eq(wp, C(PB, uint64(i))))
		ents = append(ents, m.Reg(fmt.Sprintf("pend%d", i), entW, nil, ent, at, "{write, event, event code, QPN, completion}"))
		addrs = append(addrs, m.Reg(fmt.Sprintf("pend%d_addr", i), 59, nil, Bits(reqAddr, 63, 5), at, "its record's address, bits 63:5"))
	}
	head := m.WireOf("pend_head", muxTree(selBits(rp, 0, PB), ents), "")
	has := m.WireOf("pend_any", Ne(pendCnt, C(PB+1, 0)), "")
	hWr := m.WireOf("head_write", Bit(head, entW-1), "the head is a status write")
	hEv := m.WireOf("head_ev", Bit(head, entW-2), "the head releases an event")
	hCpl := m.WireOf("head_cpl", Bit(head, cplW-1), "the head releases a completion")
	doneCnt := m.RegDecl("done_count", PB+1, "write responses the entries have not claimed")
	// done_errs bit i: the i-th unclaimed write response was an error.
	doneErrs := m.RegDecl("done_errs", cardStatPend, "which unclaimed write responses were errors, oldest in bit 0")
	anyDone := m.WireOf("done_any", RedOr(doneCnt), "")
	ready := m.WireOf("head_ready", And(has, Or(Not(hWr), anyDone)), "the head's write (if any) has its response")
	headBad := m.WireOf("head_faulted", And(ready, hWr, Bit(doneErrs, 0), Not(fatal)), "the head's status write got an error response: the card stops")
	good := m.WireOf("head_good", And(ready, Not(headBad), Not(fatal)), "the head may release what it carries")
	hCode := m.WireOf("head_ev_code", Bits(head, entW-3, entW-5), "")
	hEnd := m.WireOf("head_end", And(hEv, Or(Eq(hCode, C(3, 4)), Eq(hCode, C(3, 5)))), "the head's event is STREAM_END or QP_ERROR LLP_LOST: card_tx gets a record too")
	endDone := m.RegDecl("end_taken", 1, "the head's stream-end record is taken")
	endV := m.WireOf("end_v", And(good, hEnd, Not(endDone)), "")
	endOK := m.WireOf("end_ok", Or(Not(hEnd), endDone, endReady), "")
	cplDone := m.RegDecl("cpl_taken", 1, "the head's completion is taken")
	evDone := m.RegDecl("ev_taken", 1, "the head's event is taken")
	cplV := m.WireOf("cpl_v", And(good, hCpl, Not(cplDone)), "")
	evV := m.WireOf("ev_v", Or(And(good, hEv, Not(evDone)), headBad), "its event, or the DMA_FAULT of its write")
	cplOK := m.WireOf("cpl_ok", Or(Not(hCpl), cplDone, cplReady), "")
	evOK := m.WireOf("ev_ok", Or(Not(hEv), evDone, evReady), "")
	pop := m.WireOf("pend_pop", And(good, cplOK, evOK, endOK), "")
	m.Drive(endDone, big.NewInt(0), And(Not(pop), Or(endDone, And(endV, endReady))), nil)
	m.Drive(cplDone, big.NewInt(0), And(Not(pop), Or(cplDone, And(cplV, cplReady))), nil)
	m.Drive(evDone, big.NewInt(0), And(Not(pop), Or(evDone, And(evV, evReady))), nil)
	claim := m.WireOf("done_claim", And(pop, hWr), "the head's write response is claimed")
	m.Drive(doneCnt, big.NewInt(0), Sel(doneV, Sel(claim, doneCnt, Add(doneCnt, C(PB+1, 1))), Sel(claim, Sub(doneCnt, C(PB+1, 1)), doneCnt)), nil)
	errPos := m.WireOf("done_err_pos", Sel(claim, Sub(doneCnt, C(PB+1, 1)), doneCnt), "where a response arriving now goes, after the claim's shift")
	shifted := m.WireOf("done_errs_shift", Sel(claim, Cat(C(1, 0), Bits(doneErrs, cardStatPend-1, 1)), doneErrs), "")
	var errBits []Expr
	for i := cardStatPend - 1; i >= 0; i-- {
		errBits = append(errBits, Sel(And(doneV, Eq(errPos, C(PB+1, uint64(i)))), doneErr, Bit(shifted, i)))
	}
	m.Drive(doneErrs, big.NewInt(0), Cat(errBits...), nil)
	faultTaken := m.WireOf("fault_taken", And(headBad, evReady), "the DMA_FAULT event is taken: the card stops")
	m.Drive(fatal, big.NewInt(0), Or(fatal, faultTaken), nil)
	m.Assign(fatalO, fatal)
	hQPN := m.WireOf("head_qpn", Bits(head, cplW+QB-1, cplW), "")
	hAddr := m.WireOf("head_addr", Cat(muxTree(selBits(rp, 0, PB), addrs), C(5, 0)), "the head's record address, as written")
	m.Assign(faultV, faultTaken)
	m.Assign(faultQPN, gate(faultTaken, hQPN))
	m.Assign(faultAddr, gate(faultTaken, hAddr))
	m.Assign(evStop, headBad)
	m.Drive(wp, big.NewInt(0), Add(wp, C(PB, 1)), push)
	m.Drive(rp, big.NewInt(0), Add(rp, C(PB, 1)), pop)
	m.Drive(pendCnt, big.NewInt(0), Sub(Add(pendCnt, zext(push, PB+1)), zext(pop, PB+1)), nil)
	m.Assign(cplValid, cplV)
	m.Assign(evValid, evV)
	off := 0
	for _, f := range []struct {
		s *Signal
		w int
	}{{cplLen, 32}, {cplStatus, 8}, {cplOpc, 8}, {cplWRID, 64}, {cplQPN, QB}, {cplCQ, QB}, {cplInv, 32}, {cplSol, 1}, {cplInvd, 1}, {cplTC, 8}, {cplTT, 4}, {cplTL, 4}} {
		m.Assign(f.s, Bits(head, off+f.w-1, off))
		off += f.w
	}
	m.Assign(endValid, endV)
	m.Assign(endQPN, gate(endV, hQPN))
	m.Assign(endLost, And(endV, Eq(hCode, C(3, 5))))
	m.Assign(evQPN, gate(Not(headBad), hQPN))
	m.Assign(evType, Sel(headBad, C(8, cardStatEvDMAFault), muxTree(selBits(hCode, 0, 3), []Expr{C(8, cardStatEvTXData), C(8, cardStatEvRXSpace), C(8, cardStatEvQPError), C(8, cardStatEvQPClosed),
		C(8, cardStatEvStreamEnd), C(8, cardStatEvQPError), C(8, cardStatEvQPError), C(8, cardStatEvQPError)})))
	// QP_ERROR: INFO QP_ERR_HOST, LLP_LOST, BAD_DOORBELL or STREAM_CUT;
	// DMA_FAULT: the record's address bits 31:0.
	m.Assign(evInfo, Sel(headBad, Bits(hAddr, 31, 0), Sel(Eq(hCode, C(3, 2)), C(32, cardStatErrHost), Sel(Eq(hCode, C(3, 5)), C(32, cardStatErrLLPLost),
		Sel(Eq(hCode, C(3, 6)), C(32, cardStatErrBadDB), Sel(Eq(hCode, C(3, 7)), C(32, cardStatErrStreamCut), C(32, 0)))))))

	// A status record is one burst: a fault's address is the record's.
	doneEB := m.Wire("dw_done_err_burst", DMAWrErrBurstBits(dcfg.Width), "")
	unused = append(unused, doneEB)
	exposeInstance(m, "dw", dma, map[string]Expr{"clk": clk, "rst": rst,
		"s_req_valid": reqV, "s_req_ready": reqR, "s_req_addr": reqAddr, "s_req_len": C(16, cardStatBytes-1), "s_req_tag": C(dcfg.TagBits, 0),
		"s_axis_tdata": sData, "s_axis_tvalid": sV, "s_axis_tready": sR,
		"m_done_valid": doneV, "m_done_ready": C(1, 1), "m_done_tag": doneTag, "m_done_err": doneErr, "m_done_err_burst": doneEB})
	m.WireOf("unused_bits", RedOr(Cat(unused...)), "bits no logic reads (keeps lint quiet on purpose)")
	return m, m.Validate()
}
