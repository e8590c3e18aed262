package sim

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// DMARdBench is the co-simulation bench of dma_rd_w<width>: random requests,
// a simulated AXI slave over a simulated host memory answering with random
// latency (up to 250 cycles), reordered and interleaved across IDs, with
// error responses now and then, random valid gaps and backpressure, resets.
func DMARdBench(width int) (*Bench, error) {
	return dmaRdBench(width, dmaRdTraffic{maxLatency: 250, random: true})
}

// DMARdSaturated is the bench at full speed: 4 to 64 KiB reads always
// offered, every burst answered exactly 250 cycles after its address,
// arready and m_axis_tready always high; for sustained beats per cycle.
func DMARdSaturated(width int) (*Bench, error) {
	return dmaRdBench(width, dmaRdTraffic{maxLatency: 250})
}

type dmaRdTraffic struct {
	maxLatency int
	random     bool // random latency, order, gaps, backpressure, errors, resets; else saturated
}

func dmaRdBench(width int, tr dmaRdTraffic) (*Bench, error) {
	cfg := gen.DMARdDefault(width)
	m, err := gen.DMARd(cfg)
	if err != nil {
		return nil, err
	}
	b := NewBench(m, nil, nil)
	b.NewModel = func() (Model, error) { return newDMARdModel(b.Layout, cfg) }
	b.NewDriver = func(seed uint64) Driver { return newDMARdDriver(b.Layout, cfg, seed, tr) }
	return b, nil
}

type dmaRdPorts struct {
	rst, reqValid, reqReady, reqAddr, reqLen, reqTag       Port
	arID, arAddr, arLen, arSize, arBurst, arValid, arReady Port
	rID, rData, rResp, rLast, rValid, rReady               Port
	oData, oKeep, oValid, oReady, oLast, oTag, oErr, oBErr Port
	lanes                                                  int
}

func lookupDMARdPorts(l Layout) (dmaRdPorts, error) {
	var p dmaRdPorts
	err := lookup(l, map[string]*Port{
		"rst": &p.rst, "s_req_valid": &p.reqValid, "s_req_addr": &p.reqAddr, "s_req_len": &p.reqLen,
		"s_req_tag": &p.reqTag, "m_axi_arready": &p.arReady, "m_axi_rid": &p.rID, "m_axi_rdata": &p.rData,
		"m_axi_rresp": &p.rResp, "m_axi_rlast": &p.rLast, "m_axi_rvalid": &p.rValid,
		"m_axis_tready": &p.oReady,
	}, map[string]*Port{
		"s_req_ready": &p.reqReady, "m_axi_arid": &p.arID, "m_axi_araddr": &p.arAddr,
		"m_axi_arlen": &p.arLen, "m_axi_arsize": &p.arSize, "m_axi_arburst": &p.arBurst,
		"m_axi_arvalid": &p.arValid, "m_axi_rready": &p.rReady, "m_axis_tdata": &p.oData,
		"m_axis_tkeep": &p.oKeep, "m_axis_tvalid": &p.oValid, "m_axis_tlast": &p.oLast,
		"m_axis_tuser_tag": &p.oTag, "m_axis_tuser_err": &p.oErr, "m_axis_tuser_berr": &p.oBErr,
	})
	p.lanes = p.rData.Width / 8
	return p, err
}

type dmaRdModel struct {
	m    *cycle.DMARd
	p    dmaRdPorts
	in   cycle.DMARdIn
	out  cycle.DMARdOut
	data []byte
}

func newDMARdModel(l Layout, cfg gen.DMARdConfig) (Model, error) {
	m, err := cycle.NewDMARd(cycle.DMARdConfig{Width: cfg.Width, IDBits: cfg.IDBits, ROBBeats: cfg.ROBBeats, TagBits: cfg.TagBits})
	if err != nil {
		return nil, err
	}
	p, err := lookupDMARdPorts(l)
	if err != nil {
		return nil, err
	}
	return &dmaRdModel{m: m, p: p, data: make([]byte, p.lanes)}, nil
}

func (a *dmaRdModel) Step(in, out []uint32) {
	p := &a.p
	x := &a.in
	x.Reset = p.rst.Get(in) != 0
	x.ReqValid = p.reqValid.Get(in) != 0
	x.ReqAddr = p.reqAddr.Get(in)
	x.ReqLenM1 = uint16(p.reqLen.Get(in))
	x.ReqTag = uint32(p.reqTag.Get(in))
	x.ARReady = p.arReady.Get(in) != 0
	x.RValid = p.rValid.Get(in) != 0
	x.RID = uint32(p.rID.Get(in))
	if lanes := p.rData.LaneBytes(in); lanes != nil {
		x.RData = lanes[:p.lanes]
	} else {
		p.rData.Bytes(in, a.data)
		x.RData = a.data
	}
	x.RResp = uint8(p.rResp.Get(in))
	x.OReady = p.oReady.Get(in) != 0
	o := &a.out
	a.m.Step(x, o)
	p.reqReady.Set(out, b2u(o.ReqReady))
	p.arValid.Set(out, b2u(o.ARValid))
	p.arID.Set(out, uint64(o.ARID))
	p.arAddr.Set(out, o.ARAddr)
	p.arLen.Set(out, uint64(o.ARLen))
	p.arSize.Set(out, uint64(o.ARSize))
	p.arBurst.Set(out, uint64(o.ARBurst))
	p.rReady.Set(out, 1)
	p.oValid.Set(out, b2u(o.OValid))
	p.oData.SetBytes(out, o.OData)
	p.oKeep.Set(out, o.OKeep)
	p.oLast.Set(out, b2u(o.OLast))
	p.oTag.Set(out, uint64(o.OTag))
	p.oErr.Set(out, b2u(o.OErr))
	p.oBErr.Set(out, b2u(o.OBErr))
}

// hostByte is the simulated host memory: a fixed function of the address.
func hostByte(a uint64) byte {
	a ^= a >> 17
	a *= 0x9E3779B97F4A7C15
	return byte(a >> 56)
}

type dmaRdReq struct {
	addr     uint64
	n        int // bytes
	tag      uint32
	arBeats  int // beats of it not yet covered by bursts
	nextBeat uint64
	err      bool
	berr     bool // tuser_berr was seen
	got      int  // bytes delivered
}

type dmaRdBurst struct {
	id      uint32
	addr    uint64 // beat address
	beats   int
	sent    int
	readyAt uint64
	resp    uint8
	errBeat int // -1: none
}

// dmaRdDriver is the request source, the AXI slave and the m_axis sink, and
// checks end to end what the block does: bursts are whole beats, contiguous
// per request, never cross 4 KiB, of the right size; each request's bytes
// come out in order with its tag and the error flag of its bursts.
type dmaRdDriver struct {
	p         dmaRdPorts
	cfg       gen.DMARdConfig
	tr        dmaRdTraffic
	rng       Rand
	cycle     uint64
	resetLeft int
	validP    int
	readyP    int
	arP       int
	rP        int

	pending   *dmaRdReq // offered on s_req
	reqs      []*dmaRdReq
	arCursor  int // index in reqs of the request the next burst belongs to
	outCursor int
	tag       uint32
	bursts    []*dmaRdBurst
	cur       *dmaRdBurst // beat offered on R
	ready     []*dmaRdBurst
	buf       []byte

	Err       error // the first end-to-end violation
	Requests  uint64
	Bytes     uint64
	ErrorReqs uint64
	Reorders  uint64
}

func newDMARdDriver(l Layout, cfg gen.DMARdConfig, seed uint64, tr dmaRdTraffic) *dmaRdDriver {
	p, err := lookupDMARdPorts(l)
	if err != nil {
		panic(err) // the model constructor reports the same error first
	}
	d := &dmaRdDriver{p: p, cfg: cfg, tr: tr, rng: NewRand(seed), validP: 256, readyP: 256, arP: 256, rP: 256, buf: make([]byte, p.lanes)}
	if tr.random {
		d.resetLeft = 2
	}
	return d
}

func (d *dmaRdDriver) fail(format string, a ...any) {
	if d.Err == nil {
		d.Err = fmt.Errorf("dma_rd cycle %d: "+format, append([]any{d.cycle}, a...)...)
	}
}

// randomDMA picks a DMA request: lengths of 1 byte to 64 KiB (a third
// under 65 bytes, many of WQE sizes) or, saturated, 4 to 64 KiB; addresses
// at random, near a 4 KiB edge or 64-byte aligned, never wrapping 2^64.
func randomDMA(r Rand, saturated bool) (addr uint64, n int) {
	if saturated {
		n = 4096 + r.IntN(60*1024+1)
	} else {
		switch k := r.IntN(16); {
		case k < 5:
			n = 1 + r.IntN(64)
		case k < 10:
			n = 64 * (1 + r.IntN(8))
		case k < 14:
			n = 1 + r.IntN(8192)
		default:
			n = 1 + r.IntN(65536)
		}
	}
	addr = r.Uint64()
	switch r.IntN(4) {
	case 0:
		addr = addr&^0xFFF | uint64(4096-r.IntN(256))
	case 1:
		addr &^= 63
	}
	if addr+uint64(n) < addr {
		addr -= uint64(n)
	}
	return addr, n
}

func (d *dmaRdDriver) newReq() *dmaRdReq {
	addr, n := randomDMA(d.rng, !d.tr.random)
	d.tag = (d.tag + 1) & (1<<d.cfg.TagBits - 1)
	L := uint64(d.p.lanes)
	beats := int((addr+uint64(n)-1)/L - addr/L + 1)
	return &dmaRdReq{addr: addr, n: n, tag: d.tag, arBeats: beats, nextBeat: addr / L}
}

func (d *dmaRdDriver) Next(in []uint32) {
	p := &d.p
	r := d.rng
	if d.tr.random && d.cycle%4096 == 0 {
		pr := Pressures[r.IntN(len(Pressures))]
		d.validP, d.readyP = pr.Valid, pr.Ready
		d.arP, d.rP = 64+r.IntN(193), 64+r.IntN(193)
	}
	if d.tr.random && d.resetLeft == 0 && r.Uint32()%200000 == 0 {
		d.resetLeft = 1 + r.IntN(3)
	}
	d.cycle++
	p.rst.Set(in, b2u(d.resetLeft > 0))
	if d.pending == nil && r.Chance(d.validP) {
		d.pending = d.newReq()
	}
	if d.pending != nil {
		p.reqValid.Set(in, 1)
		p.reqAddr.Set(in, d.pending.addr)
		p.reqLen.Set(in, uint64(d.pending.n-1))
		p.reqTag.Set(in, uint64(d.pending.tag))
	} else {
		p.reqValid.Set(in, 0)
		p.reqAddr.Set(in, r.Uint64())
		p.reqLen.Set(in, uint64(r.IntN(1<<16)))
		p.reqTag.Set(in, uint64(r.Uint32())&(1<<d.cfg.TagBits-1))
	}
	p.arReady.Set(in, b2u(r.Chance(d.arP)))
	p.oReady.Set(in, b2u(r.Chance(d.readyP)))
	// R channel: a beat of a burst whose latency has passed, chosen at
	// random among them (reordered and interleaved across IDs).
	if d.cur == nil && r.Chance(d.rP) {
		ready := d.ready[:0]
		for _, b := range d.bursts {
			if b.readyAt <= d.cycle {
				ready = append(ready, b)
			}
		}
		d.ready = ready
		if len(ready) > 0 {
			pick := ready[0]
			if d.tr.random {
				pick = ready[r.IntN(len(ready))]
				if pick != d.bursts[0] {
					d.Reorders++
				}
			}
			d.cur = pick
		}
	}
	if b := d.cur; b != nil {
		a := (b.addr + uint64(b.sent)) * uint64(d.p.lanes)
		for i := range d.buf {
			d.buf[i] = hostByte(a + uint64(i))
		}
		p.rData.SetBytes(in, d.buf)
		p.rID.Set(in, uint64(b.id))
		resp := uint64(0)
		if b.errBeat == b.sent {
			resp = uint64(b.resp)
		}
		p.rResp.Set(in, resp)
		p.rLast.Set(in, b2u(b.sent == b.beats-1))
		p.rValid.Set(in, 1)
	} else {
		for i := range d.buf {
			d.buf[i] = byte(r.Uint32())
		}
		p.rData.SetBytes(in, d.buf)
		p.rID.Set(in, uint64(r.IntN(1<<d.cfg.IDBits)))
		p.rResp.Set(in, uint64(r.IntN(4)))
		p.rLast.Set(in, uint64(r.IntN(2)))
		p.rValid.Set(in, 0)
	}
}

func (d *dmaRdDriver) Observe(in, out []uint32) {
	p := &d.p
	if d.resetLeft > 0 {
		d.resetLeft--
		d.pending, d.reqs, d.bursts, d.cur = nil, d.reqs[:0], d.bursts[:0], nil
		d.arCursor, d.outCursor = 0, 0
		return
	}
	L := d.p.lanes
	if d.pending != nil && p.reqReady.Get(out) != 0 {
		d.reqs = append(d.reqs, d.pending)
		d.pending = nil
	}
	if p.rReady.Get(out) == 0 {
		d.fail("rready low")
	}
	if b := d.cur; b != nil {
		b.sent++
		if b.sent == b.beats {
			for i, x := range d.bursts {
				if x == b {
					d.bursts = append(d.bursts[:i], d.bursts[i+1:]...)
					break
				}
			}
		}
		d.cur = nil
	}
	if p.arValid.Get(out) != 0 && p.arReady.Get(in) != 0 {
		d.acceptAR(p.arID.Get(out), p.arAddr.Get(out), int(p.arLen.Get(out))+1, p.arSize.Get(out), p.arBurst.Get(out))
	}
	if p.oValid.Get(out) != 0 && p.oReady.Get(in) != 0 {
		if d.outCursor >= len(d.reqs) {
			d.fail("an output beat with no request outstanding")
			return
		}
		q := d.reqs[d.outCursor]
		if tag := uint32(p.oTag.Get(out)); tag != q.tag {
			d.fail("output tag %d, want %d", tag, q.tag)
		}
		p.oData.Bytes(out, d.buf)
		n := min(L, q.n-q.got)
		if keep := p.oKeep.Get(out); keep != 1<<n-1 {
			d.fail("request tag %d byte %d: tkeep %#x, want %d lanes", q.tag, q.got, keep, n)
		}
		for i := 0; i < n; i++ {
			if want := hostByte(q.addr + uint64(q.got+i)); d.buf[i] != want {
				d.fail("request tag %d (address %#x, %d bytes) byte %d: %#02x, want %#02x", q.tag, q.addr, q.n, q.got+i, d.buf[i], want)
				break
			}
		}
		q.got += n
		last := q.got == q.n
		if (p.oLast.Get(out) != 0) != last {
			d.fail("request tag %d: tlast %d at byte %d of %d", q.tag, p.oLast.Get(out), q.got, q.n)
		}
		if (p.oErr.Get(out) != 0) != (last && q.err) {
			d.fail("request tag %d: tuser_err %d, its bursts' error %v", q.tag, p.oErr.Get(out), q.err)
		}
		// tuser_berr: never without an error, never dropped once set
		// within the request, set on its last beat when it had one.
		switch berr := p.oBErr.Get(out) != 0; {
		case berr && !q.err:
			d.fail("request tag %d byte %d: tuser_berr with no error response", q.tag, q.got)
		case q.berr && !berr:
			d.fail("request tag %d byte %d: tuser_berr dropped", q.tag, q.got)
		case last && q.err && !berr:
			d.fail("request tag %d: tuser_berr low on the last beat of a request with an error", q.tag)
		default:
			q.berr = berr
		}
		if last {
			d.outCursor++
			d.Requests++
			d.Bytes += uint64(q.n)
			if q.err {
				d.ErrorReqs++
			}
			if d.outCursor > 64 { // forget delivered requests
				d.reqs = append(d.reqs[:0], d.reqs[d.outCursor:]...)
				d.arCursor -= d.outCursor
				d.outCursor = 0
			}
		}
	}
}

func (d *dmaRdDriver) acceptAR(id, addr uint64, beats int, size, burst uint64) {
	L := uint64(d.p.lanes)
	if 1<<size != L {
		d.fail("arsize %d", size)
	}
	if burst != 1 {
		d.fail("arburst %d", burst)
	}
	if addr%L != 0 {
		d.fail("araddr %#x not beat aligned", addr)
	}
	if addr/4096 != (addr+uint64(beats)*L-1)/4096 || beats*int(L) > gen.DMAMaxBurst(d.cfg.Width) {
		d.fail("burst at %#x of %d beats crosses 4 KiB or is too long", addr, beats)
	}
	for _, b := range d.bursts {
		if uint64(b.id) == id {
			d.fail("ID %d reused while its burst is outstanding", id)
		}
	}
	if d.arCursor >= len(d.reqs) {
		d.fail("a burst with no request")
		return
	}
	q := d.reqs[d.arCursor]
	if addr/L != q.nextBeat || beats > q.arBeats {
		d.fail("burst at %#x of %d beats; request tag %d needs %d beats from %#x", addr, beats, q.tag, q.arBeats, q.nextBeat*L)
		return
	}
	q.nextBeat += uint64(beats)
	q.arBeats -= beats
	if q.arBeats == 0 {
		d.arCursor++
	}
	b := &dmaRdBurst{id: uint32(id), addr: addr / L, beats: beats, errBeat: -1}
	if d.tr.random {
		b.readyAt = d.cycle + uint64(d.rng.IntN(d.tr.maxLatency+1))
		if d.rng.Chance(2) {
			b.resp, b.errBeat = uint8(2+d.rng.IntN(2)), d.rng.IntN(beats)
			q.err = true
		}
	} else {
		b.readyAt = d.cycle + uint64(d.tr.maxLatency)
	}
	d.bursts = append(d.bursts, b)
}
