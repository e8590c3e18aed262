package cardmodel

import (
	"github.com/openiwarp/openiwarp/golden/rdmap"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

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

func (c *Card) eqConfig(off, v uint32) error {
	log := v & cs.EQCfgLogSizeMask
	en := v>>cs.EQCfgEnableShift&1 != 0
	if en {
		if log > cs.MaxQueueLog {
			return refuse(off, "EQ of 2^%d entries (at most 2^%d)", log, cs.MaxQueueLog)
		}
		if size := uint64(cs.EQESize) << log; c.eq.stageBase%size != 0 {
			return refuse(off, "EQ base %#x not aligned to its %d bytes", c.eq.stageBase, size)
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

func (c *Card) eqDoorbell(v uint32) {
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
func (c *Card) event(typ cs.EQEType, obj, info uint32, cause rdmap.Cause) {
	e := &c.eq
	if c.fatal {
		return
	}
	size := uint32(1) << e.logSize
	if !e.enabled || (e.pi-e.ci)&cs.EQDBCIMask >= size {
		c.eqLost++
		return
	}
	var b [cs.EQESize]byte
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
	if err := c.dmaWrite(WriteEQE, 0, addr, b[:]); err != nil {
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
	armed     bool
	solicited bool // armed for solicited and error completions only
	users     int  // QPs using it
	overrun   bool // reported; cleared once the driver frees an entry
}

func (c *Card) cqCommand(off uint32, op cs.CQOp) error {
	s := &c.cqStage
	if s.num >= cs.MaxCQ {
		return refuse(off, "CQ number %d (at most %d)", s.num, cs.MaxCQ-1)
	}
	switch op {
	case cs.CQOpCreate:
		if c.cqs[s.num] != nil {
			return refuse(off, "CQ %d exists", s.num)
		}
		if s.logSize > cs.MaxQueueLog {
			return refuse(off, "CQ of 2^%d entries (at most 2^%d)", s.logSize, cs.MaxQueueLog)
		}
		if size := uint64(cs.CQESize) << s.logSize; s.base%size != 0 {
			return refuse(off, "CQ base %#x not aligned to its %d bytes", s.base, size)
		}
		c.cqs[s.num] = &cq{n: s.num, base: s.base, logSize: s.logSize}
	case cs.CQOpDestroy:
		q := c.cqs[s.num]
		if q == nil {
			return refuse(off, "CQ %d does not exist", s.num)
		}
		if q.users > 0 {
			return refuse(off, "CQ %d is used by %d QPs", s.num, q.users)
		}
		c.cqs[s.num] = nil
	default:
		return refuse(off, "CQ_CMD operation %d", op)
	}
	return nil
}

func (c *Card) cqDoorbell(off, n, v uint32) error {
	q := c.cqs[n]
	if q == nil {
		return nil // a doorbell of no CQ is ignored
	}
	q.ci = v & cs.CQDBCICIMask
	if (q.pi-q.ci)&cs.CQDBCICIMask < 1<<q.logSize {
		q.overrun = false
	}
	if v>>cs.CQDBCIArmShift&1 != 0 {
		q.armed = true
		q.solicited = v>>cs.CQDBCIArmSolicitedShift&1 != 0
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
// completion: CQ_OVERRUN, and every QP on the CQ goes to error. It
// reports whether the CQE was written.
func (c *Card) complete(n uint32, q *qp, w completion) bool {
	cq := c.cqs[n]
	if cq == nil || c.fatal {
		return false
	}
	q.writeStatus() // the indices the CQE implies are visible first
	size := uint32(1) << cq.logSize
	if (cq.pi-cq.ci)&cs.CQDBCICIMask >= size {
		if cq.overrun {
			return false // reported once; the QPs on it are in error
		}
		cq.overrun = true
		c.event(cs.EQETypeCQOverrun, cq.n, 0, 0)
		for _, k := range c.live {
			if o := c.qps[k]; o.sendCQ == n || o.recvCQ == n {
				o.toError(cs.QPErrCQOverrun, localCatastrophic())
			}
		}
		return false
	}
	var b [cs.CQESize]byte
	r := cs.CQE(b[:])
	r.SetWRID(w.wrID)
	r.SetByteLen(w.byteLen)
	r.SetQPN(uint16(q.n))
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
	if err := c.dmaWrite(WriteCQE, q.n, addr, b[:]); err != nil {
		q.dmaFailed(addr)
		return false
	}
	cq.pi++
	if cq.armed && (!cq.solicited || w.solicited || w.status != cs.WCStatusSuccess) {
		cq.armed = false
		c.event(cs.EQETypeCQNotify, cq.n, 0, 0)
	}
	return true
}
