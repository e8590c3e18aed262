package sim

import (
	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// DDPTxBench is the co-simulation bench of ddp_tx_w<width>.
func DDPTxBench(width int) (*Bench, error) {
	m, err := gen.DDPTx(width)
	if err != nil {
		return nil, err
	}
	b := NewBench(m, nil, nil)
	b.NewModel = func() (Model, error) { return newDDPTxModel(b.Layout, width) }
	b.NewDriver = func(seed uint64) Driver { return newDDPTxDriver(b.Layout, seed, false) }
	return b, nil
}

// DDPTxSaturated is the bench at full speed (no gaps, no backpressure, no
// resets) with RDMA Write-like traffic, for throughput.
func DDPTxSaturated(width int) (*Bench, error) {
	b, err := DDPTxBench(width)
	if err != nil {
		return nil, err
	}
	b.NewDriver = func(seed uint64) Driver { return newDDPTxDriver(b.Layout, seed, true) }
	return b, nil
}

type ddpTxPorts struct {
	s                                               AXISPorts
	rst, dValid, dTagged, dRdmap, dDV, dSTag, dTO   Port
	dQN, dMSN, dLen, dMULPDU, dUser, mReady         Port
	dReady, mData, mKeep, mValid, mLast, mLen, mMsg Port
	mUser                                           Port
}

func lookupDDPTxPorts(l Layout) (ddpTxPorts, error) {
	var p ddpTxPorts
	var err error
	if p.s, err = StreamPorts(l, "s_axis"); err != nil {
		return p, err
	}
	err = lookup(l, map[string]*Port{"rst": &p.rst, "s_desc_valid": &p.dValid, "s_desc_tagged": &p.dTagged,
		"s_desc_rdmap": &p.dRdmap, "s_desc_dv": &p.dDV, "s_desc_stag": &p.dSTag, "s_desc_to": &p.dTO, "s_desc_qn": &p.dQN,
		"s_desc_msn": &p.dMSN, "s_desc_len": &p.dLen, "s_desc_mulpdu": &p.dMULPDU, "s_desc_user": &p.dUser, "m_axis_tready": &p.mReady},
		map[string]*Port{"s_desc_ready": &p.dReady, "m_axis_tdata": &p.mData, "m_axis_tkeep": &p.mKeep, "m_axis_tvalid": &p.mValid,
			"m_axis_tlast": &p.mLast, "m_axis_tuser_len": &p.mLen, "m_axis_tuser_last": &p.mMsg, "m_axis_tuser_user": &p.mUser})
	return p, err
}

type ddpTxModel struct {
	m   *cycle.DDPTx
	p   ddpTxPorts
	buf []byte
	in  cycle.DDPTxIn
	out cycle.DDPTxOut
}

func newDDPTxModel(l Layout, width int) (Model, error) {
	m, err := cycle.NewDDPTx(width)
	if err != nil {
		return nil, err
	}
	p, err := lookupDDPTxPorts(l)
	if err != nil {
		return nil, err
	}
	return &ddpTxModel{m: m, p: p, buf: make([]byte, width/8)}, nil
}

func (a *ddpTxModel) Step(in, out []uint32) {
	p, x, o := &a.p, &a.in, &a.out
	x.Reset = p.rst.Get(in) != 0
	x.DescValid = p.dValid.Get(in) != 0
	x.Desc = cycle.DDPTxDesc{Tagged: p.dTagged.Get(in) != 0, RDMAP: uint8(p.dRdmap.Get(in)), DV: ddp.Version(p.dDV.Get(in)),
		STag: uint32(p.dSTag.Get(in)), TO: p.dTO.Get(in), QN: uint32(p.dQN.Get(in)), MSN: uint32(p.dMSN.Get(in)),
		Len: uint32(p.dLen.Get(in)), MULPDU: int(p.dMULPDU.Get(in)), User: uint16(p.dUser.Get(in))}
	x.Valid = p.s.Valid.Get(in) != 0
	p.s.Data.Bytes(in, a.buf)
	x.Data, x.Last, x.MReady = a.buf, p.s.Last.Get(in) != 0, p.mReady.Get(in) != 0
	a.m.Step(x, o)
	p.dReady.Set(out, b2u(o.DescReady))
	p.s.Ready.Set(out, b2u(o.SReady))
	p.mData.SetBytes(out, o.Data)
	p.mKeep.Set(out, o.Keep)
	p.mValid.Set(out, b2u(o.Valid))
	p.mLast.Set(out, b2u(o.Last))
	p.mLen.Set(out, uint64(o.Len))
	p.mMsg.Set(out, b2u(o.MsgLast))
	p.mUser.Set(out, uint64(o.User))
}

// ddpTxMsg is one message the driver offers: its descriptor and payload.
type ddpTxMsg struct {
	desc    cycle.DDPTxDesc
	payload []byte
}

// ddpTxDriver: messages of every kind and size (many short, some up to
// 70000 octets, zero-length ones too), MULPDUs from 128 to 64768,
// descriptors and payload offered independently with random gaps, random
// backpressure, rare resets.
type ddpTxDriver struct {
	p         ddpTxPorts
	rng       Rand
	pool      Pool
	src       *AXISSource
	descs     []ddpTxMsg // descriptors not yet taken
	pays      [][]byte   // payloads not yet started
	descP     int
	readyP    int
	cycle     uint64
	resetLeft int
	saturated bool
	noReset   bool
	offering  bool
	// sent records every message in descriptor order (when record is set).
	record bool
	sent   []ddpTxMsg
}

func newDDPTxDriver(l Layout, seed uint64, saturated bool) Driver {
	p, err := lookupDDPTxPorts(l)
	if err != nil {
		panic(err) // the model constructor reports the same error first
	}
	d := &ddpTxDriver{p: p, rng: NewRand(seed), resetLeft: 2, saturated: saturated, readyP: 256, descP: 256}
	d.pool = NewPool(d.rng, 1<<17)
	d.src = NewAXISSource(p.s, d.rng, d.pool, d.nextPayload)
	return d
}

// newMessage makes the next message: its descriptor queues for the
// descriptor port, its payload (if any) for the payload port.
func (d *ddpTxDriver) newMessage() {
	r := d.rng
	var n int
	switch x := r.IntN(64); {
	case d.saturated:
		n = 4096 << r.IntN(3) // RDMA Writes of 4 to 16 KiB
	case x < 4:
		n = 0
	case x < 28:
		n = 1 + r.IntN(64)
	case x < 50:
		n = 1 + r.IntN(1500)
	case x < 62:
		n = 1 + r.IntN(9000)
	default:
		n = 1 + r.IntN(70000)
	}
	mulpdu := 128 + r.IntN(9000-128)
	switch {
	case d.saturated:
		mulpdu = 1432 // an Ethernet MSS less MPA's overhead with markers
	case r.Chance(32):
		mulpdu = 64768
	case r.Chance(32):
		mulpdu = 128 + r.IntN(64)
	}
	desc := cycle.DDPTxDesc{Tagged: r.Chance(128) || d.saturated, RDMAP: uint8(r.Uint32()), DV: ddp.Version(r.IntN(2)),
		STag: r.Uint32(), TO: r.Uint64(), QN: r.Uint32(), MSN: r.Uint32(), Len: uint32(n), MULPDU: mulpdu, User: uint16(r.Uint32())}
	if r.Chance(16) {
		desc.TO = -uint64(r.IntN(4096)) // about to wrap
	}
	msg := ddpTxMsg{desc: desc, payload: d.pool.Slice(d.rng, n)}
	d.descs = append(d.descs, msg)
	if n > 0 {
		d.pays = append(d.pays, msg.payload)
	}
	if d.record {
		d.sent = append(d.sent, msg)
	}
}

func (d *ddpTxDriver) nextPayload() []byte {
	for len(d.pays) == 0 {
		d.newMessage()
	}
	b := d.pays[0]
	d.pays = d.pays[1:]
	return b
}

func (d *ddpTxDriver) Next(in []uint32) {
	if !d.saturated && d.cycle%4096 == 0 {
		pr := Pressures[d.rng.IntN(len(Pressures))]
		d.src.ValidP, d.readyP, d.descP = pr.Valid, pr.Ready, Pressures[d.rng.IntN(len(Pressures))].Valid
	}
	if !d.saturated && !d.noReset && d.resetLeft == 0 && d.rng.Uint32()%200000 == 0 {
		d.resetLeft = 1 + d.rng.IntN(3)
	}
	d.cycle++
	d.p.rst.Set(in, b2u(d.resetLeft > 0))
	d.src.Drive(in)
	if !d.offering && d.rng.Chance(d.descP) {
		if len(d.descs) == 0 {
			d.newMessage()
		}
		d.offering = true
	}
	var m cycle.DDPTxDesc
	if d.offering {
		m = d.descs[0].desc
	} else { // garbage the block must ignore
		r := d.rng.Uint64()
		m = cycle.DDPTxDesc{Tagged: r&1 != 0, RDMAP: uint8(r >> 8), DV: ddp.Version(r >> 16 & 3), STag: uint32(r >> 20),
			TO: d.rng.Uint64(), QN: uint32(r), MSN: uint32(r >> 32), Len: uint32(r >> 13), MULPDU: int(r >> 40 & 0xFFFF), User: uint16(r >> 3)}
	}
	d.p.dValid.Set(in, b2u(d.offering))
	d.p.dTagged.Set(in, b2u(m.Tagged))
	d.p.dRdmap.Set(in, uint64(m.RDMAP))
	d.p.dDV.Set(in, uint64(m.DV))
	d.p.dSTag.Set(in, uint64(m.STag))
	d.p.dTO.Set(in, m.TO)
	d.p.dQN.Set(in, uint64(m.QN))
	d.p.dMSN.Set(in, uint64(m.MSN))
	d.p.dLen.Set(in, uint64(m.Len))
	d.p.dMULPDU.Set(in, uint64(m.MULPDU))
	d.p.dUser.Set(in, uint64(m.User))
	d.p.mReady.Set(in, b2u(d.rng.Chance(d.readyP)))
}

func (d *ddpTxDriver) Observe(in, out []uint32) {
	if d.resetLeft > 0 {
		d.resetLeft--
		if d.resetLeft == 0 {
			// A reset loses whatever was in flight: start afresh.
			d.descs, d.pays, d.sent, d.offering = d.descs[:0], d.pays[:0], d.sent[:0], false
		}
		d.src.Abort()
		return
	}
	d.src.Observe(in, out)
	if d.offering && d.p.dReady.Get(out) != 0 {
		d.descs = d.descs[1:]
		d.offering = false
	}
}
