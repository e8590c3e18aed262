package cardmodel

import (
	"errors"
	"math/bits"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

const barSize = 1 << cs.AddrBits

func check(off uint32, write bool) error {
	if off%4 != 0 {
		return &RegError{Off: off, Write: write, Err: ErrMisaligned}
	}
	if off >= barSize {
		return &RegError{Off: off, Write: write, Err: ErrOutOfRange}
	}
	return nil
}

func lo32(v *uint64, w uint32) { *v = *v&^0xffffffff | uint64(w) }
func hi32(v *uint64, w uint32) { *v = *v&0xffffffff | uint64(w)<<32 }

func field(v uint32, shift, mask uint32) uint32 { return v >> shift & mask }

// Read32 reads the BAR0 register at byte offset off. Command registers and
// doorbells read as zero.
func (c *Card) Read32(off uint32) (uint32, error) {
	if err := check(off, false); err != nil {
		return 0, err
	}
	switch {
	case off >= cs.QPDBBase:
		if off >= cs.QPDBBase+cs.MaxQP*cs.QPDBStride {
			return 0, &RegError{Off: off, Err: ErrOutOfRange}
		}
		return 0, nil
	case off >= cs.CQDBBase:
		if off >= cs.CQDBBase+cs.MaxCQ*cs.CQDBStride {
			return 0, &RegError{Off: off, Err: ErrOutOfRange}
		}
		return 0, nil
	case off >= cs.PlacementWindow && off < cs.PlacementWindow+0x100:
		v, ok := c.tab.read(off - cs.PlacementWindow)
		if !ok {
			return 0, &RegError{Off: off, Err: ErrOutOfRange}
		}
		return v, nil
	}
	s, q := &c.cqStage, &c.qpStage
	switch off {
	case cs.ID:
		return cs.VendorID | cs.DeviceID<<16, nil
	case cs.Version:
		return cs.InterfaceVersion, nil
	case cs.CapsDatapath:
		return uint32(c.cfg.Width/8) | cs.MaxSGE<<8 | cs.MaxWQEBBs<<16 | cs.MaxRd<<24, nil
	case cs.CapsObjects:
		return log2(cs.MaxQP) | log2(cs.MaxCQ)<<8 | log2(cs.STags)<<16 | cs.MaxQueueLog<<24, nil
	case cs.CapsInline:
		return cs.MaxInline | cs.PushInline<<16, nil
	case cs.CapsRing:
		return cs.MinRingLog | cs.MaxRingLog<<8, nil
	case cs.Scratch:
		return c.scratch, nil
	case cs.Ctrl:
		return b2u(c.enable), nil
	case cs.Status:
		return 1 | b2u(c.fatal)<<1, nil
	case cs.CmdStatus:
		return uint32(c.cmdSeq) | b2u(c.cmdWhy != cs.CmdWhyOk)<<cs.CmdStatusRefusedShift | uint32(c.cmdWhy)<<cs.CmdStatusWhyShift, nil
	case cs.Reset, cs.EQDB, cs.CQCmd, cs.QPCmd:
		return 0, nil
	case cs.DMAFaultAddrLo:
		return uint32(c.faultAddr), nil
	case cs.DMAFaultAddrHi:
		return uint32(c.faultAddr >> 32), nil
	case cs.DMAFaultInfo:
		return c.faultInfo, nil
	case cs.EQBaseLo:
		return uint32(c.eq.stageBase), nil
	case cs.EQBaseHi:
		return uint32(c.eq.stageBase >> 32), nil
	case cs.EQCfg:
		return c.eq.cfg, nil
	case cs.IRQModeration:
		return c.irqMod, nil
	case cs.QpstatBaseLo:
		return uint32(c.qpstatBase), nil
	case cs.QpstatBaseHi:
		return uint32(c.qpstatBase >> 32), nil
	case cs.CQNum:
		return s.num, nil
	case cs.CQBaseLo:
		return uint32(s.base), nil
	case cs.CQBaseHi:
		return uint32(s.base >> 32), nil
	case cs.CQCfg:
		return s.logSize, nil
	case cs.QPNum:
		return q.num, nil
	case cs.QPPD:
		return q.pd, nil
	case cs.QPSQBaseLo, cs.QPRQBaseLo, cs.QPTXSBaseLo, cs.QPRXSBaseLo:
		return uint32(q.base[(off-cs.QPSQBaseLo)/8]), nil
	case cs.QPSQBaseHi, cs.QPRQBaseHi, cs.QPTXSBaseHi, cs.QPRXSBaseHi:
		return uint32(q.base[(off-cs.QPSQBaseHi)/8] >> 32), nil
	case cs.QPSizes:
		return q.sizes, nil
	case cs.QPCqs:
		return q.cqs, nil
	case cs.QPMPA:
		return q.mpa, nil
	case cs.QPRD:
		return q.rd, nil
	}
	return 0, &RegError{Off: off, Err: ErrOutOfRange}
}

func log2(n uint32) uint32 { return uint32(bits.TrailingZeros32(n)) }

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// Write32 writes the BAR0 register at byte offset off. Commands act at
// once on the card's state; the DMA work they cause is done by Step.
func (c *Card) Write32(off, v uint32) error {
	if err := check(off, true); err != nil {
		return err
	}
	switch {
	case off >= cs.QPDBBase:
		if off >= cs.QPDBBase+cs.MaxQP*cs.QPDBStride {
			return &RegError{Off: off, Write: true, Err: ErrOutOfRange}
		}
		return c.qpDoorbell(off, (off-cs.QPDBBase)/cs.QPDBStride, (off-cs.QPDBBase)%cs.QPDBStride, v)
	case off >= cs.CQDBBase:
		if off >= cs.CQDBBase+cs.MaxCQ*cs.CQDBStride {
			return &RegError{Off: off, Write: true, Err: ErrOutOfRange}
		}
		if (off-cs.CQDBBase)%cs.CQDBStride != cs.CQDBCI {
			return &RegError{Off: off, Write: true, Err: ErrOutOfRange}
		}
		return c.cqDoorbell(off, (off-cs.CQDBBase)/cs.CQDBStride, v)
	case off >= cs.PlacementWindow && off < cs.PlacementWindow+0x100:
		if !c.tab.write(off-cs.PlacementWindow, v) {
			return &RegError{Off: off, Write: true, Err: ErrOutOfRange}
		}
		return nil
	}
	s, q := &c.cqStage, &c.qpStage
	switch off {
	case cs.ID, cs.Version, cs.CapsDatapath, cs.CapsObjects, cs.CapsInline, cs.CapsRing, cs.Status,
		cs.DMAFaultAddrLo, cs.DMAFaultAddrHi, cs.DMAFaultInfo, cs.CmdStatus:
		return &RegError{Off: off, Write: true, Err: ErrReadOnly}
	case cs.Scratch:
		c.scratch = v
	case cs.Ctrl:
		c.enable = v&1 != 0
	case cs.Reset:
		c.reset()
	case cs.EQBaseLo:
		lo32(&c.eq.stageBase, v)
	case cs.EQBaseHi:
		hi32(&c.eq.stageBase, v)
	case cs.EQCfg:
		return c.decided(c.eqConfig(off, v))
	case cs.EQDB:
		c.eqDoorbell(v)
	case cs.IRQModeration:
		c.irqMod = v & cs.IRQModerationCyclesMask
	case cs.QpstatBaseLo:
		lo32(&c.qpstatBase, v)
	case cs.QpstatBaseHi:
		hi32(&c.qpstatBase, v)
	case cs.CQNum:
		s.num = v & cs.CQNumCQNMask
	case cs.CQBaseLo:
		lo32(&s.base, v)
	case cs.CQBaseHi:
		hi32(&s.base, v)
	case cs.CQCfg:
		s.logSize = v & cs.CQCfgLogSizeMask
	case cs.CQCmd:
		return c.decided(c.cqCommand(off, cs.CQOp(v&cs.CQCmdOpMask)))
	case cs.QPNum:
		q.num = v & cs.QPNumQPNMask
	case cs.QPPD:
		q.pd = v
	case cs.QPSQBaseLo, cs.QPRQBaseLo, cs.QPTXSBaseLo, cs.QPRXSBaseLo:
		lo32(&q.base[(off-cs.QPSQBaseLo)/8], v)
	case cs.QPSQBaseHi, cs.QPRQBaseHi, cs.QPTXSBaseHi, cs.QPRXSBaseHi:
		hi32(&q.base[(off-cs.QPSQBaseHi)/8], v)
	case cs.QPSizes:
		q.sizes = v
	case cs.QPCqs:
		q.cqs = v
	case cs.QPMPA:
		q.mpa = v
	case cs.QPRD:
		q.rd = v
	case cs.QPCmd:
		return c.decided(c.qpCommand(off, cs.QPOp(v&cs.QPCmdOpMask)))
	default:
		return &RegError{Off: off, Write: true, Err: ErrOutOfRange}
	}
	return nil
}

// qpContext is the staged QP context (QP_NUM .. QP_RD).
type qpContext struct {
	num, pd             uint32
	base                [4]uint64 // SQ, RQ, TXS, RXS
	sizes, cqs, mpa, rd uint32
}

func (c *Card) qpDoorbell(off, n, reg, v uint32) error {
	if reg > cs.QPDBStream && reg < cs.QPDBPush {
		return &RegError{Off: off, Write: true, Err: ErrOutOfRange}
	}
	q := c.qps[n]
	if q != nil {
		c.wake(q)
	}
	if reg >= cs.QPDBPush {
		c.pushWord(q, n, int(reg-cs.QPDBPush)/4, v)
		return nil
	}
	if q == nil {
		return nil
	}
	switch reg {
	case cs.QPDBSQPI:
		q.sqDoorbell(uint16(v))
	case cs.QPDBRQPI:
		q.rqDoorbell(uint16(v))
	case cs.QPDBTXSCI:
		q.txsCI = v
	case cs.QPDBRXSPI:
		q.rxsPI = v
	case cs.QPDBStream:
		q.stream(v)
	}
	return nil
}

// push is the card's one push window in flight: the words of QP qpn
// written so far, in order.
type push struct {
	qpn  uint32
	next int // the word expected next; 0: none in flight
	w    [cs.BB / 4]uint32
}

// pushWord takes word i of QP n's push window. Word 0 starts a push;
// each later word must follow in order, from the same QP. The last word
// posts the block as SQ_PI + 1: taken from the window if the push was
// whole, read from the SQ otherwise (docs/card.md, QP_DB.PUSH).
func (c *Card) pushWord(q *qp, n uint32, i int, v uint32) {
	p := &c.push
	switch {
	case i == 0:
		p.qpn, p.next = n, 1
	case p.next == i && p.qpn == n:
		p.next++
	default:
		p.next = 0 // broken
	}
	p.w[i] = v
	if i < len(p.w)-1 {
		return
	}
	whole := p.next == len(p.w) && p.qpn == n
	p.next = 0
	if q == nil {
		return // a doorbell of no QP is ignored
	}
	if !whole {
		q.sqDoorbell(q.sqPI + 1)
		return
	}
	q.pushBlock(&p.w)
}

// decided records a command's verdict in CMD_STATUS: err is the command's
// answer (a *RegError with ErrRefused, or nil). A refused command is
// still answered with the error here, for the model's callers; on a
// board the write is posted and the driver reads CMD_STATUS.
func (c *Card) decided(err error) error {
	c.cmdSeq++
	c.cmdWhy = cs.CmdWhyOk
	var re *RegError
	if errors.As(err, &re) && re.Err == ErrRefused {
		c.cmdWhy = re.Code
	}
	return err
}
