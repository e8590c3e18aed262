package sim

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// MPATxBench is the co-simulation bench of mpa_tx_w<width>.
func MPATxBench(width int) (*Bench, error) {
	m, err := gen.MPATx(width)
	if err != nil {
		return nil, err
	}
	b := NewBench(m, nil, nil)
	b.NewModel = func() (Model, error) { return newTxModel(b.Layout, width) }
	b.NewDriver = func(seed uint64) Driver { return newTxDriver(b.Layout, seed, false) }
	return b, nil
}

// MPATxSaturated is the bench at full speed, for throughput.
func MPATxSaturated(width int) (*Bench, error) {
	b, err := MPATxBench(width)
	if err != nil {
		return nil, err
	}
	b.NewDriver = func(seed uint64) Driver { return newTxDriver(b.Layout, seed, true) }
	return b, nil
}

type txPorts struct {
	s                                  AXISPorts
	rst, off, ulen, mk, crc, mReady    Port
	mData, mKeep, mValid, mLast, mUser Port
}

// lookup fills dst with the named ports (inputs first, then outputs).
func lookup(l Layout, ins map[string]*Port, outs map[string]*Port) error {
	for n, p := range ins {
		q, err := l.In(n)
		if err != nil {
			return err
		}
		*p = q
	}
	for n, p := range outs {
		q, err := l.Out(n)
		if err != nil {
			return err
		}
		*p = q
	}
	return nil
}

func lookupTxPorts(l Layout) (txPorts, error) {
	var p txPorts
	var err error
	if p.s, err = StreamPorts(l, "s_axis"); err != nil {
		return p, err
	}
	err = lookup(l, map[string]*Port{"rst": &p.rst, "s_offset": &p.off, "s_ulpdu_len": &p.ulen, "s_markers": &p.mk,
		"s_crc": &p.crc, "m_axis_tready": &p.mReady},
		map[string]*Port{"m_axis_tdata": &p.mData, "m_axis_tkeep": &p.mKeep, "m_axis_tvalid": &p.mValid,
			"m_axis_tlast": &p.mLast, "m_axis_tuser": &p.mUser})
	return p, err
}

type txModel struct {
	m   *cycle.MPATx
	p   txPorts
	buf []byte
	// The cycle's inputs and outputs stay here: building them as values
	// and copying them to and from the call costs more than the model.
	in  cycle.MPATxIn
	out cycle.MPATxOut
}

func newTxModel(l Layout, width int) (Model, error) {
	m, err := cycle.NewMPATx(width)
	if err != nil {
		return nil, err
	}
	p, err := lookupTxPorts(l)
	if err != nil {
		return nil, err
	}
	return &txModel{m: m, p: p, buf: make([]byte, width/8)}, nil
}

func (a *txModel) Step(in, out []uint32) {
	p, x, o := &a.p, &a.in, &a.out
	x.Valid = p.s.Valid.Get(in) != 0
	x.Data = a.buf
	if x.Valid {
		// The model copies the octets it takes: hand it the vector's lanes.
		if lanes := p.s.Data.LaneBytes(in); lanes != nil {
			x.Data = lanes[:len(a.buf)]
		} else {
			p.s.Data.Bytes(in, a.buf)
		}
	}
	x.Reset, x.Last, x.MReady = p.rst.Get(in) != 0, p.s.Last.Get(in) != 0, p.mReady.Get(in) != 0
	x.Ctx = cycle.MPATxCtx{Offset: uint32(p.off.Get(in)), Len: int(p.ulen.Get(in)),
		Markers: p.mk.Get(in) != 0, CRC: p.crc.Get(in) != 0}
	a.m.StepTo(x, o)
	p.s.Ready.Set(out, b2u(o.SReady))
	if lanes := p.mData.LaneBytes(out); lanes != nil { // SetBytes, inlined
		clear(lanes[copy(lanes, o.Data):])
	} else {
		p.mData.SetBytes(out, o.Data)
	}
	p.mKeep.Set(out, o.Keep)
	p.mValid.Set(out, b2u(o.Valid))
	p.mLast.Set(out, b2u(o.Last))
	p.mUser.Set(out, uint64(o.User))
}

// txConn is one half connection the driver sends on.
type txConn struct {
	off          uint32
	markers, crc bool
}

// txDriver: ULPDUs of random sizes (many small, some up to 64768 octets)
// on several connections with random SeqStart phases and settings, random
// valid gaps and backpressure, rare resets.
type txDriver struct {
	p         txPorts
	rng       Rand
	pool      Pool
	src       *AXISSource
	conns     []txConn
	ctx       cycle.MPATxCtx
	readyP    int
	cycle     uint64
	resetLeft int
	saturated bool
	noReset   bool
	frame     []byte
	// sent records every ULPDU in the order it was offered, for end-to-end
	// checks (only when record is set).
	record bool
	sent   []txSent
}

// txSent is one ULPDU the driver sent and the connection it went on.
type txSent struct {
	conn int
	ctx  cycle.MPATxCtx
	data []byte
}

func newTxDriver(l Layout, seed uint64, saturated bool) Driver {
	p, err := lookupTxPorts(l)
	if err != nil {
		panic(err) // the model constructor reports the same error first
	}
	d := &txDriver{p: p, rng: NewRand(seed), resetLeft: 2, saturated: saturated, readyP: 256}
	d.pool = NewPool(d.rng, 1<<17)
	d.src = NewAXISSource(p.s, d.rng, d.pool, d.nextULPDU)
	d.newConns()
	return d
}

func (d *txDriver) newConns() {
	d.conns = d.conns[:0]
	for i := 0; i < 4; i++ {
		c := txConn{off: d.rng.Uint32() &^ 3, markers: d.rng.Chance(192), crc: d.rng.Chance(224)}
		switch d.rng.IntN(4) {
		case 0:
			c.off = 0 // SeqStart: a leading marker
		case 1:
			c.off = -uint32(4 * (1 + d.rng.IntN(600))) // about to wrap
		}
		d.conns = append(d.conns, c)
	}
}

func (d *txDriver) nextULPDU() []byte {
	var n int
	switch r := d.rng.IntN(64); {
	case r < 32:
		n = 1 + d.rng.IntN(64)
	case r < 52:
		n = 1 + d.rng.IntN(1500)
	case r < 63:
		n = 1 + d.rng.IntN(9000)
	default:
		n = 1 + d.rng.IntN(mpa.MaxULPDULength)
	}
	if d.saturated {
		n = 1 + d.rng.IntN(1500)
	}
	ci := d.rng.IntN(len(d.conns))
	c := &d.conns[ci]
	d.ctx = cycle.MPATxCtx{Offset: c.off, Len: n, Markers: c.markers, CRC: c.crc}
	c.off += uint32(mpa.FPDUWireLen(c.off, c.markers, n))
	d.frame = append(d.frame[:0], d.pool.Slice(d.rng, n)...)
	if d.record {
		d.sent = append(d.sent, txSent{conn: ci, ctx: d.ctx, data: append([]byte(nil), d.frame...)})
	}
	return d.frame
}

func (d *txDriver) Next(in []uint32) {
	if !d.saturated && d.cycle%4096 == 0 {
		pr := Pressures[d.rng.IntN(len(Pressures))]
		d.src.ValidP, d.readyP = pr.Valid, pr.Ready
	}
	if !d.saturated && !d.noReset && d.resetLeft == 0 && d.rng.Uint32()%200000 == 0 {
		d.resetLeft = 1 + d.rng.IntN(3)
	}
	d.cycle++
	d.p.rst.Set(in, b2u(d.resetLeft > 0))
	d.src.Drive(in)
	if d.src.AtStart() {
		d.p.off.Set(in, uint64(d.ctx.Offset))
		d.p.ulen.Set(in, uint64(d.ctx.Len))
		d.p.mk.Set(in, b2u(d.ctx.Markers))
		d.p.crc.Set(in, b2u(d.ctx.CRC))
	} else { // the block reads the context on first beats only
		r := d.rng.Uint64()
		d.p.off.Set(in, r&0xFFFFFFFF)
		d.p.ulen.Set(in, r>>32&0xFFFF)
		d.p.mk.Set(in, r>>48&1)
		d.p.crc.Set(in, r>>49&1)
	}
	d.p.mReady.Set(in, b2u(d.rng.Chance(d.readyP)))
}

func (d *txDriver) Observe(in, out []uint32) {
	if d.resetLeft > 0 {
		d.resetLeft--
		if d.resetLeft == 0 {
			// A reset loses whatever was in flight: start the connections afresh.
			d.newConns()
			d.sent = d.sent[:0]
		}
		d.src.Abort()
		return
	}
	d.src.Observe(in, out)
}

var _ = fmt.Sprint
