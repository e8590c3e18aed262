package sim

import (
	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// UARTTxBench is the co-simulation bench of uart_tx_d<divisor>: random
// bytes with random gaps and rare resets (mid-frame too), every output
// compared every cycle with golden/cycle.UARTTx.
func UARTTxBench(divisor int) (*Bench, error) {
	m, err := gen.UARTTx(divisor)
	if err != nil {
		return nil, err
	}
	b := NewBench(m, nil, nil)
	b.NewModel = func() (Model, error) {
		u, err := cycle.NewUARTTx(divisor)
		if err != nil {
			return nil, err
		}
		p, err := lookupUARTPorts(b.Layout)
		return &uartModel{m: u, p: p}, err
	}
	b.NewDriver = func(seed uint64) Driver {
		p, err := lookupUARTPorts(b.Layout)
		if err != nil {
			panic(err) // the model constructor reports the same error first
		}
		return &uartDriver{p: p, rng: NewRand(seed), resetLeft: 2}
	}
	return b, nil
}

type uartPorts struct{ rst, data, valid, ready, tx Port }

func lookupUARTPorts(l Layout) (uartPorts, error) {
	var p uartPorts
	var err error
	for _, x := range []struct {
		dst  *Port
		name string
		in   bool
	}{{&p.rst, "rst", true}, {&p.data, "s_axis_tdata", true}, {&p.valid, "s_axis_tvalid", true},
		{&p.ready, "s_axis_tready", false}, {&p.tx, "tx", false}} {
		if x.in {
			*x.dst, err = l.In(x.name)
		} else {
			*x.dst, err = l.Out(x.name)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

type uartModel struct {
	m *cycle.UARTTx
	p uartPorts
}

func (a *uartModel) Step(in, out []uint32) {
	o := a.m.Step(cycle.UARTTxIn{Reset: a.p.rst.Get(in) != 0, Data: byte(a.p.data.Get(in)), Valid: a.p.valid.Get(in) != 0})
	a.p.ready.Set(out, b2u(o.Ready))
	a.p.tx.Set(out, b2u(o.TX))
}

// uartDriver offers random bytes, sometimes back to back and sometimes
// after a gap, and resets the block now and then, mid-frame included.
type uartDriver struct {
	p         uartPorts
	rng       Rand
	resetLeft int
	valid     bool
	data      byte
}

func (d *uartDriver) Next(in []uint32) {
	if d.resetLeft == 0 && d.rng.Uint32()%20000 == 0 {
		d.resetLeft = 1 + d.rng.IntN(3)
	}
	if !d.valid && d.rng.Chance(64) {
		d.valid, d.data = true, byte(d.rng.Uint32())
	}
	d.p.rst.Set(in, b2u(d.resetLeft > 0))
	d.p.valid.Set(in, b2u(d.valid))
	d.p.data.Set(in, uint64(d.data))
}

func (d *uartDriver) Observe(in, out []uint32) {
	if d.resetLeft > 0 {
		d.resetLeft--
		return
	}
	if d.valid && d.p.ready.Get(out) != 0 {
		d.valid = false
	}
}
