package sim

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// CRC32CBench is the co-simulation bench of crc32c_w<width>.
func CRC32CBench(width int) (*Bench, error) {
	m, err := gen.CRC32C(width)
	if err != nil {
		return nil, err
	}
	b := NewBench(m, nil, nil)
	b.NewModel = func() (Model, error) { return newCRCModel(b.Layout, width) }
	b.NewDriver = func(seed uint64) Driver { return newCRCDriver(b.Layout, seed, false) }
	return b, nil
}

// CRC32CSaturated is the bench at full speed (tvalid and m_axis_tready
// always high), for measuring throughput.
func CRC32CSaturated(width int) (*Bench, error) {
	b, err := CRC32CBench(width)
	if err != nil {
		return nil, err
	}
	b.NewDriver = func(seed uint64) Driver { return newCRCDriver(b.Layout, seed, true) }
	return b, nil
}

type crcPorts struct {
	s                                 AXISPorts
	rst, mReady, mData, mUser, mValid Port
}

func lookupCRCPorts(l Layout) (crcPorts, error) {
	var p crcPorts
	var err error
	if p.s, err = StreamPorts(l, "s_axis"); err != nil {
		return p, err
	}
	for _, x := range []struct {
		dst  *Port
		name string
		in   bool
	}{{&p.rst, "rst", true}, {&p.mReady, "m_axis_tready", true}, {&p.mData, "m_axis_tdata", false},
		{&p.mUser, "m_axis_tuser", false}, {&p.mValid, "m_axis_tvalid", false}} {
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

// crcModel adapts cycle.CRC32C to vectors.
type crcModel struct {
	m   *cycle.CRC32C
	p   crcPorts
	buf []byte
}

func newCRCModel(l Layout, width int) (Model, error) {
	m, err := cycle.NewCRC32C(width)
	if err != nil {
		return nil, err
	}
	p, err := lookupCRCPorts(l)
	if err != nil {
		return nil, err
	}
	return &crcModel{m: m, p: p, buf: make([]byte, width/8)}, nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (a *crcModel) Step(in, out []uint32) {
	p := &a.p
	valid := p.s.Valid.Get(in) != 0
	data := a.buf
	if lanes := p.s.Data.LaneBytes(in); lanes != nil {
		data = lanes[:len(a.buf)] // read in place
	} else if valid { // the model reads the data of valid beats only
		p.s.Data.Bytes(in, a.buf)
	}
	o := a.m.Step(cycle.CRC32CIn{
		Reset: p.rst.Get(in) != 0, Data: data, Keep: p.s.Keep.Get(in),
		Valid: valid, Last: p.s.Last.Get(in) != 0, MReady: p.mReady.Get(in) != 0,
	})
	p.s.Ready.Set(out, b2u(o.SReady))
	p.mData.Set(out, uint64(o.CRC))
	p.mUser.Set(out, b2u(o.ResidueOK))
	p.mValid.Set(out, b2u(o.MValid))
}

// crcDriver: random frames (short, MPA-sized and long; half of them closed
// with their own CRC field so the residue check fires, some of those
// corrupted), random valid gaps and backpressure that change profile every
// few thousand cycles, and rare resets in the middle of traffic.
type crcDriver struct {
	p         crcPorts
	rng       Rand
	pool      Pool
	src       *AXISSource
	readyP    int
	cycle     uint64
	resetLeft int
	saturated bool
	frame     []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newCRCDriver(l Layout, seed uint64, saturated bool) Driver {
	p, err := lookupCRCPorts(l)
	if err != nil {
		panic(err) // the model constructor reports the same error first
	}
	d := &crcDriver{p: p, rng: NewRand(seed), resetLeft: 2, saturated: saturated, readyP: 256}
	d.pool = NewPool(d.rng, 1<<16)
	d.src = NewAXISSource(p.s, d.rng, d.pool, d.nextFrame)
	return d
}

func (d *crcDriver) nextFrame() []byte {
	var n int
	switch r := d.rng.IntN(16); {
	case r < 9:
		n = 1 + d.rng.IntN(3*d.p.s.Lanes)
	case r < 15:
		n = 1 + d.rng.IntN(600)
	default:
		n = 1 + d.rng.IntN(9000)
	}
	frame := d.pool.Slice(d.rng, n) // the pool never changes: no copy needed
	if d.rng.Chance(128) {
		d.frame = append(d.frame[:0], frame...)
		c := crc32.Checksum(d.frame, castagnoli)
		if d.rng.Chance(16) {
			c ^= 1 << d.rng.IntN(32)
		}
		d.frame = binary.LittleEndian.AppendUint32(d.frame, c)
		return d.frame
	}
	return frame
}

func (d *crcDriver) Next(in []uint32) {
	if !d.saturated && d.cycle%4096 == 0 {
		pr := Pressures[d.rng.IntN(len(Pressures))]
		d.src.ValidP, d.readyP = pr.Valid, pr.Ready
	}
	if !d.saturated && d.resetLeft == 0 && d.rng.Uint32()%100000 == 0 {
		d.resetLeft = 1 + d.rng.IntN(3)
	}
	d.cycle++
	d.p.rst.Set(in, b2u(d.resetLeft > 0))
	d.src.Drive(in)
	d.p.mReady.Set(in, b2u(d.rng.Chance(d.readyP)))
}

func (d *crcDriver) Observe(in, out []uint32) {
	if d.resetLeft > 0 {
		d.resetLeft--
		d.src.Abort()
		return
	}
	d.src.Observe(in, out)
}
