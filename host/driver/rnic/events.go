package rnic

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/driver"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// eventLoop consumes the event queue: it drains it, rearms it with its
// consumer index (the card raises the vector at once if an event is
// already past it), and waits for the interrupt.
func (c *Card) eventLoop(ctx context.Context) {
	defer close(c.loopDone)
	for {
		c.eqMu.Lock()
		c.drainEQ()
		err := c.write(cs.EQDB, c.eqCI&cs.EQDBCIMask|1<<cs.EQDBArmShift)
		c.eqMu.Unlock()
		if err != nil {
			if ctx.Err() == nil {
				c.stopCard(fmt.Errorf("rnic: arming the event queue: %w", err))
			}
			return
		}
		// A wait may return an interrupt that was already pending
		// without looking at ctx: a card that raises one at every arm
		// (a fatal card's EQ) must not keep Close waiting.
		if err := c.phys.WaitInterrupt(ctx, 0); err != nil || ctx.Err() != nil {
			return // closing
		}
	}
}

// syncEvents dispatches the events the card has written so far, on the
// caller's goroutine: what a QP's Err reports is then at least as new as
// the card's records the caller has seen (the card writes a QP's
// QP_ERROR, STREAM_END or TERM_* event before the completions it flushes).
func (c *Card) syncEvents() {
	c.eqMu.Lock()
	c.drainEQ()
	c.eqMu.Unlock()
}

// drainEQ dispatches every new event. Called with eqMu held.
func (c *Card) drainEQ() {
	n := uint32(len(c.eq.b) / cs.EQESize)
	for n != 0 {
		i := c.eqCI % n
		off := int(i) * cs.EQESize
		w := atomic.LoadUint32(word(c.eq.b, off+12))
		if w>>31 != 1^(c.eqCI/n)&1 {
			return // the owner bit of the previous pass: not written yet
		}
		c.dispatch(cs.EQE(c.eq.b[off:off+cs.EQESize]), c.eqCI)
		c.eqCI++
	}
}

// termCause is the Terminate cause of a TERM_* event or CQE.
func termCause(layer, typ, code uint8) rdmap.Cause {
	return rdmap.Cause(uint16(layer&0xf)<<12 | uint16(typ&0xf)<<8 | uint16(code))
}

// dispatch acts on one event.
func (c *Card) dispatch(e cs.EQE, idx uint32) {
	obj := e.Obj()
	t := e.Type()
	bad := func(msg string) {
		err := &RecordError{Record: "EQE", Index: idx, Msg: msg}
		c.post(driver.Event{Type: driver.EventQPFatal, QPN: obj, Err: err})
	}
	switch t {
	case cs.EQETypeCQNotify, cs.EQETypeCQOverrun:
		q := c.cq(obj)
		if q == nil {
			bad(fmt.Sprintf("%v for CQ %d, which does not exist", t, obj))
			return
		}
		if t == cs.EQETypeCQNotify {
			q.notified()
		} else {
			q.overrun()
		}
		return
	case cs.EQETypeDMAFault:
		c.dmaFault(obj)
		return
	case cs.EQETypeCQError:
		q := c.cq(obj)
		if q == nil {
			bad(fmt.Sprintf("%v for CQ %d, which does not exist", t, obj))
			return
		}
		// The CQ's pollers get the completions before the lost slot, then
		// this error; the QPs on the CQ get their own QP_ERROR DMA.
		q.setErr(&CQError{CQN: obj, Fault: c.faultOf(e.Info())})
		return
	}
	if t < cs.EQETypeTXData || t > cs.EQETypeDMAFault {
		bad(fmt.Sprintf("type %d", t))
		return
	}
	q := c.qp(obj)
	if q == nil {
		bad(fmt.Sprintf("%v for QP %d, which does not exist", t, obj))
		return
	}
	switch t {
	case cs.EQETypeTXData:
		q.tx.wake()
	case cs.EQETypeRXSpace:
		q.rx.wake()
	case cs.EQETypeQPClosed:
		q.ended(iwarp.ErrClosed, true)
	case cs.EQETypeStreamEnd:
		// The peer ended its stream at an FPDU boundary: the connection is
		// closed gracefully; what is left is flushed.
		q.setReason(iwarp.ErrClosed)
		q.fail(iwarp.ErrClosed)
	case cs.EQETypeTermSent, cs.EQETypeTermRecv:
		remote := t == cs.EQETypeTermRecv
		cause := termCause(e.TermLayer(), e.TermType(), e.TermCode())
		msg := "the card sent a Terminate"
		if remote {
			msg = "the peer sent a Terminate"
		}
		q.ended(&iwarp.Error{Cause: cause, Remote: remote, Terminate: &rdmap.Terminate{Cause: cause}, Msg: msg}, false)
	case cs.EQETypeQPError:
		q.ended(qpErr(cs.QPErr(e.Info()), q.qpn), false)
	}
}

// qpErr is why a QP_ERROR event ended a QP, when nothing else said so first.
func qpErr(why cs.QPErr, qpn uint32) error {
	switch why {
	case cs.QPErrHost:
		return fmt.Errorf("rnic: QP %d put in error by the driver: %w", qpn, iwarp.ErrClosed)
	case cs.QPErrLLPLost:
		return fmt.Errorf("rnic: QP %d: %w", qpn, iwarp.ErrConnLost)
	case cs.QPErrStreamCut:
		return &iwarp.Error{Cause: rdmap.MPAConnectionLost, Msg: fmt.Sprintf("QP %d: the peer's stream ended inside an FPDU", qpn), Err: iwarp.ErrConnLost}
	case cs.QPErrDMA:
		return fmt.Errorf("rnic: QP %d: %w", qpn, ErrDMAFault)
	case cs.QPErrCQOverrun:
		return &iwarp.Error{Cause: rdmap.RDMAPLocalCatastrophic, Msg: fmt.Sprintf("QP %d: completion queue overflow", qpn), Err: iwarp.ErrCQOverflow}
	case cs.QPErrBadDoorbell:
		return fmt.Errorf("rnic: QP %d: the card refused a doorbell past its ring: %w", qpn, ErrCorrupt)
	}
	return &RecordError{Record: "EQE", Obj: qpn, Msg: fmt.Sprintf("QP_ERROR for QP %d with unknown cause %d", qpn, why)}
}

// readFault reads the DMA_FAULT_* registers: the last fault the card saw.
func (c *Card) readFault() *DMAFaultError {
	var r [3]uint32
	for i, off := range []uint32{cs.DMAFaultAddrLo, cs.DMAFaultAddrHi, cs.DMAFaultInfo} {
		r[i], _ = c.regs.Read32(off)
	}
	info := r[2]
	return &DMAFaultError{Addr: uint64(r[1])<<32 | uint64(r[0]), QPN: info & cs.DMAFaultInfoQPNMask,
		Resp: uint8(info >> cs.DMAFaultInfoRespShift & cs.DMAFaultInfoRespMask), Write: info>>cs.DMAFaultInfoWriteShift&1 != 0,
		Count: uint8(info >> cs.DMAFaultInfoCountShift)}
}

// faultOf is the fault an event names by its address's low word (INFO):
// DMA_FAULT_*'s if they still hold it, else what the event says (a later
// fault has replaced it in the registers).
func (c *Card) faultOf(lo uint32) *DMAFaultError {
	if f := c.readFault(); uint32(f.Addr) == lo {
		return f
	}
	return &DMAFaultError{Addr: uint64(lo), Write: true, Low32: true}
}

// dmaFault reads the DMA_FAULT_* registers and ends what the fault hit.
func (c *Card) dmaFault(obj uint32) {
	err := c.readFault()
	if obj != 0 {
		err.QPN = obj
	} else {
		// OBJ 0: the card's own write (a QP's status record: INFO's QPN
		// names the QP whose record it was), which stops the card.
		c.post(driver.Event{Type: driver.EventQPFatal, Err: err})
		if s, _ := c.regs.Read32(cs.Status); s>>cs.StatusFatalShift&1 != 0 {
			c.stopCard(fmt.Errorf("%w: %w", ErrCardFatal, err))
			return
		}
		if err.QPN == 0 {
			return
		}
	}
	if q := c.qp(err.QPN); q != nil {
		q.fail(err)
		return
	}
	c.post(driver.Event{Type: driver.EventQPFatal, QPN: err.QPN, Err: err})
}

// watchdog checks, once a second, that the card is alive (STATUS answers,
// and without FATAL)
// and that every QP with posted work sees its SQ consumer index move
// within the watchdog bound.
func (c *Card) watchdog(ctx context.Context) {
	defer close(c.dogDone)
	tick := time.NewTicker(min(time.Second, c.opt.Watchdog/4))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s, err := c.regs.Read32(cs.Status)
		if err == nil && s == 0xffffffff {
			// No register of the card reads all ones: a read that
			// nothing answered does (a card removed or whose link is
			// down, or the process serving an emulated card gone).
			c.stopCard(&StuckError{What: "BAR0 (STATUS reads 0xffffffff: the card no longer answers on the bus)",
				After: min(time.Second, c.opt.Watchdog/4).String()})
		} else if err == nil && s>>cs.StatusFatalShift&1 != 0 {
			c.stopCard(fmt.Errorf("%w (DMA_FAULT_* registers: see the DMA fault events)", ErrCardFatal))
		}
		now := time.Now()
		for i := range c.qps {
			if q := c.qps[i].Load(); q != nil {
				q.checkProgress(now)
			}
		}
	}
}

func (c *Card) qp(n uint32) *qp {
	if n == 0 || n >= uint32(len(c.qps)) {
		return nil
	}
	return c.qps[n].Load()
}

func (c *Card) cq(n uint32) *cq {
	if n >= uint32(len(c.cqs)) {
		return nil
	}
	return c.cqs[n].Load()
}
