package sim

import (
	"fmt"
	"math/bits"

	"github.com/openiwarp/openiwarp/golden/cycle"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// CardCQBench is the per-cycle co-simulation bench of card_cq_w<width>
// (gen.CardCQDefault) against golden/cycle's CardCQ: every output of every
// cycle compared.
func CardCQBench(width int) (*Bench, error) {
	cfg := gen.CardCQDefault(width)
	m, err := gen.CardCQ(cfg)
	if err != nil {
		return nil, err
	}
	b := NewBench(m, nil, nil)
	b.NewModel = func() (Model, error) { return newCardCQModel(b.Layout, cfg) }
	b.NewDriver = func(seed uint64) Driver {
		p, err := lookupCardCQCyclePorts(b.Layout, cfg.Sources)
		if err != nil {
			panic(err) // the model constructor reports the same error first
		}
		return newCardCQCycleDriver(p, seed)
	}
	return b, nil
}

// cardCQCyclePorts adds to the transaction-level bench's ports those it
// does not use: the events' stop flags, the fault report's fields and
// awid.
type cardCQCyclePorts struct {
	cardCQPorts
	evStop                        []Port
	faultAddr, faultQPN, faultEQE Port
	ovDMA                         Port
	outs                          map[string]bool // every output the model sets
}

func lookupCardCQCyclePorts(l Layout, sources int) (cardCQCyclePorts, error) {
	base, err := lookupCardCQPorts(l, sources)
	if err != nil {
		return cardCQCyclePorts{}, err
	}
	p := cardCQCyclePorts{cardCQPorts: base}
	s := &portSet{l: l}
	for i := 0; i < sources; i++ {
		p.evStop = append(p.evStop, s.in(fmt.Sprintf("s_ev%d_stop", i)))
	}
	p.faultAddr, p.faultQPN, p.faultEQE = s.out("m_fault_addr"), s.out("m_fault_qpn"), s.out("m_fault_eqe")
	p.ovDMA = s.out("m_overrun_dma")
	if s.err != nil {
		return p, s.err
	}
	// The model must set every output: the harness reuses its buffers.
	p.outs = map[string]bool{}
	for _, q := range append([]Port{p.dbReady, p.cmdReady, p.eqdbReady, p.irqValid, p.irqVec, p.ovValid, p.ovCQ, p.ovDMA, p.fault,
		p.faultAddr, p.faultQPN, p.faultEQE, p.fatal, p.lost, p.initDone, p.tight, p.cplBusy}, p.axiWrPorts.ports()...) {
		p.outs[q.Name] = true
	}
	for i := 0; i < sources; i++ {
		p.outs[p.cpl[i].ready.Name], p.outs[p.ev[i].ready.Name] = true, true
	}
	for _, q := range l.Outputs {
		if !p.outs[q.Name] {
			return p, fmt.Errorf("sim: card_cq output %q has no value in the cycle model's adapter", q.Name)
		}
	}
	if len(p.outs) != len(l.Outputs) || p.tight.Words != cs.MaxCQ/32 {
		return p, fmt.Errorf("sim: card_cq's outputs are not the adapter's")
	}
	// ... and the driver every input.
	ins := map[string]bool{}
	for _, q := range []Port{p.rst, p.dbValid, p.dbIndex, p.dbValue, p.cmdValid, p.cmdOp, p.cmdNum, p.cmdBaseLo, p.cmdBase,
		p.cmdLog, p.eqBaseLo, p.eqBaseHi, p.eqLog, p.eqVec, p.eqEn, p.eqWr, p.eqdbValid, p.eqdbCI, p.eqdbArm, p.irqMod,
		p.irqReady, p.ovReady, p.awReady, p.wReady, p.bID, p.bResp, p.bValid} {
		ins[q.Name] = true
	}
	for i := 0; i < sources; i++ {
		c, e := p.cpl[i], p.ev[i]
		for _, q := range []Port{c.valid, c.cq, c.qpn, c.wrid, c.blen, c.opc, c.status, c.inv, c.sol, c.invd, c.tl, c.tt, c.tc,
			e.valid, e.typ, e.obj, e.info, e.tl, e.tt, e.tc, p.evStop[i]} {
			ins[q.Name] = true
		}
	}
	for _, q := range l.Inputs {
		if !ins[q.Name] {
			return p, fmt.Errorf("sim: card_cq input %q is not driven by the cycle bench's driver", q.Name)
		}
	}
	return p, nil
}

type cardCQModel struct {
	m       *cycle.CardCQ
	p       cardCQCyclePorts
	sources int
	in      cycle.CardCQIn
	out     cycle.CardCQOut
}

func newCardCQModel(l Layout, cfg gen.CardCQConfig) (Model, error) {
	p, err := lookupCardCQCyclePorts(l, cfg.Sources)
	if err != nil {
		return nil, err
	}
	m, err := cycle.NewCardCQ(cycle.CardCQConfig{Width: cfg.Width, Sources: cfg.Sources})
	if err != nil {
		return nil, err
	}
	return &cardCQModel{m: m, p: p, sources: cfg.Sources}, nil
}

func (a *cardCQModel) Step(in, out []uint32) {
	p := &a.p
	x := &a.in
	x.Reset = p.rst.Get(in) != 0
	for i := 0; i < a.sources; i++ {
		c, e := &p.cpl[i], &p.ev[i]
		x.Cpl[i] = cycle.CardCQCpl{Valid: c.valid.Get(in) != 0, CQ: uint16(c.cq.Get(in)), QPN: uint16(c.qpn.Get(in)),
			WRID: c.wrid.Get(in), ByteLen: uint32(c.blen.Get(in)), Opcode: uint8(c.opc.Get(in)), Status: uint8(c.status.Get(in)),
			InvSTag: uint32(c.inv.Get(in)), Solicited: c.sol.Get(in) != 0, Invalidated: c.invd.Get(in) != 0,
			TermLayer: uint8(c.tl.Get(in)), TermType: uint8(c.tt.Get(in)), TermCode: uint8(c.tc.Get(in))}
		x.Ev[i] = cycle.CardCQEv{Valid: e.valid.Get(in) != 0, Type: uint8(e.typ.Get(in)), Obj: uint32(e.obj.Get(in)),
			Info: uint32(e.info.Get(in)), TermLayer: uint8(e.tl.Get(in)), TermType: uint8(e.tt.Get(in)), TermCode: uint8(e.tc.Get(in)),
			Stop: p.evStop[i].Get(in) != 0}
	}
	x.CQDBValid, x.CQDBIndex, x.CQDBValue = p.dbValid.Get(in) != 0, uint16(p.dbIndex.Get(in)), uint32(p.dbValue.Get(in))
	x.CmdValid, x.CmdOp, x.CmdNum = p.cmdValid.Get(in) != 0, uint8(p.cmdOp.Get(in)), uint16(p.cmdNum.Get(in))
	x.CmdBase, x.CmdLog = p.cmdBase.Get(in)<<32|p.cmdBaseLo.Get(in), uint8(p.cmdLog.Get(in))
	x.EQCfgWrite, x.EQBase = p.eqWr.Get(in) != 0, p.eqBaseHi.Get(in)<<32|p.eqBaseLo.Get(in)
	x.EQLog, x.EQVector, x.EQEnable = uint8(p.eqLog.Get(in)), uint8(p.eqVec.Get(in)), p.eqEn.Get(in) != 0
	x.EQDBValid, x.EQDBCI, x.EQDBArm = p.eqdbValid.Get(in) != 0, uint32(p.eqdbCI.Get(in)), p.eqdbArm.Get(in) != 0
	x.IRQModeration, x.IRQReady, x.OverrunReady = uint32(p.irqMod.Get(in)), p.irqReady.Get(in) != 0, p.ovReady.Get(in) != 0
	x.AWReady, x.WReady = p.awReady.Get(in) != 0, p.wReady.Get(in) != 0
	x.BValid, x.BResp = p.bValid.Get(in) != 0, uint8(p.bResp.Get(in))
	o := &a.out
	a.m.Step(x, o)
	for i := 0; i < a.sources; i++ {
		p.cpl[i].ready.Set(out, b2u(o.CplReady[i]))
		p.ev[i].ready.Set(out, b2u(o.EvReady[i]))
	}
	p.dbReady.Set(out, b2u(o.CQDBReady))
	p.cmdReady.Set(out, b2u(o.CmdReady))
	p.eqdbReady.Set(out, b2u(o.EQDBReady))
	p.irqValid.Set(out, b2u(o.IRQValid))
	p.irqVec.Set(out, uint64(o.IRQVector))
	p.ovValid.Set(out, b2u(o.OverrunValid))
	p.ovCQ.Set(out, uint64(o.OverrunCQ))
	p.ovDMA.Set(out, b2u(o.OverrunDMA))
	p.fault.Set(out, b2u(o.FaultValid))
	p.faultAddr.Set(out, o.FaultAddr)
	p.faultQPN.Set(out, uint64(o.FaultQPN))
	p.faultEQE.Set(out, b2u(o.FaultEQE))
	p.fatal.Set(out, b2u(o.Fatal))
	p.lost.Set(out, uint64(o.EventsLost))
	p.initDone.Set(out, b2u(o.InitDone))
	for k := 0; k < p.tight.Words; k++ {
		out[p.tight.Offset+k] = uint32(o.Tight[k/2] >> (32 * (k % 2)))
	}
	p.cplBusy.Set(out, b2u(o.CplBusy))
	p.axiWrPorts.set(out, &o.AXIWr)
}

// The per-cycle driver's address map: CQ n's ring at cqBase(n) (2 MiB
// apart, room for 2^16 entries), the EQ at cqCycleEQ.
const (
	cqCycleEQ    = 0x80_0000_0000
	cqCycleQuiet = 600 // cycles of a quiet phase
)

// cqCyclePool is the CQ numbers the driver uses (both ends of the range).
var cqCyclePool = []uint16{0, 1, 2, 3, 7, 512, 1023}

// cqShadow is what the driver believes of a CQ: enough to ring doorbells
// near its PI.
type cqShadow struct {
	exists bool
	err    bool // a faulted CQE put it in error: the driver destroys it soon
	log    uint8
	pi     uint32 // CQEs whose address was taken since it was created
}

type cqCycleResp struct {
	due  uint64
	resp uint8
}

// cardCQCycleDriver drives every input of card_cq every cycle: completions
// on both engines' ports (CQs of 1 to 128 entries, now and then larger,
// now and then a CQ that does not exist; random fields, error statuses,
// solicited ones), events on both ports (every type, TERM_* causes, rare
// stopping ones), CQ commands (CREATE, DESTROY and refused ones of every
// kind), CQ doorbells near the CQ's PI (arming, solicited-only arming, far
// or past PI now and then, stray bits, CQs that do not exist), EQ_CFG
// writes (small EQs that fill, disabled and refused ones) and EQ doorbells
// (arming), periods in which both ports offer a completion every cycle on
// two CQs, IRQ_MODERATION from 0 to thousands of cycles, irq_ready and
// m_overrun_ready with random and long stalls, and an AXI slave with random
// AW and W readiness that answers each write after 0 to 250 cycles, with
// SLVERR/DECERR now and then (a CQE's: its CQ goes to error and the
// driver destroys it soon; an EQE's: the card stops). A stopped card is reset
// after a while; resets also come at random. Quiet phases let queues
// drain.
type cardCQCycleDriver struct {
	p     cardCQCyclePorts
	rng   Rand
	cycle uint64

	resetLeft int
	initLeft  int // cycles until the contexts are cleared (no point offering before)
	validP    int
	readyP    int
	quiet     int
	flood     bool // this period: completions every cycle on both ports, on two CQs
	irqMod    uint64
	irqStall  int // cycles irq_ready stays low
	ovStall   int // cycles m_overrun_ready stays low
	fatalFor  int // cycles the card has been stopped
	eqFault   int // 1 in eqFault EQE responses is an error (0: none in this period)
	cqFault   int

	cqs    map[uint16]*cqShadow
	cpl    []*cycle.CardCQCpl
	ev     []*cycle.CardCQEv
	cqdb   *[2]uint32
	cmd    *cycle.CardCQIn // CmdOp, CmdNum, CmdBase, CmdLog
	noCmd  cycle.CardCQIn  // what the command inputs show when none is offered
	eqdb   *[2]uint32
	eqPend bool // EQ_CFG written this cycle: the new value shows from the next
	eqNext cycle.CardCQIn
	eqCur  cycle.CardCQIn // EQBase, EQLog, EQVector, EQEnable as driven
	eqPI   uint32         // EQEs addressed since the last enabling write

	// The interrupt's window: from irq_valid's rise to the end of the
	// IRQ_MODERATION after its take.
	longMod bool   // IRQ_MODERATION of 2,000 to 20,000 cycles, EQs of 512 to 4096 entries, no arming inside a window
	irqUp   bool   // irq_valid was high and not taken last cycle
	modEnd  uint64 // first cycle moderation no longer holds an interrupt

	awAddr []uint64 // addressed bursts, W not complete
	beat   []byte   // a W beat's bytes
	wGot   int
	resp   []cqCycleResp
	last   uint64 // due cycle of the last response queued (in order)
	lost   uint64

	// Counts for the test.
	Completions, Events, CQDoorbells, Commands, EQConfigs, EQDoorbells uint64
	CQEs, EQEs, Overruns, Lost, IRQs, CQEFaults, EQEFaults, Stops      uint64
	Resets, AWStalls, WStalls, OverrunStalls, IRQStalls                uint64
	NotifyArms, Notifies, OverrunEQEs, TightSeen, BusyCycles           uint64
	DMAOverruns                                                        uint64
}

func newCardCQCycleDriver(p cardCQCyclePorts, seed uint64) *cardCQCycleDriver {
	n := len(p.cpl)
	return &cardCQCycleDriver{p: p, rng: NewRand(seed), resetLeft: 2, validP: 256, readyP: 256, cqs: map[uint16]*cqShadow{},
		cpl: make([]*cycle.CardCQCpl, n), ev: make([]*cycle.CardCQEv, n), cqFault: 400, beat: make([]byte, p.lanes)}
}

func cqCycleBase(n uint16) uint64 { return cqBase(uint32(n)) }

// cqOfAddr is the pool CQ whose ring holds addr, if any.
func cqOfAddr(addr uint64) (uint16, bool) {
	if addr < cqBase(0) || addr >= cqBase(cs.MaxCQ) {
		return 0, false
	}
	return uint16((addr - cqBase(0)) >> 21), true
}

func (d *cardCQCycleDriver) someCQ() uint16 {
	if d.rng.IntN(60) == 0 {
		return uint16(d.rng.IntN(cs.MaxCQ))
	}
	return cqCyclePool[d.rng.IntN(len(cqCyclePool))]
}

// plan offers new operations (each held until taken).
func (d *cardCQCycleDriver) plan() {
	r := d.rng
	if d.quiet > 0 {
		d.quiet--
		return
	}
	if r.IntN(4000) == 0 {
		d.quiet = cqCycleQuiet
		return
	}
	if d.cmd == nil && r.IntN(30) == 0 {
		for _, n := range cqCyclePool {
			if q := d.cqs[n]; q != nil && q.err {
				d.cmd = &cycle.CardCQIn{CmdOp: uint8(cs.CQOpDestroy), CmdNum: n}
				break
			}
		}
	}
	if d.cmd == nil && (len(d.cqs) == 0 || r.IntN(250) == 0) {
		n := cqCyclePool[r.IntN(len(cqCyclePool))]
		c := &cycle.CardCQIn{CmdOp: uint8(cs.CQOpCreate), CmdNum: n, CmdLog: uint8(r.IntN(8)), CmdBase: cqCycleBase(n)}
		if q := d.cqs[n]; q != nil && q.exists && r.IntN(3) != 0 {
			c.CmdOp = uint8(cs.CQOpDestroy)
		}
		if r.IntN(15) == 0 {
			c.CmdLog = uint8(8 + r.IntN(9)) // up to 2^16 entries
		}
		switch r.IntN(30) {
		case 0:
			c.CmdNum += uint16(1+r.IntN(63)) << 10 // CQ_NUM out of range
		case 1:
			c.CmdLog = uint8(17 + r.IntN(15))
		case 2:
			c.CmdBase += 16 << r.IntN(int(c.CmdLog)+2) // misaligned
		case 3:
			c.CmdOp = uint8(r.IntN(16))
		}
		d.cmd = c
	}
	if !d.eqPend && (r.IntN(2000) == 0 || d.eqCur.EQLog == 0 && !d.eqCur.EQEnable && r.IntN(50) == 0) {
		e := cycle.CardCQIn{EQBase: cqCycleEQ + uint64(r.IntN(16))<<20, EQLog: uint8(r.IntN(7)), EQVector: uint8(r.Uint32()), EQEnable: r.IntN(8) != 0}
		if d.longMod {
			e.EQLog, e.EQEnable = uint8(9+r.IntN(4)), true // room for the EQEs of a window
		}
		switch r.IntN(12) {
		case 0:
			e.EQBase += 16 << r.IntN(int(e.EQLog)+1)
		case 1:
			e.EQLog = uint8(17 + r.IntN(15))
		case 2:
			e.EQLog = uint8(7 + r.IntN(10))
		}
		d.eqNext, d.eqPend = e, true
	}
	if d.eqdb == nil && r.IntN(50) == 0 {
		ci := (d.eqPI - uint32(r.IntN(3))) & cs.EQDBCIMask
		if r.IntN(20) == 0 {
			ci = r.Uint32() & cs.EQDBCIMask
		}
		arm := uint32(r.IntN(2))
		if d.longMod && (d.irqUp || d.cycle < d.modEnd) {
			arm = 0 // as a host driver does: it arms again once it had the interrupt
		}
		d.eqdb = &[2]uint32{ci, arm}
	}
	if d.cqdb == nil && (r.IntN(10) == 0 || d.flood && r.IntN(3) == 0) {
		n := d.someCQ()
		if d.flood {
			n = cqCyclePool[r.IntN(2)]
		}
		var pi uint32
		if q := d.cqs[n]; q != nil {
			pi = q.pi
		}
		lag := uint32(r.IntN(3))
		switch r.IntN(8) {
		case 0:
			lag = uint32(r.IntN(160)) // a consumer far behind
		case 1:
			lag = -uint32(1 + r.IntN(4)) // CI past PI
		}
		v := (pi - lag) & cs.CQDBCICIMask
		switch r.IntN(4) {
		case 0:
			v |= 1 << cs.CQDBCIArmShift
		case 1:
			v |= 1<<cs.CQDBCIArmShift | 1<<cs.CQDBCIArmSolicitedShift
		}
		if r.IntN(20) == 0 {
			v |= uint32(r.IntN(64)) << 24 // bits no one reads
		}
		d.cqdb = &[2]uint32{uint32(n), v}
	}
	for i := range d.cpl {
		if d.cpl[i] == nil && (d.flood || r.Chance(d.validP) && r.IntN(3) == 0) {
			cq := d.someCQ()
			if d.flood {
				cq = cqCyclePool[r.IntN(2)]
			}
			c := &cycle.CardCQCpl{Valid: true, CQ: cq, QPN: uint16(r.Uint32()), WRID: r.Uint64(), ByteLen: r.Uint32(),
				Opcode: uint8(r.IntN(8)), InvSTag: r.Uint32(), Solicited: r.IntN(4) == 0, Invalidated: r.IntN(4) == 0}
			if r.IntN(8) == 0 {
				c.Status = uint8(1 + r.IntN(255))
				c.TermLayer, c.TermType, c.TermCode = uint8(r.IntN(16)), uint8(r.IntN(16)), uint8(r.Uint32())
			}
			d.cpl[i] = c
		}
		if d.ev[i] == nil && r.Chance(d.validP) && r.IntN(12) == 0 {
			e := &cycle.CardCQEv{Valid: true, Type: uint8(r.IntN(12)), Obj: r.Uint32(), Info: r.Uint32(),
				TermLayer: uint8(r.IntN(16)), TermType: uint8(r.IntN(16)), TermCode: uint8(r.Uint32())}
			if r.IntN(256) == 0 {
				e.Type = uint8(r.Uint32())
			}
			e.Stop = r.IntN(6000) == 0
			d.ev[i] = e
		}
	}
}

func (d *cardCQCycleDriver) Next(in []uint32) {
	p := &d.p
	r := d.rng
	d.cycle++
	if d.cycle%4096 == 0 {
		pr := Pressures[r.IntN(len(Pressures))]
		d.validP, d.readyP = pr.Valid, pr.Ready
		switch r.IntN(6) {
		case 0, 1:
			d.irqMod = 0
		case 2, 3:
			d.irqMod = uint64(r.IntN(300))
		case 4:
			d.irqMod = uint64(r.IntN(5000))
		default:
			d.irqMod = uint64(r.Uint32()&^(1<<24-1)) | uint64(r.IntN(300)) // bits 31:24 driven, not read
		}
		if d.longMod {
			d.irqMod = uint64(2000 + r.IntN(18000))
		}
		d.eqFault = []int{0, 0, 3000, 400}[r.IntN(4)]
		d.cqFault = []int{0, 400, 60}[r.IntN(3)]
		d.flood = r.IntN(6) == 0
	}
	if d.resetLeft == 0 && (r.Uint32()%300000 == 0 || d.fatalFor > 3000) {
		d.resetLeft = 1 + r.IntN(3)
	}
	rst := d.resetLeft > 0
	p.rst.Set(in, b2u(rst))
	if rst {
		d.resetLeft--
		d.clearAll()
		d.initLeft = cycle.CardCQClearCycles + 1
	} else if d.initLeft > 0 {
		d.initLeft--
	} else {
		d.plan()
	}

	// Every input, every cycle.
	for i, c := range d.cpl {
		cp := &p.cpl[i]
		var x cycle.CardCQCpl
		if c != nil {
			x = *c
		} else { // not offered: random fields the block must ignore
			x = cycle.CardCQCpl{CQ: uint16(r.IntN(cs.MaxCQ)), QPN: uint16(r.Uint32()), WRID: r.Uint64(), Status: uint8(r.Uint32())}
		}
		cp.valid.Set(in, b2u(c != nil))
		cp.cq.Set(in, uint64(x.CQ))
		cp.qpn.Set(in, uint64(x.QPN))
		cp.wrid.Set(in, x.WRID)
		cp.blen.Set(in, uint64(x.ByteLen))
		cp.opc.Set(in, uint64(x.Opcode))
		cp.status.Set(in, uint64(x.Status))
		cp.inv.Set(in, uint64(x.InvSTag))
		cp.sol.Set(in, b2u(x.Solicited))
		cp.invd.Set(in, b2u(x.Invalidated))
		cp.tl.Set(in, uint64(x.TermLayer))
		cp.tt.Set(in, uint64(x.TermType))
		cp.tc.Set(in, uint64(x.TermCode))
	}
	for i, e := range d.ev {
		ep := &p.ev[i]
		var x cycle.CardCQEv
		if e != nil {
			x = *e
		} else {
			x = cycle.CardCQEv{Type: uint8(r.Uint32()), Obj: r.Uint32(), Stop: r.IntN(2) == 0}
		}
		ep.valid.Set(in, b2u(e != nil))
		ep.typ.Set(in, uint64(x.Type))
		ep.obj.Set(in, uint64(x.Obj))
		ep.info.Set(in, uint64(x.Info))
		ep.tl.Set(in, uint64(x.TermLayer))
		ep.tt.Set(in, uint64(x.TermType))
		ep.tc.Set(in, uint64(x.TermCode))
		p.evStop[i].Set(in, b2u(x.Stop))
	}
	p.dbValid.Set(in, b2u(d.cqdb != nil))
	if d.cqdb != nil {
		p.dbIndex.Set(in, uint64(d.cqdb[0]))
		p.dbValue.Set(in, uint64(d.cqdb[1]))
	} else {
		p.dbIndex.Set(in, uint64(r.IntN(cs.MaxCQ)))
		p.dbValue.Set(in, uint64(r.Uint32()))
	}
	p.cmdValid.Set(in, b2u(d.cmd != nil))
	c := &d.noCmd
	if d.cmd != nil {
		c = d.cmd
	} else {
		c.CmdOp, c.CmdNum, c.CmdBase, c.CmdLog = 1, uint16(r.IntN(cs.MaxCQ)), r.Uint64(), uint8(r.IntN(32))
	}
	p.cmdOp.Set(in, uint64(c.CmdOp))
	p.cmdNum.Set(in, uint64(c.CmdNum))
	p.cmdBaseLo.Set(in, c.CmdBase&0xffffffff)
	p.cmdBase.Set(in, c.CmdBase>>32)
	p.cmdLog.Set(in, uint64(c.CmdLog))
	// EQ_CFG as card_regs shows it: the pulse in the write's cycle, the new
	// value from the next.
	pulse := d.eqPend && !rst
	p.eqWr.Set(in, b2u(pulse))
	p.eqBaseLo.Set(in, d.eqCur.EQBase&0xffffffff)
	p.eqBaseHi.Set(in, d.eqCur.EQBase>>32)
	p.eqLog.Set(in, uint64(d.eqCur.EQLog))
	p.eqVec.Set(in, uint64(d.eqCur.EQVector))
	p.eqEn.Set(in, b2u(d.eqCur.EQEnable))
	if pulse {
		d.eqCur, d.eqPend = d.eqNext, false
		d.EQConfigs++
		if d.eqCur.EQEnable {
			d.eqPI = 0
		}
	}
	p.eqdbValid.Set(in, b2u(d.eqdb != nil))
	if d.eqdb != nil {
		p.eqdbCI.Set(in, uint64(d.eqdb[0]))
		p.eqdbArm.Set(in, uint64(d.eqdb[1]))
	} else {
		p.eqdbCI.Set(in, uint64(r.Uint32()&cs.EQDBCIMask))
		p.eqdbArm.Set(in, uint64(r.IntN(2)))
	}
	p.irqMod.Set(in, d.irqMod)
	// irq_ready and m_overrun_ready: random, with long stalls now and then
	// (an interrupt controller's latency; the top's sweep of an overrun CQ).
	if d.irqStall == 0 && r.IntN(3000) == 0 {
		d.irqStall = r.IntN(3000)
	}
	if d.ovStall == 0 && r.IntN(3000) == 0 {
		d.ovStall = r.IntN(2500)
	}
	irqReady := d.irqStall == 0 && r.Chance(d.readyP)
	ovReady := d.ovStall == 0 && r.Chance(d.readyP)
	d.irqStall, d.ovStall = max(d.irqStall-1, 0), max(d.ovStall-1, 0)
	p.irqReady.Set(in, b2u(irqReady))
	p.ovReady.Set(in, b2u(ovReady))
	p.awReady.Set(in, b2u(r.Chance(d.readyP)))
	p.wReady.Set(in, b2u(r.Chance(d.readyP)))
	if len(d.resp) > 0 && d.resp[0].due <= d.cycle {
		p.bValid.Set(in, 1)
		p.bResp.Set(in, uint64(d.resp[0].resp))
		p.bID.Set(in, 0)
	} else {
		p.bValid.Set(in, 0)
		p.bResp.Set(in, uint64(r.IntN(4)))
		p.bID.Set(in, uint64(r.IntN(16)))
	}
}

// clearAll forgets everything at a reset (the AXI slave is reset too).
func (d *cardCQCycleDriver) clearAll() {
	clear(d.cqs)
	clear(d.cpl)
	clear(d.ev)
	d.cqdb, d.cmd, d.eqdb, d.eqPend = nil, nil, nil, false
	d.eqCur, d.eqPI = cycle.CardCQIn{}, 0
	d.awAddr, d.wGot, d.resp, d.last = d.awAddr[:0], 0, d.resp[:0], 0
	d.fatalFor, d.lost = 0, 0
}

func (d *cardCQCycleDriver) Observe(in, out []uint32) {
	p := &d.p
	if p.rst.Get(in) != 0 {
		d.Resets++
		return
	}
	r := d.rng
	for i := range d.cpl {
		if d.cpl[i] != nil && p.cpl[i].ready.Get(out) != 0 {
			d.cpl[i] = nil
			d.Completions++
		}
		if e := d.ev[i]; e != nil && p.ev[i].ready.Get(out) != 0 {
			if e.Stop {
				d.Stops++
			}
			d.ev[i] = nil
			d.Events++
		}
	}
	if d.cqdb != nil && p.dbReady.Get(out) != 0 {
		if d.cqdb[1]>>cs.CQDBCIArmShift&1 != 0 {
			d.NotifyArms++
		}
		d.cqdb = nil
		d.CQDoorbells++
	}
	if c := d.cmd; c != nil && p.cmdReady.Get(out) != 0 {
		d.command(c)
		d.cmd = nil
		d.Commands++
	}
	if d.eqdb != nil && p.eqdbReady.Get(out) != 0 {
		d.eqdb = nil
		d.EQDoorbells++
	}
	if p.ovValid.Get(out) != 0 {
		if p.ovReady.Get(in) != 0 {
			d.Overruns++
			if p.ovDMA.Get(out) != 0 {
				d.DMAOverruns++
			}
		} else {
			d.OverrunStalls++
		}
	}
	d.irqUp = false
	if p.irqValid.Get(out) != 0 {
		if p.irqReady.Get(in) != 0 {
			d.IRQs++
			d.modEnd = d.cycle + p.irqMod.Get(in)&(1<<24-1) + 1
		} else {
			d.IRQStalls++
			d.irqUp = true
		}
	}
	if p.fault.Get(out) != 0 {
		if p.faultEQE.Get(out) != 0 {
			d.EQEFaults++
		} else {
			d.CQEFaults++
			if n, ok := cqOfAddr(p.faultAddr.Get(out)); ok && d.cqs[n] != nil {
				d.cqs[n].err = true
			}
		}
	}
	if p.fatal.Get(out) != 0 {
		d.fatalFor++
	}
	if l := p.lost.Get(out); l != d.lost {
		d.Lost += (l - d.lost) & 0xffffffff
		d.lost = l
	}
	if p.cplBusy.Get(out) != 0 {
		d.BusyCycles++
	}
	if out[p.tight.Offset] != 0 || out[p.tight.Offset+p.tight.Words-1] != 0 {
		d.TightSeen++
	}

	// The AXI slave.
	if p.awValid.Get(out) != 0 {
		if p.awReady.Get(in) == 0 {
			d.AWStalls++
		} else {
			addr := p.awAddr.Get(out)
			d.awAddr = append(d.awAddr, addr)
			if addr >= cqCycleEQ {
				d.EQEs++
				d.eqPI++
			} else {
				d.CQEs++
				if n, ok := cqOfAddr(addr); ok && d.cqs[n] != nil {
					d.cqs[n].pi++
				}
			}
		}
	}
	if p.wValid.Get(out) != 0 {
		if p.wReady.Get(in) == 0 {
			d.WStalls++
		} else if len(d.awAddr) > 0 {
			eqe := d.awAddr[0] >= cqCycleEQ
			if eqe && d.wGot == 0 { // the EQE's TYPE is its first byte, in its first strobed lane
				p.wData.Bytes(out, d.beat)
				switch cs.EQEType(d.beat[bits.TrailingZeros64(p.wStrb.Get(out))%len(d.beat)]) {
				case cs.EQETypeCQNotify:
					d.Notifies++
				case cs.EQETypeCQOverrun:
					d.OverrunEQEs++
				}
			}
			d.wGot++
			if p.wLast.Get(out) != 0 {
				d.awAddr, d.wGot = d.awAddr[1:], 0
				rp := cqCycleResp{due: max(d.last, d.cycle+uint64(r.IntN(251)))}
				if r.IntN(8) == 0 {
					rp.due = d.cycle // at once
				}
				rp.due = max(rp.due, d.last)
				f := d.cqFault
				if eqe {
					f = d.eqFault
				}
				if f > 0 && r.IntN(f) == 0 {
					rp.resp = uint8(2 + r.IntN(2))
				} else if r.IntN(4) == 0 {
					rp.resp = 1 // EXOKAY: not an error
				}
				d.last = rp.due
				d.resp = append(d.resp, rp)
			}
		}
	}
	if p.bValid.Get(in) != 0 && p.bReady.Get(out) != 0 {
		d.resp = d.resp[1:]
	}
}

// command mirrors card_cq's decision of a CQ command in the shadow.
func (d *cardCQCycleDriver) command(c *cycle.CardCQIn) {
	if c.CmdNum >= cs.MaxCQ {
		return
	}
	q := d.cqs[c.CmdNum]
	switch cs.CQOp(c.CmdOp & 15) {
	case cs.CQOpCreate:
		if q != nil && q.exists || c.CmdLog&31 > cs.MaxQueueLog || c.CmdBase%(32<<(c.CmdLog&31)) != 0 {
			return
		}
		d.cqs[c.CmdNum] = &cqShadow{exists: true, log: c.CmdLog}
	case cs.CQOpDestroy:
		delete(d.cqs, c.CmdNum)
	}
}
