package sim

import (
	"fmt"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// muxBurst is one burst of the mux bench; its address names its master
// and sequence number, and its data and response follow from the address.
type muxBurst struct {
	id    uint64 // the master's
	sid   uint64 // the slave's, once it took the address
	addr  uint64
	beats int
	sent  int // W beats taken (writes) or R beats received (reads)
	got   int // W beats the slave received, R beats the slave sent
	aw    bool
}

func muxData(addr uint64, beat int) uint64 {
	x := addr*0x9e3779b97f4a7c15 + uint64(beat)*0xbf58476d1ce4e5b9
	return x ^ x>>29
}

func muxResp(addr uint64) uint64 { return (muxData(addr, 999) & 1) * 2 }

type muxMaster struct {
	seq    uint64
	wr     []*muxBurst // addressed or to be addressed, in order
	awNext int         // index in wr of the burst whose address is offered
	wNext  int         // index in wr of the burst whose data is offered
	rd     []*muxBurst
	arNext int
}

// AXIMuxDriver drives axi_rd_mux and axi_wr_mux together (or, with one
// master, axi_rd_remap and axi_wr_remap: the bench is the same, the slave
// IDs narrower instead of wider): each master
// issues random bursts with random IDs (a few per master), W beats
// offered even before their address is taken, random valid gaps; the
// slave takes addresses and beats with random readiness and answers
// write responses and read data in random order across IDs (in order per
// ID, read data interleaved beat by beat across IDs). It checks that every
// burst reaches the slave once with its master's number above its ID, its
// W beats in address order and whole (wlast on the last), every response
// and read beat back at the master that owns it, in order per ID, with
// the data and response the address implies.
type AXIMuxDriver struct {
	n      int
	pre    func(master int) string            // a master's port prefix
	newID  func(r Rand) uint64                // a new burst's ID
	sidOf  func(master int, id uint64) uint64 // the ID the slave must see
	maxOut int                                // bursts a master keeps outstanding, each way
	rng    Rand
	cycle  uint64
	stopAt uint64
	readyP int
	validP int
	ms     []*muxMaster
	slvAW  []*muxBurst // in address order, W not complete
	slvB   []*muxBurst // W complete, response not given
	slvR   []*muxBurst // addressed, R beats not all sent
	pickB  *muxBurst
	pickR  *muxBurst
	lanes  int
	Err    error
	Bursts uint64
	WBeats uint64
	RBeats uint64
	// Held counts addresses a master offered that the slave would have
	// taken but the block held back (another master granted, a full
	// queue).
	Held uint64
	// Compared counts the cycles whose every output of both blocks was
	// compared with their cycle models.
	Compared uint64
}

func (d *AXIMuxDriver) fail(format string, a ...any) {
	if d.Err == nil {
		d.Err = fmt.Errorf("axi mux cycle %d: "+format, append([]any{d.cycle}, a...)...)
	}
}

// Outstanding is the number of bursts not yet finished.
func (d *AXIMuxDriver) Outstanding() int {
	n := 0
	for _, m := range d.ms {
		n += len(m.wr) + len(m.rd)
	}
	return n
}

func newAXIMuxDriver(cfg gen.AXIMuxConfig, seed, stopAt uint64) *AXIMuxDriver {
	d := &AXIMuxDriver{n: cfg.Masters, rng: NewRand(seed), stopAt: stopAt, readyP: 256, validP: 256, lanes: cfg.Width / 8, maxOut: 12,
		pre:   func(i int) string { return fmt.Sprintf("s%d_axi_", i) },
		newID: func(r Rand) uint64 { return uint64(r.IntN(4)) },
		sidOf: func(i int, id uint64) uint64 { return uint64(i)<<cfg.IDBits | id }}
	for i := 0; i < cfg.Masters; i++ {
		d.ms = append(d.ms, &muxMaster{})
	}
	return d
}

// axiMuxPair runs the two muxes side by side, one driver for both.
type axiMuxPair struct {
	d      *AXIMuxDriver
	rdP    *portSet
	wrP    *portSet
	rdIn   []uint32
	rdOut  []uint32
	wrIn   []uint32
	wrOut  []uint32
	rdL    Layout
	wrL    Layout
	rdInst *Instance
	wrInst *Instance
	models axiCycleModels // the blocks' cycle models
}

func (d *AXIMuxDriver) newBurst(i int, write bool) *muxBurst {
	m := d.ms[i]
	m.seq++
	b := &muxBurst{id: d.newID(d.rng), beats: 1 + d.rng.IntN(16)}
	b.addr = uint64(i)<<40 | m.seq<<13 | uint64(b2u(write))<<12
	return b
}

// step runs one cycle of both muxes.
func (p *axiMuxPair) step() error {
	d := p.d
	r := d.rng
	d.cycle++
	if d.cycle%4096 == 0 {
		pr := Pressures[r.IntN(len(Pressures))]
		d.validP, d.readyP = pr.Valid, pr.Ready
	}
	rdI, wrI := p.rdIn, p.wrIn
	set := func(ps *portSet, vec []uint32, name string, v uint64) { ps.in(name).Set(vec, v) }
	get := func(ps *portSet, vec []uint32, name string) uint64 { return ps.out(name).Get(vec) }
	rst := d.cycle <= 2
	set(p.rdP, rdI, "rst", b2u(rst))
	set(p.wrP, wrI, "rst", b2u(rst))
	gen := d.cycle > 2 && d.cycle < d.stopAt
	data := make([]byte, d.lanes)
	wr := func(b *muxBurst, beat int) {
		for k := 0; k < d.lanes; k += 8 {
			v := muxData(b.addr, beat) + uint64(k)
			for j := 0; j < 8 && k+j < d.lanes; j++ {
				data[k+j] = byte(v >> (8 * j))
			}
		}
	}
	for i, m := range d.ms {
		pre := d.pre(i)
		if gen && len(m.wr) < d.maxOut && r.IntN(4) == 0 {
			m.wr = append(m.wr, d.newBurst(i, true))
		}
		if gen && len(m.rd) < d.maxOut && r.IntN(4) == 0 {
			m.rd = append(m.rd, d.newBurst(i, false))
		}
		awOn := m.awNext < len(m.wr) && r.Chance(d.validP)
		if m.awNext < len(m.wr) && m.wr[m.awNext].aw { // keep a raised valid
			awOn = true
		}
		set(p.wrP, wrI, pre+"awvalid", b2u(awOn))
		if awOn {
			b := m.wr[m.awNext]
			b.aw = true
			set(p.wrP, wrI, pre+"awid", b.id)
			set(p.wrP, wrI, pre+"awaddr", b.addr)
			set(p.wrP, wrI, pre+"awlen", uint64(b.beats-1))
			set(p.wrP, wrI, pre+"awsize", uint64(log2u(d.lanes)))
			set(p.wrP, wrI, pre+"awburst", 1)
		}
		wOn := m.wNext < len(m.wr) && r.Chance(d.validP)
		set(p.wrP, wrI, pre+"wvalid", b2u(wOn))
		if wOn {
			b := m.wr[m.wNext]
			wr(b, b.sent)
			p.wrP.in(pre+"wdata").SetBytes(wrI, data)
			set(p.wrP, wrI, pre+"wstrb", 1<<d.lanes-1)
			set(p.wrP, wrI, pre+"wlast", b2u(b.sent == b.beats-1))
		}
		set(p.wrP, wrI, pre+"bready", b2u(r.Chance(d.readyP)))
		arOn := m.arNext < len(m.rd) && r.Chance(d.validP)
		if m.arNext < len(m.rd) && m.rd[m.arNext].aw {
			arOn = true
		}
		set(p.rdP, rdI, pre+"arvalid", b2u(arOn))
		if arOn {
			b := m.rd[m.arNext]
			b.aw = true
			set(p.rdP, rdI, pre+"arid", b.id)
			set(p.rdP, rdI, pre+"araddr", b.addr)
			set(p.rdP, rdI, pre+"arlen", uint64(b.beats-1))
			set(p.rdP, rdI, pre+"arsize", uint64(log2u(d.lanes)))
			set(p.rdP, rdI, pre+"arburst", 1)
		}
		set(p.rdP, rdI, pre+"rready", b2u(r.Chance(d.readyP)))
	}
	set(p.wrP, wrI, "m_axi_awready", b2u(r.Chance(d.readyP)))
	set(p.wrP, wrI, "m_axi_wready", b2u(r.Chance(d.readyP)))
	set(p.rdP, rdI, "m_axi_arready", b2u(r.Chance(d.readyP)))
	// Slave responses: a random burst among the oldest of each ID.
	headOf := func(q []*muxBurst, keep *muxBurst) *muxBurst {
		if keep != nil {
			return keep
		}
		var heads []*muxBurst
		seen := map[uint64]bool{}
		for _, b := range q {
			if !seen[b.sid] {
				seen[b.sid] = true
				heads = append(heads, b)
			}
		}
		if len(heads) == 0 || !r.Chance(d.validP) {
			return nil
		}
		return heads[r.IntN(len(heads))]
	}
	d.pickB = headOf(d.slvB, d.pickB)
	set(p.wrP, wrI, "m_axi_bvalid", b2u(d.pickB != nil))
	if b := d.pickB; b != nil {
		set(p.wrP, wrI, "m_axi_bid", b.sid)
		set(p.wrP, wrI, "m_axi_bresp", muxResp(b.addr))
	}
	d.pickR = headOf(d.slvR, d.pickR)
	set(p.rdP, rdI, "m_axi_rvalid", b2u(d.pickR != nil))
	if b := d.pickR; b != nil {
		wr(b, b.got)
		set(p.rdP, rdI, "m_axi_rid", b.sid)
		p.rdP.in("m_axi_rdata").SetBytes(rdI, data)
		set(p.rdP, rdI, "m_axi_rresp", muxResp(b.addr))
		set(p.rdP, rdI, "m_axi_rlast", b2u(b.got == b.beats-1))
	}
	if p.rdP.err != nil || p.wrP.err != nil {
		return fmt.Errorf("axi mux ports: %v %v", p.rdP.err, p.wrP.err)
	}
	if err := p.rdInst.Run(rdI, p.rdOut); err != nil {
		return err
	}
	if err := p.wrInst.Run(wrI, p.wrOut); err != nil {
		return err
	}
	if err := p.models.step(rdI, p.rdOut, wrI, p.wrOut); err != nil {
		d.fail("%v", err)
		return nil
	}
	d.Compared = p.models.compared()
	if rst {
		return nil
	}
	rdO, wrO := p.rdOut, p.wrOut
	// Slave side.
	if get(p.wrP, wrO, "m_axi_awvalid") != 0 && p.wrP.in("m_axi_awready").Get(wrI) != 0 {
		id, addr := get(p.wrP, wrO, "m_axi_awid"), get(p.wrP, wrO, "m_axi_awaddr")
		src := int(addr >> 40)
		if src >= d.n || d.ms[src].awNext >= len(d.ms[src].wr) {
			d.fail("write address %#x with ID %#x: no master offered it", addr, id)
			return nil
		}
		m := d.ms[src]
		b := m.wr[m.awNext]
		if b.addr != addr || id != d.sidOf(src, b.id) || int(get(p.wrP, wrO, "m_axi_awlen"))+1 != b.beats {
			d.fail("write address %#x id %#x, master %d offered %#x id %#x (the slave must see %#x)", addr, id, src, b.addr, b.id, d.sidOf(src, b.id))
			return nil
		}
		m.awNext++
		d.slvAW = append(d.slvAW, b)
		b.sid = id
	}
	if get(p.wrP, wrO, "m_axi_wvalid") != 0 && p.wrP.in("m_axi_wready").Get(wrI) != 0 {
		if len(d.slvAW) == 0 {
			d.fail("a W beat before any address")
			return nil
		}
		b := d.slvAW[0]
		got := make([]byte, d.lanes)
		p.wrP.out("m_axi_wdata").Bytes(wrO, got)
		wr(b, b.got)
		if string(got) != string(data) || get(p.wrP, wrO, "m_axi_wstrb") != 1<<d.lanes-1 {
			d.fail("W beat %d of the burst at %#x: wrong data", b.got, b.addr)
		}
		b.got++
		d.WBeats++
		if (get(p.wrP, wrO, "m_axi_wlast") != 0) != (b.got == b.beats) {
			d.fail("wlast on beat %d of %d", b.got, b.beats)
		}
		if b.got == b.beats {
			d.slvAW = d.slvAW[1:]
			d.slvB = append(d.slvB, b)
		}
	}
	if d.pickB != nil && get(p.wrP, wrO, "m_axi_bready") != 0 {
		b := d.pickB
		for k, x := range d.slvB {
			if x == b {
				d.slvB = append(d.slvB[:k], d.slvB[k+1:]...)
				break
			}
		}
		d.pickB = nil
	}
	if get(p.rdP, rdO, "m_axi_arvalid") != 0 && p.rdP.in("m_axi_arready").Get(rdI) != 0 {
		id, addr := get(p.rdP, rdO, "m_axi_arid"), get(p.rdP, rdO, "m_axi_araddr")
		src := int(addr >> 40)
		if src >= d.n || d.ms[src].arNext >= len(d.ms[src].rd) {
			d.fail("read address %#x with ID %#x: no master offered it", addr, id)
			return nil
		}
		m := d.ms[src]
		b := m.rd[m.arNext]
		if b.addr != addr || id != d.sidOf(src, b.id) || int(get(p.rdP, rdO, "m_axi_arlen"))+1 != b.beats {
			d.fail("read address %#x id %#x, master %d offered %#x id %#x (the slave must see %#x)", addr, id, src, b.addr, b.id, d.sidOf(src, b.id))
			return nil
		}
		m.arNext++
		d.slvR = append(d.slvR, b)
		b.sid = id
	}
	if d.pickR != nil && get(p.rdP, rdO, "m_axi_rready") != 0 {
		b := d.pickR
		b.got++
		d.pickR = nil
		if b.got == b.beats {
			for k, x := range d.slvR {
				if x == b {
					d.slvR = append(d.slvR[:k], d.slvR[k+1:]...)
					break
				}
			}
		}
	}
	// Master side: W beats, write responses, read data.
	for i, m := range d.ms {
		pre := d.pre(i)
		if p.wrP.in(pre+"awvalid").Get(wrI) != 0 && get(p.wrP, wrO, pre+"awready") == 0 && p.wrP.in("m_axi_awready").Get(wrI) != 0 {
			d.Held++
		}
		if p.rdP.in(pre+"arvalid").Get(rdI) != 0 && get(p.rdP, rdO, pre+"arready") == 0 && p.rdP.in("m_axi_arready").Get(rdI) != 0 {
			d.Held++
		}
		if p.wrP.in(pre+"wvalid").Get(wrI) != 0 && get(p.wrP, wrO, pre+"wready") != 0 {
			b := m.wr[m.wNext]
			b.sent++
			if b.sent == b.beats {
				m.wNext++
			}
		}
		if get(p.wrP, wrO, pre+"bvalid") != 0 && p.wrP.in(pre+"bready").Get(wrI) != 0 {
			id := get(p.wrP, wrO, pre+"bid")
			k := -1
			for j, b := range m.wr[:m.awNext] {
				if b.id == id {
					k = j
					break
				}
			}
			switch {
			case k < 0:
				d.fail("master %d: write response for ID %d with none outstanding", i, id)
			case m.wr[k].got != m.wr[k].beats:
				d.fail("master %d: write response for the burst at %#x before its data", i, m.wr[k].addr)
			case get(p.wrP, wrO, pre+"bresp") != muxResp(m.wr[k].addr):
				d.fail("master %d: bresp %d for the burst at %#x", i, get(p.wrP, wrO, pre+"bresp"), m.wr[k].addr)
			default:
				m.wr = append(m.wr[:k], m.wr[k+1:]...)
				m.awNext--
				m.wNext--
				d.Bursts++
			}
		}
		if get(p.rdP, rdO, pre+"rvalid") != 0 && p.rdP.in(pre+"rready").Get(rdI) != 0 {
			id := get(p.rdP, rdO, pre+"rid")
			k := -1
			for j, b := range m.rd[:m.arNext] {
				if b.id == id {
					k = j
					break
				}
			}
			if k < 0 {
				d.fail("master %d: read data for ID %d with none outstanding", i, id)
				continue
			}
			b := m.rd[k]
			got := make([]byte, d.lanes)
			p.rdP.out(pre+"rdata").Bytes(rdO, got)
			wr(b, b.sent)
			if string(got) != string(data) || get(p.rdP, rdO, pre+"rresp") != muxResp(b.addr) {
				d.fail("master %d: read beat %d of the burst at %#x: wrong data or response", i, b.sent, b.addr)
			}
			b.sent++
			d.RBeats++
			if (get(p.rdP, rdO, pre+"rlast") != 0) != (b.sent == b.beats) {
				d.fail("master %d: rlast on beat %d of %d", i, b.sent, b.beats)
			}
			if b.sent == b.beats {
				m.rd = append(m.rd[:k], m.rd[k+1:]...)
				m.arNext--
				d.Bursts++
			}
		}
	}
	return nil
}

func log2u(n int) int {
	k := 0
	for 1<<k < n {
		k++
	}
	return k
}

// RunAXIMux co-simulates axi_rd_mux and axi_wr_mux of cfg for cycles
// cycles from seed (new bursts stop 20,000 cycles before the end, so that
// every burst finishes) and returns the driver with its counts.
func RunAXIMux(cfg gen.AXIMuxConfig, seed, cycles uint64) (*AXIMuxDriver, error) {
	rm, err := gen.AXIRdMux(cfg)
	if err != nil {
		return nil, err
	}
	wm, err := gen.AXIWrMux(cfg)
	if err != nil {
		return nil, err
	}
	return runAXIPair(rm, wm, newAXIMuxDriver(cfg, seed, cycles-min(cycles/2, 20000)), cycles, func(rd, wr *portSet) axiCycleModels {
		return newAXIMuxModels(cfg, rd, wr)
	})
}

// RunAXIRemap co-simulates axi_rd_remap and axi_wr_remap of cfg as
// RunAXIMux does the muxes: one master whose IDs share slave IDs often
// (half of its bursts use two of them, so their queues fill), each
// burst's address seen by the slave with the low bits of its ID, every
// response back with the whole ID, in order per ID.
func RunAXIRemap(cfg gen.AXIRemapConfig, seed, cycles uint64) (*AXIMuxDriver, error) {
	rm, err := gen.AXIRdRemap(cfg)
	if err != nil {
		return nil, err
	}
	wm, err := gen.AXIWrRemap(cfg)
	if err != nil {
		return nil, err
	}
	mux := gen.AXIMuxConfig{Width: cfg.Width, Masters: 1}
	d := newAXIMuxDriver(mux, seed, cycles-min(cycles/2, 20000))
	d.maxOut = 3 * cfg.Depth
	d.pre = func(int) string { return "s_axi_" }
	lo := uint64(1)<<cfg.OutBits - 1
	d.newID = func(r Rand) uint64 {
		hi := uint64(r.IntN(1 << (cfg.InBits - cfg.OutBits)))
		if r.IntN(2) == 0 {
			return hi<<cfg.OutBits | uint64(r.IntN(2))
		}
		return hi<<cfg.OutBits | uint64(r.IntN(1<<cfg.OutBits))
	}
	d.sidOf = func(_ int, id uint64) uint64 { return id & lo }
	return runAXIPair(rm, wm, d, cycles, func(rd, wr *portSet) axiCycleModels { return newAXIRemapModels(cfg, rd, wr) })
}

// runAXIPair runs the read module rm and the write module wm side by
// side with d driving both, for cycles cycles, and checks them against
// the cycle models models makes, every cycle.
func runAXIPair(rm, wm *gen.Module, d *AXIMuxDriver, cycles uint64, models func(rd, wr *portSet) axiCycleModels) (*AXIMuxDriver, error) {
	rl, err := Load(LibPath(rm.Name, false))
	if err != nil {
		return nil, err
	}
	wl, err := Load(LibPath(wm.Name, false))
	if err != nil {
		return nil, err
	}
	p := &axiMuxPair{d: d, rdL: LayoutOf(rm), wrL: LayoutOf(wm)}
	p.rdP, p.wrP = &portSet{l: p.rdL}, &portSet{l: p.wrL}
	p.models = models(&portSet{l: p.rdL}, &portSet{l: p.wrL})
	p.rdIn, p.rdOut = make([]uint32, p.rdL.InWords), make([]uint32, p.rdL.OutWords)
	p.wrIn, p.wrOut = make([]uint32, p.wrL.InWords), make([]uint32, p.wrL.OutWords)
	p.rdInst, p.wrInst = rl.New(), wl.New()
	defer p.rdInst.Close()
	defer p.wrInst.Close()
	for c := uint64(0); c < cycles && p.d.Err == nil; c++ {
		if err := p.step(); err != nil {
			return p.d, err
		}
	}
	if p.d.Err == nil && p.d.Outstanding() != 0 {
		p.d.fail("%d bursts not finished at the end", p.d.Outstanding())
	}
	return p.d, nil
}
