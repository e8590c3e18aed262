package cycle

import (
	"fmt"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// The card's completion and event queues (card_cq), modelled from its
// contract (docs/card-rtl.md; hw/README.md's card_cq section; the block's
// description in hw/gen/card_cq.go) and the card model's queue rules
// (host/driver/cardmodel, queues.go: completeCQ, event, cqDoorbell,
// eqDoorbell, cqCommand, eqConfig). The queue rules are the model's; the
// timing is the block's documented pipeline:
//
//   - stage A takes one operation a cycle at most: a pending EQ_CFG first,
//     then a CQE fault, then CQ_CMD (once no CQE can still fault), then
//     EQ_DB, then round robin the CQ doorbell and the
//     engines' completion and event ports (a CQ doorbell, then completion
//     and event port of engine 0, of engine 1, ...); nothing is taken
//     while the CQ contexts are cleared after reset;
//   - stage B holds it until no operation in C or D may write its CQ;
//   - stage C forms the ring terms; stage D acts (one cycle, two for a CQ
//     or EQ doorbell), provided the 4-entry record queue has room, no
//     second record of a completion waits, and no overrun record waits
//     that m_overrun_ready does not take this cycle;
//   - records leave the queue in order through card_cq's dma_wr (modelled
//     by DMAWr), one request ahead of its data (two requests in flight);
//   - write responses come back as dma_wr completions, each numbered
//     write's address, QP and CQ kept for its fault report; none is taken
//     while two CQE faults wait for stage A; in stage D a fault puts a
//     live CQ in error (the model's CQ_ERROR) and is reported on m_fault_*
//     the cycle after.

// CardCQMaxSources is how many engines (a completion and an event port
// each) card_cq can take.
const CardCQMaxSources = 4

// CardCQClearCycles is how long card_cq clears its CQ contexts after
// reset (init_done low, nothing taken): one context a cycle.
const CardCQClearCycles = cs.MaxCQ

// CardCQTight is how many free entries make a CQ tight (cq_tight).
const CardCQTight = 32

// CardCQRecords is the depth of the queue of records (CQEs, EQEs) in
// front of card_cq's dma_wr.
const CardCQRecords = 4

// CardCQBursts is how many writes card_cq's dma_wr keeps awaiting their
// response.
const CardCQBursts = 128

// cardCQWrites is how many writes card_cq numbers for its fault reports
// (the dma_wr tag above its is-an-EQE bit).
const cardCQWrites = 256

// cardCQFaults is the depth of card_cq's queue of CQE faults.
const cardCQFaults = 4

// cardCQIdx masks the free-running CQ and EQ indices (24 bits).
const cardCQIdx = 1<<24 - 1

// CardCQConfig sizes the modelled card_cq (hw/gen's CardCQConfig).
type CardCQConfig struct {
	Width   int // DMA data width in bits: 64 to 512, a power of two
	Sources int // engines: completion and event ports, 1 to CardCQMaxSources
}

// CardCQCpl is a completion record on an engine's s_cpl port. Fields wider
// than their port are cut to the port's width.
type CardCQCpl struct {
	Valid       bool
	CQ          uint16 // 10 bits
	QPN         uint16
	WRID        uint64
	ByteLen     uint32
	Opcode      uint8
	Status      uint8
	InvSTag     uint32
	Solicited   bool
	Invalidated bool
	TermLayer   uint8 // 4 bits
	TermType    uint8 // 4 bits
	TermCode    uint8
}

// CardCQEv is an event record on an engine's s_ev port.
type CardCQEv struct {
	Valid     bool
	Type      uint8
	Obj, Info uint32
	TermLayer uint8 // TERM_SENT, TERM_RECV only; 4 bits
	TermType  uint8 // 4 bits
	TermCode  uint8
	Stop      bool // the card stops once this event is written or lost
}

// CardCQIn is one cycle of card_cq's inputs.
type CardCQIn struct {
	Reset bool

	Cpl [CardCQMaxSources]CardCQCpl // s_cpl<i>; ports past Sources are ignored
	Ev  [CardCQMaxSources]CardCQEv  // s_ev<i>

	CQDBValid bool   // s_cqdb: a CQ_DB.CI write
	CQDBIndex uint16 // 10 bits
	CQDBValue uint32

	CmdValid bool  // CQ_CMD, with the staged CQ_NUM, CQ_BASE, CQ_CFG.LOG_SIZE
	CmdOp    uint8 // 4 bits
	CmdNum   uint16
	CmdBase  uint64
	CmdLog   uint8 // 5 bits

	EQCfgWrite bool // eq_cfg_wr_pulse: EQ_CFG is written (its value shows from the next cycle)
	EQBase     uint64
	EQLog      uint8 // 5 bits
	EQVector   uint8
	EQEnable   bool

	EQDBValid bool   // EQ_DB
	EQDBCI    uint32 // 24 bits
	EQDBArm   bool

	IRQModeration uint32 // 24 bits
	IRQReady      bool
	OverrunReady  bool

	AWReady, WReady bool // the AXI slave
	BValid          bool
	BResp           uint8
}

// CardCQOut is what card_cq shows in a cycle.
type CardCQOut struct {
	CplReady, EvReady [CardCQMaxSources]bool
	CQDBReady         bool
	CmdReady          bool
	EQDBReady         bool

	IRQValid  bool
	IRQVector uint8

	OverrunValid bool
	OverrunCQ    uint16
	OverrunDMA   bool // the CQ is in error (a CQE's write faulted), not full

	FaultValid bool   // an EQE's write got an error response (the cycle after dma_wr reports it done), or a CQE's put its CQ in error (the cycle after stage D)
	FaultAddr  uint64 // its address
	FaultQPN   uint16 // a CQE's QP, 0 for an EQE
	FaultEQE   bool

	Fatal      bool
	EventsLost uint32
	InitDone   bool
	Tight      [cs.MaxCQ / 64]uint64 // cq_tight, bit n of word n/64 for CQ n
	CplBusy    bool

	AXIWr // the AXI4 write master (its dma_wr's)
}

// Operation kinds, in stage A's order of priority.
type cardCQKind uint8

const (
	cqOpCpl cardCQKind = iota
	cqOpEv
	cqOpCQDB
	cqOpCmd
	cqOpEQCfg
	cqOpEQDB
	cqOpFault // a CQE's write faulted
)

// cardCQOp is one operation taken, as it goes through stages B, C and D.
type cardCQOp struct {
	kind cardCQKind
	cq   uint16 // the CQ it reads: a completion's, a doorbell's, a command's (CQ_NUM's low bits)
	cpl  CardCQCpl
	ev   CardCQEv
	db   uint32 // CQ doorbell value

	cmdOp  uint8
	cmdNum uint16
	base   uint64 // CQ_CMD's CQ_BASE, EQ_CFG's EQ_BASE
	log    uint8
	vector uint8
	enable bool
	eqCI   uint32
	eqArm  bool
	flt    cardCQFlt // the faulted CQE
}

// ctxOp reports whether the operation reads and may write a CQ context.
func (o *cardCQOp) ctxOp() bool {
	return o.kind == cqOpCpl || o.kind == cqOpCQDB || o.kind == cqOpCmd || o.kind == cqOpFault
}

// cardCQCtx is a CQ context (the card model's cq).
type cardCQCtx struct {
	valid   bool
	base    uint64
	log     uint8
	pi, ci  uint32
	solPI   uint32 // PI past the last solicited or error CQE; CI when none lies past CI
	armed   bool
	solOnly bool
	overrun bool
	err     bool // a CQE's write faulted: no CQE until DESTROY
}

func (c *cardCQCtx) used() uint32 { return (c.pi - c.ci) & cardCQIdx }
func (c *cardCQCtx) full() bool   { return c.used() >= 1<<c.log }

// tight: the CQ exists with at most CardCQTight entries free (a CI past PI
// leaves none).
func (c *cardCQCtx) tight() bool { return c.valid && c.used()+CardCQTight >= 1<<c.log }

// cardCQRec is a record waiting for dma_wr.
type cardCQRec struct {
	addr uint64
	eqe  bool
	qpn  uint16
	cq   uint16
	data [cs.CQESize]byte
}

// cardCQFlt is what card_cq keeps of a write until its response.
type cardCQFlt struct {
	addr uint64
	qpn  uint16
	cq   uint16
}

// CardCQ is card_cq's cycle model.
type CardCQ struct {
	cfg   CardCQConfig
	lanes int
	dw    *DMAWr
	dwIn  DMAWrIn
	dwOut DMAWrOut

	initCnt   int
	eqCfgPend bool
	rrLast    int
	bV, cV    bool
	dV, dPh   bool
	b, c, d   cardCQOp
	ctx       [cs.MaxCQ]cardCQCtx
	tight     [cs.MaxCQ / 64]uint64

	eqBase         uint64
	eqLog, eqVec   uint8
	eqEn, eqArmed  bool
	eqPI, eqCI     uint32
	fatal          bool
	lost           uint32
	holdV          bool
	hold           cardCQRec
	ovV, ovDMA     bool
	ovCQ           uint16
	fq             [cardCQFaults]cardCQFlt
	fqN            int
	cqeOut         int // CQEs queued or written, without their response
	cqFltV         bool
	cqFlt          cardCQFlt
	rq             [CardCQRecords]cardCQRec
	rqN            int
	sent, beat     int
	wrNum          int
	flt            [cardCQWrites]cardCQFlt
	fltV, fltEQE   bool
	fltRd          cardCQFlt
	issued, done   uint64 // EQEs issued, EQEs whose write has its response
	irqPend, irqUp bool
	irqWait        uint64
	irqVec         uint8
	modT           uint32

	cqeBuf, eqeBuf cardCQRec // the records an operation makes this cycle
}

// NewCardCQ returns card_cq fresh from reset.
func NewCardCQ(cfg CardCQConfig) (*CardCQ, error) {
	if cfg.Sources < 1 || cfg.Sources > CardCQMaxSources {
		return nil, fmt.Errorf("%w: card_cq %+v", ErrConfig, cfg)
	}
	dw, err := NewDMAWr(DMAWrConfig{Width: cfg.Width, IDBits: 4, Bursts: CardCQBursts, TagBits: 9})
	if err != nil {
		return nil, err
	}
	m := &CardCQ{cfg: cfg, lanes: cfg.Width / 8, dw: dw}
	m.dwIn.SData = make([]byte, m.lanes)
	m.dwIn.DReady = true
	m.reset()
	return m, nil
}

// reset puts every register with a reset value to it, and the contexts to
// what the clearing after reset leaves (nothing reads them meanwhile).
func (m *CardCQ) reset() {
	dw, sdata, cfg, lanes := m.dw, m.dwIn.SData, m.cfg, m.lanes
	flt := m.flt // a RAM: not reset, always written before it is read
	*m = CardCQ{cfg: cfg, lanes: lanes, dw: dw, flt: flt}
	m.dwIn.SData, m.dwIn.DReady = sdata, true
}

// Step writes to out what card_cq shows during this cycle, given in, then
// takes the clock edge.
func (m *CardCQ) Step(in *CardCQIn, out *CardCQOut) {
	ns := m.cfg.Sources

	// Stage D acts when the record queue has room, no second record
	// waits, the overrun record is free (or taken now) and a doorbell
	// has had its first cycle.
	two := m.dV && (m.d.kind == cqOpCQDB || m.d.kind == cqOpEQDB)
	room := m.rqN < CardCQRecords
	act := m.dV && !m.holdV && room && (!m.ovV || in.OverrunReady) && (!two || m.dPh)
	cToD := m.cV && (!m.dV || act)
	conflict := m.bV && m.b.ctxOp() && (m.cV && m.c.ctxOp() && m.c.cq == m.b.cq || m.dV && m.d.ctxOp() && m.d.cq == m.b.cq)
	bToC := m.bV && (!m.cV || cToD) && !conflict
	bFree := !m.bV || bToC

	// Stage A: EQ_CFG, a CQE fault, CQ_CMD (once no CQE can still fault,
	// so that none reaches a CQ created again under its number), EQ_DB,
	// then the records.
	initAct := m.initCnt < CardCQClearCycles
	ctl := m.eqCfgPend || in.CmdValid || in.EQDBValid
	cplBusy := m.bV && m.b.kind == cqOpCpl || m.cV && m.c.kind == cqOpCpl || m.dV && m.d.kind == cqOpCpl
	quiet := m.cqeOut == 0 && !(m.fltV && !m.fltEQE) && !cplBusy
	fault := !m.eqCfgPend && m.fqN > 0
	cmd := !m.eqCfgPend && m.fqN == 0 && in.CmdValid && quiet
	eqdb := !m.eqCfgPend && m.fqN == 0 && !in.CmdValid && in.EQDBValid
	nr := 1 + 2*ns
	grant := -1
	if !ctl && m.fqN == 0 {
		for k := 1; k <= nr; k++ {
			j := (m.rrLast + k) % nr
			if m.recValid(in, j) {
				grant = j
				break
			}
		}
	}
	take := (m.eqCfgPend || fault || cmd || eqdb || grant >= 0) && bFree && !initAct && !in.Reset
	*out = CardCQOut{AXIWr: AXIWr{WData: out.WData}}
	out.CmdReady = take && cmd
	out.EQDBReady = take && eqdb
	out.CQDBReady = take && grant == 0
	for i := 0; i < ns; i++ {
		out.CplReady[i] = take && grant == 1+2*i
		out.EvReady[i] = take && grant == 2+2*i
	}

	// What the registers show.
	out.IRQValid = m.irqUp
	if m.irqUp {
		out.IRQVector = m.irqVec
	}
	out.OverrunValid = m.ovV
	if m.ovV {
		out.OverrunCQ, out.OverrunDMA = m.ovCQ, m.ovDMA
	}
	eqeFlt := m.fltV && m.fltEQE
	out.FaultValid = eqeFlt || m.cqFltV
	switch {
	case eqeFlt:
		out.FaultAddr, out.FaultEQE = m.fltRd.addr, true
	case m.cqFltV:
		out.FaultAddr, out.FaultQPN = m.cqFlt.addr, m.cqFlt.qpn
	}
	out.Fatal, out.EventsLost, out.InitDone = m.fatal, m.lost, !initAct
	out.Tight = m.tight
	out.CplBusy = cplBusy

	// The interrupt rises when one is due, its EQE written, moderation
	// over and none is up; the vector is the EQ's as it is now. The counts
	// of EQEs issued and written are compared whole, as the contract has
	// it (the RTL compares them on 9 bits and latches the result, so that
	// an interrupt held while 256 more EQEs are written still rises:
	// hw/sim's TestCardCQCycleIRQWrap).
	fire := m.irqPend && m.done >= m.irqWait && !m.irqUp && m.modT == 0
	vecNow := m.eqVec

	// Stage D's operation.
	var rec1, rec2 *cardCQRec
	var newOv, raise, stop bool
	var wait uint64
	if act {
		rec1, rec2, newOv, raise, wait = m.apply(&m.d)
		stop = m.d.kind == cqOpEv && m.d.ev.Stop
	}

	// The record queue's head towards dma_wr: requests ahead of data; a
	// write response is taken while fewer than two CQE faults wait (the
	// one read from the fault RAM now goes into the queue at this edge).
	push, pushed := m.fltV && !m.fltEQE, m.fltRd
	m.dwIn.DReady = m.fqN < 2
	m.emit(in, out)

	// Records into the queue (after the head's pop).
	if m.holdV && room {
		m.push(&m.hold)
		m.holdV = false
	}
	if rec1 != nil {
		m.push(rec1)
		if !rec1.eqe {
			m.cqeOut++
		}
	}
	if m.dwOut.DValid && m.dwIn.DReady && m.dwOut.DTag&1 == 0 {
		m.cqeOut--
	}
	if rec2 != nil {
		m.hold, m.holdV = *rec2, true
	}

	// Overrun record (an overrun, or a fault that put its CQ in error,
	// which m_fault_* report the next cycle).
	cqFault := act && m.d.kind == cqOpFault && newOv
	m.cqFltV = cqFault
	if cqFault {
		m.cqFlt = m.d.flt
	}
	if newOv {
		m.ovV, m.ovCQ, m.ovDMA = true, m.d.cq, m.d.kind == cqOpFault
	} else if m.ovV && in.OverrunReady {
		m.ovV = false
	}

	// Fatal: an EQE's error response, a stopping event done.
	if m.dwOut.DValid && m.dwIn.DReady && m.dwOut.DTag&1 != 0 && m.dwOut.DErr || stop {
		m.fatal = true
	}

	// Interrupt.
	taken := m.irqUp && in.IRQReady
	if fire {
		m.irqVec = vecNow
	}
	switch {
	case taken:
		m.modT = in.IRQModeration & (1<<24 - 1) // IRQ_MODERATION's 24 bits
	case m.modT != 0:
		m.modT--
	}
	m.irqUp = fire || m.irqUp && !in.IRQReady
	if raise {
		m.irqWait = wait
	}
	m.irqPend = raise || m.irqPend && !fire

	// The stages move.
	m.dPh = two && !act
	if act {
		m.dV = false
	}
	if cToD {
		m.d, m.dV, m.cV = m.c, true, false
	}
	if bToC {
		m.c, m.cV, m.bV = m.b, true, false
	}
	if take {
		m.b, m.bV = m.taken(in, grant, fault, cmd), true
		if grant >= 0 {
			m.rrLast = grant
		}
	}
	if take && fault {
		m.fqN--
		copy(m.fq[:], m.fq[1:])
	}
	if push {
		m.fq[m.fqN] = pushed
		m.fqN++
	}
	m.eqCfgPend = in.EQCfgWrite || m.eqCfgPend && !(take && m.eqCfgPend)
	if initAct {
		m.initCnt++
	}
	if in.Reset {
		m.reset()
	}
}

// recValid reports whether record requester j (0: the CQ doorbell, 1+2i:
// completion port i, 2+2i: event port i) offers one.
func (m *CardCQ) recValid(in *CardCQIn, j int) bool {
	switch {
	case j == 0:
		return in.CQDBValid
	case j%2 == 1:
		return in.Cpl[(j-1)/2].Valid
	}
	return in.Ev[(j-2)/2].Valid
}

// taken is the operation stage A takes, cut to its ports' widths.
func (m *CardCQ) taken(in *CardCQIn, grant int, fault, cmd bool) cardCQOp {
	var o cardCQOp
	switch {
	case m.eqCfgPend:
		o.kind, o.base, o.log, o.vector, o.enable = cqOpEQCfg, in.EQBase, in.EQLog&31, in.EQVector, in.EQEnable
	case fault:
		o.kind, o.flt, o.cq = cqOpFault, m.fq[0], m.fq[0].cq
	case cmd:
		o.kind, o.cmdOp, o.cmdNum, o.base, o.log = cqOpCmd, in.CmdOp&15, in.CmdNum, in.CmdBase, in.CmdLog&31
		o.cq = in.CmdNum % cs.MaxCQ
	case in.EQDBValid:
		o.kind, o.eqCI, o.eqArm = cqOpEQDB, in.EQDBCI&cardCQIdx, in.EQDBArm
	case grant == 0:
		o.kind, o.cq, o.db = cqOpCQDB, in.CQDBIndex%cs.MaxCQ, in.CQDBValue
	case grant%2 == 1:
		o.kind, o.cpl = cqOpCpl, in.Cpl[(grant-1)/2]
		o.cpl.CQ %= cs.MaxCQ
		o.cpl.TermLayer &= 15
		o.cpl.TermType &= 15
		o.cq = o.cpl.CQ
	default:
		o.kind, o.ev = cqOpEv, in.Ev[(grant-2)/2]
		o.ev.TermLayer &= 15
		o.ev.TermType &= 15
	}
	return o
}

// setTight records CQ n's context as written.
func (m *CardCQ) setTight(n uint16) {
	bit := uint64(1) << (n % 64)
	if m.ctx[n].tight() {
		m.tight[n/64] |= bit
	} else {
		m.tight[n/64] &^= bit
	}
}

// apply does operation o as the card model does it (host/driver/cardmodel
// queues.go). It returns the records to write (a completion's CQE and its
// CQ_NOTIFY: two), whether a CQ overran now, and whether the operation
// raises the interrupt, with the count of EQEs whose write it waits for.
func (m *CardCQ) apply(o *cardCQOp) (rec1, rec2 *cardCQRec, newOv, raise bool, wait uint64) {
	var ev1 *cardCQRec
	event := func(typ uint8, obj, info uint32, ev *CardCQEv) {
		ev1 = m.event(typ, obj, info, ev)
		if ev1 != nil && m.eqArmed {
			m.eqArmed, raise, wait = false, true, m.issued
		}
	}
	switch o.kind {
	case cqOpCpl:
		q := &m.ctx[o.cq]
		if !q.valid || q.err || m.fatal {
			return // lost: no CQ, a CQ in error, a stopped card
		}
		if q.full() {
			if !q.overrun {
				q.overrun, newOv = true, true
				m.setTight(o.cq)
				event(uint8(cs.EQETypeCQOverrun), uint32(o.cq), 0, nil)
			}
			return ev1, nil, newOv, raise, wait
		}
		w := &o.cpl
		r := &m.cqeBuf
		*r = cardCQRec{qpn: w.QPN, cq: o.cq}
		e := cs.CQE(r.data[:])
		e.SetWRID(w.WRID)
		e.SetByteLen(w.ByteLen)
		e.SetQPN(w.QPN)
		e.SetOpcode(cs.WCOpcode(w.Opcode))
		e.SetStatus(cs.WCStatus(w.Status))
		e.SetInvSTag(w.InvSTag)
		e.SetSolicited(w.Solicited)
		e.SetInvalidated(w.Invalidated)
		e.SetTermLayer(w.TermLayer)
		e.SetTermType(w.TermType)
		e.SetTermCode(w.TermCode)
		size := uint32(1) << q.log
		e.SetOwner(q.pi>>q.log&1 == 0)
		r.addr = q.base + uint64(q.pi%size)*cs.CQESize
		q.pi = (q.pi + 1) & cardCQIdx
		sol := w.Solicited || w.Status != uint8(cs.WCStatusSuccess)
		if sol {
			q.solPI = q.pi
		}
		if q.armed && (!q.solOnly || sol) {
			q.armed = false
			event(uint8(cs.EQETypeCQNotify), uint32(o.cq), 0, nil)
		}
		m.setTight(o.cq)
		return r, ev1, false, raise, wait
	case cqOpFault:
		q := &m.ctx[o.cq]
		if !q.valid || q.err || m.fatal {
			return // a CQ gone, already in error, or a stopped card
		}
		q.err = true
		event(uint8(cs.EQETypeCQError), uint32(o.cq), uint32(o.flt.addr), nil)
		return ev1, nil, true, raise, wait
	case cqOpEv:
		if !m.fatal {
			event(o.ev.Type, o.ev.Obj, o.ev.Info, &o.ev)
		}
	case cqOpCQDB:
		q := &m.ctx[o.cq]
		if !q.valid {
			return
		}
		q.ci = o.db & cs.CQDBCICIMask
		used := q.used()
		if used < 1<<q.log {
			q.overrun = false
		}
		if (q.solPI-q.ci)&cardCQIdx > used {
			q.solPI = q.ci
		}
		if o.db>>cs.CQDBCIArmShift&1 != 0 {
			q.solOnly = o.db>>cs.CQDBCIArmSolicitedShift&1 != 0
			pending := used != 0
			if q.solOnly {
				pending = (q.solPI-q.ci)&cardCQIdx != 0
			}
			q.armed = !pending
			if pending && !m.fatal {
				event(uint8(cs.EQETypeCQNotify), uint32(o.cq), 0, nil)
			}
		}
		m.setTight(o.cq)
	case cqOpCmd:
		q := &m.ctx[o.cq]
		if o.cmdNum >= cs.MaxCQ {
			return
		}
		switch cs.CQOp(o.cmdOp) {
		case cs.CQOpCreate:
			if q.valid || o.log > cs.MaxQueueLog || !aligned(o.base, uint(o.log)+5) {
				return
			}
			*q = cardCQCtx{valid: true, base: o.base, log: o.log}
		case cs.CQOpDestroy:
			if !q.valid {
				return
			}
			*q = cardCQCtx{}
		default:
			return
		}
		m.setTight(o.cq)
	case cqOpEQCfg:
		if o.enable && (o.log > cs.MaxQueueLog || !aligned(o.base, uint(o.log)+4)) {
			return
		}
		m.eqBase, m.eqLog, m.eqVec, m.eqEn = o.base&^15, o.log, o.vector, o.enable
		if o.enable {
			m.eqPI, m.eqCI, m.eqArmed = 0, 0, false
		}
	case cqOpEQDB:
		m.eqCI = o.eqCI
		if o.eqArm {
			m.eqArmed = true
			if (m.eqPI-m.eqCI)&cardCQIdx != 0 {
				m.eqArmed, raise, wait = false, true, m.issued
			}
		}
	}
	return ev1, nil, false, raise, wait
}

// event writes an EQE (its record returned), or counts it lost when the
// EQ is disabled or full. ev gives the TERM_* fields of TERM_SENT and
// TERM_RECV.
func (m *CardCQ) event(typ uint8, obj, info uint32, ev *CardCQEv) *cardCQRec {
	size := uint32(1) << min(m.eqLog, 24)
	if !m.eqEn || (m.eqPI-m.eqCI)&cardCQIdx >= size {
		m.lost++
		return nil
	}
	r := &m.eqeBuf
	*r = cardCQRec{eqe: true}
	e := cs.EQE(r.data[:])
	e.SetType(cs.EQEType(typ))
	if ev != nil && (typ == uint8(cs.EQETypeTermSent) || typ == uint8(cs.EQETypeTermRecv)) {
		e.SetTermLayer(ev.TermLayer)
		e.SetTermType(ev.TermType)
		e.SetTermCode(ev.TermCode)
	}
	e.SetObj(obj)
	e.SetInfo(info)
	e.SetOwner(m.eqPI>>m.eqLog&1 == 0)
	r.addr = m.eqBase + uint64(m.eqPI%size)*cs.EQESize
	m.eqPI = (m.eqPI + 1) & cardCQIdx
	m.issued++
	return r
}

func (m *CardCQ) push(r *cardCQRec) {
	m.rq[m.rqN] = *r
	m.rqN++
}

// emit drives dma_wr from the record queue: the request of the next record
// whose request is not taken (at most two ahead of the head's last beat),
// the head's beats once its request is taken; it takes dma_wr's
// completions (EQEs written, faults).
func (m *CardCQ) emit(in *CardCQIn, out *CardCQOut) {
	x := &m.dwIn
	x.Reset = in.Reset
	x.ReqValid = m.sent < 2 && m.sent < m.rqN
	var cand *cardCQRec
	if x.ReqValid {
		cand = &m.rq[m.sent]
		x.ReqAddr, x.ReqLenM1, x.ReqTag = cand.addr, cs.CQESize-1, uint32(m.wrNum)<<1
		if cand.eqe {
			x.ReqLenM1, x.ReqTag = cs.EQESize-1, x.ReqTag|1
		}
	}
	x.SValid = m.rqN > 0 && m.sent > 0
	clear(x.SData)
	head := &m.rq[0]
	if x.SValid {
		if off := m.beat * m.lanes; off < len(head.data) {
			copy(x.SData, head.data[off:])
		}
	}
	x.AWReady, x.WReady, x.BValid, x.BResp = in.AWReady, in.WReady, in.BValid, in.BResp
	o := &m.dwOut
	m.dw.Step(x, o)
	out.AXIWr = o.AXIWr

	// The fault RAM is read (the done's write) before it is written.
	if o.DValid {
		m.fltRd = m.flt[o.DTag>>1]
		if o.DTag&1 != 0 && x.DReady {
			m.done++
		}
	} else {
		m.fltRd = m.flt[0]
	}
	m.fltV, m.fltEQE = o.DValid && x.DReady && o.DErr, o.DValid && o.DTag&1 != 0
	reqTake := x.ReqValid && o.ReqReady
	if reqTake {
		f := cardCQFlt{addr: cand.addr}
		if !cand.eqe {
			f.qpn, f.cq = cand.qpn, cand.cq
		}
		m.flt[m.wrNum] = f
		m.wrNum = (m.wrNum + 1) % cardCQWrites
		m.sent++
	}
	if x.SValid && o.SReady {
		beats := max(1, cs.CQESize/m.lanes)
		if head.eqe {
			beats = max(1, cs.EQESize/m.lanes)
		}
		if m.beat++; m.beat == beats {
			m.beat, m.sent = 0, m.sent-1
			m.rqN--
			copy(m.rq[:], m.rq[1:])
		}
	}
}
