package sim

import (
	"bytes"
	"fmt"

	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

type cqCplPorts struct {
	valid, ready, cq, qpn, wrid, blen, opc, status, inv, sol, invd, tl, tt, tc Port
}

type cqEvPorts struct{ valid, ready, typ, obj, info, tl, tt, tc Port }

type cardCQPorts struct {
	rst                                                   Port
	cpl                                                   []cqCplPorts
	ev                                                    []cqEvPorts
	dbValid, dbReady, dbIndex, dbValue                    Port
	cmdValid, cmdReady, cmdOp, cmdNum, cmdBaseLo, cmdBase Port
	cmdLog                                                Port
	eqBaseLo, eqBaseHi, eqLog, eqVec, eqEn, eqWr          Port
	eqdbValid, eqdbReady, eqdbCI, eqdbArm, irqMod         Port
	irqValid, irqReady, irqVec                            Port
	ovValid, ovReady, ovCQ, fault, fatal, lost, initDone  Port
	tight, cplBusy                                        Port
	axiWrPorts
	awReady, wReady, bID, bResp, bValid Port
	lanes                               int
}

func lookupCardCQPorts(l Layout, sources int) (cardCQPorts, error) {
	s := &portSet{l: l}
	p := cardCQPorts{rst: s.in("rst")}
	for i := 0; i < sources; i++ {
		c := fmt.Sprintf("s_cpl%d_", i)
		p.cpl = append(p.cpl, cqCplPorts{valid: s.in(c + "valid"), ready: s.out(c + "ready"), cq: s.in(c + "cq"),
			qpn: s.in(c + "qpn"), wrid: s.in(c + "wr_id"), blen: s.in(c + "byte_len"), opc: s.in(c + "opcode"),
			status: s.in(c + "status"), inv: s.in(c + "inv_stag"), sol: s.in(c + "solicited"), invd: s.in(c + "invalidated"),
			tl: s.in(c + "term_layer"), tt: s.in(c + "term_type"), tc: s.in(c + "term_code")})
		e := fmt.Sprintf("s_ev%d_", i)
		p.ev = append(p.ev, cqEvPorts{valid: s.in(e + "valid"), ready: s.out(e + "ready"), typ: s.in(e + "type"),
			obj: s.in(e + "obj"), info: s.in(e + "info"), tl: s.in(e + "term_layer"), tt: s.in(e + "term_type"), tc: s.in(e + "term_code")})
	}
	p.dbValid, p.dbReady, p.dbIndex, p.dbValue = s.in("s_cqdb_valid"), s.out("s_cqdb_ready"), s.in("s_cqdb_index"), s.in("s_cqdb_value")
	p.cmdValid, p.cmdReady, p.cmdOp, p.cmdNum = s.in("cq_cmd_valid"), s.out("cq_cmd_ready"), s.in("cq_cmd_op"), s.in("cq_num_cqn")
	p.cmdBaseLo, p.cmdBase, p.cmdLog = s.in("cq_base_lo"), s.in("cq_base_hi"), s.in("cq_cfg_log_size")
	p.eqBaseLo, p.eqBaseHi, p.eqLog, p.eqVec = s.in("eq_base_lo"), s.in("eq_base_hi"), s.in("eq_cfg_log_size"), s.in("eq_cfg_vector")
	p.eqEn, p.eqWr = s.in("eq_cfg_enable"), s.in("eq_cfg_wr_pulse")
	p.eqdbValid, p.eqdbReady, p.eqdbCI, p.eqdbArm = s.in("eq_db_valid"), s.out("eq_db_ready"), s.in("eq_db_ci"), s.in("eq_db_arm")
	p.irqMod, p.irqValid, p.irqReady, p.irqVec = s.in("irq_moderation_cycles"), s.out("irq_valid"), s.in("irq_ready"), s.out("irq_vector")
	p.ovValid, p.ovReady, p.ovCQ = s.out("m_overrun_valid"), s.in("m_overrun_ready"), s.out("m_overrun_cq")
	p.fault, p.fatal, p.lost, p.initDone = s.out("m_fault_valid"), s.out("fatal"), s.out("events_lost"), s.out("init_done")
	p.tight, p.cplBusy = s.out("cq_tight"), s.out("cpl_busy")
	p.axiWrPorts = s.axiWr()
	p.awReady, p.wReady = s.in("m_axi_awready"), s.in("m_axi_wready")
	p.bID, p.bResp, p.bValid = s.in("m_axi_bid"), s.in("m_axi_bresp"), s.in("m_axi_bvalid")
	p.lanes = p.wData.Width / 8
	return p, s.err
}

// CardCQMode selects the stimulus of a card_cq co-simulation.
type CardCQMode int

// card_cq stimulus modes.
const (
	// CardCQRandom: every kind of operation at random, few small CQs
	// (wrap, owner bits, overruns, arming), random AXI backpressure and
	// write-response latency, random interrupt and overrun backpressure,
	// quiet phases in which the interrupts are checked.
	CardCQRandom CardCQMode = iota
	// CardCQSaturated: completions only, on both ports, every cycle, on a
	// large CQ the driver keeps consuming; the AXI slave always ready and
	// answering after 250 cycles (throughput and latency).
	CardCQSaturated
)

type cqAWT struct {
	addr  uint64
	beats int
	at    uint64 // cycle the address was taken
}

// cqExpect is one DMA write the reference made, with the cycle its
// operation was taken.
type cqExpect struct {
	w     cardmodel.DMAWrite
	taken uint64
}

// CardCQDriver drives card_cq and checks it against cardmodel.Queues fed
// the same operations in the order the RTL took them: every DMA write
// (address and bytes, in order), the overrun records, the events lost,
// and the interrupts (never more than the reference raised, one at least
// by each quiet point after the reference raised one, vector equal, at
// least IRQ_MODERATION cycles apart).
type CardCQDriver struct {
	p      cardCQPorts
	mode   CardCQMode
	rng    Rand
	ref    *cardmodel.Queues
	cycle  uint64
	readyP int
	validP int

	cqs     []uint32 // CQ numbers in use
	cqeN    map[uint32]uint32
	eqeN    uint32
	eqBase  uint64
	eqCfg   uint32
	eqWrAt  uint64 // cycle of the last EQ_CFG pulse not yet known taken (0: none)
	irqMod  uint32
	cplHeld []*cardmodel.Completion
	cplCQ   []uint32
	evHeld  []*cqEvent
	dbHeld  *[2]uint32
	cmdHeld *cqCmd
	eqdb    *uint32
	quiet   int // cycles left of a quiet phase (no new operations)
	settled bool
	lastCI  uint32 // saturated: the CI of the last doorbell
	idleFor int    // cycles the driver has been idle

	expect    []cqExpect
	aws       []cqAWT
	wBuf      []byte
	wAddr     uint64
	wGot      int
	resp      []uint64 // cycles at which write responses may be given
	lastResp  uint64
	refOv     []uint32
	irqSince  bool // the reference raised an interrupt since the last quiet check
	rtlSince  bool
	lastIRQAt uint64
	vectors   map[int]bool // vectors the next interrupt may carry: configured since the last one (it may have been raised before a change)
	curVec    int
	lastMod   uint32 // IRQ_MODERATION when the last interrupt was taken
	prevVec   int

	Err     error
	corrupt bool // flip the owner bit of the 101st expected write (the check's own test)
	// Counters of a run.
	Completions, Events, Writes, IRQs, RefIRQs, Overruns, Lost, Quiet uint64
	// TightChecks counts the cq_tight bits compared at idle cycles,
	// Tight how many of them were set.
	TightChecks, Tight uint64
	Latency            Hist // cycles from an operation taken to its write's address taken
}

// Hist is a small latency record: count, sum, min and max.
type Hist struct{ N, Sum, Min, Max uint64 }

func (h *Hist) add(v uint64) {
	if h.N == 0 || v < h.Min {
		h.Min = v
	}
	h.Max = max(h.Max, v)
	h.N++
	h.Sum += v
}

// Mean is the mean latency.
func (h Hist) Mean() float64 { return float64(h.Sum) / float64(max(h.N, 1)) }

type cqEvent struct {
	typ       cs.EQEType
	obj, info uint32
	cause     rdmap.Cause
}

type cqCmd struct {
	num  uint32
	base uint64
	log  uint32
	op   cs.CQOp
}

// NewCardCQDriver returns the driver of a card_cq bench.
func NewCardCQDriver(l Layout, sources int, mode CardCQMode, seed uint64) (*CardCQDriver, error) {
	p, err := lookupCardCQPorts(l, sources)
	if err != nil {
		return nil, err
	}
	d := &CardCQDriver{p: p, mode: mode, rng: NewRand(seed), readyP: 256, validP: 256, cqeN: map[uint32]uint32{},
		cplHeld: make([]*cardmodel.Completion, sources), cplCQ: make([]uint32, sources), evHeld: make([]*cqEvent, sources),
		vectors: map[int]bool{}}
	d.ref = cardmodel.NewQueues(func(w cardmodel.DMAWrite) error {
		d.expect = append(d.expect, cqExpect{w: cardmodel.DMAWrite{Kind: w.Kind, QPN: w.QPN, Addr: w.Addr, Data: bytes.Clone(w.Data)}, taken: d.cycle})
		if w.Kind == cardmodel.WriteCQE {
			d.cqeN[d.cqOf(w.Addr)]++
		} else {
			d.eqeN++
		}
		return nil
	})
	if mode == CardCQSaturated {
		d.cqs = []uint32{5}
		d.cmdHeld = &cqCmd{num: 5, base: 0x1_0000_0000, log: 12, op: cs.CQOpCreate}
	}
	return d, nil
}

// cqBase is where CQ n's ring lives in the random bench (room for 2^16
// entries of 32 bytes each).
func cqBase(n uint32) uint64 { return 0x40_0000_0000 + uint64(n)<<21 }

func (d *CardCQDriver) cqOf(addr uint64) uint32 {
	if d.mode == CardCQSaturated {
		return 5
	}
	return uint32((addr - 0x40_0000_0000) >> 21)
}

func (d *CardCQDriver) fail(format string, a ...any) {
	if d.Err == nil {
		d.Err = fmt.Errorf("card_cq cycle %d: "+format, append([]any{d.cycle}, a...)...)
	}
}

// Idle reports that every operation the driver offered was taken and
// written, and every interrupt delivered.
func (d *CardCQDriver) Idle() bool {
	for i := range d.cplHeld {
		if d.cplHeld[i] != nil || d.evHeld[i] != nil {
			return false
		}
	}
	return d.dbHeld == nil && d.cmdHeld == nil && d.eqdb == nil && len(d.expect) == 0 && len(d.resp) == 0
}

func (d *CardCQDriver) plan() {
	r := d.rng
	if d.mode == CardCQSaturated {
		for i := range d.cplHeld {
			if d.cplHeld[i] == nil {
				d.cplHeld[i] = &cardmodel.Completion{QPN: uint32(1 + i), WRID: r.Uint64(), ByteLen: 64, Op: cs.WCOpcodeSend}
				d.cplCQ[i] = 5
			}
		}
		if d.dbHeld == nil && d.cqeN[5]-d.lastCI >= 64 {
			d.lastCI = d.cqeN[5]
			d.dbHeld = &[2]uint32{5, d.cqeN[5] & cs.CQDBCICIMask}
		}
		return
	}
	if d.quiet > 0 {
		d.quiet--
		return
	}
	if r.IntN(3000) == 0 {
		d.quiet = 2000
		return
	}
	if len(d.cqs) == 0 || d.cmdHeld == nil && r.IntN(300) == 0 {
		c := &cqCmd{op: cs.CQOpCreate}
		if len(d.cqs) > 0 && r.IntN(3) == 0 {
			c.num, c.op = d.cqs[r.IntN(len(d.cqs))], cs.CQOpDestroy
		} else {
			c.num = uint32(r.IntN(cs.MaxCQ))
			if r.IntN(2) == 0 && len(d.cqs) > 0 {
				c.num = d.cqs[r.IntN(len(d.cqs))] // exists: refused
			}
		}
		c.log = uint32(r.IntN(8)) // 1 to 128 entries: above 32, tightness has a boundary
		c.base = cqBase(c.num)
		switch r.IntN(40) {
		case 0:
			c.num += cs.MaxCQ // out of range
		case 1:
			c.log = 17 + uint32(r.IntN(15))
		case 2:
			c.base += 32 << uint(r.IntN(int(c.log)+1)) // misaligned
		case 3:
			c.op = cs.CQOp(r.IntN(16))
		}
		if d.cmdHeld == nil {
			d.cmdHeld = c
		}
	}
	if d.eqWrAt == 0 && r.IntN(1500) == 0 || d.eqCfg == 0 && d.eqWrAt == 0 {
		d.eqBase = 0x80_0000_0000 + uint64(r.IntN(16))<<20
		d.eqCfg = uint32(r.IntN(6)) | uint32(r.IntN(256))<<8 | 1<<31
		switch r.IntN(10) {
		case 0:
			d.eqCfg &^= 1 << 31
		case 1:
			d.eqBase += 16
		case 2:
			d.eqCfg = d.eqCfg&^31 | 17
		}
		d.eqWrAt = d.cycle // the pulse is this cycle
	}
	if d.eqdb == nil && r.IntN(60) == 0 {
		v := (d.eqeN - uint32(r.IntN(3))) & cs.EQDBCIMask
		if r.IntN(2) == 0 {
			v |= 1 << cs.EQDBArmShift
		}
		d.eqdb = &v
	}
	if d.dbHeld == nil && r.IntN(12) == 0 && len(d.cqs) > 0 {
		n := d.cqs[r.IntN(len(d.cqs))]
		lag := uint32(r.IntN(4))
		if r.IntN(3) == 0 {
			lag = uint32(r.IntN(130)) // a consumer far behind (or a CI that went back): tight and full large CQs
		}
		v := (d.cqeN[n] - lag) & cs.CQDBCICIMask
		switch r.IntN(4) {
		case 0:
			v |= 1 << cs.CQDBCIArmShift
		case 1:
			v |= 1<<cs.CQDBCIArmShift | 1<<cs.CQDBCIArmSolicitedShift
		}
		if r.IntN(50) == 0 {
			n = uint32(r.IntN(cs.MaxCQ))
		}
		d.dbHeld = &[2]uint32{n, v}
	}
	for i := range d.cplHeld {
		if d.cplHeld[i] == nil && r.Chance(d.validP) && r.IntN(3) == 0 && len(d.cqs) > 0 {
			c := &cardmodel.Completion{QPN: uint32(r.IntN(cs.MaxQP)), WRID: r.Uint64(), ByteLen: r.Uint32(),
				Op: cs.WCOpcode(r.IntN(6)), InvSTag: r.Uint32(), Solicited: r.IntN(4) == 0, Invalidated: r.IntN(4) == 0}
			if r.IntN(8) == 0 {
				c.Status = cs.WCStatus(1 + r.IntN(9))
				c.Cause = rdmap.Cause(r.Uint32() & 0xffff)
			}
			d.cplHeld[i], d.cplCQ[i] = c, d.cqs[r.IntN(len(d.cqs))]
			if r.IntN(100) == 0 {
				d.cplCQ[i] = uint32(r.IntN(cs.MaxCQ))
			}
		}
		if d.evHeld[i] == nil && r.Chance(d.validP) && r.IntN(10) == 0 {
			e := &cqEvent{typ: cs.EQEType(r.IntN(12)), obj: r.Uint32(), info: r.Uint32(), cause: rdmap.Cause(r.Uint32() & 0xffff)}
			d.evHeld[i] = e
		}
	}
}

// causeFields splits a cause into the record's term fields.
func causeFields(c rdmap.Cause) (layer, typ, code uint64) {
	if c == 0 {
		return 0, 0, 0
	}
	return uint64(c.Layer()), uint64(c.EType()), uint64(c.Code())
}

// Next drives one cycle's inputs.
func (d *CardCQDriver) Next(in []uint32) {
	p := &d.p
	r := d.rng
	d.cycle++
	if d.mode == CardCQRandom && d.cycle%4096 == 0 {
		pr := Pressures[r.IntN(len(Pressures))]
		d.validP, d.readyP = pr.Valid, pr.Ready
		if r.IntN(4) == 0 {
			d.irqMod = uint32(r.IntN(300))
		}
	}
	p.rst.Set(in, b2u(d.cycle <= 2))
	if d.cycle > 2 {
		d.plan()
	}
	for i, c := range d.cplHeld {
		cp := p.cpl[i]
		cp.valid.Set(in, b2u(c != nil))
		if c == nil {
			cp.cq.Set(in, uint64(r.IntN(cs.MaxCQ)))
			continue
		}
		l, t, k := causeFields(c.Cause)
		cp.cq.Set(in, uint64(d.cplCQ[i]))
		cp.qpn.Set(in, uint64(c.QPN))
		cp.wrid.Set(in, c.WRID)
		cp.blen.Set(in, uint64(c.ByteLen))
		cp.opc.Set(in, uint64(c.Op))
		cp.status.Set(in, uint64(c.Status))
		cp.inv.Set(in, uint64(c.InvSTag))
		cp.sol.Set(in, b2u(c.Solicited))
		cp.invd.Set(in, b2u(c.Invalidated))
		cp.tl.Set(in, l)
		cp.tt.Set(in, t)
		cp.tc.Set(in, k)
	}
	for i, e := range d.evHeld {
		ep := p.ev[i]
		ep.valid.Set(in, b2u(e != nil))
		if e == nil {
			continue
		}
		l, t, k := causeFields(e.cause)
		ep.typ.Set(in, uint64(e.typ))
		ep.obj.Set(in, uint64(e.obj))
		ep.info.Set(in, uint64(e.info))
		ep.tl.Set(in, l)
		ep.tt.Set(in, t)
		ep.tc.Set(in, k)
	}
	p.dbValid.Set(in, b2u(d.dbHeld != nil))
	if d.dbHeld != nil {
		p.dbIndex.Set(in, uint64(d.dbHeld[0]))
		p.dbValue.Set(in, uint64(d.dbHeld[1]))
	}
	p.cmdValid.Set(in, b2u(d.cmdHeld != nil))
	if c := d.cmdHeld; c != nil {
		p.cmdOp.Set(in, uint64(c.op))
		p.cmdNum.Set(in, uint64(c.num))
		p.cmdBaseLo.Set(in, c.base&0xffffffff)
		p.cmdBase.Set(in, c.base>>32)
		p.cmdLog.Set(in, uint64(c.log))
	} else {
		p.cmdOp.Set(in, 0)
		p.cmdNum.Set(in, 0)
		p.cmdBaseLo.Set(in, 0)
		p.cmdBase.Set(in, 0)
		p.cmdLog.Set(in, 0)
	}
	// EQ_CFG as card_regs shows it: the pulse in the write's cycle, the new
	// value from the next.
	p.eqWr.Set(in, b2u(d.eqWrAt == d.cycle))
	if d.eqWrAt != d.cycle {
		p.eqBaseLo.Set(in, d.eqBase&0xffffffff)
		p.eqBaseHi.Set(in, d.eqBase>>32)
		p.eqLog.Set(in, uint64(d.eqCfg&cs.EQCfgLogSizeMask))
		p.eqVec.Set(in, uint64(d.eqCfg>>cs.EQCfgVectorShift&cs.EQCfgVectorMask))
		p.eqEn.Set(in, uint64(d.eqCfg>>cs.EQCfgEnableShift&1))
	}
	p.eqdbValid.Set(in, b2u(d.eqdb != nil))
	if d.eqdb != nil {
		p.eqdbCI.Set(in, uint64(*d.eqdb&cs.EQDBCIMask))
		p.eqdbArm.Set(in, uint64(*d.eqdb>>cs.EQDBArmShift&1))
	} else {
		p.eqdbCI.Set(in, 0)
		p.eqdbArm.Set(in, 0)
	}
	p.irqMod.Set(in, uint64(d.irqMod))
	ready := func() uint64 { return b2u(r.Chance(d.readyP)) }
	p.irqReady.Set(in, ready())
	p.ovReady.Set(in, ready())
	p.awReady.Set(in, ready())
	p.wReady.Set(in, ready())
	p.bID.Set(in, 0)
	p.bResp.Set(in, 0)
	p.bValid.Set(in, b2u(len(d.resp) > 0 && d.resp[0] <= d.cycle))
}

// Observe takes this cycle's handshakes: operations taken go to the
// reference in the order the RTL took them (one a cycle at most).
func (d *CardCQDriver) Observe(in, out []uint32) {
	p := &d.p
	if d.cycle <= 2 {
		return
	}
	offered := !d.Idle() // an operation offered this cycle may be taken now: not idle
	for i := range d.cplHeld {
		if d.cplHeld[i] != nil && p.cpl[i].ready.Get(out) != 0 {
			res, _ := d.ref.Complete(d.cplCQ[i], *d.cplHeld[i])
			if res == cardmodel.CQOverrun {
				d.refOv = append(d.refOv, d.cplCQ[i])
			}
			d.cplHeld[i] = nil
			d.Completions++
			d.eqCfgTaken()
		}
		if d.evHeld[i] != nil && p.ev[i].ready.Get(out) != 0 {
			e := d.evHeld[i]
			d.ref.Event(e.typ, e.obj, e.info, e.cause)
			d.evHeld[i] = nil
			d.Events++
			d.eqCfgTaken()
		}
	}
	if d.dbHeld != nil && p.dbReady.Get(out) != 0 {
		d.ref.CQDoorbell(d.dbHeld[0], d.dbHeld[1])
		d.dbHeld = nil
		d.eqCfgTaken()
	}
	if c := d.cmdHeld; c != nil && p.cmdReady.Get(out) != 0 {
		if err := d.ref.CQCommand(c.num, c.base, c.log, c.op); err == nil {
			switch c.op {
			case cs.CQOpCreate:
				d.cqs = append(d.cqs, c.num)
				d.cqeN[c.num] = 0
			case cs.CQOpDestroy:
				for k, n := range d.cqs {
					if n == c.num {
						d.cqs = append(d.cqs[:k], d.cqs[k+1:]...)
						break
					}
				}
			}
		}
		d.cmdHeld = nil
		d.eqCfgTaken()
	}
	if d.eqdb != nil && p.eqdbReady.Get(out) != 0 {
		d.ref.EQDoorbell(*d.eqdb)
		d.eqdb = nil
		d.eqCfgTaken()
	}
	if d.eqWrAt == d.cycle {
		// Taken before any operation of a later cycle.
		if err := d.ref.EQConfig(d.eqBase, d.eqCfg); err == nil {
			// The RTL raises an interrupt due before with the vector it
			// has when it raises it.
			d.prevVec, d.curVec = d.curVec, int(d.eqCfg>>cs.EQCfgVectorShift&cs.EQCfgVectorMask)
			d.vectors[d.curVec] = true
			if d.eqCfg>>cs.EQCfgEnableShift&1 != 0 {
				d.eqeN = 0
			}
		}
	}
	if v, ok := d.ref.Interrupt(); ok {
		d.vectors[v] = true
		d.RefIRQs++
		d.irqSince = true
	}
	d.axi(in, out)
	if p.ovValid.Get(out) != 0 && p.ovReady.Get(in) != 0 {
		if len(d.refOv) == 0 || uint32(p.ovCQ.Get(out)) != d.refOv[0] {
			d.fail("overrun record of CQ %d, reference %v", p.ovCQ.Get(out), d.refOv)
		} else {
			d.refOv = d.refOv[1:]
			d.Overruns++
		}
	}
	if p.irqValid.Get(out) != 0 && p.irqReady.Get(in) != 0 {
		d.IRQs++
		d.rtlSince = true
		if d.IRQs > d.RefIRQs {
			d.fail("interrupt %d, the reference raised %d", d.IRQs, d.RefIRQs)
		}
		if d.lastIRQAt != 0 && d.cycle-d.lastIRQAt < uint64(d.lastMod) {
			d.fail("interrupts %d cycles apart, IRQ_MODERATION %d", d.cycle-d.lastIRQAt, d.lastMod)
		}
		d.lastIRQAt, d.lastMod = d.cycle, d.irqMod
		// The RTL takes EQ_CFG a few cycles after the reference, and an
		// interrupt held by IRQ_MODERATION or irq_ready keeps the vector
		// it was raised with: any vector configured since the last one.
		d.vectors[d.curVec], d.vectors[d.prevVec] = true, true
		if !d.vectors[int(p.irqVec.Get(out))] {
			d.fail("interrupt vector %d, want one of %v", p.irqVec.Get(out), d.vectors)
		}
		d.vectors = map[int]bool{d.curVec: true, d.prevVec: true}
	}
	if p.fault.Get(out) != 0 || p.fatal.Get(out) != 0 {
		d.fail("a DMA fault with no error response")
	}
	if d.mode == CardCQRandom && !offered && d.Idle() {
		d.idleFor++
		if d.idleFor == cqTightSettle {
			d.checkTight(out, d.cqs)
		}
	} else {
		d.idleFor = 0
	}
	if d.mode == CardCQRandom && d.quiet == 1 {
		d.quietCheck(out)
	}
}

// eqCfgTaken notes that an operation was taken after the last EQ_CFG
// pulse, so that EQ_CFG was taken too.
func (d *CardCQDriver) eqCfgTaken() {
	if d.eqWrAt != 0 && d.eqWrAt < d.cycle {
		d.eqWrAt = 0
	}
}

// quietCheck runs at the end of a quiet phase: everything written, every
// interrupt the reference raised since the last check has one.
func (d *CardCQDriver) quietCheck(out []uint32) {
	if !d.Idle() || d.idleFor < cqTightSettle {
		// Not quiet yet, or an operation was taken too recently to have
		// gone through the pipeline (one held while a CQ command waited
		// for the CQE writes in flight, say).
		d.quiet, d.settled = 200, false
		return
	}
	if !d.settled { // the last interrupt may wait for IRQ_MODERATION and irq_ready
		d.quiet, d.settled = 700, true
		return
	}
	d.settled = false
	d.Quiet++
	if d.irqSince != d.rtlSince && d.irqSince {
		d.fail("the reference raised an interrupt since the last quiet point, the RTL none")
	}
	if got, want := d.p.lost.Get(out), d.ref.EventsLost(); got != want {
		d.fail("events lost %d, reference %d", got, want)
	}
	if len(d.refOv) != 0 {
		d.fail("overrun records %v not given", d.refOv)
	}
	if d.p.cplBusy.Get(out) != 0 {
		d.fail("cpl_busy while idle")
	}
	all := make([]uint32, cs.MaxCQ)
	for n := range all {
		all[n] = uint32(n)
	}
	d.checkTight(out, all)
	d.Lost = d.ref.EventsLost()
	d.irqSince, d.rtlSince = false, false
}

// cqTightSettle is how many idle cycles (no operation held, no write
// expected) card_cq's pipeline needs to finish the operations it took
// (stages B to D and a doorbell's second cycle), after which cq_tight is
// compared with the reference.
const cqTightSettle = 8

// checkTight compares cq_tight of the CQs given with the reference: set
// for a CQ that exists with at most gen.CardCQTight entries free.
func (d *CardCQDriver) checkTight(out []uint32, cqs []uint32) {
	tight := make([]byte, cs.MaxCQ/8)
	d.p.tight.Bytes(out, tight)
	for _, n := range cqs {
		free, ok := d.ref.CQFree(n)
		want, got := ok && free <= gen.CardCQTight, tight[n/8]>>(n%8)&1 != 0
		if got != want {
			d.fail("cq_tight of CQ %d is %v, the reference has %d entries free (exists: %v)", n, got, free, ok)
		}
		d.TightChecks++
		if got {
			d.Tight++
		}
	}
}

// axi plays the AXI slave and compares each write with the reference's.
func (d *CardCQDriver) axi(in, out []uint32) {
	p := &d.p
	L := d.p.lanes
	if p.awValid.Get(out) != 0 && p.awReady.Get(in) != 0 {
		a := cqAWT{addr: p.awAddr.Get(out), beats: int(p.awLen.Get(out)) + 1, at: d.cycle}
		if 1<<p.awSize.Get(out) != L || p.awBurst.Get(out) != 1 || a.addr%uint64(L) != 0 || a.addr/4096 != (a.addr+uint64(a.beats*L)-1)/4096 {
			d.fail("burst awaddr %#x awlen %d awsize %d awburst %d", a.addr, a.beats-1, p.awSize.Get(out), p.awBurst.Get(out))
		}
		d.aws = append(d.aws, a)
	}
	if p.wValid.Get(out) != 0 && p.wReady.Get(in) != 0 {
		if len(d.aws) == 0 {
			d.fail("a W beat before its address")
			return
		}
		a := &d.aws[0]
		strb := p.wStrb.Get(out)
		data := make([]byte, L)
		p.wData.Bytes(out, data)
		base := a.addr + uint64(d.wGot*L)
		for i := 0; i < L; i++ {
			if strb>>i&1 == 0 {
				continue
			}
			if len(d.wBuf) == 0 {
				d.wAddr = base + uint64(i)
			} else if base+uint64(i) != d.wAddr+uint64(len(d.wBuf)) {
				d.fail("strobed bytes not contiguous at %#x", base+uint64(i))
			}
			d.wBuf = append(d.wBuf, data[i])
		}
		d.wGot++
		last := p.wLast.Get(out) != 0
		if last != (d.wGot == a.beats) {
			d.fail("wlast %v on beat %d of %d", last, d.wGot, a.beats)
		}
		if d.wGot == a.beats {
			d.compare(a.at)
			d.aws = d.aws[1:]
			d.wGot, d.wBuf = 0, d.wBuf[:0]
			lat := uint64(250)
			if d.mode == CardCQRandom {
				lat = uint64(d.rng.IntN(251))
			}
			d.lastResp = max(d.lastResp, d.cycle+lat)
			d.resp = append(d.resp, d.lastResp)
		}
	}
	if p.bValid.Get(in) != 0 && p.bReady.Get(out) != 0 {
		d.resp = d.resp[1:]
	}
}

func (d *CardCQDriver) compare(awAt uint64) {
	if len(d.expect) == 0 {
		d.fail("a write of %d bytes at %#x the reference did not make", len(d.wBuf), d.wAddr)
		return
	}
	e := d.expect[0]
	d.expect = d.expect[1:]
	if d.corrupt && d.Writes == 100 {
		e.w.Data[len(e.w.Data)-1] ^= 0x80 // the owner bit
	}
	if e.w.Addr != d.wAddr || !bytes.Equal(e.w.Data, d.wBuf) {
		d.fail("%v write at %#x % x, reference %v at %#x % x", kindOf(len(d.wBuf)), d.wAddr, d.wBuf, e.w.Kind, e.w.Addr, e.w.Data)
		return
	}
	d.Writes++
	if e.w.Kind == cardmodel.WriteCQE && awAt >= e.taken {
		d.Latency.add(awAt - e.taken)
	}
}

func kindOf(n int) cardmodel.WriteKind {
	if n == cs.CQESize {
		return cardmodel.WriteCQE
	}
	return cardmodel.WriteEQE
}
