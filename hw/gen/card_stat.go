package gen

import (
	"fmt"
	"math/big"
)

// Sizes of card_stat.
const (
	cardStatQPBits = 10 // QP numbers
	cardStatBytes  = 32 // a QP status record (docs/card.md QPSTAT)
	cardStatPend   = 4  // status writes awaiting their response
	cardStatCtx    = 84 // per QP: TXS_PI, RXS_CI, SQ_CI, STATE
)

// CardStat builds card_stat_w<width>: the writer of the QP status records
// (docs/card.md QPSTAT), between the engines and card_cq.
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
	m := NewModule(fmt.Sprintf("card_stat_w%d", W), "docs/card.md (QPSTAT, QPSTAT_BASE), docs/card-model.md (WriteStatus)",
		fmt.Sprintf("The QP status records, %d-bit DMA: per QP the values the driver reads from its status record (TXS_PI, RXS_CI, SQ_CI, STATE; %d bits of block RAM for %d QPs), updated by QP_CMD CREATE (all zero, state RTS), card_tx's records (s_tx: SQ_CI and TXS_PI after each WQE) and card_rx's RXS_CI records (s_rx); each update writes the QP's whole 32-byte record at QPSTAT_BASE + 32 x QPN with one DMA write through a dma_wr.", W, cardStatCtx, 1<<QB),
		fmt.Sprintf("Ordering: a transmit record that carries a CQE (s_tx_cqe) is passed on to card_cq (m_cpl) only once the status write it caused has its write response, so the driver never sees a CQE before the status record that publishes its SQ_CI and TXS_PI (the card model writes the record before the CQE). Up to %d status writes may await their response; the writes of one QP go out in the order of their updates (dma_wr keeps order), so the latest values win.", cardStatPend),
		"Updates are serial (one every 3 cycles at most plus the data beats: a read of the context, its write-back and the DMA request, then the 32 bytes), QP commands first, then transmit and receive records alternately. Not yet: RQ_CI (no receive WQEs yet), the states CLOSING, CLOSED and ERROR and TX_CLOSED (no QP command but CREATE is served by the engines), coalescing of updates.")
	clk := m.Clock()
	rst := m.ResetPort()
	cmdValid := m.Input("qp_cmd_valid", 1, "QP command (card_regs, forked by the top)")
	cmdReady := m.Output("qp_cmd_ready", 1, "")
	cmdOp := m.Input("qp_cmd_op", 4, "QP_OP: CREATE (1) resets the record and writes it; the others are taken without effect")
	cmdQPN := m.Input("qp_num_qpn", 16, "")
	baseLo := m.Input("qpstat_base_lo", 32, "QPSTAT_BASE (32-byte aligned)")
	baseHi := m.Input("qpstat_base_hi", 32, "")
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
	rxValid := m.Input("s_rx_valid", 1, "card_rx's RXS_CI (m_ci)")
	rxReady := m.Output("s_rx_ready", 1, "")
	rxQPN := m.Input("s_rx_qpn", QB, "")
	rxCI := m.Input("s_rx_rxs_ci", 32, "")
	cplValid := m.Output("m_cpl_valid", 1, "a completion for card_cq, after its status write")
	cplReady := m.Input("m_cpl_ready", 1, "")
	cplCQ := m.Output("m_cpl_cq", QB, "")
	cplQPN := m.Output("m_cpl_qpn", QB, "")
	cplWRID := m.Output("m_cpl_wr_id", 64, "")
	cplOpc := m.Output("m_cpl_opcode", 8, "")
	cplStatus := m.Output("m_cpl_status", 8, "")
	cplLen := m.Output("m_cpl_byte_len", 32, "")
	fault := m.Output("m_fault", 1, "a status write got an error response (pulse)")
	var unused []Expr

	// The FSM: idle, read (context read in flight), request, data.
	const (
		stIdle = iota
		stRead
		stReq
		stData
	)
	st := m.RegDecl("fsm", 2, "idle, read, request, data")
	in := func(s int) Expr { return Eq(st, C(2, uint64(s))) }
	pendCnt := m.RegDecl("pend_count", 3, "status writes awaiting their response")
	room := m.WireOf("pend_room", Lt(pendCnt, C(3, cardStatPend)), "")
	turn := m.RegDecl("rr_rx", 1, "the receive side goes first next time")
	free := m.WireOf("free", And(in(stIdle), room), "an update can be taken")
	takeCmd := m.WireOf("take_cmd", And(free, cmdValid), "")
	txFirst := m.WireOf("tx_first", Or(Not(turn), Not(rxValid)), "")
	takeTx := m.WireOf("take_tx", And(free, Not(cmdValid), txValid, txFirst), "")
	takeRx := m.WireOf("take_rx", And(free, Not(cmdValid), rxValid, Not(And(txValid, txFirst))), "")
	m.Assign(cmdReady, takeCmd)
	m.Assign(txReady, takeTx)
	m.Assign(rxReady, takeRx)
	m.Drive(turn, big.NewInt(0), takeTx, Or(takeTx, takeRx))
	take := m.WireOf("take", Or(takeCmd, takeTx, takeRx), "")
	create := m.WireOf("take_create", And(takeCmd, Eq(cmdOp, C(4, 1))), "")
	doUpd := m.WireOf("take_update", Or(create, takeTx, takeRx), "an update that writes a record")
	unused = append(unused, Bits(cmdQPN, 15, QB))

	// The operation being served.
	takeQPN := Sel(takeCmd, Bits(cmdQPN, QB-1, 0), Sel(takeTx, txQPN, rxQPN))
	opQPN := m.Reg("op_qpn", QB, nil, takeQPN, take, "")
	opKind := m.Reg("op_kind", 2, nil, Sel(takeCmd, C(2, 0), Sel(takeTx, C(2, 1), C(2, 2))), take, "0 create, 1 transmit, 2 receive")
	opV1 := m.Reg("op_v1", 32, nil, Sel(takeTx, txPI, rxCI), take, "TXS_PI or RXS_CI")
	opSQCI := m.Reg("op_sq_ci", 16, nil, txSQCI, take, "")
	cplW := QB + QB + 64 + 8 + 8 + 32 + 1
	opCpl := m.Reg("op_cpl", cplW, nil, Cat(And(takeTx, txCQE), txCQ, txQPN, txWRID, txOpc, txStatus, txLen), take, "the completion to pass on, bit 0 of the top: has one")
	reqTake := m.Wire("req_take", 1, "dma_wr took the request")
	dataDone := m.Wire("data_done", 1, "dma_wr took the last beat")
	m.Drive(st, big.NewInt(stIdle), Sel(doUpd, C(2, stRead), Sel(in(stRead), C(2, stReq), Sel(in(stReq), C(2, stData), C(2, stIdle)))),
		Or(doUpd, in(stRead), reqTake, dataDone))

	// Context RAM: {state 4, SQ_CI 16, RXS_CI 32, TXS_PI 32}.
	ctxW := cardStatCtx
	wrData := m.Wire("ctx_wr_data", ctxW, "")
	ctx := m.Mem("ctx", ctxW, 1<<QB, in(stRead), opQPN, wrData, doUpd, takeQPN, "per QP status values")
	isCreate := m.WireOf("op_create", Eq(opKind, C(2, 0)), "")
	isTx := m.WireOf("op_tx", Eq(opKind, C(2, 1)), "")
	oldPI, oldCI := Bits(ctx, 31, 0), Bits(ctx, 63, 32)
	oldSQ, oldSt := Bits(ctx, 79, 64), Bits(ctx, 83, 80)
	newPI := Sel(isCreate, C(32, 0), Sel(isTx, opV1, oldPI))
	newCI := Sel(isCreate, C(32, 0), Sel(isTx, oldCI, opV1))
	newSQ := Sel(isCreate, C(16, 0), Sel(isTx, opSQCI, oldSQ))
	newSt := Sel(isCreate, C(4, 1), oldSt) // QP_STATE RTS
	m.Assign(wrData, Cat(newSt, newSQ, newCI, newPI))
	rec := m.Reg("rec", 128, nil, Cat(C(28, 0), Bits(wrData, 83, 80), C(16, 0), Bits(wrData, 79, 0)), in(stRead),
		"the record's first 16 bytes (the rest is zero): TXS_PI, RXS_CI, SQ_CI, RQ_CI 0, STATE, TX_CLOSED 0")

	// dma_wr: request, then the beats.
	L := W / 8
	beats := max(1, cardStatBytes/L)
	BTW := max(1, log2(beats))
	beat := m.RegDecl("beat", BTW, "next beat of the record")
	reqV := m.WireOf("dw_req_valid", in(stReq), "")
	reqR := m.Wire("dw_req_ready", 1, "")
	sV := m.WireOf("dw_s_valid", in(stData), "")
	sR := m.Wire("dw_s_ready", 1, "")
	m.Assign(reqTake, And(reqV, reqR))
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
	base := m.WireOf("base", Cat(baseHi, baseLo), "")
	reqAddr := m.WireOf("dw_req_addr", Add(base, zext(Cat(opQPN, C(5, 0)), 64)), "QPSTAT_BASE + 32 x QPN")
	unused = append(unused, Bits(base, 4, 0))

	// Writes awaiting their response, in order, each with the completion
	// it releases.
	doneV := m.Wire("dw_done_valid", 1, "")
	doneR := m.Wire("dw_done_ready", 1, "")
	doneTag := m.Wire("dw_done_tag", dcfg.TagBits, "")
	doneErr := m.Wire("dw_done_err", 1, "")
	unused = append(unused, doneTag)
	wp := m.RegDecl("pend_wp", 2, "")
	rp := m.RegDecl("pend_rp", 2, "")
	var ents []Expr
	for i := 0; i < cardStatPend; i++ {
		e := m.Reg(fmt.Sprintf("pend%d", i), cplW, nil, opCpl, And(reqTake, Eq(wp, C(2, uint64(i)))), "")
		ents = append(ents, e)
	}
	head := m.WireOf("pend_head", muxTree([]Expr{Bit(rp, 0), Bit(rp, 1)}, ents), "")
	has := m.WireOf("head_cpl", Bit(head, cplW-1), "the head write releases a completion")
	m.Assign(doneR, Or(Not(has), cplReady))
	pop := m.WireOf("pend_pop", And(doneV, doneR), "")
	m.Drive(wp, big.NewInt(0), Add(wp, C(2, 1)), reqTake)
	m.Drive(rp, big.NewInt(0), Add(rp, C(2, 1)), pop)
	m.Drive(pendCnt, big.NewInt(0), Sub(Add(pendCnt, zext(reqTake, 3)), zext(pop, 3)), nil)
	m.Assign(cplValid, And(doneV, has))
	off := 0
	for _, f := range []struct {
		s *Signal
		w int
	}{{cplLen, 32}, {cplStatus, 8}, {cplOpc, 8}, {cplWRID, 64}, {cplQPN, QB}, {cplCQ, QB}} {
		m.Assign(f.s, Bits(head, off+f.w-1, off))
		off += f.w
	}
	m.Assign(fault, And(pop, doneErr))

	exposeInstance(m, "dw", dma, map[string]Expr{"clk": clk, "rst": rst,
		"s_req_valid": reqV, "s_req_ready": reqR, "s_req_addr": reqAddr, "s_req_len": C(16, cardStatBytes-1), "s_req_tag": C(dcfg.TagBits, 0),
		"s_axis_tdata": sData, "s_axis_tvalid": sV, "s_axis_tready": sR,
		"m_done_valid": doneV, "m_done_ready": doneR, "m_done_tag": doneTag, "m_done_err": doneErr})
	m.WireOf("unused_bits", RedOr(Cat(unused...)), "bits no logic reads (keeps lint quiet on purpose)")
	return m, m.Validate()
}
