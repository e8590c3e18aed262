package gen

import (
	"fmt"
	"math/big"
)

// RDMA Read requester parts of card_tx (docs/card-rtl.md): the Read
// Request's RDMAP header built from the WQE, and the sink SGE kept as the
// WQE's first block comes in.

// cardTxReadReqBytes is the RDMA Read Request header (RFC 5040 §4.4): sink
// STag, sink TO, size, source STag, source TO.
const cardTxReadReqBytes = 28

// readRequestHeader is the Read Request header as a 256-bit byte vector
// (byte 0, the sink STag's most significant octet, in bits 7:0): the sink
// from the WQE's single SGE (zero without one, as the card model sends),
// the source from REMOTE_ADDR and RKEY.
func readRequestHeader(sinkSTag, sinkTO, size, srcSTag, srcTO *Signal) Expr {
	var wire []Expr // octets in wire order
	be := func(x *Signal, n int) {
		for i := n - 1; i >= 0; i-- {
			wire = append(wire, Bits(x, 8*i+7, 8*i))
		}
	}
	be(sinkSTag, 4)
	be(sinkTO, 8)
	be(size, 4)
	be(srcSTag, 4)
	be(srcTO, 8)
	parts := []Expr{C(8*(32-cardTxReadReqBytes), 0)}
	for i := len(wire) - 1; i >= 0; i-- {
		parts = append(parts, wire[i])
	}
	return Cat(parts...)
}

// payloadWord is word k (of w bits) of a little-endian byte vector v
// whose width is a multiple of w, or v zero-extended when it is narrower.
func payloadWord(m *Module, name string, v, k *Signal, w int) Expr {
	if v.W <= w {
		return zext(v, w)
	}
	n := v.W / w
	var cands []Expr
	for i := 0; i < n; i++ {
		cands = append(cands, Bits(v, w*i+w-1, w*i))
	}
	return m.WireOf(name, muxTree(selBits(k, 0, log2(n)), cands), "")
}

// captureSGE keeps the first SGE of a WQE (bytes 32..47 of its first
// block) as its beats are taken: beat index wj, data d of w bits, valid
// v. It returns the 128-bit SGE (ADDR in 63:0, LENGTH in 95:64, LKEY in
// 127:96).
func captureSGE(m *Module, v Expr, wj, d *Signal, w int) *Signal {
	if w >= 512 {
		return m.Reg("sge0", 128, nil, Bits(d, 383, 256), And(v, Eq(wj, C(wj.W, 0))), "the WQE's first SGE")
	}
	// 64 bits: bytes 32..39 in beat 4, 40..47 in beat 5.
	lo := m.Reg("sge0_lo", 64, nil, Bits(d, 63, 0), And(v, Eq(wj, C(wj.W, 4))), "the first SGE's ADDR")
	hi := m.Reg("sge0_hi", 64, nil, Bits(d, 63, 0), And(v, Eq(wj, C(wj.W, 5))), "its LENGTH and LKEY")
	return m.WireOf("sge0", Cat(hi, lo), "the WQE's first SGE")
}

// QP states card_tx keeps (2 bits per QP).
const (
	txQPNone  = 0 // never created, or destroyed
	txQPLive  = 1 // created (RTS)
	txQPError = 2 // in error: posted WQEs are flushed
)

// txQPStates is card_tx's per-QP state: written by the QP command (whose
// state was read the cycle before it is taken), read by the engine.
type txQPStates struct {
	toErr  *Signal // an ERROR command puts a live QP in error this cycle
	eng    *Signal // the state at engAddr (read a cycle after the address)
	closed *Signal // the QP at engAddr is CLOSED (card_stat's record; CREATE clears it)
	busy   *Signal // the engine or a command writes a state this cycle: extErr waits
	ext    *Signal // the state at extAddr (read a cycle after the address)
	db     *Signal // the state at dbAddr (read a cycle after the address)
}

// qpStates builds the state memory, in four copies (one read by the
// command path at the command's QP, one by the engine at engAddr, one at
// extAddr, one by the doorbell path at dbAddr).
// CREATE makes a QP live; ERROR puts a live QP in error (a QP that does
// not exist is left alone: the card model refuses the command); DESTROY
// frees a QP in error (the model refuses it in RTS); CLOSE is taken
// without effect (card_stat decides CLOSED and reports it: closedV).
//
// engErr puts the engine's QP engQP in error (a local protection error of
// its WQE); the engine does so only while no command can be taken.
//
// extErr puts extQP in error (a refused ring write's QP); it may be
// raised only while busy is low. A third copy is read at extAddr.
//
// closedV and closedQP: card_stat found the QP CLOSED (its m_done with
// m_done_closed; a pulse, taken every cycle): a bit per QP, set then and
// cleared by CREATE, says so (a pulse in CREATE's cycle waits one).
func qpStates(m *Module, cmdGo, op, qpn, engAddr, engErr, engQP *Signal, closedV, closedQP Expr, extErr *Signal, extQP, extAddr, dbAddr Expr) txQPStates {
	opIs := func(v uint64) Expr { return Eq(op, C(4, v)) }
	we := m.Wire("qp_state_we", 1, "")
	busy := m.Wire("qp_state_busy", 1, "the engine or a command writes a state")
	wd := m.WireOf("qp_state_wd", Sel(Or(engErr, extErr, opIs(3)), C(2, txQPError), Sel(opIs(1), C(2, txQPLive), C(2, txQPNone))), "")
	wa := m.WireOf("qp_state_wa", Sel(engErr, engQP, Sel(extErr, extQP, qpn)), "")
	cur := m.Mem("qp_state_c", 2, CardTxQPs, we, wa, wd, nil, qpn, "QP state (0 none, 1 live, 2 error), read by the command path")
	eng := m.Mem("qp_state_e", 2, CardTxQPs, we, wa, wd, nil, engAddr, "QP state, read by the engine")
	ext := m.Mem("qp_state_f", 2, CardTxQPs, we, wa, wd, nil, extAddr, "QP state, read for a refused ring write's QP")
	db := m.Mem("qp_state_d", 2, CardTxQPs, we, wa, wd, nil, dbAddr, "QP state, read by the doorbell path (its read ahead)")
	toErr := m.WireOf("qp_to_error", And(cmdGo, opIs(3), Eq(cur, C(2, txQPLive))), "ERROR on a live QP")
	m.Assign(busy, Or(engErr, And(cmdGo, opIs(1)), toErr, And(cmdGo, opIs(4), Eq(cur, C(2, txQPError)))))
	m.Assign(we, Or(busy, extErr))
	create := m.WireOf("qp_closed_clear", And(cmdGo, opIs(1)), "CREATE: the QP is not CLOSED")
	pendV := m.RegDecl("qp_closed_pend", 1, "a CLOSED report waits for a cycle without CREATE")
	pendQP := m.RegDecl("qp_closed_pend_qp", 10, "")
	setV := m.WireOf("qp_closed_set", Or(pendV, closedV), "")
	setQP := m.WireOf("qp_closed_set_qp", Sel(pendV, pendQP, closedQP), "")
	m.Drive(pendV, big.NewInt(0), And(Or(closedV, pendV), Or(create, And(pendV, closedV))), nil)
	m.Drive(pendQP, nil, closedQP, closedV) // a new report is the one left over, if any is
	closed := m.Mem("qp_closed", 2, CardTxQPs, Or(create, setV), Sel(create, qpn, setQP), Cat(C(1, 0), Not(create)), nil, engAddr,
		"bit 0 per QP: CLOSED (card_stat's report): its Read Requests are no longer answered")
	return txQPStates{toErr: toErr, eng: eng, closed: closed, busy: busy, ext: ext, db: db}
}

// wcOpcode is the CQE opcode (WC_OPCODE) of a WQE opcode, as the card
// model maps it: anything it does not know completes as a Send.
func wcOpcode(op *Signal) Expr {
	is := func(v uint64) Expr { return Eq(op, C(8, v)) }
	return Sel(is(2), C(3, 1), Sel(is(3), C(3, 2), Sel(is(4), C(3, 4), Sel(is(5), C(3, 5), C(3, 0)))))
}

// Read Request records waiting in card_tx for their Read Responses, card
// wide: a record is taken only while one of these is free.
const CardTxRReqPool = 16

// rreqPool is the responder's store of Read Request records (card_rx's
// m_rreq): CardTxRReqPool slots in block RAM, each with its QP and its age
// relative to the others in flops, so that a QP's oldest record is found
// in one cycle. Records of a QP are answered in the order they came.
type rreqPool struct {
	canTake *Signal           // a slot is free
	data    *Signal           // the record read (registered, a cycle after rd)
	slot    *Signal           // the slot read
	have    *Signal           // the QP asked for has a record
	holds   func(q Expr) Expr // whether some slot holds a record of QP q
}

// rreq record layout in the pool: sink STag 31:0, sink TO 95:32, size
// 127:96, source STag 159:128, source TO 223:160, DDP header 367:224.
const rreqRecW = 32 + 64 + 32 + 32 + 64 + 8*untaggedHdr

// newRReqPool builds the pool: take writes rec for QP qpn into a free
// slot; rd reads the oldest record of QP q (have says whether it has one)
// into data, and free releases the slot last read.
func newRReqPool(m *Module, take Expr, qpn Expr, rec Expr, rd Expr, q Expr, free Expr) *rreqPool {
	const P = CardTxRReqPool
	PB := log2(P)
	p := &rreqPool{}
	valid := make([]*Signal, P)
	qps := make([]*Signal, P)
	older := make([]*Signal, P) // older[i] bit j: slot j's record came before slot i's
	for i := range valid {
		valid[i] = m.RegDecl(fmt.Sprintf("rrp%d_v", i), 1, "")
		qps[i] = m.RegDecl(fmt.Sprintf("rrp%d_qp", i), 10, "")
		older[i] = m.RegDecl(fmt.Sprintf("rrp%d_older", i), P, "the slots whose records came before this one's")
	}
	// The first free slot.
	var freeIdx Expr = C(PB, 0)
	var anyFree Expr = C(1, 0)
	for i := P - 1; i >= 0; i-- {
		freeIdx = Sel(Not(valid[i]), C(PB, uint64(i)), freeIdx)
		anyFree = Or(anyFree, Not(valid[i]))
	}
	fi := m.WireOf("rrp_free_idx", freeIdx, "the slot the next record takes")
	p.canTake = m.WireOf("rrp_can_take", anyFree, "")
	// The oldest record of QP q.
	match := make([]Expr, P)
	for i := range match {
		match[i] = m.WireOf(fmt.Sprintf("rrp%d_match", i), And(valid[i], Eq(qps[i], q)), "")
	}
	var oldIdx Expr = C(PB, 0)
	var have Expr = C(1, 0)
	for i := P - 1; i >= 0; i-- {
		var younger Expr = C(1, 0) // a record of q came before slot i's
		for j := 0; j < P; j++ {
			if j != i {
				younger = Or(younger, And(match[j], Bit(older[i], j)))
			}
		}
		oldest := m.WireOf(fmt.Sprintf("rrp%d_oldest", i), And(match[i], Not(younger)), "")
		oldIdx = Sel(oldest, C(PB, uint64(i)), oldIdx)
		have = Or(have, match[i])
	}
	p.have = m.WireOf("rrp_have", have, "the QP has a record waiting")
	p.holds = func(q Expr) Expr {
		var any Expr = C(1, 0)
		for i := range valid {
			any = Or(any, And(valid[i], Eq(qps[i], q)))
		}
		return any
	}
	p.slot = m.Reg("rrp_rd_slot", PB, nil, oldIdx, rd, "the slot read")
	p.data = m.Mem("rrp_data", rreqRecW, P, take, fi, rec, rd, oldIdx, "Read Request records")
	var vs []Expr
	for i := P - 1; i >= 0; i-- {
		vs = append(vs, valid[i])
	}
	vAll := m.WireOf("rrp_valid", Cat(vs...), "")
	sets := make([]Expr, P)
	for i := range valid {
		sets[P-1-i] = m.WireOf(fmt.Sprintf("rrp%d_set", i), And(take, Eq(fi, C(PB, uint64(i)))), "")
	}
	setMask := m.WireOf("rrp_set", Cat(sets...), "the slot a record takes this cycle (younger than every other)")
	for i := range valid {
		set := sets[P-1-i]
		clr := And(free, Eq(p.slot, C(PB, uint64(i))))
		m.Drive(valid[i], big.NewInt(0), Or(set, And(valid[i], Not(clr))), nil)
		m.Drive(qps[i], nil, qpn, set)
		m.Drive(older[i], nil, Sel(set, vAll, And(older[i], Not(setMask))), nil)
	}
	return p
}
