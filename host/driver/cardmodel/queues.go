package cardmodel

import (
	"github.com/openiwarp/openiwarp/golden/rdmap"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// queues is the card's completion and event queues: the CQ contexts, the
// EQ, its interrupt and the card's fatal state, which the RTL keeps in one
// block (card_cq, hw/gen/card_cq.go). Card embeds it; Queues exports it
// alone for the co-simulation of that block.
type queues struct {
	eq      eq
	cqStage struct {
		num     uint32
		base    uint64
		logSize uint32
	}
	cqs [cs.MaxCQ]*cq
	// fatal: a DMA fault on the EQ or a status record stopped the card.
	fatal bool
	// irqPending: the EQ's vector is due (delivered by Step).
	irqPending bool
	// eqLost counts events lost because the EQ was full or disabled.
	eqLost uint64
	// write is the card's DMA write.
	write func(kind WriteKind, qpn uint32, addr uint64, p []byte) error
	// The records being written: a record escapes into the Host, so it
	// is built here rather than in a buffer allocated per write.
	eqeRec [cs.EQESize]byte
	cqeRec [cs.CQESize]byte
}

// eq is the event queue.
type eq struct {
	stageBase uint64
	cfg       uint32
	base      uint64
	logSize   uint32
	vector    int
	enabled   bool
	pi, ci    uint32 // free running (CI modulo 2^24 as written)
	armed     bool
}

func (c *queues) eqConfig(off, v uint32) error {
	log := v & cs.EQCfgLogSizeMask
	en := v>>cs.EQCfgEnableShift&1 != 0
	if en {
		if log > cs.MaxQueueLog {
			return refuse(off, cs.CmdWhyBadSize, "EQ of 2^%d entries (at most 2^%d)", log, cs.MaxQueueLog)
		}
		if size := uint64(cs.EQESize) << log; c.eq.stageBase%size != 0 {
			return refuse(off, cs.CmdWhyBadAlign, "EQ base %#x not aligned to its %d bytes", c.eq.stageBase, size)
		}
	}
	e := &c.eq
	e.cfg, e.enabled = v, en
	e.base, e.logSize, e.vector = e.stageBase, log, int(v>>cs.EQCfgVectorShift&cs.EQCfgVectorMask)
	if en {
		e.pi, e.ci, e.armed = 0, 0, false
	}
	return nil
}

func (c *queues) eqDoorbell(v uint32) {
	e := &c.eq
	e.ci = v & cs.EQDBCIMask
	if v>>cs.EQDBArmShift&1 != 0 {
		e.armed = true
		if (e.pi-e.ci)&cs.EQDBCIMask != 0 {
			e.armed, c.irqPending = false, true
		}
	}
}

// event writes one EQE (one DMA write of 16 bytes) and raises the vector
// if the EQ is armed. An event that finds the EQ disabled or full is lost
// (counted in EventsLost). A fault writing the EQ stops the card.
func (c *queues) event(typ cs.EQEType, obj, info uint32, cause rdmap.Cause) {
	e := &c.eq
	if c.fatal {
		return
	}
	size := uint32(1) << e.logSize
	if !e.enabled || (e.pi-e.ci)&cs.EQDBCIMask >= size {
		c.eqLost++
		return
	}
	b := &c.eqeRec
	*b = [cs.EQESize]byte{}
	r := cs.EQE(b[:])
	r.SetType(typ)
	if typ == cs.EQETypeTermSent || typ == cs.EQETypeTermRecv {
		r.SetTermLayer(uint8(cause.Layer()))
		r.SetTermType(cause.EType())
		r.SetTermCode(cause.Code())
	}
	r.SetObj(obj)
	r.SetInfo(info)
	r.SetOwner(e.pi>>e.logSize&1 == 0)
	addr := e.base + uint64(e.pi%size)*cs.EQESize
	if err := c.write(WriteEQE, 0, addr, b[:]); err != nil {
		c.fatal = true
		return
	}
	e.pi++
	if e.armed {
		e.armed, c.irqPending = false, true
	}
}

// qpEvent is an event about a QP.
func (c *Card) qpEvent(typ cs.EQEType, q *qp, info uint32, cause rdmap.Cause) {
	c.event(typ, q.n, info, cause)
}

// cq is a completion queue.
type cq struct {
	n         uint32
	base      uint64
	logSize   uint32
	pi, ci    uint32
	solPI     uint32 // PI past the last solicited or error CQE; CI when none lies past CI
	armed     bool
	solicited bool // armed for solicited and error completions only
	users     int  // QPs using it
	overrun   bool // reported; cleared once the driver frees an entry
	err       bool // a CQE's write faulted: no CQE is written again until DESTROY
}

func (c *queues) cqCommand(off uint32, op cs.CQOp) error {
	s := &c.cqStage
	if s.num >= cs.MaxCQ {
		return refuse(off, cs.CmdWhyBadNumber, "CQ number %d (at most %d)", s.num, cs.MaxCQ-1)
	}
	switch op {
	case cs.CQOpCreate:
		if c.cqs[s.num] != nil {
			return refuse(off, cs.CmdWhyExists, "CQ %d exists", s.num)
		}
		if s.logSize > cs.MaxQueueLog {
			return refuse(off, cs.CmdWhyBadSize, "CQ of 2^%d entries (at most 2^%d)", s.logSize, cs.MaxQueueLog)
		}
		if size := uint64(cs.CQESize) << s.logSize; s.base%size != 0 {
			return refuse(off, cs.CmdWhyBadAlign, "CQ base %#x not aligned to its %d bytes", s.base, size)
		}
		c.cqs[s.num] = &cq{n: s.num, base: s.base, logSize: s.logSize}
	case cs.CQOpDestroy:
		q := c.cqs[s.num]
		if q == nil {
			return refuse(off, cs.CmdWhyNoObject, "CQ %d does not exist", s.num)
		}
		if q.users > 0 {
			return refuse(off, cs.CmdWhyCQBusy, "CQ %d is used by %d QPs", s.num, q.users)
		}
		c.cqs[s.num] = nil
	default:
		return refuse(off, cs.CmdWhyBadOp, "CQ_CMD operation %d", op)
	}
	return nil
}

func (c *queues) cqDoorbell(off, n, v uint32) error {
	q := c.cqs[n]
	if q == nil {
		return nil // a doorbell of no CQ is ignored
	}
	q.ci = v & cs.CQDBCICIMask
	used := (q.pi - q.ci) & cs.CQDBCICIMask
	if used < 1<<q.logSize {
		q.overrun = false
	}
	if (q.solPI-q.ci)&cs.CQDBCICIMask > used {
		q.solPI = q.ci // the driver consumed every solicited or error CQE
	}
	if v>>cs.CQDBCIArmShift&1 == 0 {
		return nil
	}
	q.solicited = v>>cs.CQDBCIArmSolicitedShift&1 != 0
	// An arm that finds a completion past CI (solicited-only: a solicited
	// or error one) notifies at once: the driver may have looked before
	// that CQE's write reached memory, and "the next completion" would
	// then never come (the lost wakeup of an arm racing a CQE in flight).
	pending := used != 0
	if q.solicited {
		pending = (q.solPI-q.ci)&cs.CQDBCICIMask != 0
	}
	q.armed = !pending
	if pending {
		c.event(cs.EQETypeCQNotify, q.n, 0, 0)
	}
	return nil
}

// completion is one CQE to write.
type completion struct {
	wrID      uint64
	byteLen   uint32
	op        cs.WCOpcode
	status    cs.WCStatus
	invSTag   uint32
	solicited bool
	inv       bool
	cause     rdmap.Cause // Terminate behind an error status, or 0
}

// complete writes c's CQE on CQ n for QP q: one DMA write of 32 bytes,
// then a CQ_NOTIFY event if the CQ is armed for it. A full CQ loses the
// completion: CQ_OVERRUN, and every QP on the CQ goes to error; so does
// a CQE whose write faults (CQ_ERROR: the CQ is in error). It reports
// whether the CQE was written.
func (c *Card) complete(n uint32, q *qp, w completion) bool {
	if c.cqs[n] == nil || c.fatal {
		return false
	}
	q.writeStatus() // the indices the CQE implies are visible first
	switch r, _ := c.completeCQ(n, q.n, w); r {
	case CQOverrun, CQFault:
		why := cs.QPErrCQOverrun
		if r == CQFault {
			why = cs.QPErrDMA
		}
		for _, k := range c.live {
			if o := c.qps[k]; o.sendCQ == n || o.recvCQ == n {
				o.toError(why, localCatastrophic())
			}
		}
	case CQWritten:
		return true
	}
	return false
}

// CQResult is what became of a completion (Queues.Complete).
type CQResult int

// Completion outcomes.
const (
	CQWritten CQResult = iota // the CQE was written
	CQAbsent                  // no such CQ, or the card is stopped: nothing written
	CQOverrun                 // the CQ was full: CQ_OVERRUN written, the QPs on the CQ go to error
	CQDropped                 // the CQ was full and its overrun already reported, or is in error: nothing written
	CQFault                   // the CQE's DMA write failed (at the address returned): CQ_ERROR written, the CQ is in error and the QPs on it go to error
)

// completeCQ is complete's queue part: the CQE of w for QP qpn on CQ n,
// the CQ_NOTIFY of an armed CQ, or the CQ_OVERRUN of a full one. A CQE
// whose write faults is issued as any other (PI moves past its slot, an
// armed CQ notifies), as on a card that learns of the fault a write
// response after it issued the write, then puts the CQ in error:
// CQ_ERROR, and no CQE is written to it again.
func (c *queues) completeCQ(n, qpn uint32, w completion) (CQResult, uint64) {
	if n >= cs.MaxCQ || c.cqs[n] == nil || c.fatal {
		return CQAbsent, 0
	}
	cq := c.cqs[n]
	if cq.err {
		return CQDropped, 0
	}
	size := uint32(1) << cq.logSize
	if (cq.pi-cq.ci)&cs.CQDBCICIMask >= size {
		if cq.overrun {
			return CQDropped, 0 // reported once; the QPs on it are in error
		}
		cq.overrun = true
		c.event(cs.EQETypeCQOverrun, cq.n, 0, 0)
		return CQOverrun, 0
	}
	b := &c.cqeRec
	*b = [cs.CQESize]byte{}
	r := cs.CQE(b[:])
	r.SetWRID(w.wrID)
	r.SetByteLen(w.byteLen)
	r.SetQPN(uint16(qpn))
	r.SetOpcode(w.op)
	r.SetStatus(w.status)
	r.SetInvSTag(w.invSTag)
	r.SetSolicited(w.solicited)
	r.SetInvalidated(w.inv)
	if w.cause != 0 {
		r.SetTermLayer(uint8(w.cause.Layer()))
		r.SetTermType(w.cause.EType())
		r.SetTermCode(w.cause.Code())
	}
	r.SetOwner(cq.pi>>cq.logSize&1 == 0)
	addr := cq.base + uint64(cq.pi%size)*cs.CQESize
	err := c.write(WriteCQE, qpn, addr, b[:])
	cq.pi++
	if w.solicited || w.status != cs.WCStatusSuccess {
		cq.solPI = cq.pi
	}
	if cq.armed && (!cq.solicited || w.solicited || w.status != cs.WCStatusSuccess) {
		cq.armed = false
		c.event(cs.EQETypeCQNotify, cq.n, 0, 0)
	}
	if err != nil {
		cq.err = true
		c.event(cs.EQETypeCQError, cq.n, uint32(addr), 0)
		return CQFault, addr
	}
	return CQWritten, 0
}

// Queues is the card's completion and event queue logic on its own: CQ
// commands and doorbells, the EQ's configuration and doorbell, CQEs, EQEs
// and the interrupt, exactly as the card model does them. The
// co-simulation of the RTL block that keeps them (card_cq) drives it with
// the records the card's engines hand that block. It is not safe for
// concurrent use.
type Queues struct {
	q queues
}

// NewQueues returns the queues of a card fresh from reset (no CQ, the EQ
// disabled); write is the DMA write of each CQE and EQE (an error is an
// error response: a CQE's is reported as CQFault, an EQE's stops the card).
func NewQueues(write func(w DMAWrite) error) *Queues {
	s := &Queues{}
	s.q.write = func(kind WriteKind, qpn uint32, addr uint64, p []byte) error {
		return write(DMAWrite{Kind: kind, QPN: qpn, Addr: addr, Data: p})
	}
	return s
}

// CQCommand acts as a CQ_CMD write of op with CQ_NUM, CQ_BASE and CQ_CFG
// staged as given; a refused command returns a *RegError (ErrRefused).
func (s *Queues) CQCommand(num uint32, base uint64, logSize uint32, op cs.CQOp) error {
	st := &s.q.cqStage
	st.num, st.base, st.logSize = num&cs.CQNumCQNMask, base, logSize&cs.CQCfgLogSizeMask
	return s.q.cqCommand(cs.CQCmd, op)
}

// CQDoorbell acts as a write of v to CQ n's CQ_DB.CI.
func (s *Queues) CQDoorbell(n, v uint32) {
	if n < cs.MaxCQ {
		_ = s.q.cqDoorbell(cs.CQDBBase+n*cs.CQDBStride, n, v) // never fails
	}
}

// EQConfig acts as a write of cfg to EQ_CFG with EQ_BASE staged as base; a
// refused configuration returns a *RegError (ErrRefused).
func (s *Queues) EQConfig(base uint64, cfg uint32) error {
	s.q.eq.stageBase = base
	return s.q.eqConfig(cs.EQCfg, cfg)
}

// EQDoorbell acts as a write of v to EQ_DB.
func (s *Queues) EQDoorbell(v uint32) { s.q.eqDoorbell(v) }

// Completion is one completion an engine hands the queues.
type Completion struct {
	QPN         uint32
	WRID        uint64
	ByteLen     uint32
	Op          cs.WCOpcode
	Status      cs.WCStatus
	InvSTag     uint32
	Solicited   bool
	Invalidated bool
	Cause       rdmap.Cause // Terminate behind an error status, or 0
}

// Complete writes w's CQE on CQ cq (and a CQ_NOTIFY, CQ_OVERRUN or
// CQ_ERROR event).
// For CQFault it also returns the CQE's address.
func (s *Queues) Complete(cq uint32, w Completion) (CQResult, uint64) {
	return s.q.completeCQ(cq, w.QPN, completion{wrID: w.WRID, byteLen: w.ByteLen, op: w.Op, status: w.Status,
		invSTag: w.InvSTag, solicited: w.Solicited, inv: w.Invalidated, cause: w.Cause})
}

// Event writes one EQE (or counts it lost when the EQ is disabled or full).
func (s *Queues) Event(typ cs.EQEType, obj, info uint32, cause rdmap.Cause) {
	s.q.event(typ, obj, info, cause)
}

// Interrupt takes the pending interrupt: its vector, and whether one was
// due (the card model's Step delivers it).
func (s *Queues) Interrupt() (vector int, ok bool) {
	if !s.q.irqPending {
		return 0, false
	}
	s.q.irqPending = false
	return s.q.eq.vector, true
}

// CQFree is the number of entries CQ n has free, and whether it exists.
func (s *Queues) CQFree(n uint32) (uint32, bool) {
	if n >= cs.MaxCQ || s.q.cqs[n] == nil {
		return 0, false
	}
	cq := s.q.cqs[n]
	size, used := uint32(1)<<cq.logSize, (cq.pi-cq.ci)&cs.CQDBCICIMask
	if used >= size { // full, or a CI past PI: the CQ takes nothing
		return 0, true
	}
	return size - used, true
}

// EventsLost is the number of events dropped because the EQ was disabled
// or full.
func (s *Queues) EventsLost() uint64 { return s.q.eqLost }

// Fatal reports whether an EQE's DMA write failed, which stops the card.
func (s *Queues) Fatal() bool { return s.q.fatal }
