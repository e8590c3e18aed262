package gen

import (
	"fmt"
	"math/big"
)

// cardMinMULPDU is the smallest MULPDU a QP may have (golden/mpa's
// MinMULPDU, RFC 5044 §4.5).
const cardMinMULPDU = 128

// CardCmd builds card_cmd, the card's command checker (docs/card-rtl.md):
// it stands between card_regs and the engines, decides each QP_CMD and
// CQ_CMD as the card model does, passes on only the commands it takes,
// and keeps CMD_STATUS, the verdicts a driver reads back (a BAR write is
// posted: its AXI response never reaches the driver).
func CardCmd() (*Module, error) {
	const QB, CB = 10, 10 // QP and CQ number bits
	const UB = 12         // users of a CQ: up to 2 x 1023 (send and receive CQ of every QP)
	why := map[string]uint64{}
	for _, n := range []string{"OK", "BAD_NUMBER", "BAD_OP", "EXISTS", "NO_OBJECT", "BAD_STATE", "BAD_SIZE", "BAD_ALIGN", "NO_CQ", "BAD_MULPDU", "BAD_RD", "CQ_BUSY"} {
		v, err := cardEnum("CMD_WHY", n)
		if err != nil {
			return nil, err
		}
		why[n] = v
	}
	op := map[string]uint64{}
	for _, n := range [][2]string{{"QP_OP", "CREATE"}, {"QP_OP", "CLOSE"}, {"QP_OP", "ERROR"}, {"QP_OP", "DESTROY"}, {"CQ_OP", "CREATE"}, {"CQ_OP", "DESTROY"}} {
		v, err := cardEnum(n[0], n[1])
		if err != nil {
			return nil, err
		}
		op[n[0]+"_"+n[1]] = v
	}

	m := NewModule("card_cmd", "docs/card.md (CMD_STATUS, CMD_WHY, QP_CMD, CQ_CMD, EQ_CFG), host/driver/cardmodel (qpCommand, newQP, cqCommand, eqConfig)",
		fmt.Sprintf("The card's command checker: it takes card_regs' QP_CMD and CQ_CMD (with their staged contexts) one at a time, decides each as the card model does (the checks and their order of CMD_WHY), hands a taken one on (m_qp to the top's QP command fork, m_cq to card_cq) and answers card_regs only once it is taken or refused, so a refused command changes nothing. EQ_CFG writes (eq_cfg_wr_pulse) are decided in their cycle (card_cq refuses the same ones). Every verdict moves CMD_STATUS: SEQ + 1, REFUSED, WHY. It keeps per QP its class (none, active: RTS or CLOSING, done: CLOSED or ERROR; card_stat's s_done reports the QPs that reach CLOSED or ERROR) and its two CQs, and per CQ whether it exists and how many QPs use it, in block RAM (%d bits), cleared after reset (init_done low meanwhile: %d cycles).", (2+2*CB)*(1<<QB)+(1+UB)*(1<<CB), 1<<QB),
		"A command takes 3 to 9 cycles: reads, the verdict, the hand-on, then the table updates (CREATE marks the QP active and adds it to its CQs' users, DESTROY marks it none and takes it off); card_regs takes no other write until it is answered, and the checker no other command until its updates are done.",
		"On a stopped card (stopped: STATUS.FATAL) commands are still decided, so that a driver ending its objects is answered, but none is handed on (the engines may wait for DMA that will not come); a taken ERROR marks an active QP done itself, as the card model's QP goes to ERROR at once.")
	m.Clock()
	rst := m.ResetPort()

	qpV := m.Input("qp_cmd_valid", 1, "card_regs' QP_CMD")
	qpReady := m.Output("qp_cmd_ready", 1, "the command is decided: taken (handed on) or refused")
	qpOp := m.Input("qp_cmd_op", 4, "QP_OP")
	qpn := m.Input("qp_num_qpn", 16, "")
	base := func(p string) *Signal {
		return m.WireOf(p, Cat(m.Input(p+"_hi", 32, ""), m.Input(p+"_lo", 32, "")), "")
	}
	sqBase, rqBase, txsBase, rxsBase := base("qp_sq_base"), base("qp_rq_base"), base("qp_txs_base"), base("qp_rxs_base")
	sqLog := m.Input("qp_sizes_sq_log", 5, "")
	rqLog := m.Input("qp_sizes_rq_log", 5, "")
	txsLog := m.Input("qp_sizes_txs_log", 5, "")
	rxsLog := m.Input("qp_sizes_rxs_log", 5, "")
	scq := m.Input("qp_cqs_send_cq", 16, "")
	rcq := m.Input("qp_cqs_recv_cq", 16, "")
	mulpdu := m.Input("qp_mpa_mulpdu", 16, "")
	ord := m.Input("qp_rd_ord", 8, "")
	ird := m.Input("qp_rd_ird", 8, "")
	fwdQPV := m.Output("m_qp_valid", 1, "a taken QP command for the engines (op, QP number and context: card_regs' fields, held until qp_cmd_ready)")
	fwdQPReady := m.Input("m_qp_ready", 1, "every engine took it")
	cqV := m.Input("cq_cmd_valid", 1, "card_regs' CQ_CMD")
	cqReady := m.Output("cq_cmd_ready", 1, "")
	cqOp := m.Input("cq_cmd_op", 4, "CQ_OP")
	cqn := m.Input("cq_num_cqn", 16, "")
	cqBase := base("cq_base")
	cqLog := m.Input("cq_cfg_log_size", 5, "")
	fwdCQV := m.Output("m_cq_valid", 1, "a taken CQ command for card_cq")
	fwdCQReady := m.Input("m_cq_ready", 1, "")
	eqWr := m.Input("eq_cfg_wr_pulse", 1, "EQ_CFG is written this cycle (its new value shows from the next)")
	eqEn := m.Input("eq_cfg_enable", 1, "")
	eqLog := m.Input("eq_cfg_log_size", 5, "")
	eqBase := base("eq_base")
	doneV := m.Input("s_done_valid", 1, "card_stat: the QP reached CLOSED or ERROR")
	doneQP := m.Input("s_done_qpn", QB, "")
	stopped := m.Input("stopped", 1, "the card is stopped (STATUS.FATAL): commands are decided, and reach no engine")
	seqO := m.Output("cmd_status_seq", 16, "CMD_STATUS.SEQ")
	refO := m.Output("cmd_status_refused", 1, "CMD_STATUS.REFUSED")
	whyO := m.Output("cmd_status_why", 8, "CMD_STATUS.WHY")
	initO := m.Output("init_done", 1, "the tables are cleared")

	const (
		sClr  = iota // clearing the tables
		sIdle        // waiting for a command
		sQRd         // a QP command: its class, CQs and send CQ are read
		sQRd2        // its receive CQ is read
		sQDec        // its verdict
		sQFwd        // handed on until the engines take it
		sQSet        // CREATE or DESTROY: the class written
		sURd         // a CQ's users read (sU: the send CQ, then the receive CQ)
		sUWr         // ... and written back
		sCRd         // a CQ command: the CQ read
		sCDec        // its verdict
		sCFwd        // handed on until card_cq takes it
		sCSet        // the CQ's entry written
		nStates
	)
	SW := addrWidth(nStates)
	st := m.RegDecl("state", SW, "")
	in := func(s int) Expr { return Eq(st, C(SW, uint64(s))) }
	next := m.Wire("state_next", SW, "")
	m.Drive(st, big.NewInt(sClr), next, nil)
	clr := m.RegDecl("clr_idx", QB, "the entry being cleared")
	clrLast := m.WireOf("clr_last", Eq(clr, C(QB, 1<<QB-1)), "")
	m.Drive(clr, big.NewInt(0), incr(clr), in(sClr))
	m.Assign(initO, Not(in(sClr)))

	// Tables. Class: 0 none, 1 active (RTS, CLOSING), 2 done (CLOSED,
	// ERROR).
	const clsNone, clsActive, clsDone = 0, 1, 2
	q := Bits(qpn, QB-1, 0)
	takeQP := m.WireOf("take_qp", And(in(sIdle), qpV), "")
	takeCQ := m.WireOf("take_cq", And(in(sIdle), Not(qpV), cqV), "")
	clsWr := m.Wire("cls_wr", 1, "")
	clsWa := m.Wire("cls_wa", QB, "")
	clsWd := m.Wire("cls_wd", 2, "")
	cls := m.Mem("qp_class", 2, 1<<QB, clsWr, clsWa, clsWd, takeQP, q, "per QP: 0 none, 1 active (RTS, CLOSING), 2 done (CLOSED, ERROR)")
	isOp := func(o *Signal, n string) Expr { return Eq(o, C(4, op[n])) }
	qcqWr := m.Wire("qcq_wr", 1, "CREATE records the QP's CQs")
	qcqD := m.Wire("qcq_wd", 2*CB, "")
	qcqA := m.Wire("qcq_wa", QB, "")
	qcq := m.Mem("qp_cqs", 2*CB, 1<<QB, qcqWr, qcqA, qcqD, takeQP, q, "per QP: {send CQ, receive CQ}")
	cxWr := m.Wire("cqx_wr", 1, "")
	cxWa := m.Wire("cqx_wa", CB, "")
	cxWd := m.Wire("cqx_wd", 1+UB, "")
	cxRa := m.Wire("cqx_ra", CB, "")
	cx := m.Mem("cq_users", 1+UB, 1<<CB, cxWr, cxWa, cxWd, nil, cxRa, "per CQ: {exists, QPs using it}")

	// A QP command: read its class and CQs (sIdle), the send CQ (sQRd),
	// the receive CQ (sQRd2). card_stat's s_done for the QP from the take
	// on counts as done (the RAM reads first).
	// The command's fields card_regs may change once it is answered.
	opQ := m.Reg("op_q", 4, nil, Sel(qpV, qpOp, cqOp), Or(takeQP, takeCQ), "the command's OP")
	qQ := m.Reg("qpn_q", QB, nil, q, takeQP, "")
	cQ := m.Reg("cqn_q", CB, nil, Bits(cqn, CB-1, 0), takeCQ, "")
	scqQ := m.Reg("scq_q", CB, nil, Bits(scq, CB-1, 0), takeQP, "")
	rcqQ := m.Reg("rcq_q", CB, nil, Bits(rcq, CB-1, 0), takeQP, "")
	clsQ := m.RegDecl("cls_q", 2, "the QP's class")
	doneHere := m.WireOf("done_here", And(doneV, Eq(doneQP, q)), "")
	seenDone := m.RegDecl("seen_done", 1, "card_stat reported the QP done since the command was taken")
	// A report in the take's own cycle counts too: the class read then is
	// the one before that cycle's write.
	m.Drive(seenDone, big.NewInt(0), Or(doneHere, And(Not(takeQP), seenDone)), Or(takeQP, doneHere, in(sIdle)))
	m.Drive(clsQ, nil, cls, in(sQRd))
	oldCQs := m.Reg("old_cqs", 2*CB, nil, qcq, in(sQRd), "the QP's CQs as CREATE recorded them (DESTROY's)")
	cxS := m.Reg("cqx_send", 1+UB, nil, cx, in(sQRd), "the send CQ's entry")
	cxR := m.Reg("cqx_recv", 1+UB, nil, cx, in(sQRd2), "the receive CQ's entry")
	cxC := m.Reg("cqx_cq", 1+UB, nil, cx, in(sCRd), "a CQ command's CQ entry")

	// The verdict of a QP command, in the card model's order.
	below := func(name string, lg Expr, add int) Expr {
		n := m.WireOf(name+"_n", Add(zext(lg, 6), C(6, uint64(add))), "")
		return thermo(n, 32)
	}
	aligned := func(name string, b *Signal, lg Expr, add int) Expr {
		return m.WireOf(name+"_aligned", Not(RedOr(And(Bits(b, 31, 0), below(name, lg, add)))), "")
	}
	gt := func(x Expr, v uint64) Expr { return Lt(C(x.Width(), v), x) }
	sizeBad := m.WireOf("q_size_bad", Or(gt(sqLog, cardQueueLog), gt(rqLog, cardQueueLog), Lt(txsLog, C(5, CardMinRingLog)), gt(txsLog, CardMaxRingLog),
		Lt(rxsLog, C(5, CardMinRingLog)), gt(rxsLog, CardMaxRingLog)), "a ring size out of range")
	alignBad := m.WireOf("q_align_bad", Not(And(aligned("q_sq", sqBase, sqLog, 6), aligned("q_rq", rqBase, rqLog, 6),
		aligned("q_txs", txsBase, txsLog, 0), aligned("q_rxs", rxsBase, rxsLog, 0))), "a ring base not aligned to its size")
	cqBad := m.WireOf("q_cq_bad", Or(gt(scq, CardMaxCQ-1), gt(rcq, CardMaxCQ-1), Not(Bit(cxS, UB)), Not(Bit(cxR, UB))), "the send or receive CQ does not exist")
	// An FPDU goes onto the transmit ring whole (card_tx): MULPDU at
	// most half the ring, i.e. MULPDU - 1 below 2^(TXS log - 1).
	halfMask := m.WireOf("q_txs_half_mask", thermo(m.WireOf("q_txs_half_log", Sub(zext(txsLog, 6), C(6, 1)), ""), 17), "the bits below half the transmit ring")
	mulpduBig := m.WireOf("q_mulpdu_big", RedOr(And(Sub(zext(mulpdu, 17), C(17, 1)), Not(halfMask))), "MULPDU above half the transmit ring")
	mpaBad := m.WireOf("q_mulpdu_bad", Or(Lt(mulpdu, C(16, cardMinMULPDU)), gt(mulpdu, MPARxMaxULPDU), mulpduBig), "")
	rdBad := m.WireOf("q_rd_bad", Or(Eq(ord, C(8, 0)), gt(ord, CardMaxRd), Eq(ird, C(8, 0)), gt(ird, CardMaxRd)), "")
	clsNow := m.WireOf("q_class", Sel(And(seenDone, Eq(clsQ, C(2, clsActive))), C(2, clsDone), clsQ), "")
	isCreate, isDestroy := isOp(qpOp, "QP_OP_CREATE"), isOp(qpOp, "QP_OP_DESTROY")
	opKnown := Or(isCreate, isOp(qpOp, "QP_OP_CLOSE"), isOp(qpOp, "QP_OP_ERROR"), isDestroy)
	w := func(n string) Expr { return C(8, why[n]) }
	pick := func(cases ...Expr) Expr { // cond, value, ..., default
		e := cases[len(cases)-1]
		for i := len(cases) - 3; i >= 0; i -= 2 {
			e = Sel(cases[i], cases[i+1], e)
		}
		return e
	}
	qWhy := m.WireOf("q_why", pick(
		Or(Eq(qpn, C(16, 0)), gt(qpn, CardMaxQP-1)), w("BAD_NUMBER"),
		isCreate, pick(
			Ne(clsNow, C(2, clsNone)), w("EXISTS"),
			sizeBad, w("BAD_SIZE"),
			alignBad, w("BAD_ALIGN"),
			cqBad, w("NO_CQ"),
			mpaBad, w("BAD_MULPDU"),
			rdBad, w("BAD_RD"),
			w("OK")),
		Not(opKnown), w("BAD_OP"),
		Eq(clsNow, C(2, clsNone)), w("NO_OBJECT"),
		And(isDestroy, Eq(clsNow, C(2, clsActive))), w("BAD_STATE"),
		w("OK")), "the QP command's verdict (CMD_WHY)")
	// The verdict of a CQ command.
	c := Bits(cqn, CB-1, 0)
	cqCreate, cqDestroy := isOp(cqOp, "CQ_OP_CREATE"), isOp(cqOp, "CQ_OP_DESTROY")
	cWhy := m.WireOf("c_why", pick(
		gt(cqn, CardMaxCQ-1), w("BAD_NUMBER"),
		cqCreate, pick(
			Bit(cxC, UB), w("EXISTS"),
			gt(cqLog, cardQueueLog), w("BAD_SIZE"),
			Not(aligned("c", cqBase, cqLog, 5)), w("BAD_ALIGN"),
			w("OK")),
		cqDestroy, pick(
			Not(Bit(cxC, UB)), w("NO_OBJECT"),
			RedOr(Bits(cxC, UB-1, 0)), w("CQ_BUSY"),
			w("OK")),
		w("BAD_OP")), "the CQ command's verdict (CMD_WHY)")
	eWhy := m.WireOf("e_why", pick(
		Not(eqEn), w("OK"),
		gt(eqLog, cardQueueLog), w("BAD_SIZE"),
		Not(aligned("e", eqBase, eqLog, 4)), w("BAD_ALIGN"),
		w("OK")), "EQ_CFG's verdict (CMD_WHY)")
	vWhy := m.Reg("verdict", 8, nil, Sel(in(sQDec), qWhy, cWhy), Or(in(sQDec), in(sCDec)), "the command's CMD_WHY")
	refused := m.WireOf("refused", RedOr(vWhy), "")

	// Hand-on and answer.
	qFwd := in(sQFwd)
	cFwd := in(sCFwd)
	// A stopped card still decides commands, so that a driver can end its
	// objects and be answered, but hands none on: its engines may wait for
	// DMA that will not come.
	m.Assign(fwdQPV, And(qFwd, Not(refused), Not(stopped)))
	m.Assign(fwdCQV, And(cFwd, Not(refused), Not(stopped)))
	qDone := m.WireOf("q_done", And(qFwd, Or(refused, stopped, fwdQPReady)), "the QP command is answered")
	cDone := m.WireOf("c_done", And(cFwd, Or(refused, stopped, fwdCQReady)), "the CQ command is answered")
	m.Assign(qpReady, qDone)
	m.Assign(cqReady, cDone)

	// CMD_STATUS: a QP or CQ command answered, or an EQ_CFG written the
	// cycle before (never in the same cycle: card_regs takes no write
	// while a command waits, and a command takes more than a cycle).
	eqPulse := m.Reg("eq_cfg_wr_q", 1, big.NewInt(0), eqWr, nil, "EQ_CFG was written: its value is on eq_cfg_*")
	verdict := m.WireOf("verdict_now", Or(qDone, cDone, eqPulse), "")
	seq := m.RegDecl("seq", 16, "CMD_STATUS.SEQ")
	m.Drive(seq, big.NewInt(0), incr(seq), verdict)
	nowWhy := m.WireOf("why_now", Sel(eqPulse, eWhy, vWhy), "")
	whyQ := m.Reg("why_q", 8, big.NewInt(0), nowWhy, verdict, "CMD_STATUS.WHY")
	m.Assign(seqO, seq)
	m.Assign(whyO, whyQ)
	m.Assign(refO, RedOr(whyQ))

	// Table updates after a taken CREATE or DESTROY: the class (waiting
	// for a cycle without s_done, which has the port), then the users of
	// the send CQ and of the receive CQ, each read and written back.
	creating := Eq(opQ, C(4, op["QP_OP_CREATE"]))
	// On a stopped card an ERROR taken is not handed on, so card_stat
	// never reports the QP done: the class goes to done here, as the
	// card model's QP goes to ERROR at once.
	stopErrNow := m.WireOf("q_stop_err_now", And(stopped, isOp(qpOp, "QP_OP_ERROR")), "the QP command is an ERROR on a stopped card")
	stopErr := m.Reg("q_stop_err", 1, nil, stopErrNow, qFwd, "the ERROR being answered is a stopped card's")
	qSet := m.WireOf("q_set", And(in(sQSet), Not(doneV)), "the class is written this cycle")
	m.Assign(clsWr, Or(in(sClr), doneV, qSet))
	m.Assign(clsWa, Sel(in(sClr), clr, Sel(doneV, doneQP, qQ)))
	m.Assign(clsWd, Sel(Or(in(sClr), And(qSet, Not(creating), Not(stopErr))), C(2, clsNone), Sel(Or(doneV, stopErr), C(2, clsDone), C(2, clsActive))))
	m.Assign(qcqWr, And(qSet, creating))
	m.Assign(qcqA, qQ)
	m.Assign(qcqD, Cat(scqQ, rcqQ))
	second := m.RegDecl("u_second", 1, "the receive CQ's users are being updated")
	newCQs := m.WireOf("u_cqs", Sel(creating, Cat(scqQ, rcqQ), oldCQs), "the CQs whose users change")
	uCQ := m.WireOf("u_cq", Sel(second, Bits(newCQs, CB-1, 0), Bits(newCQs, 2*CB-1, CB)), "")
	m.Drive(second, big.NewInt(0), And(Not(in(sQSet)), Or(second, in(sUWr))), Or(in(sQSet), in(sUWr)))
	users := m.WireOf("u_users", Bits(cx, UB-1, 0), "")
	uNew := m.WireOf("u_new", Sel(creating, Add(users, C(UB, 1)), Sub(users, C(UB, 1))), "")
	m.Assign(cxRa, Sel(in(sIdle), Sel(qpV, Bits(scq, CB-1, 0), c), Sel(in(sQRd), rcqQ, uCQ)))
	m.Assign(cxWr, Or(in(sClr), in(sUWr), in(sCSet)))
	m.Assign(cxWa, Sel(in(sClr), clr, Sel(in(sUWr), uCQ, cQ)))
	m.Assign(cxWd, Sel(in(sClr), C(1+UB, 0), Sel(in(sUWr), Cat(Bit(cx, UB), uNew), Cat(Eq(opQ, C(4, op["CQ_OP_CREATE"])), C(UB, 0)))))
	qTaken := m.WireOf("q_taken", And(qDone, Not(refused)), "")
	m.Assign(next, pick(
		in(sClr), Sel(clrLast, C(SW, sIdle), C(SW, sClr)),
		in(sIdle), Sel(takeQP, C(SW, sQRd), Sel(takeCQ, C(SW, sCRd), C(SW, sIdle))),
		in(sQRd), C(SW, sQRd2),
		in(sQRd2), C(SW, sQDec),
		in(sQDec), C(SW, sQFwd),
		in(sQFwd), Sel(qTaken, Sel(Or(isCreate, isDestroy, stopErrNow), C(SW, sQSet), C(SW, sIdle)), Sel(qDone, C(SW, sIdle), C(SW, sQFwd))),
		in(sQSet), Sel(qSet, Sel(stopErr, C(SW, sIdle), C(SW, sURd)), C(SW, sQSet)),
		in(sURd), C(SW, sUWr),
		in(sUWr), Sel(second, C(SW, sIdle), C(SW, sURd)),
		in(sCRd), C(SW, sCDec),
		in(sCDec), C(SW, sCFwd),
		in(sCFwd), Sel(And(cDone, Not(refused)), C(SW, sCSet), Sel(cDone, C(SW, sIdle), C(SW, sCFwd))),
		C(SW, sIdle)))
	m.WireOf("unused_bits", RedOr(Cat(rst, Bits(qpn, 15, QB), Bits(cqn, 15, CB), Bits(sqBase, 63, 32), Bits(rqBase, 63, 32),
		Bits(txsBase, 63, 32), Bits(rxsBase, 63, 32), Bits(cqBase, 63, 32), Bits(eqBase, 63, 32), Bits(scq, 15, CB), Bits(rcq, 15, CB), Bits(cxS, UB-1, 0), Bits(cxR, UB-1, 0))), "bits no logic reads (keeps lint quiet on purpose)")
	return m, m.Validate()
}
