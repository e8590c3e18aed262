package gen

import (
	"fmt"
	"math/big"
	"strings"
)

// CardCQWidths lists the data widths the project ships for card_cq.
var CardCQWidths = []int{64, 512}

// CardCQConfig sizes card_cq.
type CardCQConfig struct {
	Width   int // DMA data width in bits (64 to 512, a power of two)
	Sources int // completion ports and event ports (one of each per engine)
}

// CardCQDefault is the shipped configuration: two engines (card_tx,
// card_rx) each with a completion and an event port.
func CardCQDefault(width int) CardCQConfig { return CardCQConfig{Width: width, Sources: 2} }

// CardCQTight is how many free entries make a CQ tight (card_cq's
// cq_tight): more than the completions the engines, card_stat and card_cq
// hold between a WQE's start and its completion's verdict (card_tx 9,
// card_stat 9, card_cq 3, card_rx's in flight), so that on a CQ that is
// not tight a completion can overrun only after the WQE behind it has
// been held (card_tx).
const CardCQTight = 32

// Card queue constants (docs/card.md).
const (
	cardCQs      = 1024 // CQ numbers
	cardQueueLog = 16   // deepest CQ or EQ, log2
	cardCQEBytes = 32
	cardEQEBytes = 16
	cardIdxBits  = 24 // CQ and EQ indices, free running modulo 2^24
	cardCQRecQ   = 4  // records (CQEs, EQEs) waiting for dma_wr
	cardIRQSeq   = 9  // bits of the EQE sequence counters the interrupt waits on (more than the writes in flight)
	// cardCQBursts is how many writes await their response in card_cq's
	// dma_wr: 128 keep 0.5 writes a cycle going at a 250-cycle write
	// response latency.
	cardCQBursts = 128
	// cardCQFaultLog: log2 of the writes card_cq numbers for its fault
	// reports, more than can await a response (cardCQBursts bursts and
	// dma_wr's queue of requests).
	cardCQFaultLog = 8
	cqOpCreate     = 1
	cqOpDestroy    = 2
	eqeCQNotify    = 1
	eqeCQOverrun   = 9
	eqeCQError     = 11
	// cardCQFaultQ: CQE faults waiting for stage A (card_cq takes no
	// write response while two wait).
	cardCQFaultQ  = 4
	eqeTermSent   = 6
	eqeTermRecv   = 7
	cardCQKindBit = 3
)

// card_cq operations (stage B's kind).
const (
	cqkCpl = iota
	cqkEv
	cqkCQDB
	cqkCmd
	cqkEQCfg
	cqkEQDB
	cqkFault // a CQE's write faulted: the CQ goes to error
)

// CardCQ builds card_cq_w<width>: the card's one writer of CQEs and EQEs,
// its CQ contexts, its EQ and its interrupt.
func CardCQ(cfg CardCQConfig) (*Module, error) {
	W := cfg.Width
	NS := cfg.Sources
	if W < 64 || W > 512 || W&(W-1) != 0 || NS < 1 || NS > 4 {
		return nil, fmt.Errorf("%w: card_cq width %d (a power of two from 64 to 512), %d sources (1..4)", ErrInvalid, W, NS)
	}
	dcfg := DMAWrDefault(W)
	dcfg.Bursts = cardCQBursts
	dcfg.TagBits = cardCQFaultLog + 1 // {write number, is an EQE}
	dma, err := DMAWr(dcfg)
	if err != nil {
		return nil, err
	}
	L := W / 8
	m := NewModule(fmt.Sprintf("card_cq_w%d", W), "docs/card.md (CQE, EQE, CQ_DB, EQ_CFG, EQ_DB, IRQ_MODERATION, CQ_CMD); host/driver/cardmodel queues.go",
		fmt.Sprintf("The card's completion and event queues: the one writer of CQEs and EQEs. It takes completion records (s_cpl<i>_*) and event records (s_ev<i>_*) from %d engines, CQ commands (cq_cmd_* with the staged CQ_NUM, CQ_BASE, CQ_CFG of card_regs), CQ doorbells (s_cqdb_*: card_regs' m_db of kind CQ_DB_CI), the EQ's configuration (eq_base_*, eq_cfg_*, taken when eq_cfg_wr_pulse says EQ_CFG was written) and doorbell (eq_db_*), and writes each CQE (32 bytes) and EQE (16 bytes) with one DMA write through a dma_wr instance (m_axi_*). It behaves as host/driver/cardmodel's queues do, operation by operation: the owner bit is the last bit written and is 1 on the card's first pass over a ring; a completion on a full CQ is lost, reported once by a CQ_OVERRUN event and on m_overrun (the engines put the QPs on that CQ in error), and the CQ's overrun clears once a doorbell frees an entry; a completion on an armed CQ (for a solicited-only arming: a solicited or error one) writes a CQ_NOTIFY event after its CQE and disarms the CQ; an arming doorbell that finds a completion past its CI (for a solicited-only arming: a solicited or error one, tracked by the PI past the last such CQE) writes the CQ_NOTIFY at once instead of arming, so that an arm racing a CQE still on its way to memory is not lost; an event on a disabled or full EQ is lost (events_lost); an event on an armed EQ disarms it and raises the interrupt, as does arming an EQ that holds unconsumed entries. Refused commands and configurations (a CQ that exists, a size over 2^%d, a base not aligned to the ring) change nothing. cq_tight says, per CQ, that it has at most %d entries free (set from each context written), and cpl_busy that a completion taken has no verdict yet: card_tx holds a WQE on a tight CQ until the completions before it are written or lost.", NS, cardQueueLog, CardCQTight),
		"Operations are serial, in the order they are taken: one per cycle at most, the EQ configuration first, then a CQE fault, then CQ commands (each once no CQE can still fault: none in stages B to D, in the record queue or on the bus without its response, nor its fault waiting, so that a fault never reaches a CQ created again under its number), EQ doorbells (card_regs takes no register write while one waits), then round robin the CQ doorbells and the engines' completion and event ports. An operation is read from the CQ context RAM (1024 entries, block RAM, written back with a one-entry bypass) in the cycle after it is taken, and its records enter a 4-entry queue in front of dma_wr (a completion with a CQ_NOTIFY takes two cycles). The CQ context RAM is cleared for 1024 cycles after reset (init_done low, nothing taken).",
		fmt.Sprintf("Interrupt: irq_valid/irq_vector (held until irq_ready) rise once the EQE that raised the interrupt has its write response (for an arming doorbell: every EQE written so far), and at least IRQ_MODERATION cycles after the previous irq_valid was taken; interrupts due meanwhile make one. An EQE whose write gets an error response stops the card (fatal: later operations write nothing), as does an event record with s_ev<i>_stop (card_stat's DMA_FAULT of a status write) once it is written (or lost). A CQE whose write gets an error response puts its CQ in error, as the card model's completeCQ does a write response late: the fault waits in a %d-entry queue (no write response is taken while two wait) for stage A, which takes it ahead of the records; in stage D, on a live CQ not in error, it sets the context's error bit (from then on every completion on that CQ is lost, until DESTROY), writes CQ_ERROR (OBJ the CQ, INFO the CQE's address bits 31:0), names the CQE on m_fault_* (its address and QP) and gives the overrun record with m_overrun_dma (the engines put the QPs on that CQ in error with QP_ERROR DMA); a fault on a CQ already in error (a CQE issued before the first fault came back) does nothing. An EQE's fault is named on m_fault_* the cycle after its response. A RAM of %d entries keeps each write's address, QP and CQ until its response. Every DMA write is %d or %d bytes in one INCR burst (no 4 KiB crossing: entries are aligned).", cardCQFaultQ, 1<<cardCQFaultLog, cardCQEBytes, cardEQEBytes),
	)
	m.Clock()
	rst := m.ResetPort()
	one, zero := C(1, 1), C(1, 0)
	var unused []Expr

	// Inputs.
	type cplPort struct {
		valid, ready, cq, qpn, wrid, blen, opc, status, inv, sol, invd, tl, tt, tc *Signal
	}
	type evPort struct{ valid, ready, typ, obj, info, tl, tt, tc, stop *Signal }
	var cpls []cplPort
	var evs []evPort
	for i := 0; i < NS; i++ {
		p := fmt.Sprintf("s_cpl%d_", i)
		c := cplPort{
			valid:  m.Input(p+"valid", 1, fmt.Sprintf("engine %d: a completion", i)),
			ready:  m.Output(p+"ready", 1, ""),
			cq:     m.Input(p+"cq", 10, "CQ number"),
			qpn:    m.Input(p+"qpn", 16, "QP number"),
			wrid:   m.Input(p+"wr_id", 64, "the WQE's WR_ID"),
			blen:   m.Input(p+"byte_len", 32, "bytes received or moved"),
			opc:    m.Input(p+"opcode", 8, "WC_OPCODE"),
			status: m.Input(p+"status", 8, "WC_STATUS"),
			inv:    m.Input(p+"inv_stag", 32, "the STag the peer invalidated"),
			sol:    m.Input(p+"solicited", 1, "the Send carried Solicited Event"),
			invd:   m.Input(p+"invalidated", 1, "the Send invalidated inv_stag"),
			tl:     m.Input(p+"term_layer", 4, "error by a Terminate: its layer (else 0)"),
			tt:     m.Input(p+"term_type", 4, "its error type"),
			tc:     m.Input(p+"term_code", 8, "its error code"),
		}
		cpls = append(cpls, c)
		p = fmt.Sprintf("s_ev%d_", i)
		evs = append(evs, evPort{
			valid: m.Input(p+"valid", 1, fmt.Sprintf("engine %d: an event", i)),
			ready: m.Output(p+"ready", 1, ""),
			typ:   m.Input(p+"type", 8, "EQE_TYPE"),
			obj:   m.Input(p+"obj", 32, "QP or CQ number"),
			info:  m.Input(p+"info", 32, "type-specific detail"),
			tl:    m.Input(p+"term_layer", 4, "TERM_SENT, TERM_RECV: the Terminate's layer"),
			tt:    m.Input(p+"term_type", 4, "its error type"),
			tc:    m.Input(p+"term_code", 8, "its error code"),
			stop:  m.Input(p+"stop", 1, "the card stops once this event is written or lost (a status write's DMA_FAULT)"),
		})
	}
	cqdbV := m.Input("s_cqdb_valid", 1, "a CQ doorbell (card_regs m_db of kind CQ_DB_CI)")
	cqdbR := m.Output("s_cqdb_ready", 1, "")
	cqdbN := m.Input("s_cqdb_index", 10, "CQ number")
	cqdbVal := m.Input("s_cqdb_value", 32, "CQ_DB.CI as written")
	cmdV := m.Input("cq_cmd_valid", 1, "card_regs: CQ_CMD written")
	cmdR := m.Output("cq_cmd_ready", 1, "the command is taken")
	cmdOp := m.Input("cq_cmd_op", 4, "CQ_OP")
	cmdNum := m.Input("cq_num_cqn", 16, "staged CQ_NUM")
	cmdBaseLo := m.Input("cq_base_lo", 32, "staged CQ_BASE")
	cmdBaseHi := m.Input("cq_base_hi", 32, "")
	cmdLog := m.Input("cq_cfg_log_size", 5, "staged CQ_CFG.LOG_SIZE")
	eqBaseLo := m.Input("eq_base_lo", 32, "EQ_BASE")
	eqBaseHi := m.Input("eq_base_hi", 32, "")
	eqLogIn := m.Input("eq_cfg_log_size", 5, "EQ_CFG")
	eqVecIn := m.Input("eq_cfg_vector", 8, "")
	eqEnIn := m.Input("eq_cfg_enable", 1, "")
	eqCfgWr := m.Input("eq_cfg_wr_pulse", 1, "EQ_CFG is written this cycle (its new value shows from the next)")
	eqdbV := m.Input("eq_db_valid", 1, "card_regs: EQ_DB written")
	eqdbR := m.Output("eq_db_ready", 1, "the doorbell is taken")
	eqdbCI := m.Input("eq_db_ci", 24, "")
	eqdbArm := m.Input("eq_db_arm", 1, "")
	irqMod := m.Input("irq_moderation_cycles", 24, "IRQ_MODERATION")
	irqV := m.Output("irq_valid", 1, "raise irq_vector (MSI-X); held until irq_ready")
	irqR := m.Input("irq_ready", 1, "")
	irqVec := m.Output("irq_vector", 8, "")
	ovV := m.Output("m_overrun_valid", 1, "a CQ overran: the engines put every QP on m_overrun_cq in error")
	ovR := m.Input("m_overrun_ready", 1, "")
	ovCQ := m.Output("m_overrun_cq", 10, "")
	ovDMA := m.Output("m_overrun_dma", 1, "the CQ is in error (a CQE's write faulted: QP_ERROR DMA), not full (QP_ERROR CQ_OVERRUN)")
	faultV := m.Output("m_fault_valid", 1, "pulse: an EQE's DMA write got an error response, or a CQE's put its CQ in error")
	faultA := m.Output("m_fault_addr", 64, "its address")
	faultQPN := m.Output("m_fault_qpn", 16, "a CQE's QP (0 for an EQE)")
	faultEQE := m.Output("m_fault_eqe", 1, "it was an EQE's (the card stops)")
	fatalO := m.Output("fatal", 1, "an EQE's DMA write got an error response, or a stopping event was written: the card is stopped (STATUS.FATAL)")
	lostO := m.Output("events_lost", 32, "events lost because the EQ was disabled or full")
	initDone := m.Output("init_done", 1, "the CQ contexts are cleared after reset")
	tightO := m.Output("cq_tight", cardCQs, fmt.Sprintf("bit n: CQ n exists with at most %d entries free (card_tx holds a WQE on such a CQ until the completions before it are resolved)", CardCQTight))
	cplBusyO := m.Output("cpl_busy", 1, "a completion record taken is not yet written or lost")

	// Initialisation sweep of the context RAM.
	initCnt := m.RegDecl("init_cnt", 11, "CQ contexts cleared so far")
	initAct := m.WireOf("init_active", Not(Bit(initCnt, 10)), "")
	m.Drive(initCnt, big.NewInt(0), Add(initCnt, C(11, 1)), initAct)
	m.Assign(initDone, Not(initAct))

	// Stage A: pick one operation.
	bFree := m.Wire("b_free", 1, "stage B takes an operation this cycle")
	eqCfgPend := m.RegDecl("eqcfg_pend", 1, "EQ_CFG was written and is not yet applied")
	// A CQ command waits until no CQE can still fault (none in stages B to
	// D, written without its response, or its fault waiting), so that a
	// fault never reaches a CQ created again under the same number; a
	// waiting fault goes first.
	fqCount := m.Wire("fq_held", addrWidth(cardCQFaultQ+1), "CQE faults waiting")
	fqV := m.WireOf("fq_v", RedOr(fqCount), "a CQE fault waits")
	cqeQuiet := m.Wire("cqe_quiet", 1, "no CQE can still fault")
	gEQCfg := m.WireOf("g_eqcfg", eqCfgPend, "")
	gFault := m.WireOf("g_fault", And(fqV, Not(eqCfgPend)), "")
	gCmd := m.WireOf("g_cmd", And(cmdV, Not(eqCfgPend), Not(fqV), cqeQuiet), "")
	gEQDB := m.WireOf("g_eqdb", And(eqdbV, Not(Or(eqCfgPend, fqV, cmdV))), "")
	ctl := m.WireOf("ctl_any", Or(eqCfgPend, cmdV, eqdbV), "")
	recFree := m.WireOf("rec_free", Not(Or(ctl, fqV)), "the doorbells and records may be taken")
	// CQ doorbells and records round robin: requester 0 is the CQ
	// doorbell, 1+2i completion port i, 2+2i event port i.
	NR := 1 + 2*NS
	reqs := []Expr{cqdbV}
	for i := 0; i < NS; i++ {
		reqs = append(reqs, cpls[i].valid, evs[i].valid)
	}
	RB := addrWidth(NR)
	last := m.RegDecl("rr_last", RB, "the record port granted last")
	grants := make([]*Signal, NR)
	for j, g := range roundRobin(reqs, last) {
		grants[j] = m.WireOf(fmt.Sprintf("g_rec%d", j), And(recFree, g), "")
	}
	gCQDB := grants[0]
	var anyRec []Expr
	for _, g := range grants {
		anyRec = append(anyRec, g)
	}
	anyReq := m.WireOf("a_any", Or(eqCfgPend, fqV, gCmd, gEQDB, RedOrParts(anyRec)), "")
	aTake := m.WireOf("a_take", And(anyReq, bFree, Not(initAct), Not(rst)), "an operation moves to stage B")
	var lastNext []Expr
	for j := 0; j < NR; j++ {
		lastNext = append(lastNext, gate(grants[j], C(RB, uint64(j))))
	}
	m.Drive(last, big.NewInt(0), RedOrParts(lastNext), And(aTake, RedOrParts(anyRec)))
	m.Drive(eqCfgPend, big.NewInt(0), Or(eqCfgWr, And(eqCfgPend, Not(And(aTake, gEQCfg)))), nil)
	m.Assign(cmdR, And(aTake, gCmd))
	m.Assign(eqdbR, And(aTake, gEQDB))
	m.Assign(cqdbR, And(aTake, gCQDB))
	for i := 0; i < NS; i++ {
		m.Assign(cpls[i].ready, And(aTake, grants[1+2*i]))
		m.Assign(evs[i].ready, And(aTake, grants[2+2*i]))
	}

	// The operation, as stage B holds it (fields shared between kinds).
	pick := func(parts ...[2]Expr) Expr { // OR of gated values
		var xs []Expr
		for _, p := range parts {
			xs = append(xs, gate(p[0], p[1]))
		}
		return RedOrParts(xs)
	}
	var kindP, cqP, qpnP, wideP, lenP, opcP, stP, invP, flP, termP [][2]Expr
	// The CQE fault at the head of its queue: {address bits 63:4, QP, CQ}.
	fqIn := m.Wire("fq_in", 60+16+10, "")
	fqPush := m.Wire("fq_push", 1, "")
	fq := ShiftQueue(m, "fq", cardCQFaultQ, []string{"f"}, []int{60 + 16 + 10}, fqPush, []Expr{fqIn}, zext(And(aTake, gFault), addrWidth(cardCQFaultQ+1)))
	m.Assign(fqCount, fq.Count)
	fqHead := fq.Fields[0][0]
	kindP = append(kindP, [2]Expr{gEQCfg, C(3, cqkEQCfg)}, [2]Expr{gCmd, C(3, cqkCmd)}, [2]Expr{gEQDB, C(3, cqkEQDB)}, [2]Expr{gCQDB, C(3, cqkCQDB)}, [2]Expr{gFault, C(3, cqkFault)})
	cqP = append(cqP, [2]Expr{gCmd, Bits(cmdNum, 9, 0)}, [2]Expr{gCQDB, cqdbN}, [2]Expr{gFault, Bits(fqHead, 9, 0)})
	qpnP = append(qpnP, [2]Expr{gFault, Bits(fqHead, 25, 10)})
	wideP = append(wideP, [2]Expr{gEQCfg, Cat(eqBaseHi, eqBaseLo)}, [2]Expr{gCmd, Cat(cmdBaseHi, cmdBaseLo)}, [2]Expr{gFault, Cat(Bits(fqHead, 85, 26), C(4, 0))})
	lenP = append(lenP, [2]Expr{gCQDB, cqdbVal}, [2]Expr{gEQDB, Cat(eqdbArm, C(7, 0), eqdbCI)}, [2]Expr{gFault, Cat(Bits(fqHead, 53, 26), C(4, 0))})
	opcP = append(opcP, [2]Expr{gEQCfg, eqVecIn})
	stP = append(stP, [2]Expr{gCmd, Cat(C(4, 0), cmdOp)})
	flP = append(flP, [2]Expr{gEQCfg, Cat(C(1, 0), eqEnIn)}, [2]Expr{gCmd, Cat(RedOr(Bits(cmdNum, 15, 10)), C(1, 0))})
	termP = append(termP, [2]Expr{gEQCfg, zext(eqLogIn, 16)}, [2]Expr{gCmd, zext(cmdLog, 16)})
	for i := 0; i < NS; i++ {
		c, e := cpls[i], evs[i]
		gc, ge := grants[1+2*i], grants[2+2*i]
		kindP = append(kindP, [2]Expr{gc, C(3, cqkCpl)}, [2]Expr{ge, C(3, cqkEv)})
		cqP = append(cqP, [2]Expr{gc, c.cq})
		qpnP = append(qpnP, [2]Expr{gc, c.qpn})
		wideP = append(wideP, [2]Expr{gc, c.wrid})
		lenP = append(lenP, [2]Expr{gc, c.blen}, [2]Expr{ge, e.info})
		opcP = append(opcP, [2]Expr{gc, c.opc}, [2]Expr{ge, e.typ})
		stP = append(stP, [2]Expr{gc, c.status})
		invP = append(invP, [2]Expr{gc, c.inv}, [2]Expr{ge, e.obj})
		flP = append(flP, [2]Expr{gc, Cat(c.invd, c.sol)}, [2]Expr{ge, Cat(zero, e.stop)})
		termP = append(termP, [2]Expr{gc, Cat(c.tc, c.tt, c.tl)}, [2]Expr{ge, Cat(e.tc, e.tt, e.tl)})
	}
	aCQ := m.WireOf("a_cq", pick(cqP...), "the CQ the operation reads")
	bV := m.RegDecl("b_v", 1, "stage B holds an operation")
	bKind := m.Reg("b_kind", 3, big.NewInt(0), pick(kindP...), aTake, "what it is")
	bCQ := m.Reg("b_cq", 10, big.NewInt(0), aCQ, aTake, "its CQ")
	bQPN := m.Reg("b_qpn", 16, big.NewInt(0), pick(qpnP...), aTake, "completion, fault: QP")
	bWide := m.Reg("b_wide", 64, big.NewInt(0), pick(wideP...), aTake, "completion: WR_ID; CQ_CMD, EQ_CFG: base; fault: the CQE's address")
	bLen := m.Reg("b_len", 32, big.NewInt(0), pick(lenP...), aTake, "completion: BYTE_LEN; event: INFO; doorbells: value; fault: the address's low word")
	bOpc := m.Reg("b_opc", 8, big.NewInt(0), pick(opcP...), aTake, "completion: OPCODE; event: TYPE; EQ_CFG: vector")
	bSt := m.Reg("b_status", 8, big.NewInt(0), pick(stP...), aTake, "completion: STATUS; CQ_CMD: op")
	bInv := m.Reg("b_inv", 32, big.NewInt(0), pick(invP...), aTake, "completion: INV_STAG; event: OBJ")
	bFl := m.Reg("b_flags", 2, big.NewInt(0), pick(flP...), aTake, "completion: invalidated, solicited; event: stop; EQ_CFG: enable; CQ_CMD: CQ_NUM too large")
	bTerm := m.Reg("b_term", 16, big.NewInt(0), pick(termP...), aTake, "code, type, layer; CQ_CMD, EQ_CFG: log2 size")
	isK := func(kind *Signal, k int) Expr { return Eq(kind, C(3, uint64(k))) }
	var aCtxOp []Expr
	for i := 0; i < NS; i++ {
		aCtxOp = append(aCtxOp, grants[1+2*i])
	}
	bCtxOp := m.Reg("b_ctxop", 1, big.NewInt(0), Or(gCmd, gCQDB, gFault, RedOrParts(aCtxOp)), aTake, "it reads and may write a CQ context")

	// CQ context RAM: {in error, valid, base[63:5], log2 size, solicited
	// PI, pi, used, armed, solicited only, overrun}. It keeps PI - CI (used)
	// rather than CI, as the EQ does: fullness and tightness are then
	// masked ORs of a register, not a subtraction deep.
	const (
		oOv   = 0
		oSol  = 1
		oArm  = 2
		oUsed = 3
		oPI   = oUsed + cardIdxBits
		oSPI  = oPI + cardIdxBits
		oLog  = oSPI + cardIdxBits
		oBase = oLog + 5
		oV    = oBase + 59
		oErr  = oV + 1
		oW    = oErr + 1
	)
	type cqCtx struct{ err, valid, base, log, spi, pi, used, arm, sol, ov *Signal }
	fields := func(p string, x *Signal) cqCtx {
		return cqCtx{
			err:   m.WireOf(p+"_err", Bit(x, oErr), "a CQE's write faulted: the CQ takes no CQE until DESTROY"),
			valid: m.WireOf(p+"_valid", Bit(x, oV), ""),
			base:  m.WireOf(p+"_base", Bits(x, oV-1, oBase), ""),
			log:   m.WireOf(p+"_log", Bits(x, oBase-1, oLog), ""),
			spi:   m.WireOf(p+"_spi", Bits(x, oLog-1, oSPI), "PI past the last solicited or error CQE (CI when none lies past CI)"),
			pi:    m.WireOf(p+"_pi", Bits(x, oSPI-1, oPI), ""),
			used:  m.WireOf(p+"_used", Bits(x, oPI-1, oUsed), "PI - CI: entries not consumed"),
			arm:   m.WireOf(p+"_arm", Bit(x, oArm), ""),
			sol:   m.WireOf(p+"_sol", Bit(x, oSol), ""),
			ov:    m.WireOf(p+"_ov", Bit(x, oOv), ""),
		}
	}

	// Stage B: the context, read from the RAM in the cycle the operation
	// was taken and again every cycle it waits here, with a bypass of the
	// last write. It moves on only when no operation ahead of it (C, D)
	// may write its CQ, so the context it takes along stays current.
	memWe := m.Wire("ctx_we", 1, "")
	memWa := m.Wire("ctx_wa", 10, "")
	memWd := m.Wire("ctx_wd", oW, "")
	ctxRd := m.Mem("ctx", oW, cardCQs, memWe, memWa, memWd, nil, Sel(aTake, aCQ, bCQ), "CQ contexts")
	fwV := m.Reg("fw_v", 1, big.NewInt(0), one, memWe, "the bypass holds the last context written")
	fwA := m.Reg("fw_addr", 10, big.NewInt(0), memWa, memWe, "")
	fwD := m.Reg("fw_data", oW, big.NewInt(0), memWd, memWe, "")
	bCtx := m.WireOf("b_cx", Sel(And(fwV, Eq(fwA, bCQ)), fwD, ctxRd), "the context of b_cq as it is now")
	bToC := m.Wire("b_to_c", 1, "the operation moves from B to C")
	opC := StageRegs(m, "c_", bToC, bKind, bCQ, bQPN, bWide, bLen, bOpc, bSt, bInv, bFl, bTerm, bCtxOp)
	cKind, cCQ, cWide, cLen, cSt, cFl, cTerm, cCtxOp := opC[0], opC[1], opC[3], opC[4], opC[6], opC[8], opC[9], opC[10]
	cCtx := m.Reg("c_cx", oW, nil, bCtx, bToC, "the context, current")
	cV := m.RegDecl("c_v", 1, "stage C holds an operation")
	cToD := m.Wire("c_to_d", 1, "the operation moves from C to D")
	m.Drive(cV, big.NewInt(0), Or(bToC, And(cV, Not(cToD))), nil)

	// Ring helpers: mask of the index bits below log, fullness, owner bit.
	ringMask := func(name string, lg *Signal, w int) *Signal {
		bs := make([]Expr, w)
		for i := 0; i < w; i++ {
			bs[w-1-i] = Lt(C(5, uint64(i)), lg)
		}
		return m.WireOf(name, Cat(bs...), "index bits below log2 size")
	}
	bitAt := func(x *Signal, lg *Signal) Expr { // x[lg] for lg 0..16
		var xs []Expr
		for i := 0; i <= cardQueueLog; i++ {
			xs = append(xs, And(Eq(lg, C(5, uint64(i))), Bit(x, i)))
		}
		return RedOrParts(xs)
	}
	fullOf := func(used, mask Expr) Expr { return RedOr(And(used, Not(mask))) }

	// Stage C: the context's ring terms and the commands' checks, each
	// from registers, for D to act on.
	cx := fields("c_cx", cCtx)
	cqMaskC := ringMask("c_cq_mask", cx.log, cardIdxBits)
	cFull := m.WireOf("c_cq_full", fullOf(cx.used, cqMaskC), "as many CQEs as the ring holds")
	cUsedInc := m.WireOf("c_used_inc", IncBits(cx.used, cardIdxBits-1, 0), "")
	// Tightness after the operation, for each value it can leave: the
	// used count as it is (an overrun), one more (a CQE written).
	// mask is the ring's index mask (ringMask), lg its log2 size.
	tightOf := func(name string, used Expr, mask, lg *Signal) *Signal {
		mask25 := Cat(Lt(C(5, cardIdxBits), lg), mask)
		return m.WireOf(name, RedOr(And(Add(zext(used, cardIdxBits+1), C(cardIdxBits+1, CardCQTight)), Not(mask25))), fmt.Sprintf("at most %d entries free", CardCQTight))
	}
	cTight0 := tightOf("c_tight0", cx.used, cqMaskC, cx.log)
	cTight1 := tightOf("c_tight1", cUsedInc, cqMaskC, cx.log)
	cOwner := m.WireOf("c_cq_owner", Not(bitAt(cx.pi, cx.log)), "owner bit of a CQE written now")
	cAddr := m.WireOf("c_cq_addr", Cat(Or(cx.base, zext(And(Bits(cx.pi, 16, 0), Bits(cqMaskC, 16, 0)), 59)), zero), "its address, bits 63:4")
	cPIInc := m.WireOf("c_pi_inc", IncBits(cx.pi, cardIdxBits-1, 0), "")
	cDbCI := m.WireOf("c_db_ci", Bits(cLen, cardIdxBits-1, 0), "")
	cDbUsed := m.WireOf("c_db_used", SubBits(m, "c_db_sub", cx.pi, cDbCI), "doorbell: entries not consumed after it")
	cSpiUsed := m.WireOf("c_spi_used", SubBits(m, "c_spi_sub", cx.spi, cDbCI), "doorbell: solicited PI past the new CI")
	cmdBadNum := m.WireOf("cmd_bad_num", Bit(cFl, 1), "")
	cmdLogC := m.WireOf("c_cmd_log", Bits(cTerm, 4, 0), "")
	cmdMask := ringMask("cmd_mask", cmdLogC, 17)
	cmdAligned := m.WireOf("cmd_aligned", And(Not(RedOr(Bits(cWide, 4, 0))), Not(RedOr(And(Bits(cWide, 21, 5), cmdMask)))), "")
	cCreate := m.WireOf("c_cmd_create", And(isK(cKind, cqkCmd), Not(cmdBadNum), Eq(Bits(cSt, 3, 0), C(4, cqOpCreate)), Not(cx.valid),
		Not(Lt(C(5, cardQueueLog), cmdLogC)), cmdAligned), "")
	cDestroy := m.WireOf("c_cmd_destroy", And(isK(cKind, cqkCmd), Not(cmdBadNum), Eq(Bits(cSt, 3, 0), C(4, cqOpDestroy)), cx.valid), "")
	cfgMask := ringMask("cfg_mask", cmdLogC, 17)
	cfgOKC := m.WireOf("c_cfg_ok", Or(Not(Bit(cFl, 0)), And(Not(Lt(C(5, cardQueueLog), cmdLogC)), Not(RedOr(Bits(cWide, 3, 0))),
		Not(RedOr(And(Bits(cWide, 20, 4), cfgMask))))), "EQ_CFG: not refused")
	unused = append(unused, Bits(cSt, 7, 4), Bits(cTerm, 15, 5), Bits(cLen, 31, cardIdxBits))
	// The operation's kind, one-hot, and a completion's terms that do not
	// wait for the ring's fullness.
	cCplLive := m.WireOf("c_cpl_live", And(isK(cKind, cqkCpl), cx.valid, Not(cx.err)), "a completion on a CQ that exists and is not in error")
	cCplSol := m.WireOf("c_cpl_sol", Or(Bit(cFl, 0), RedOr(cSt)), "a solicited or error completion")
	cCplArm := m.WireOf("c_cpl_armed", And(cCplLive, cx.arm, Or(Not(cx.sol), cCplSol)), "a CQ_NOTIFY follows if the CQE is written")
	cCplOv := m.WireOf("c_cpl_ov_new", And(cCplLive, Not(cx.ov)), "an overrun would be reported now")
	cIs := m.WireOf("c_is", Cat(And(isK(cKind, cqkFault), cx.valid, Not(cx.err)), isK(cKind, cqkEQDB), isK(cKind, cqkEQCfg), And(isK(cKind, cqkCQDB), cx.valid), isK(cKind, cqkCQDB), isK(cKind, cqkEv)),
		"one-hot: a fault that puts a live CQ in error, EQ_DB, EQ_CFG, CQ_DB on a CQ that exists, CQ_DB, event")

	// Stage D: acts (the records, the context written back, the EQ).
	opD := StageRegs(m, "d_", cToD, opC...)
	dKind, dCQ, dQPN, dWide, dLen, dOpc, dSt, dInv, dFl, dTerm := opD[0], opD[1], opD[2], opD[3], opD[4], opD[5], opD[6], opD[7], opD[8], opD[9]
	dCtx := m.Reg("d_cx", oW, nil, cCtx, cToD, "")
	dTerms := StageRegs(m, "d_", cToD, cqMaskC, cFull, cOwner, cAddr, cPIInc, cDbUsed, cSpiUsed, cCreate, cDestroy, cfgOKC,
		cCplLive, cCplSol, cCplArm, cCplOv, cIs, cUsedInc, cTight0, cTight1)
	dMask, cqFull, cqOwner, cqA, dPIInc, dDbUsed, dSpiUsed, cmdCreate, cmdDestroy, cfgOK := dTerms[0], dTerms[1], dTerms[2], dTerms[3], dTerms[4], dTerms[5], dTerms[6], dTerms[7], dTerms[8], dTerms[9]
	dCplLive, cplSol, dCplArm, dCplOv, dIs := dTerms[10], dTerms[11], dTerms[12], dTerms[13], dTerms[14]
	dUsedInc, dTight0, dTight1 := dTerms[15], dTerms[16], dTerms[17]
	dV := m.RegDecl("d_v", 1, "stage D holds an operation")
	bGo := m.Wire("b_go", 1, "stage D acts")
	m.Drive(dV, big.NewInt(0), Or(cToD, And(dV, Not(bGo))), nil)
	m.Assign(cToD, And(cV, Or(Not(dV), bGo)))
	dCtxOp := opD[10]
	conflict := m.WireOf("b_conflict", And(bCtxOp, Or(And(cV, cCtxOp, Eq(cCQ, bCQ)), And(dV, dCtxOp, Eq(dCQ, bCQ)))),
		"an operation ahead may write B's CQ: B waits for its write")
	m.Assign(bToC, And(bV, Or(Not(cV), cToD), Not(conflict)))
	m.Assign(bFree, Or(Not(bV), bToC))
	m.Drive(bV, big.NewInt(0), Or(aTake, And(bV, Not(bToC))), nil)
	kEv := m.WireOf("k_ev", And(dV, Bit(dIs, 0)), "")
	kCQDBv := m.WireOf("k_cqdb_live", And(dV, Bit(dIs, 2)), "on a CQ that exists")
	kEQCfg := m.WireOf("k_eqcfg", And(dV, Bit(dIs, 3)), "")
	kEQDB := m.WireOf("k_eqdb", And(dV, Bit(dIs, 4)), "")
	cxd := fields("cx", dCtx)
	cxPI, cxUsed, cxSPI, cxArm, cxSol, cxOv := cxd.pi, cxd.used, cxd.spi, cxd.arm, cxd.sol, cxd.ov
	unused = append(unused, cxd.base, cxd.valid, cxd.err, dKind)

	// The doorbells' comparisons take D's first cycle (registered from
	// D's registers), the doorbells act in the second.
	dPh := m.RegDecl("d_ph", 1, "a doorbell's terms are ready (its second cycle in D)")
	dNeed := m.WireOf("d_two", And(dV, Or(Bit(dIs, 1), Bit(dIs, 4))), "the operation takes two cycles in D")
	m.Drive(dPh, big.NewInt(0), And(dNeed, Not(bGo)), nil)

	// EQ state.
	eqBase := m.RegDecl("eq_base", 60, "EQ base, bits 63:4")
	eqLog := m.RegDecl("eq_log", 5, "")
	eqVec := m.RegDecl("eq_vector", 8, "")
	eqEn := m.RegDecl("eq_enabled", 1, "")
	eqPI := m.RegDecl("eq_pi", cardIdxBits, "")
	eqUsed := m.RegDecl("eq_used", cardIdxBits, "EQ PI minus CI: entries not consumed")
	eqArm := m.RegDecl("eq_armed", 1, "")
	fatal := m.RegDecl("fatal_q", 1, "")
	kFault := m.WireOf("k_fault", And(dV, Bit(dIs, 5), Not(fatal)), "a CQE's fault puts its live CQ in error")
	eqMask := ringMask("eq_mask", eqLog, cardIdxBits)
	eqFull := m.WireOf("eq_full", fullOf(eqUsed, eqMask), "as many EQEs as the ring holds")
	eqOwner := m.WireOf("eq_owner", Not(bitAt(eqPI, eqLog)), "")
	eqA := m.WireOf("eq_addr", Or(eqBase, zext(And(Bits(eqPI, 16, 0), Bits(eqMask, 16, 0)), 60)), "the EQE's address, bits 63:4")

	// Completion.
	cplLive := m.WireOf("cpl_live", And(dV, dCplLive, Not(fatal)), "the CQ exists and the card runs")
	cplNewOv := m.WireOf("cpl_new_ov", And(dV, dCplOv, Not(fatal), cqFull), "the CQ is full, the overrun is reported now")
	cplWrite := m.WireOf("cpl_write", And(cplLive, Not(cqFull)), "the CQE is written")
	cplNotify := m.WireOf("cpl_notify", And(dV, dCplArm, Not(fatal), Not(cqFull)), "a CQ_NOTIFY follows")
	dbNotify := m.Wire("db_notify", 1, "an arming doorbell finds a completion past its CI: CQ_NOTIFY at once")
	cqe := m.WireOf("cqe", Cat(cqOwner, C(71, 0), Bits(dTerm, 15, 8), Bits(dTerm, 7, 4), Bits(dTerm, 3, 0), C(6, 0), Bits(dFl, 1, 0),
		dInv, dSt, dOpc, dQPN, dLen, dWide), "the CQE")

	// Event: from an event record, a completion's CQ_NOTIFY / CQ_OVERRUN,
	// or a fault's CQ_ERROR (INFO the CQE's address bits 31:0).
	evOn := m.WireOf("ev_on", And(Or(kEv, cplNotify, cplNewOv, dbNotify, kFault), Not(fatal)), "an event is due")
	evType := m.WireOf("ev_type", Sel(kEv, dOpc, Sel(Or(cplNotify, dbNotify), C(8, eqeCQNotify), Sel(kFault, C(8, eqeCQError), C(8, eqeCQOverrun)))), "")
	evObj := m.WireOf("ev_obj", Sel(kEv, dInv, zext(dCQ, 32)), "")
	evInfo := m.WireOf("ev_info", gate(Or(kEv, kFault), dLen), "")
	isTerm := m.WireOf("ev_term", And(kEv, Or(Eq(dOpc, C(8, eqeTermSent)), Eq(dOpc, C(8, eqeTermRecv)))), "")
	evTerm := m.WireOf("ev_term_f", gate(isTerm, dTerm), "")
	evWrite := m.WireOf("ev_write", And(evOn, eqEn, Not(eqFull)), "the EQE is written")
	evLost := m.WireOf("ev_lost", And(evOn, Not(And(eqEn, Not(eqFull)))), "")
	eqe := m.WireOf("eqe", Cat(eqOwner, C(31, 0), evInfo, evObj, C(8, 0), Bits(evTerm, 15, 8), Bits(evTerm, 7, 4), Bits(evTerm, 3, 0), evType), "the EQE")

	// Records towards dma_wr: {a CQE's CQ, address bits 63:4, 32 bytes,
	// is an EQE}.
	RQW := 10 + 60 + 256 + 1
	holdV := m.RegDecl("hold_v", 1, "the second record of a completion (its CQ_NOTIFY) waits")
	ovQ := m.RegDecl("ov_v", 1, "")
	rqPushW := m.Wire("rq_push", 1, "")
	rqPop := m.Wire("rq_pop", addrWidth(cardCQRecQ+1), "")
	rec1V := m.WireOf("rec1_v", Or(cplWrite, evWrite), "")
	rec1 := m.WireOf("rec1", Sel(cplWrite, Cat(dCQ, cqA, cqe, zero), Cat(C(10, 0), eqA, zext(eqe, 256), one)), "")
	rec2V := m.WireOf("rec2_v", And(cplWrite, evWrite), "")
	rqIn := m.Wire("rq_in", RQW, "")
	rq := ShiftQueue(m, "rq", cardCQRecQ, []string{"rec"}, []int{RQW}, rqPushW, []Expr{rqIn}, rqPop)
	rqRoom := m.WireOf("rq_room", Lt(rq.Count, C(rq.Count.W, cardCQRecQ)), "")
	m.Assign(bGo, And(dV, Not(holdV), rqRoom, Or(Not(ovQ), ovR), Or(Not(dNeed), dPh)))
	holdRec := m.Reg("hold_rec", RQW, big.NewInt(0), Cat(C(10, 0), eqA, zext(eqe, 256), one), And(bGo, rec2V), "")
	m.Drive(holdV, big.NewInt(0), Or(And(bGo, rec2V), And(holdV, Not(rqRoom))), nil)
	m.Assign(rqPushW, Or(And(holdV, rqRoom), And(bGo, rec1V)))
	m.Assign(rqIn, Sel(holdV, holdRec, rec1))

	// Overrun record: a CQ that overran or went to error.
	ovNew := m.WireOf("ov_new", And(bGo, Or(cplNewOv, kFault)), "")
	m.Drive(ovQ, big.NewInt(0), Or(ovNew, And(ovQ, Not(ovR))), nil)
	ovCQq := m.Reg("ov_cq", 10, big.NewInt(0), dCQ, ovNew, "")
	ovDMAq := m.Reg("ov_dma", 1, big.NewInt(0), kFault, ovNew, "")
	m.Assign(ovV, ovQ)
	m.Assign(ovCQ, gate(ovQ, ovCQq))
	m.Assign(ovDMA, And(ovQ, ovDMAq))

	// CQ doorbell (its comparisons registered in D's first cycle), CQ command.
	dbCI := m.WireOf("db_ci", Bits(dLen, cardIdxBits-1, 0), "")
	dbArm := m.WireOf("db_arm", Bit(dLen, 30), "")
	dbSolArm := m.WireOf("db_arm_sol", Bit(dLen, 31), "")
	dbLtW := m.WireOf("db_lt_now", Lt(dDbUsed, dSpiUsed), "the solicited PI is at or before the new CI")
	dbPendW := m.WireOf("db_pending_now", Sel(dbSolArm, And(Not(dbLtW), RedOr(dSpiUsed)), RedOr(dDbUsed)), "a completion past CI that the arming would wait for")
	dbLt := m.Reg("db_lt", 1, nil, dbLtW, nil, "")
	dbFree := m.Reg("db_frees", 1, nil, Not(fullOf(dDbUsed, dMask)), nil, "the doorbell leaves the CQ not full")
	dbTight := m.Reg("db_tight", 1, nil, tightOf("db_tight_now", dDbUsed, dMask, cxd.log), nil, "the doorbell leaves the CQ tight")
	dbPend := m.Reg("db_pending", 1, nil, dbPendW, nil, "")
	dbNotifyQ := m.Reg("db_notify_q", 1, nil, And(dbArm, dbPendW), nil, "")
	dbSPI := m.WireOf("db_spi", Sel(dbLt, dbCI, cxSPI), "the solicited PI, CI once every solicited or error CQE is consumed")
	m.Assign(dbNotify, And(kCQDBv, dbNotifyQ))
	cmdLogB := m.WireOf("cmd_log", Bits(dTerm, 4, 0), "")
	unused = append(unused, Bits(dSt, 7, 4), Bits(dTerm, 15, 5), Bits(dLen, 29, cardIdxBits))

	newCtx := m.WireOf("cx_new", Sel(cmdCreate, Cat(zero, one, Bits(dWide, 63, 5), cmdLogB, C(3*cardIdxBits+3, 0)),
		Sel(cmdDestroy, C(oW, 0), Sel(Bit(dIs, 5), Cat(one, Bits(dCtx, oW-2, 0)),
			Sel(Bit(dIs, 1),
				Cat(Bits(dCtx, oW-1, oLog), dbSPI, cxPI, dDbUsed, Sel(dbArm, Not(dbPend), cxArm), Sel(dbArm, dbSolArm, cxSol), And(cxOv, Not(dbFree))),
				// completion
				Cat(Bits(dCtx, oW-1, oLog), Sel(And(cplWrite, cplSol), dPIInc, cxSPI),
					Sel(cplWrite, dPIInc, cxPI), Sel(cplWrite, dUsedInc, cxUsed),
					And(cxArm, Not(cplNotify)), cxSol, Or(cxOv, cplNewOv)))))), "the context written back")
	ctxWe := m.WireOf("cx_we", And(bGo, Or(cmdCreate, cmdDestroy, kCQDBv, cplWrite, cplNewOv, kFault)), "")
	m.Assign(memWe, Or(initAct, ctxWe))
	m.Assign(memWa, Sel(initAct, Bits(initCnt, 9, 0), dCQ))
	m.Assign(memWd, gate(Not(initAct), newCtx))

	// Tightness of each context written (used + CardCQTight reaches the
	// ring's size), picked from the terms of what the operation can leave,
	// formed a stage ahead: a new CQ is tight when its ring holds at most
	// CardCQTight entries.
	nwTight := m.WireOf("nw_tight", And(Not(initAct), Not(cmdDestroy), Sel(cmdCreate, Not(Lt(C(5, uint64(log2(CardCQTight))), cmdLogB)),
		Sel(Bit(dIs, 1), dbTight, Sel(cplWrite, dTight1, dTight0)))), "the context written leaves its CQ tight")
	tight := m.RegDecl("tight", cardCQs, "cq_tight")
	hotW := m.WireOf("tight_hot", And(oneHot(m, "tight_wr", memWa, cardCQs), Rep(memWe, cardCQs)), "the CQ whose context is written")
	m.Drive(tight, big.NewInt(0), Or(And(tight, Not(hotW)), And(hotW, Rep(nwTight, cardCQs))), nil)
	m.Assign(tightO, tight)
	cplBusy := m.WireOf("cpl_in_bcd", Or(And(bV, isK(bKind, cqkCpl)), And(cV, isK(cKind, cqkCpl)), And(dV, isK(dKind, cqkCpl))), "")
	m.Assign(cplBusyO, cplBusy)

	// EQ configuration, doorbell (its new count registered in D's first
	// cycle: only D changes the EQ) and event.
	cfgLog := m.WireOf("cfg_log", Bits(dTerm, 4, 0), "")
	cfgEn := m.WireOf("cfg_en", Bit(dFl, 0), "")
	cfgGo := m.WireOf("cfg_go", And(bGo, kEQCfg, cfgOK), "")
	cfgReset := m.WireOf("cfg_reset", And(cfgGo, cfgEn), "enabled: indices from zero")
	edbGo := m.WireOf("edb_go", And(bGo, kEQDB), "")
	edbUsed := m.Reg("edb_used", cardIdxBits, nil, SubBits(m, "edb_sub", eqPI, dbCI), nil, "EQ doorbell: entries past the new CI")
	edbArm := m.WireOf("edb_arm", Bit(dLen, 31), "")
	edbPend := m.WireOf("edb_pending", RedOr(edbUsed), "entries past the new CI")
	evGo := m.WireOf("ev_go", And(bGo, evWrite), "an EQE is written")
	m.Drive(eqBase, big.NewInt(0), Bits(dWide, 63, 4), cfgGo)
	m.Drive(eqLog, big.NewInt(0), cfgLog, cfgGo)
	m.Drive(eqVec, big.NewInt(0), dOpc, cfgGo)
	m.Drive(eqEn, big.NewInt(0), cfgEn, cfgGo)
	m.Drive(eqPI, big.NewInt(0), Sel(cfgReset, C(cardIdxBits, 0), IncBits(eqPI, cardIdxBits-1, 0)), Or(cfgReset, evGo))
	m.Drive(eqUsed, big.NewInt(0), Sel(cfgReset, C(cardIdxBits, 0), Sel(edbGo, edbUsed, IncBits(eqUsed, cardIdxBits-1, 0))), Or(cfgReset, edbGo, evGo))
	irqNow := m.WireOf("irq_raise_ev", And(evGo, eqArm), "an event on the armed EQ")
	irqDB := m.WireOf("irq_raise_db", And(edbGo, edbArm, edbPend), "arming finds entries past CI")
	m.Drive(eqArm, big.NewInt(0), Sel(Or(cfgReset, irqNow, irqDB), zero, Or(eqArm, And(edbGo, edbArm))), nil)
	lost := m.RegDecl("lost_q", 32, "")
	m.Drive(lost, big.NewInt(0), IncBits(lost, 31, 0), And(bGo, evLost))
	m.Assign(lostO, lost)
	// dma_wr and the record emitter.
	tagW := dcfg.TagBits
	reqV := m.Wire("dw_req_valid", 1, "")
	reqR := m.Wire("dw_req_ready", 1, "")
	sV := m.Wire("dw_s_valid", 1, "")
	sR := m.Wire("dw_s_ready", 1, "")
	doneV := m.Wire("dw_done_valid", 1, "")
	doneTag := m.Wire("dw_done_tag", tagW, "")
	doneErr := m.Wire("dw_done_err", 1, "")
	sent := m.RegDecl("rq_sent", 2, "records at the head whose request dma_wr took")
	recAt := func(i int) *Signal { return rq.Fields[i][0] }
	cand1 := m.WireOf("rq_cand1", Eq(sent, C(2, 1)), "the second record's request is next")
	candOK := m.WireOf("rq_cand_ok", Lt(zext(sent, rq.Count.W), rq.Count), "")
	m.Assign(reqV, And(Not(Bit(sent, 1)), candOK))
	candRec := m.WireOf("rq_cand", Sel(cand1, recAt(1), recAt(0)), "")
	candEQE := m.WireOf("rq_cand_eqe", Bit(candRec, 0), "")
	unused = append(unused, Bits(candRec, 256, 113), Bits(candRec, 96, 1))
	reqAddr := m.WireOf("dw_req_addr", Cat(Bits(candRec, 316, 257), C(4, 0)), "")
	reqLen := m.WireOf("dw_req_len", Sel(candEQE, C(16, cardEQEBytes-1), C(16, cardCQEBytes-1)), "")
	wrNum := m.RegDecl("wr_num", cardCQFaultLog, "the number of the next write, for its fault report")
	reqTag := m.WireOf("dw_req_tag", Cat(wrNum, candEQE), "the write's number, and bit 0: an EQE")
	reqTake := m.WireOf("rq_req_take", And(reqV, reqR), "")
	m.Drive(wrNum, big.NewInt(0), Add(wrNum, C(cardCQFaultLog, 1)), reqTake)
	head := recAt(0)
	headEQE := m.WireOf("rq_head_eqe", Bit(head, 0), "")
	cqeBeats, eqeBeats := max(1, cardCQEBytes/L), max(1, cardEQEBytes/L)
	BTW := max(1, log2(cqeBeats))
	beat := m.RegDecl("rq_beat", BTW, "next beat of the head record")
	var data Expr
	if cqeBeats == 1 {
		data = zext(Bits(head, 256, 1), W)
		unused = append(unused, beat)
	} else {
		var slices []Expr
		for k := 0; k < cqeBeats; k++ {
			slices = append(slices, Bits(head, 1+(k+1)*W-1, 1+k*W))
		}
		data = muxTree(selBits(beat, 0, BTW), slices)
	}
	sData := m.WireOf("dw_s_data", data, "")
	m.Assign(sV, And(RedOr(rq.Count), Ne(sent, C(2, 0))))
	lastBeat := m.WireOf("rq_last_beat", Sel(headEQE, Eq(beat, C(BTW, uint64(eqeBeats-1))), Eq(beat, C(BTW, uint64(cqeBeats-1)))), "")
	sTake := m.WireOf("rq_s_take", And(sV, sR), "")
	popNow := m.WireOf("rq_pop_now", And(sTake, lastBeat), "")
	if BTW == 1 {
		m.Drive(beat, big.NewInt(0), And(Not(popNow), Not(beat)), sTake)
	} else {
		m.Drive(beat, big.NewInt(0), Sel(popNow, C(BTW, 0), Add(beat, C(BTW, 1))), sTake)
	}
	m.Assign(rqPop, zext(popNow, rq.Count.W))
	m.Drive(sent, big.NewInt(0), Sub(Add(sent, zext(reqTake, 2)), zext(popNow, 2)), nil)

	// Completions of dma_wr: EQEs done (the interrupt waits for them), faults.
	doneR := m.WireOf("dw_done_ready", Lt(fq.Count, C(fq.Count.W, 2)), "room in fq for this response's fault and the one read now")
	doneTake := m.WireOf("dw_done_take", And(doneV, doneR), "")
	eqIssued := m.RegDecl("eqe_issued", cardIRQSeq, "EQEs generated")
	eqDone := m.RegDecl("eqe_done", cardIRQSeq, "EQEs written (write response)")
	m.Drive(eqIssued, big.NewInt(0), Add(eqIssued, C(cardIRQSeq, 1)), evGo)
	doneEQE := m.WireOf("done_eqe", And(doneTake, Bit(doneTag, 0)), "")
	m.Drive(eqDone, big.NewInt(0), Add(eqDone, C(cardIRQSeq, 1)), doneEQE)
	stopNow := m.WireOf("ev_stop", And(bGo, kEv, Bit(dFl, 0)), "a stopping event is written or lost")
	m.Drive(fatal, big.NewInt(0), Or(fatal, And(doneEQE, doneErr), stopNow), nil)
	m.Assign(fatalO, fatal)
	// Fault reports: each write's address, QP and CQ, kept by its number
	// until its response; read the cycle a faulted response comes. An
	// EQE's is reported at once (the card stops); a CQE's waits in fq for
	// stage A, which puts its CQ in error, and is reported then (not at
	// all for a CQ already in error: the card issued that CQE before it
	// heard of the first fault).
	fltW := 60 + 16 + 10
	fltRd := m.Mem("flt", fltW, 1<<cardCQFaultLog, reqTake, wrNum,
		Cat(Bits(candRec, 316, 257), gate(Not(candEQE), Cat(Bits(candRec, 1+111, 1+96), Bits(candRec, RQW-1, 317)))), nil, Bits(doneTag, tagW-1, 1), "per write in flight: address bits 63:4, a CQE's QP and CQ")
	fltV := m.Reg("flt_v", 1, big.NewInt(0), And(doneTake, doneErr), nil, "a faulted write's entry is read")
	fltEQE := m.Reg("flt_eqe", 1, big.NewInt(0), Bit(doneTag, 0), nil, "")
	eqeFlt := m.WireOf("flt_eqe_v", And(fltV, fltEQE), "an EQE's write faulted")
	m.Assign(fqPush, And(fltV, Not(fltEQE)))
	cqeOut := m.RegDecl("cqe_out", cardCQFaultLog+1, "CQEs queued or written and without their response")
	cqeIn := m.WireOf("cqe_in", And(bGo, cplWrite), "a CQE enters the record queue")
	cqeDone := m.WireOf("cqe_done", And(doneTake, Not(Bit(doneTag, 0))), "a CQE's write has its response")
	m.Drive(cqeOut, big.NewInt(0), Sub(Add(cqeOut, zext(cqeIn, cardCQFaultLog+1)), zext(cqeDone, cardCQFaultLog+1)), nil)
	m.Assign(cqeQuiet, And(Not(RedOr(cqeOut)), Not(fqPush), Not(cplBusy)))
	m.Assign(fqIn, fltRd)
	cqFltV := m.Reg("cqflt_v", 1, big.NewInt(0), And(bGo, kFault), nil, "a CQE's fault put its CQ in error")
	cqFltA := m.Reg("cqflt_addr", 64, big.NewInt(0), dWide, And(bGo, kFault), "")
	cqFltQPN := m.Reg("cqflt_qpn", 16, big.NewInt(0), dQPN, And(bGo, kFault), "")
	m.Assign(faultV, Or(eqeFlt, cqFltV))
	m.Assign(faultA, Sel(eqeFlt, Cat(Bits(fltRd, fltW-1, 26), C(4, 0)), gate(cqFltV, cqFltA)))
	m.Assign(faultQPN, gate(And(cqFltV, Not(eqeFlt)), cqFltQPN))
	m.Assign(faultEQE, eqeFlt)

	// Interrupt.
	irqPend := m.RegDecl("irq_pend", 1, "an interrupt is due")
	irqWait := m.RegDecl("irq_wait", cardIRQSeq, "it waits until eqe_done reaches this")
	irqOut := m.RegDecl("irq_out", 1, "")
	modT := m.RegDecl("irq_mod_timer", 24, "cycles until the next interrupt may rise")
	gap := m.WireOf("irq_gap", Sub(eqDone, irqWait), "")
	reached := m.WireOf("irq_reached", Not(Bit(gap, cardIRQSeq-1)), "eqe_done is at or past irq_wait")
	unused = append(unused, Bits(gap, cardIRQSeq-2, 0))
	// Once reached, an interrupt held by moderation or irq_ready stays
	// reached: the 9-bit gap would read as not reached again after 256
	// more EQEs.
	reachedQ := m.RegDecl("irq_reached_q", 1, "the due interrupt's EQE was written")
	fire := m.WireOf("irq_fire", And(irqPend, Or(reached, reachedQ), Not(irqOut), Not(RedOr(modT))), "")
	setPend := m.WireOf("irq_set", Or(irqNow, irqDB), "")
	m.Drive(reachedQ, big.NewInt(0), And(Not(setPend), Not(fire), Or(reachedQ, And(irqPend, reached))), nil)
	m.Drive(irqWait, big.NewInt(0), Sel(irqNow, Add(eqIssued, C(cardIRQSeq, 1)), eqIssued), setPend)
	m.Drive(irqPend, big.NewInt(0), Or(setPend, And(irqPend, Not(fire))), nil)
	irqTaken := m.WireOf("irq_taken", And(irqOut, irqR), "")
	m.Drive(irqOut, big.NewInt(0), Or(fire, And(irqOut, Not(irqR))), nil)
	irqVq := m.Reg("irq_vec_q", 8, big.NewInt(0), eqVec, fire, "")
	m.Drive(modT, big.NewInt(0), Sel(irqTaken, irqMod, Sub(modT, C(24, 1))), Or(irqTaken, RedOr(modT)))
	m.Assign(irqV, irqOut)
	m.Assign(irqVec, gate(irqOut, irqVq))

	// The dma_wr instance. A faulted CQE or EQE is one burst: its
	// address is the request's.
	doneEB := m.Wire("dw_done_err_burst", DMAWrErrBurstBits(dcfg.Width), "")
	unused = append(unused, doneEB)
	conns := []Conn{{"clk", m.Port("clk")}, {"rst", rst},
		{"s_req_valid", reqV}, {"s_req_ready", reqR}, {"s_req_addr", reqAddr}, {"s_req_len", reqLen}, {"s_req_tag", reqTag},
		{"s_axis_tdata", sData}, {"s_axis_tvalid", sV}, {"s_axis_tready", sR},
		{"m_done_valid", doneV}, {"m_done_ready", doneR}, {"m_done_tag", doneTag}, {"m_done_err", doneErr}, {"m_done_err_burst", doneEB}}
	for _, p := range dma.Ports {
		if !strings.HasPrefix(p.Name, "m_axi_") {
			continue
		}
		if p.Dir == In {
			conns = append(conns, Conn{p.Name, m.Input(p.Name, p.W, "")})
		} else {
			o := m.Output(p.Name, p.W, "")
			w := m.Wire("dw_"+strings.TrimPrefix(p.Name, "m_axi_"), p.W, "")
			m.Assign(o, w)
			conns = append(conns, Conn{p.Name, w})
		}
	}
	m.Instantiate("dw", dma, conns...)
	m.WireOf("unused_bits", RedOr(Cat(unused...)), "bits no logic reads (keeps lint quiet on purpose)")
	return m, m.Validate()
}
