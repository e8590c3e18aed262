package sim

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/cycle"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// CardRegsBench is the co-simulation bench of card_regs_w<width>.
func CardRegsBench(width int) (*Bench, error) {
	m, err := gen.CardRegs(width)
	if err != nil {
		return nil, err
	}
	b := NewBench(m, nil, nil)
	b.NewModel = func() (Model, error) { return newCardRegsModel(b.Layout, width) }
	b.NewDriver = func(seed uint64) Driver { return newCardRegsDriver(b.Layout, seed) }
	return b, nil
}

// fieldPort is a register field's port and where its bits sit.
type fieldPort struct {
	p      Port
	lo     int
	mask   uint32
	offset uint32
}

type cardRegsPorts struct {
	rst, awaddr, awvalid, awready, wdata, wstrb, wvalid, wready, bresp, bvalid, bready Port
	araddr, arvalid, arready, rdata, rresp, rvalid, rready                             Port
	staged                                                                             []fieldPort
	strobes                                                                            []fieldPort // write strobes of Strobe registers
	status                                                                             []fieldPort // inputs
	cmdValid, cmdReady                                                                 [4]Port
	cmdFields                                                                          [4][]fieldPort
	regWrValid, regWrAddr, regWrData                                                   Port
	dbValid, dbReady, dbKind, dbIndex, dbValue, dbPushOK, dbPush                       Port
}

func lookupCardRegsPorts(l Layout) (cardRegsPorts, error) {
	var p cardRegsPorts
	var err error
	get := func(dst *Port, name string, in bool) { l.lookup(dst, name, in, &err) }
	get(&p.rst, "rst", true)
	for _, x := range []struct {
		dst  *Port
		name string
		in   bool
	}{{&p.awaddr, "awaddr", true}, {&p.awvalid, "awvalid", true}, {&p.awready, "awready", false},
		{&p.wdata, "wdata", true}, {&p.wstrb, "wstrb", true}, {&p.wvalid, "wvalid", true}, {&p.wready, "wready", false},
		{&p.bresp, "bresp", false}, {&p.bvalid, "bvalid", false}, {&p.bready, "bready", true},
		{&p.araddr, "araddr", true}, {&p.arvalid, "arvalid", true}, {&p.arready, "arready", false},
		{&p.rdata, "rdata", false}, {&p.rresp, "rresp", false}, {&p.rvalid, "rvalid", false}, {&p.rready, "rready", true}} {
		get(x.dst, "s_axil_"+x.name, x.in)
	}
	get(&p.regWrValid, "reg_wr_valid", false)
	get(&p.regWrAddr, "reg_wr_addr", false)
	get(&p.regWrData, "reg_wr_data", false)
	get(&p.dbValid, "m_db_valid", false)
	get(&p.dbReady, "m_db_ready", true)
	get(&p.dbKind, "m_db_kind", false)
	get(&p.dbIndex, "m_db_index", false)
	get(&p.dbValue, "m_db_value", false)
	get(&p.dbPushOK, "m_db_push_ok", false)
	get(&p.dbPush, "m_db_push_data", false)
	if err != nil {
		return p, err
	}
	cmdIndex := map[uint32]int{}
	for i, c := range cycle.CardCommands {
		cmdIndex[c] = i
	}
	for _, r := range gen.CardRegMap().Regs {
		var fs []fieldPort
		for _, f := range regFieldsOf(r) {
			name, lo, w := gen.CardRegPort(r, nil), 0, 32
			if f != nil {
				name, lo, w = gen.CardRegPort(r, f), f.Lo, f.Width
			}
			var port Port
			if r.ReadOnly {
				port, err = l.In(name)
				if err != nil {
					continue // a constant register has no port
				}
			} else if r.Command && f == nil {
				continue
			} else if port, err = l.Out(name); err != nil {
				return p, err
			}
			fs = append(fs, fieldPort{p: port, lo: lo, mask: uint32(uint64(1)<<w - 1), offset: r.Offset})
		}
		err = nil
		switch {
		case r.ReadOnly:
			p.status = append(p.status, fs...)
		case r.Command:
			i, ok := cmdIndex[r.Offset]
			if !ok {
				return p, fmt.Errorf("sim: card_regs: command %s unknown to the model", r.Name)
			}
			p.cmdFields[i] = fs
			get(&p.cmdValid[i], gen.CardRegPort(r, nil)+"_valid", false)
			get(&p.cmdReady[i], gen.CardRegPort(r, nil)+"_ready", true)
		default:
			p.staged = append(p.staged, fs...)
			if r.Strobe {
				var sp Port
				get(&sp, gen.CardRegPort(r, nil)+"_wr_pulse", false)
				p.strobes = append(p.strobes, fieldPort{p: sp, offset: r.Offset})
			}
		}
	}
	return p, err
}

func regFieldsOf(r gen.Reg) []*gen.RegField {
	if len(r.Fields) == 0 {
		return []*gen.RegField{nil}
	}
	fs := make([]*gen.RegField, len(r.Fields))
	for i := range r.Fields {
		fs[i] = &r.Fields[i]
	}
	return fs
}

type cardRegsModel struct {
	m   *cycle.CardRegs
	p   cardRegsPorts
	in  cycle.CardRegsIn
	out cycle.CardRegsOut
}

func newCardRegsModel(l Layout, width int) (Model, error) {
	m, err := cycle.NewCardRegs(width)
	if err != nil {
		return nil, err
	}
	p, err := lookupCardRegsPorts(l)
	if err != nil {
		return nil, err
	}
	return &cardRegsModel{m: m, p: p}, nil
}

func (a *cardRegsModel) Step(in, out []uint32) {
	p := &a.p
	x := &a.in
	*x = cycle.CardRegsIn{
		Reset:  p.rst.Get(in) != 0,
		AWAddr: uint32(p.awaddr.Get(in)), AWValid: p.awvalid.Get(in) != 0,
		WData: uint32(p.wdata.Get(in)), WStrb: uint8(p.wstrb.Get(in)), WValid: p.wvalid.Get(in) != 0,
		BReady: p.bready.Get(in) != 0,
		ARAddr: uint32(p.araddr.Get(in)), ARValid: p.arvalid.Get(in) != 0, RReady: p.rready.Get(in) != 0,
		DBReady: p.dbReady.Get(in) != 0,
	}
	for _, f := range p.status {
		v := (uint32(f.p.Get(in)) & f.mask) << f.lo
		switch f.offset {
		case cs.Status:
			x.Status |= v
		case cs.DMAFaultAddrLo:
			x.FaultAddrLo |= v
		case cs.DMAFaultAddrHi:
			x.FaultAddrHi |= v
		case cs.DMAFaultInfo:
			x.FaultInfo |= v
		case cs.CmdStatus:
			x.CmdStatus |= v
		}
	}
	for i := range p.cmdReady {
		x.CmdReady[i] = p.cmdReady[i].Get(in) != 0
	}
	for _, f := range p.staged { // the registers as they are before this cycle's edge
		f.p.Set(out, uint64(a.m.Staged(f.offset)>>f.lo&f.mask))
	}
	o := &a.out
	a.m.Step(x, o)
	p.awready.Set(out, b2u(o.AWReady))
	p.wready.Set(out, b2u(o.WReady))
	p.bresp.Set(out, uint64(o.BResp))
	p.bvalid.Set(out, b2u(o.BValid))
	p.arready.Set(out, b2u(o.ARReady))
	p.rdata.Set(out, uint64(o.RData))
	p.rresp.Set(out, cycle.AXIOkay)
	p.rvalid.Set(out, b2u(o.RValid))
	for i := range p.cmdValid {
		p.cmdValid[i].Set(out, b2u(o.CmdValid[i]))
		for _, f := range p.cmdFields[i] {
			f.p.Set(out, uint64(o.CmdValue[i]>>f.lo&f.mask))
		}
	}
	p.regWrValid.Set(out, b2u(o.RegWrValid))
	p.regWrAddr.Set(out, uint64(o.RegWrAddr))
	p.regWrData.Set(out, uint64(o.RegWrData))
	for _, f := range p.strobes {
		f.p.Set(out, b2u(o.StagedWr && o.StagedOff == f.offset))
	}
	p.dbValid.Set(out, b2u(o.DBValid))
	p.dbKind.Set(out, uint64(o.DB.Kind))
	p.dbIndex.Set(out, uint64(o.DB.Index))
	p.dbValue.Set(out, uint64(o.DB.Value))
	p.dbPushOK.Set(out, b2u(o.DB.PushOK))
	p.dbPush.SetBytes(out, o.Push[:])
}

// cardWrite is one AXI4-Lite write the driver issues.
type cardWrite struct {
	addr, data uint32
	strb       uint8
}

// cardRegsDriver issues random AXI4-Lite traffic: writes and reads to every
// kind of address (staging, read-only, commands, the placement window,
// doorbells of random CQs and QPs, push windows written in order, broken by
// another QP's push, out of order or with partial words, unmapped
// addresses), AW and W raised independently and each held until taken,
// random B/R/command/doorbell backpressure, changing status inputs, and
// rare resets.
type cardRegsDriver struct {
	p         cardRegsPorts
	rng       Rand
	plan      []cardWrite // writes still to issue, in order
	awHeld    bool        // awvalid is up with plan[0]
	wHeld     bool
	reads     []uint32
	arHeld    bool
	readyP    int
	validP    int
	cycle     uint64
	resetLeft int
	status    [8]uint64
	regOffs   []uint32 // offsets of the plain registers
}

func newCardRegsDriver(l Layout, seed uint64) Driver {
	p, err := lookupCardRegsPorts(l)
	if err != nil {
		panic(err) // the model constructor reports the same error first
	}
	d := &cardRegsDriver{p: p, rng: NewRand(seed), resetLeft: 2, readyP: 256, validP: 256}
	for _, r := range gen.CardRegMap().Regs {
		d.regOffs = append(d.regOffs, r.Offset)
	}
	return d
}

// someAddr picks an address of a random kind.
func (d *cardRegsDriver) someAddr() uint32 {
	r := d.rng
	switch k := r.IntN(16); {
	case k < 5:
		return d.regOffs[r.IntN(len(d.regOffs))]
	case k < 7:
		return cs.PlacementWindow + uint32(r.IntN(256))&^3
	case k < 9:
		return cs.CQDBBase + uint32(r.IntN(cs.MaxCQ))*cs.CQDBStride + uint32(r.IntN(2))*4
	case k < 13:
		return cs.QPDBBase + uint32(r.IntN(cs.MaxQP))*cs.QPDBStride + uint32(r.IntN(cs.QPDBStride/4))*4
	default:
		return uint32(r.IntN(1<<cs.AddrBits)) &^ 3
	}
}

func (d *cardRegsDriver) strb() uint8 {
	if d.rng.Chance(16) {
		return uint8(d.rng.IntN(16))
	}
	return 0xF
}

// planWrites queues a burst of writes.
func (d *cardRegsDriver) planWrites() {
	r := d.rng
	push := func(qp uint32, words []int) {
		for _, w := range words {
			st := uint8(0xF)
			if r.Chance(2) {
				st = uint8(r.IntN(15))
			}
			d.plan = append(d.plan, cardWrite{cs.QPDBBase + qp*cs.QPDBStride + cs.QPDBPush + uint32(w)*4, r.Uint32(), st})
		}
	}
	inOrder := func() []int {
		w := make([]int, cs.BB/4)
		for i := range w {
			w[i] = i
		}
		return w
	}
	switch k := r.IntN(8); {
	case k < 3: // a push, sometimes disturbed
		qp := uint32(r.IntN(cs.MaxQP))
		w := inOrder()
		switch r.IntN(6) {
		case 0: // out of order
			i, j := r.IntN(len(w)), r.IntN(len(w))
			w[i], w[j] = w[j], w[i]
		case 1: // interleaved with another QP's push
			other := uint32(r.IntN(cs.MaxQP))
			cut := r.IntN(len(w))
			push(qp, w[:cut])
			push(other, inOrder())
			push(qp, w[cut:])
			return
		}
		push(qp, w)
	default:
		for n := 1 + r.IntN(6); n > 0; n-- {
			d.plan = append(d.plan, cardWrite{d.someAddr(), r.Uint32(), d.strb()})
		}
	}
}

func (d *cardRegsDriver) Next(in []uint32) {
	p := &d.p
	r := d.rng
	if d.cycle%2048 == 0 {
		pr := Pressures[r.IntN(len(Pressures))]
		d.validP, d.readyP = pr.Valid, pr.Ready
	}
	if d.resetLeft == 0 && r.Uint32()%50000 == 0 {
		d.resetLeft = 1 + r.IntN(3)
	}
	d.cycle++
	p.rst.Set(in, b2u(d.resetLeft > 0))
	if len(d.plan) == 0 && r.Chance(d.validP) {
		d.planWrites()
	}
	if len(d.plan) > 0 {
		d.awHeld = d.awHeld || r.Chance(d.validP)
		d.wHeld = d.wHeld || r.Chance(d.validP)
	}
	if d.awHeld {
		p.awaddr.Set(in, uint64(d.plan[0].addr|uint32(r.IntN(4))))
	} else {
		p.awaddr.Set(in, uint64(r.IntN(1<<cs.AddrBits)))
	}
	p.awvalid.Set(in, b2u(d.awHeld))
	if d.wHeld {
		p.wdata.Set(in, uint64(d.plan[0].data))
		p.wstrb.Set(in, uint64(d.plan[0].strb))
	} else {
		p.wdata.Set(in, uint64(r.Uint32()))
		p.wstrb.Set(in, uint64(r.IntN(16)))
	}
	p.wvalid.Set(in, b2u(d.wHeld))
	if !d.arHeld && r.Chance(d.validP/2) {
		d.arHeld = true
		d.reads = append(d.reads[:0], d.someAddr()|uint32(r.IntN(4)))
	}
	if d.arHeld {
		p.araddr.Set(in, uint64(d.reads[0]))
	} else {
		p.araddr.Set(in, uint64(r.IntN(1<<cs.AddrBits)))
	}
	p.arvalid.Set(in, b2u(d.arHeld))
	p.bready.Set(in, b2u(r.Chance(d.readyP)))
	p.rready.Set(in, b2u(r.Chance(d.readyP)))
	p.dbReady.Set(in, b2u(r.Chance(d.readyP)))
	for i := range p.cmdReady {
		p.cmdReady[i].Set(in, b2u(r.Chance(d.readyP)))
	}
	if r.Chance(8) {
		d.status[r.IntN(len(d.status))] = r.Uint64()
	}
	for i, f := range p.status {
		f.p.Set(in, d.status[i%len(d.status)]>>(i/len(d.status))&uint64(f.mask))
	}
}

func (d *cardRegsDriver) Observe(in, out []uint32) {
	p := &d.p
	if d.resetLeft > 0 {
		d.resetLeft--
		d.plan, d.awHeld, d.wHeld, d.arHeld = d.plan[:0], false, false, false
		return
	}
	if d.awHeld && d.wHeld && p.awready.Get(out) != 0 {
		if p.wready.Get(out) == 0 {
			panic("card_regs: awready without wready") // the model breaks its own contract
		}
		d.plan = d.plan[1:]
		d.awHeld, d.wHeld = false, false
	}
	if d.arHeld && p.arready.Get(out) != 0 {
		d.arHeld = false
	}
}
