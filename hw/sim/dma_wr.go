package sim

import (
	"errors"
	"fmt"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// DMAWrBench is the co-simulation bench of dma_wr_w<width>: random requests
// and their data with valid gaps, a simulated AXI slave with random
// readiness on AW and W that answers each burst after 0 to 250 cycles (in
// order: one ID), error responses now and then, random completion
// backpressure, resets.
func DMAWrBench(width int) (*Bench, error) {
	return dmaWrBench(width, true)
}

// DMAWrSaturated is the bench at full speed (4 to 64 KiB writes, data
// always offered, every channel always ready, responses after 250 cycles).
func DMAWrSaturated(width int) (*Bench, error) { return dmaWrBench(width, false) }

func dmaWrBench(width int, random bool) (*Bench, error) {
	cfg := gen.DMAWrDefault(width)
	m, err := gen.DMAWr(cfg)
	if err != nil {
		return nil, err
	}
	b := NewBench(m, nil, nil)
	b.NewModel = func() (Model, error) { return newDMAWrModel(b.Layout, cfg) }
	b.NewDriver = func(seed uint64) Driver { return newDMAWrDriver(b.Layout, cfg, seed, random) }
	return b, nil
}

// axiWrPorts are an AXI4 write master's outputs, which a cycle model's
// cycle.AXIWr drives.
type axiWrPorts struct {
	awID, awAddr, awLen, awSize, awBurst, awValid Port
	wData, wStrb, wLast, wValid, bReady           Port
}

// axiWr looks up the m_axi_ write master's outputs.
func (s *portSet) axiWr() axiWrPorts {
	return axiWrPorts{awID: s.out("m_axi_awid"), awAddr: s.out("m_axi_awaddr"), awLen: s.out("m_axi_awlen"),
		awSize: s.out("m_axi_awsize"), awBurst: s.out("m_axi_awburst"), awValid: s.out("m_axi_awvalid"),
		wData: s.out("m_axi_wdata"), wStrb: s.out("m_axi_wstrb"), wLast: s.out("m_axi_wlast"),
		wValid: s.out("m_axi_wvalid"), bReady: s.out("m_axi_bready")}
}

// ports lists them.
func (p *axiWrPorts) ports() []Port {
	return []Port{p.awID, p.awAddr, p.awLen, p.awSize, p.awBurst, p.awValid, p.wData, p.wStrb, p.wLast, p.wValid, p.bReady}
}

// set drives them from o.
func (p *axiWrPorts) set(out []uint32, o *cycle.AXIWr) {
	p.awID.Set(out, 0)
	p.awAddr.Set(out, o.AWAddr)
	p.awLen.Set(out, uint64(o.AWLen))
	p.awSize.Set(out, uint64(o.AWSize))
	p.awBurst.Set(out, uint64(o.AWBurst))
	p.awValid.Set(out, b2u(o.AWValid))
	p.wData.SetBytes(out, o.WData)
	p.wStrb.Set(out, o.WStrb)
	p.wLast.Set(out, b2u(o.WLast))
	p.wValid.Set(out, b2u(o.WValid))
	p.bReady.Set(out, b2u(o.BReady))
}

type dmaWrPorts struct {
	rst, reqValid, reqReady, reqAddr, reqLen, reqTag Port
	sData, sValid, sReady                            Port
	axiWrPorts
	awReady, wReady                                           Port
	bID, bResp, bValid, dValid, dReady, dTag, dErr, dErrBurst Port
	lanes                                                     int
}

func lookupDMAWrPorts(l Layout) (dmaWrPorts, error) {
	var p dmaWrPorts
	err := lookup(l, map[string]*Port{
		"rst": &p.rst, "s_req_valid": &p.reqValid, "s_req_addr": &p.reqAddr, "s_req_len": &p.reqLen,
		"s_req_tag": &p.reqTag, "s_axis_tdata": &p.sData, "s_axis_tvalid": &p.sValid,
		"m_axi_awready": &p.awReady, "m_axi_wready": &p.wReady, "m_axi_bid": &p.bID, "m_axi_bresp": &p.bResp,
		"m_axi_bvalid": &p.bValid, "m_done_ready": &p.dReady,
	}, map[string]*Port{
		"s_req_ready": &p.reqReady, "s_axis_tready": &p.sReady,
		"m_done_valid": &p.dValid, "m_done_tag": &p.dTag, "m_done_err": &p.dErr, "m_done_err_burst": &p.dErrBurst,
	})
	s := &portSet{l: l}
	p.axiWrPorts = s.axiWr()
	p.lanes = p.sData.Width / 8
	return p, errors.Join(err, s.err)
}

type dmaWrModel struct {
	m    *cycle.DMAWr
	p    dmaWrPorts
	in   cycle.DMAWrIn
	out  cycle.DMAWrOut
	data []byte
}

func newDMAWrModel(l Layout, cfg gen.DMAWrConfig) (Model, error) {
	m, err := cycle.NewDMAWr(cycle.DMAWrConfig{Width: cfg.Width, IDBits: cfg.IDBits, Bursts: cfg.Bursts, TagBits: cfg.TagBits})
	if err != nil {
		return nil, err
	}
	p, err := lookupDMAWrPorts(l)
	if err != nil {
		return nil, err
	}
	return &dmaWrModel{m: m, p: p, data: make([]byte, p.lanes)}, nil
}

func (a *dmaWrModel) Step(in, out []uint32) {
	p := &a.p
	x := &a.in
	x.Reset = p.rst.Get(in) != 0
	x.ReqValid = p.reqValid.Get(in) != 0
	x.ReqAddr = p.reqAddr.Get(in)
	x.ReqLenM1 = uint16(p.reqLen.Get(in))
	x.ReqTag = uint32(p.reqTag.Get(in))
	if lanes := p.sData.LaneBytes(in); lanes != nil {
		x.SData = lanes[:p.lanes]
	} else {
		p.sData.Bytes(in, a.data)
		x.SData = a.data
	}
	x.SValid = p.sValid.Get(in) != 0
	x.AWReady = p.awReady.Get(in) != 0
	x.WReady = p.wReady.Get(in) != 0
	x.BValid = p.bValid.Get(in) != 0
	x.BResp = uint8(p.bResp.Get(in))
	x.DReady = p.dReady.Get(in) != 0
	o := &a.out
	a.m.Step(x, o)
	p.reqReady.Set(out, b2u(o.ReqReady))
	p.sReady.Set(out, b2u(o.SReady))
	p.axiWrPorts.set(out, &o.AXIWr)
	p.dValid.Set(out, b2u(o.DValid))
	p.dTag.Set(out, uint64(o.DTag))
	p.dErr.Set(out, b2u(o.DErr))
	p.dErrBurst.Set(out, uint64(o.DErrBurst))
}

// dmaWrBurstAddr is the first byte burst k of a dma_wr request at addr
// writes, as m_done_err_burst's contract gives it.
func dmaWrBurstAddr(addr uint64, k, width int) uint64 {
	if k == 0 {
		return addr
	}
	b := uint64(gen.DMAMaxBurst(width))
	return addr&^(b-1) + uint64(k)*b
}

// wrByte is byte i of the data of a write request (address, tag).
func wrByte(addr uint64, tag uint32, i int) byte { return hostByte(addr+uint64(i)) ^ byte(tag) }

type dmaWrReqT struct {
	addr     uint64
	n        int
	tag      uint32
	fed      int // bytes offered on s_axis and taken
	written  int // bytes the slave received
	awBeats  int // beats not yet covered by burst addresses
	nextBeat uint64
	err      bool
	errAddr  uint64 // the first byte of its first burst with an error response
}

type dmaWrBurstT struct {
	addr    uint64 // beat address
	beats   int
	got     int
	resp    uint8
	readyAt uint64
}

// dmaWrDriver feeds requests and data, plays the AXI slave, and checks end
// to end: burst addresses whole, contiguous per request and inside 4 KiB;
// W beats only after their address, wlast on each burst's last beat, the
// strobed bytes exactly each request's bytes at their addresses; one
// completion per request, in order, with its tag and its bursts' error.
type dmaWrDriver struct {
	p         dmaWrPorts
	cfg       gen.DMAWrConfig
	random    bool
	rng       Rand
	cycle     uint64
	resetLeft int
	validP    int
	readyP    int

	pending   *dmaWrReqT
	reqs      []*dmaWrReqT
	feed      int // index in reqs of the request whose data is offered
	awCursor  int
	wCursor   int
	done      int
	tag       uint32
	bursts    []*dmaWrBurstT // addressed, W not complete
	responses []*dmaWrBurstT // W complete, response pending (in order)
	lastReady uint64
	buf       []byte

	Err       error
	Requests  uint64
	Bytes     uint64
	ErrorReqs uint64
}

func newDMAWrDriver(l Layout, cfg gen.DMAWrConfig, seed uint64, random bool) *dmaWrDriver {
	p, err := lookupDMAWrPorts(l)
	if err != nil {
		panic(err) // the model constructor reports the same error first
	}
	d := &dmaWrDriver{p: p, cfg: cfg, random: random, rng: NewRand(seed), validP: 256, readyP: 256, buf: make([]byte, p.lanes)}
	if random {
		d.resetLeft = 2
	}
	return d
}

func (d *dmaWrDriver) fail(format string, a ...any) {
	if d.Err == nil {
		d.Err = fmt.Errorf("dma_wr cycle %d: "+format, append([]any{d.cycle}, a...)...)
	}
}

func (d *dmaWrDriver) ready() bool { return !d.random || d.rng.Chance(d.readyP) }

func (d *dmaWrDriver) Next(in []uint32) {
	p := &d.p
	r := d.rng
	if d.random && d.cycle%4096 == 0 {
		pr := Pressures[r.IntN(len(Pressures))]
		d.validP, d.readyP = pr.Valid, pr.Ready
	}
	if d.random && d.resetLeft == 0 && r.Uint32()%200000 == 0 {
		d.resetLeft = 1 + r.IntN(3)
	}
	d.cycle++
	p.rst.Set(in, b2u(d.resetLeft > 0))
	if d.pending == nil && (!d.random || r.Chance(d.validP)) {
		addr, n := randomDMA(r, !d.random)
		d.tag = (d.tag + 1) & (1<<d.cfg.TagBits - 1)
		L := uint64(d.p.lanes)
		d.pending = &dmaWrReqT{addr: addr, n: n, tag: d.tag, awBeats: int((addr+uint64(n)-1)/L - addr/L + 1), nextBeat: addr / L}
	}
	if q := d.pending; q != nil {
		p.reqValid.Set(in, 1)
		p.reqAddr.Set(in, q.addr)
		p.reqLen.Set(in, uint64(q.n-1))
		p.reqTag.Set(in, uint64(q.tag))
	} else {
		p.reqValid.Set(in, 0)
		p.reqAddr.Set(in, r.Uint64())
		p.reqLen.Set(in, uint64(r.IntN(1<<16)))
		p.reqTag.Set(in, uint64(r.Uint32())&(1<<d.cfg.TagBits-1))
	}
	// Data of the oldest accepted request not yet fed.
	fed := false
	if d.feed < len(d.reqs) && (!d.random || r.Chance(d.validP)) {
		q := d.reqs[d.feed]
		n := min(d.p.lanes, q.n-q.fed)
		for i := range d.buf {
			d.buf[i] = byte(r.Uint32())
			if i < n {
				d.buf[i] = wrByte(q.addr, q.tag, q.fed+i)
			}
		}
		fed = true
	} else {
		for i := range d.buf {
			d.buf[i] = byte(r.Uint32())
		}
	}
	p.sData.SetBytes(in, d.buf)
	p.sValid.Set(in, b2u(fed))
	p.awReady.Set(in, b2u(d.ready()))
	p.wReady.Set(in, b2u(d.ready()))
	p.dReady.Set(in, b2u(d.ready()))
	if len(d.responses) > 0 && d.responses[0].readyAt <= d.cycle {
		p.bValid.Set(in, 1)
		p.bResp.Set(in, uint64(d.responses[0].resp))
		p.bID.Set(in, 0)
	} else {
		p.bValid.Set(in, 0)
		p.bResp.Set(in, uint64(r.IntN(4)))
		p.bID.Set(in, uint64(r.IntN(1<<d.cfg.IDBits)))
	}
}

func (d *dmaWrDriver) Observe(in, out []uint32) {
	p := &d.p
	if d.resetLeft > 0 {
		d.resetLeft--
		d.pending, d.reqs, d.bursts, d.responses = nil, d.reqs[:0], d.bursts[:0], d.responses[:0]
		d.feed, d.awCursor, d.wCursor, d.done, d.lastReady = 0, 0, 0, 0, 0
		return
	}
	L := d.p.lanes
	if d.pending != nil && p.reqReady.Get(out) != 0 {
		d.reqs = append(d.reqs, d.pending)
		d.pending = nil
	}
	if p.sValid.Get(in) != 0 && p.sReady.Get(out) != 0 {
		q := d.reqs[d.feed]
		q.fed = min(q.n, q.fed+L)
		if q.fed == q.n {
			d.feed++
		}
	}
	if p.awValid.Get(out) != 0 && p.awReady.Get(in) != 0 {
		d.acceptAW(p.awAddr.Get(out), int(p.awLen.Get(out))+1, p.awSize.Get(out), p.awBurst.Get(out))
	}
	if p.wValid.Get(out) != 0 && p.wReady.Get(in) != 0 {
		d.acceptW(out)
	}
	if p.bValid.Get(in) != 0 && p.bReady.Get(out) != 0 {
		d.responses = d.responses[1:]
	}
	if p.dValid.Get(out) != 0 && p.dReady.Get(in) != 0 {
		if d.done >= len(d.reqs) {
			d.fail("a completion with no request")
			return
		}
		q := d.reqs[d.done]
		switch {
		case q.written != q.n:
			d.fail("request tag %d completed with %d of %d bytes written", q.tag, q.written, q.n)
		case uint32(p.dTag.Get(out)) != q.tag:
			d.fail("completion tag %d, want %d", p.dTag.Get(out), q.tag)
		case (p.dErr.Get(out) != 0) != q.err:
			d.fail("request tag %d: err %d, its bursts' error %v", q.tag, p.dErr.Get(out), q.err)
		case !q.err && p.dErrBurst.Get(out) != 0:
			d.fail("request tag %d: no error, m_done_err_burst %d", q.tag, p.dErrBurst.Get(out))
		case q.err && dmaWrBurstAddr(q.addr, int(p.dErrBurst.Get(out)), d.cfg.Width) != q.errAddr:
			d.fail("request tag %d at %#x: m_done_err_burst %d names %#x, its first refused burst starts at %#x", q.tag, q.addr,
				p.dErrBurst.Get(out), dmaWrBurstAddr(q.addr, int(p.dErrBurst.Get(out)), d.cfg.Width), q.errAddr)
		}
		d.done++
		d.Requests++
		d.Bytes += uint64(q.n)
		if q.err {
			d.ErrorReqs++
		}
		if d.done > 64 && d.feed >= d.done && d.wCursor >= d.done && d.awCursor >= d.done {
			k := d.done
			d.reqs = append(d.reqs[:0], d.reqs[k:]...)
			d.done, d.feed, d.wCursor, d.awCursor = 0, d.feed-k, d.wCursor-k, d.awCursor-k
		}
	}
}

func (d *dmaWrDriver) acceptAW(addr uint64, beats int, size, burst uint64) {
	L := uint64(d.p.lanes)
	if 1<<size != L || burst != 1 || addr%L != 0 {
		d.fail("awsize %d, awburst %d, awaddr %#x", size, burst, addr)
	}
	if addr/4096 != (addr+uint64(beats)*L-1)/4096 || beats*int(L) > gen.DMAMaxBurst(d.cfg.Width) {
		d.fail("burst at %#x of %d beats crosses 4 KiB or is too long", addr, beats)
	}
	if d.awCursor >= len(d.reqs) {
		d.fail("a burst address with no request")
		return
	}
	q := d.reqs[d.awCursor]
	if addr/L != q.nextBeat || beats > q.awBeats {
		d.fail("burst at %#x of %d beats; request tag %d needs %d beats from %#x", addr, beats, q.tag, q.awBeats, q.nextBeat*L)
		return
	}
	q.nextBeat += uint64(beats)
	q.awBeats -= beats
	if q.awBeats == 0 {
		d.awCursor++
	}
	b := &dmaWrBurstT{addr: addr / L, beats: beats}
	if d.random && d.rng.Chance(2) {
		b.resp = uint8(2 + d.rng.IntN(2))
		if !q.err {
			q.errAddr = max(addr, q.addr)
		}
		q.err = true
	}
	d.bursts = append(d.bursts, b)
}

func (d *dmaWrDriver) acceptW(out []uint32) {
	p := &d.p
	L := d.p.lanes
	if len(d.bursts) == 0 {
		d.fail("a W beat before its burst's address")
		return
	}
	b := d.bursts[0]
	strb := p.wStrb.Get(out)
	p.wData.Bytes(out, d.buf)
	base := (b.addr + uint64(b.got)) * uint64(L)
	for i := 0; i < L; i++ {
		if strb>>i&1 == 0 {
			continue
		}
		if d.wCursor >= len(d.reqs) {
			d.fail("a strobed byte with no request")
			return
		}
		q := d.reqs[d.wCursor]
		a := base + uint64(i)
		if a != q.addr+uint64(q.written) {
			d.fail("request tag %d: byte written at %#x, want %#x", q.tag, a, q.addr+uint64(q.written))
			return
		}
		if want := wrByte(q.addr, q.tag, q.written); d.buf[i] != want {
			d.fail("request tag %d byte %d: %#02x, want %#02x", q.tag, q.written, d.buf[i], want)
			return
		}
		q.written++
		if q.written == q.n {
			d.wCursor++
		}
	}
	b.got++
	if (p.wLast.Get(out) != 0) != (b.got == b.beats) {
		d.fail("wlast %d on beat %d of %d", p.wLast.Get(out), b.got, b.beats)
	}
	if b.got == b.beats {
		d.bursts = d.bursts[1:]
		lat := uint64(250)
		if d.random {
			lat = uint64(d.rng.IntN(251))
		}
		b.readyAt = max(d.lastReady, d.cycle+lat)
		d.lastReady = b.readyAt
		d.responses = append(d.responses, b)
	}
}
