package gen

import "math/big"

// cqSweep is the card top's answer to a CQ overrun or a CQ in error
// (card_cq's m_overrun): as in the card model's complete, every QP whose
// send or receive CQ overran goes to error with QP_ERROR CQ_OVERRUN (DMA
// for a CQ whose CQE write faulted) and an RDMAP Local Catastrophic
// Terminate. The top keeps each QP's two CQ numbers
// (written when CREATE reaches the engines; DESTROY, which card_cmd
// hands on only for a QP in CLOSED or ERROR, clears the entry),
// walks that table from QP 0 and offers one record per QP found, which
// goes to card_tx's Terminate port like a receive error's (card_tx drops
// it for a QP already in error). Two cycles per QP, about 2,000 per
// overrun: an overrun is an error, not a data path.
type cqSweep struct {
	offer Expr // a QP on the overrun CQ waits for its record to be taken
	qpn   Expr // its QP number
	ready Expr // card_cq's m_overrun_ready: no sweep runs
	busy  Expr // a sweep runs
	dma   Expr // the CQ is in error (a CQE's write faulted), not full
}

// newCQSweep builds the sweep in m. cmdTaken says every engine took the
// QP command op for qpn this cycle; taken that the offered record was.
func newCQSweep(m *Module, ovValid, ovCQ, ovDMA, cmdTaken, op Expr, qpn, sendCQ, recvCQ *Signal, taken Expr) cqSweep {
	const QB, CB = 10, 10
	busy := m.RegDecl("sweep_busy", 1, "a CQ overran: its QPs are being put in error")
	cq := m.RegDecl("sweep_cq", CB, "the CQ that overran")
	idx := m.RegDecl("sweep_idx", QB, "the QP whose entry is read")
	chk := m.RegDecl("sweep_chk", 1, "the entry of sweep_idx is on the table's read port")
	hit := m.RegDecl("sweep_hit", 1, "sweep_idx is on the CQ: its record is offered")
	start := m.WireOf("sweep_start", And(ovValid, Not(busy)), "")
	isOp := func(v uint64) Expr { return Eq(op, C(op.Width(), v)) }
	wr := m.WireOf("sweep_tab_wr", And(cmdTaken, Or(isOp(1), isOp(4))), "CREATE records a QP's CQs, DESTROY forgets them")
	ent := m.Mem("sweep_tab", 1+2*CB, 1<<QB, wr, Bits(qpn, QB-1, 0),
		Cat(isOp(1), Bits(sendCQ, CB-1, 0), Bits(recvCQ, CB-1, 0)), nil, idx, "per QP {live, send CQ, receive CQ}")
	match := m.WireOf("sweep_match", And(chk, Bit(ent, 2*CB), Or(Eq(Bits(ent, 2*CB-1, CB), cq), Eq(Bits(ent, CB-1, 0), cq))), "")
	last := m.WireOf("sweep_last", Eq(idx, C(QB, 1<<QB-1)), "")
	next := m.WireOf("sweep_next", Or(And(chk, Not(match)), And(hit, taken)), "sweep_idx is done")
	m.Drive(busy, big.NewInt(0), Or(start, And(busy, Not(And(next, last)))), nil)
	m.Drive(cq, big.NewInt(0), ovCQ, start)
	dma := m.Reg("sweep_dma", 1, big.NewInt(0), ovDMA, start, "the CQ is in error: QP_ERROR DMA")
	m.Drive(idx, big.NewInt(0), Sel(start, C(QB, 0), incr(idx)), Or(start, next))
	m.Drive(chk, big.NewInt(0), And(busy, Not(chk), Not(hit), Not(And(next, last))), nil)
	m.Drive(hit, big.NewInt(0), Or(match, And(hit, Not(taken))), nil)
	return cqSweep{offer: hit, qpn: idx, ready: Not(busy), busy: busy, dma: dma}
}
