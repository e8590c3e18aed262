package sim

import (
	"errors"
	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// PlaceAXIBench is the co-simulation bench of place_axi_w<width> against
// golden/cycle's PlaceAXI.
func PlaceAXIBench(width int) (*Bench, error) {
	m, err := gen.PlaceAXI(width)
	if err != nil {
		return nil, err
	}
	b := NewBench(m, nil, nil)
	b.NewModel = func() (Model, error) {
		p, err := lookupPlaceAXIPorts(b.Layout)
		if err != nil {
			return nil, err
		}
		return &placeAXIModel{m: cycle.NewPlaceAXI(width), p: p}, nil
	}
	b.NewDriver = func(seed uint64) Driver {
		p, err := lookupPlaceAXIPorts(b.Layout)
		if err != nil {
			panic(err) // the model constructor reports the same error first
		}
		return &placeAXIDriver{p: p, rng: NewRand(seed), resetLeft: 2, lanes: width / 8}
	}
	return b, nil
}

type placeAXIPorts struct {
	rst, addr, data, strb, valid, ready, qp Port
	axiWrPorts
	awReady, wReady                                   Port
	bID, bResp, bValid, bHold, berr, berrQP, berrAddr Port
}

func lookupPlaceAXIPorts(l Layout) (placeAXIPorts, error) {
	var p placeAXIPorts
	var err error
	for _, x := range []struct {
		dst  *Port
		name string
		in   bool
	}{{&p.rst, "rst", true}, {&p.addr, "s_dma_addr", true}, {&p.data, "s_dma_data", true}, {&p.strb, "s_dma_strb", true},
		{&p.valid, "s_dma_valid", true}, {&p.ready, "s_dma_ready", false},
		{&p.awReady, "m_axi_awready", true}, {&p.wReady, "m_axi_wready", true},
		{&p.bID, "m_axi_bid", true}, {&p.bResp, "m_axi_bresp", true}, {&p.bValid, "m_axi_bvalid", true},
		{&p.qp, "s_dma_qp", true}, {&p.bHold, "s_b_hold", true},
		{&p.berr, "m_berr", false}, {&p.berrQP, "m_berr_qp", false}, {&p.berrAddr, "m_berr_addr", false}} {
		l.lookup(x.dst, x.name, x.in, &err)
	}
	s := &portSet{l: l}
	p.axiWrPorts = s.axiWr()
	return p, errors.Join(err, s.err)
}

type placeAXIModel struct {
	m *cycle.PlaceAXI
	p placeAXIPorts
}

func (a *placeAXIModel) Step(in, out []uint32) {
	p := &a.p
	data := make([]byte, (p.data.Width+7)/8)
	p.data.Bytes(in, data)
	o := a.m.Step(cycle.PlaceAXIIn{Reset: p.rst.Get(in) != 0, Addr: p.addr.Get(in), Data: data, Strb: p.strb.Get(in), Valid: p.valid.Get(in) != 0,
		QP: uint32(p.qp.Get(in)), AWReady: p.awReady.Get(in) != 0, WReady: p.wReady.Get(in) != 0, BResp: uint8(p.bResp.Get(in)),
		BValid: p.bValid.Get(in) != 0, BHold: p.bHold.Get(in) != 0})
	p.ready.Set(out, b2u(o.Ready))
	p.axiWrPorts.set(out, &o.AXIWr)
	p.berr.Set(out, b2u(o.BErr))
	p.berrQP.Set(out, uint64(o.BErrQP))
	p.berrAddr.Set(out, o.BErrAddr)
}

// placeAXIDriver offers random blocks (held until taken) under the
// pressures of Pressures, and plays an AXI slave that takes addresses and
// data with random backpressure and answers each write once both are in,
// after a random delay, with an error now and then.
type placeAXIDriver struct {
	p                  placeAXIPorts
	rng                Rand
	resetLeft          int
	lanes              int
	cycle              uint64
	validP, readyP     int
	held               bool // a block is offered
	addr, strb, qp     uint64
	data               []byte // the block's, driven every cycle it is offered
	aws, ws, responses int    // addresses and data beats the slave took, responses it gave
	bHeld              bool   // a response is offered
	bResp              uint64

	// Counts for the test.
	Blocks, Errors uint64
}

func (d *placeAXIDriver) Next(in []uint32) {
	p, r := &d.p, d.rng
	if d.cycle%2048 == 0 {
		pr := Pressures[r.IntN(len(Pressures))]
		d.validP, d.readyP = pr.Valid, pr.Ready
	}
	d.cycle++
	if d.resetLeft == 0 && r.Uint32()%300000 == 0 {
		d.resetLeft = 1 + r.IntN(3)
	}
	p.rst.Set(in, b2u(d.resetLeft > 0))
	if d.resetLeft > 0 {
		d.resetLeft--
	}
	if !d.held && r.Chance(d.validP) {
		d.held = true
		d.addr, d.strb, d.qp = r.Uint64(), r.Uint64()&(1<<d.lanes-1), uint64(r.IntN(1024)) // 64 lanes: all 64 bits
		d.data = make([]byte, d.lanes)
		for i := range d.data {
			d.data[i] = byte(r.Uint32())
		}
	}
	// The harness's buffer holds another cycle's inputs: a block offered
	// is driven again every cycle, unchanged until taken, as AXI requires.
	if d.held {
		p.addr.Set(in, d.addr)
		p.data.SetBytes(in, d.data)
		p.strb.Set(in, d.strb)
		p.qp.Set(in, d.qp)
	}
	p.bHold.Set(in, b2u(r.IntN(8) == 0)) // the card busy with a fault report
	p.valid.Set(in, b2u(d.held))
	p.awReady.Set(in, b2u(r.Chance(d.readyP)))
	p.wReady.Set(in, b2u(r.Chance(d.readyP)))
	if !d.bHeld && min(d.aws, d.ws) > d.responses && r.Chance(d.validP) {
		d.bHeld, d.bResp = true, 0
		if r.IntN(20) == 0 {
			d.bResp = uint64(2 + r.IntN(2)) // SLVERR or DECERR
		}
	}
	p.bValid.Set(in, b2u(d.bHeld))
	p.bResp.Set(in, d.bResp)
	p.bID.Set(in, 0)
}

func (d *placeAXIDriver) Observe(in, out []uint32) {
	p := &d.p
	if p.rst.Get(in) != 0 {
		d.held, d.bHeld, d.aws, d.ws, d.responses = false, false, 0, 0, 0
		return
	}
	if d.held && p.ready.Get(out) != 0 {
		d.held = false
		d.Blocks++
	}
	if p.awValid.Get(out) != 0 && p.awReady.Get(in) != 0 {
		d.aws++
	}
	if p.wValid.Get(out) != 0 && p.wReady.Get(in) != 0 {
		d.ws++
	}
	if d.bHeld && p.bReady.Get(out) != 0 {
		d.bHeld = false
		d.responses++
		if p.berr.Get(out) != 0 {
			d.Errors++
		}
	}
}
