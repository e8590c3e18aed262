package sim

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// placementBench is the co-simulation bench of placement_w<width>; drv
// receives the driver the harness creates, so a test can read what it saw.
func placementBench(width int, mode plMode, drv **plDriver) (*Bench, error) {
	cfg := gen.PlacementDefault(width)
	m, err := gen.Placement(cfg)
	if err != nil {
		return nil, err
	}
	b := NewBench(m, nil, nil)
	b.NewModel = func() (Model, error) { return newPlModel(b.Layout, cfg) }
	b.NewDriver = func(seed uint64) Driver {
		d := newPlDriver(b.Layout, cfg, seed, mode)
		if drv != nil {
			*drv = d
		}
		return d
	}
	return b, nil
}

// plMode selects the driver's traffic.
type plMode struct {
	saturated bool // readies high, no gaps, only good RDMA Writes of payload bytes each
	payload   int
	aligned   bool // host buffers at offset skew of a 64-byte boundary, written from their start
	skew      int
	sparse    int // program only this many random entries at first (0: the whole table)
}

// plShadow is what the driver programmed at one table index.
type plShadow struct {
	cycle.PlacementEntry
	pages []uint64 // paged: page addresses from slot PBL on
}

// footprint calls fn with every host byte range the entry maps, reading
// the page list as the block holds it (slots are shared and rewritten).
func (s *plShadow) footprint(pageList []uint64, fn func(lo, hi uint64)) {
	if !s.Paged {
		fn(s.Addr, s.Addr+s.Length)
		return
	}
	v, end := s.Addr, s.Addr+s.Length
	for v < end {
		pg := v >> gen.PageShift
		n := min(end, (pg+1)<<gen.PageShift) - v
		base := pageList[(uint64(s.PBL)+pg)%uint64(len(pageList))]
		fn(base+v&(1<<gen.PageShift-1), base+v&(1<<gen.PageShift-1)+n)
		v += n
	}
}

// plDriver makes the placement stimulus: it programs random STag tables
// through the register interface (quiescing traffic first, as a host
// fences before changing an entry), then sends random ULPDUs, good and
// hostile, under random gaps and backpressure; after each reprogramming it
// rebuilds the footprint of the valid entries and checks every DMA write
// against it.
type plDriver struct {
	p plPorts
	// reads is what the bench believes of each connection's Reads (by
	// connection number, below plReadQPs): what it issued and answered.
	reads [plReadQPs]plReads
	cfg   gen.PlacementConfig
	mode  plMode
	rng   Rand
	pool  Pool
	src   *AXISSource
	cycle uint64

	phase     int // 0 reset, 1 wait init, 2 program, 3 traffic, 4 drain
	resetLeft int
	regs      []regWrite
	frames    int // frames left in this traffic phase
	drain     int
	readyP    [4]int

	table    []plShadow
	nextPBL  uint32
	used     []uint32   // indexes programmed at least once
	live     []regWrite // register writes made while traffic flows
	clears   []plClear  // connections to clear after their Terminate
	wiped    bool       // a reset cleared the table this cycle
	liveSent bool       // this cycle's register write is d.live[0]
	dropOn   bool       // CTRL.DROP_AFTER_FAIL as programmed
	pageList []uint64   // the page list as programmed

	cur   plFrame
	frame []byte
	fp    map[uint64][][2]uint64 // host page -> allowed byte ranges
	regOK map[uint32]bool        // indexes valid with a write right

	// What the run saw.
	Violation   string
	DMABeats    uint64
	Dones       uint64 // Read Response completions
	HostBeats   uint64
	Terms       map[rdmap.Cause]uint64
	Sent        map[string]uint64
	TrafficCyc  uint64
	TrafficBeat uint64
}

// plClear is a connection the driver clears (CONN_CLEAR) from a given cycle
// on, as a host does once it has torn the failed connection down.
type plClear struct {
	at uint64
	qp uint32
}

// plReadQPs bounds the connections the bench issues Reads on (frames use 1 to 8).
const plReadQPs = 16

// plReads is a connection's Reads as the bench issued them: the count
// placement was told (Read Requests plus one), the sinks not yet fully
// answered, the bytes of the oldest answered so far. Frames dropped or
// refused make it drift from placement's; the cycle model is the judge.
type plReads struct {
	count uint16
	sinks []plSink
	got   uint32
}

// plSink is an issued Read's sink, with the PD its entry has.
type plSink struct {
	cycle.ReadSink
	pd uint32
}

type plFrame struct {
	len    uint16
	qp, pd uint32
	rev    bool
}

func newPlDriver(l Layout, cfg gen.PlacementConfig, seed uint64, mode plMode) *plDriver {
	p, err := lookupPlPorts(l)
	if err != nil {
		panic(err) // the model constructor reports the same error first
	}
	d := &plDriver{p: p, cfg: cfg, mode: mode, rng: NewRand(seed), resetLeft: 3, readyP: [4]int{256, 256, 256, 256},
		table: make([]plShadow, cfg.TableDepth), pageList: make([]uint64, cfg.PBLDepth), Terms: map[rdmap.Cause]uint64{}, Sent: map[string]uint64{}}
	d.pool = NewPool(d.rng, 1<<17)
	d.src = NewAXISSource(p.s, d.rng, d.pool, d.nextFrame)
	return d
}

const plPDs = 3

func (d *plDriver) randEntry(index uint32) plShadow {
	r := d.rng
	var s plShadow
	s.Valid = !r.Chance(20)
	s.Key = uint8(r.Uint32())
	s.PD = 1 + uint32(r.IntN(plPDs))
	if r.Chance(64) {
		s.QP = 1 + uint32(r.IntN(8))
	}
	s.Access = mem.Access(r.IntN(16)) | mem.RemoteWrite
	if r.Chance(40) {
		s.Access &^= mem.RemoteWrite
	}
	if r.Chance(60) {
		s.Access &^= mem.LocalWrite
	}
	s.Length = 1 + uint64(r.IntN(1<<14))
	if r.Chance(64) {
		s.Length = 1 + uint64(r.IntN(1<<18))
	}
	switch x := r.IntN(10); {
	case x < 4:
		s.Base = 0
	case x < 9:
		s.Base = r.Uint64() >> 16
	default:
		s.Base = ^uint64(0) - s.Length - uint64(r.IntN(64)) // near the top: wrap checks
	}
	if d.mode.saturated {
		s.Valid, s.Access, s.QP, s.Base = true, mem.RemoteWrite, 0, r.Uint64()>>20<<6
		s.Length = uint64(d.mode.payload) + uint64(r.IntN(1<<12))
	}
	if !d.mode.saturated && r.Chance(40) && s.Length <= 1<<14 {
		s.Paged = true
		s.Addr = uint64(r.IntN(1 << gen.PageShift))
		n := (s.Addr + s.Length + 1<<gen.PageShift - 1) >> gen.PageShift
		if d.nextPBL+uint32(n) > uint32(d.cfg.PBLDepth) {
			d.nextPBL = 0
		}
		s.PBL = d.nextPBL
		d.nextPBL += uint32(n)
		for i := uint64(0); i < n; i++ {
			s.pages = append(s.pages, r.Uint64()>>16<<gen.PageShift)
		}
		return s
	}
	s.Addr = r.Uint64() >> 16
	if d.mode.aligned || r.Chance(128) {
		s.Addr = s.Addr&^63 + uint64(d.mode.skew)
	}
	return s
}

func (d *plDriver) program(index uint32, s plShadow) {
	w := func(name string, v uint64) {
		d.regs = append(d.regs, regWrite{gen.PlacementRegMap().Reg(name).Offset, uint32(v)})
	}
	for i, pg := range s.pages {
		d.pageList[(int(s.PBL)+i)%len(d.pageList)] = pg &^ (1<<gen.PageShift - 1)
		w("PBL_INDEX", uint64(s.PBL)+uint64(i))
		w("PBL_ADDR_LO", pg)
		w("PBL_ADDR_HI", pg>>32)
		w("PBL_COMMIT", 0)
	}
	w("STAG_INDEX", uint64(index))
	ctrl := uint64(s.Key) | uint64(s.Access)<<8
	if s.Paged {
		ctrl |= 1 << 16
	}
	if s.Valid {
		ctrl |= 1 << 31
	}
	w("STAG_CTRL", ctrl)
	w("STAG_PD", uint64(s.PD))
	w("STAG_QP", uint64(s.QP))
	w("STAG_BASE_LO", s.Base)
	w("STAG_BASE_HI", s.Base>>32)
	w("STAG_LEN_LO", s.Length)
	w("STAG_LEN_HI", s.Length>>32)
	w("STAG_ADDR_LO", s.Addr)
	w("STAG_ADDR_HI", s.Addr>>32)
	w("STAG_PBL", uint64(s.PBL))
	w("STAG_COMMIT", 0)
	if index < uint32(d.cfg.TableDepth) {
		if d.table[index].Length == 0 {
			d.used = append(d.used, index)
		}
		d.table[index] = s
	}
}

// liveCommit queues, for while traffic flows, the commit of an invalid
// entry over an index that is already invalid: it changes no footprint but
// exercises staging and table writes that collide with lookups (a lookup in
// the cycle of the write reads the old contents).
func (d *plDriver) liveCommit() {
	idx := uint32(d.rng.IntN(d.cfg.TableDepth))
	if d.table[idx].Valid {
		return
	}
	saved := d.regs
	d.regs = nil
	s := d.randEntry(idx)
	s.Valid, s.pages, s.Paged = false, nil, false
	d.program(idx, s)
	d.live, d.regs = d.regs, saved
	d.Sent["live commit"]++
}

// plan queues the register writes of one programming phase: the whole
// table the first time, then a few changes (re-registrations with a new
// key, invalidations, commits to indexes past the table).
func (d *plDriver) plan(first bool) {
	// Drop-after-failure is on after every reset and toggled now and then.
	if first || d.rng.Chance(32) {
		d.dropOn = first || !d.dropOn
		d.regs = append(d.regs, regWrite{gen.PlacementRegMap().Reg("CTRL").Offset, uint32(b2u(d.dropOn))})
		d.Sent[fmt.Sprintf("drop after failure %v", d.dropOn)]++
	}
	n := d.cfg.TableDepth
	if !first {
		n = 8 + d.rng.IntN(40)
	} else if d.mode.sparse > 0 {
		n = d.mode.sparse
	}
	for i := 0; i < n; i++ {
		idx := uint32(i)
		if !first || d.mode.sparse > 0 {
			idx = uint32(d.rng.IntN(d.cfg.TableDepth))
		}
		switch {
		case !first && d.rng.Chance(64):
			d.regs = append(d.regs, regWrite{gen.PlacementRegMap().Reg("STAG_INVALIDATE").Offset, idx})
			d.table[idx].Valid = false
		case !first && d.rng.Chance(8):
			d.program(uint32(d.cfg.TableDepth)+uint32(d.rng.IntN(1<<20)), d.randEntry(0)) // ignored by the block
		default:
			d.program(idx, d.randEntry(idx))
		}
	}
	d.rebuild()
}

// rebuild computes the footprint of every valid entry with a write right.
func (d *plDriver) rebuild() {
	d.fp = map[uint64][][2]uint64{}
	d.regOK = map[uint32]bool{}
	for i := range d.table {
		s := &d.table[i]
		if !s.Valid || s.Access&(mem.RemoteWrite|mem.LocalWrite) == 0 || s.Length == 0 {
			continue
		}
		d.regOK[uint32(i)] = true
		s.footprint(d.pageList, func(lo, hi uint64) {
			for pg := lo >> gen.PageShift; pg<<gen.PageShift < hi; pg++ {
				d.fp[pg] = append(d.fp[pg], [2]uint64{lo, hi})
			}
		})
	}
}

// checkDMA is the safety property: every byte a DMA write strobes lies in
// the footprint of a valid entry that has a write right.
func (d *plDriver) checkDMA(addr, strb uint64) {
	lanes := d.cfg.Width / 8
	if addr%uint64(lanes) != 0 && d.Violation == "" {
		d.Violation = fmt.Sprintf("cycle %d: DMA address %#x not block aligned", d.cycle, addr)
	}
	for o := 0; o < lanes; o++ {
		if strb>>o&1 == 0 {
			continue
		}
		a := addr + uint64(o)
		ok := false
		for _, r := range d.fp[a>>gen.PageShift] {
			if a >= r[0] && a < r[1] {
				ok = true
				break
			}
		}
		if !ok && d.Violation == "" {
			d.Violation = fmt.Sprintf("cycle %d: DMA write of byte %#x outside every valid region", d.cycle, a)
		}
	}
}

func (d *plDriver) randPayload() int {
	r := d.rng
	l := d.cfg.Width / 8
	switch x := r.IntN(16); {
	case x < 6:
		return r.IntN(3 * l)
	case x < 12:
		return r.IntN(600)
	case x < 15:
		return 256 + r.IntN(4000)
	default:
		return r.IntN(9000)
	}
}

// validIndexes picks a programmed, valid index with the given right (or any).
func (d *plDriver) pick(need mem.Access) (uint32, bool) {
	for try := 0; try < 16 && len(d.used) > 0; try++ {
		i := d.used[d.rng.IntN(len(d.used))]
		s := &d.table[i]
		if s.Valid && s.Access&need == need && s.Length > 0 {
			return i, true
		}
	}
	return 0, false
}

func (d *plDriver) nextFrame() []byte {
	d.frames--
	r := d.rng
	d.cur = plFrame{rev: !r.Chance(24), pd: 1 + uint32(r.IntN(plPDs)), qp: 1 + uint32(r.IntN(8))}
	ver := ddp.VersionRDMAC
	if d.cur.rev {
		ver = ddp.Version1
	}
	f := d.frame[:0]
	kind := r.IntN(100)
	if d.mode.saturated {
		kind = 0
		d.cur.rev, ver = true, ddp.Version1
	}
	switch {
	case kind < 55 && !d.mode.saturated && r.Chance(128) && d.answer(ver):
		f = d.frame
	case kind < 55: // tagged Write or Read Response, good or hostile
		op, need := rdmap.OpWrite, mem.RemoteWrite
		if !d.mode.saturated && r.Chance(64) {
			op, need = rdmap.OpReadResponse, mem.LocalWrite
		}
		idx, ok := d.pick(need)
		s := d.table[idx]
		stag := uint32(mem.MakeSTag(idx, s.Key))
		n := d.randPayload()
		if d.mode.saturated {
			n = d.mode.payload
		}
		n = min(n, int(s.Length))
		to := s.Base + uint64(r.IntN(int(s.Length)-n+1))
		if d.mode.aligned {
			to = s.Base
		}
		d.cur.pd = s.PD
		if s.QP != 0 {
			d.cur.qp = s.QP
		}
		what := "good"
		if !d.mode.saturated && (!ok || r.Chance(100)) {
			switch h := r.IntN(10); h {
			case 0:
				stag = uint32(mem.MakeSTag(uint32(d.cfg.TableDepth)+uint32(r.IntN(1<<20)), uint8(r.Uint32())))
				what = "index past the table"
			case 1:
				stag ^= uint32(1 + r.IntN(255))
				what = "wrong key"
			case 2:
				d.cur.pd = s.PD%plPDs + 1
				what = "wrong PD"
			case 3:
				d.cur.qp = s.QP + 1
				what = "wrong stream"
			case 4:
				to, n = s.Base-1, max(n, 1)
				what = "one byte below"
			case 5:
				n = max(n, 1)
				to = s.Base + s.Length - uint64(n) + 1
				what = "one byte above"
			case 6:
				to, n = ^uint64(0)-uint64(r.IntN(16)), max(n, 17)
				what = "TO wrap"
			case 7:
				op = rdmap.OpReadResponse + rdmap.OpWrite - op // the other right
				what = "missing right"
			case 8:
				stag = uint32(mem.MakeSTag(uint32(r.IntN(d.cfg.TableDepth)), uint8(r.Uint32())))
				what = "random STag"
			default:
				idx = uint32(r.IntN(d.cfg.TableDepth))
				stag = uint32(mem.MakeSTag(idx, d.table[idx].Key))
				what = "any entry"
			}
		}
		if !ok {
			what = "no entry with the right"
		}
		d.Sent["tagged "+what]++
		f = ddp.TaggedFields{Last: r.Chance(128), Version: ver, RsvdULP: uint8(rdmap.NewControl(rdmap.Version(ver), op)),
			STag: stag, TO: to}.Append(f)
		f = append(f, d.pool.Slice(r, n)...)
	case kind < 80: // untagged, good header
		ops := []rdmap.Opcode{rdmap.OpSend, rdmap.OpSendInvalidate, rdmap.OpSendSE, rdmap.OpSendSEInvalidate, rdmap.OpReadRequest, rdmap.OpTerminate}
		op := ops[r.IntN(len(ops))]
		info, _ := op.Info()
		f = ddp.UntaggedFields{Last: r.Chance(160), Version: ver, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version(ver), op)),
			RsvdULP1: r.Uint32(), QN: info.QN, MSN: r.Uint32(), MO: r.Uint32()}.Append(f)
		f = append(f, d.pool.Slice(r, d.randPayload())...)
		d.Sent["untagged"]++
	default: // hostile headers
		ops := rdmap.Opcode(r.IntN(16))
		tagged := r.Chance(100)
		v := ver
		rv := rdmap.Version(ver)
		switch r.IntN(4) {
		case 0:
			v ^= 1
		case 1:
			rv ^= 1 + rdmap.Version(r.IntN(3))&1
		}
		if tagged {
			f = ddp.TaggedFields{Version: v, RsvdULP: uint8(rdmap.NewControl(rv, ops)), STag: r.Uint32(), TO: r.Uint64()}.Append(f)
		} else {
			f = ddp.UntaggedFields{Version: v, RsvdULP0: uint8(rdmap.NewControl(rv, ops)), QN: uint32(r.IntN(6)) << (r.IntN(2) * 30),
				MSN: r.Uint32(), MO: r.Uint32()}.Append(f)
		}
		f = append(f, d.pool.Slice(r, d.randPayload())...)
		if r.Chance(40) {
			f = append(f[:0], d.pool.Slice(r, 1+r.IntN(40))...) // garbage, often shorter than a header
		}
		d.Sent["hostile header"]++
	}
	d.cur.len = uint16(min(len(f), 65535))
	if !d.mode.saturated && r.Chance(12) { // the sideband length disagrees with the frame
		d.cur.len = uint16(max(0, len(f)+r.IntN(41)-20))
		d.Sent["length mismatch"]++
	}
	if len(f) == 0 {
		f = append(f, 0)
	}
	d.frame = f
	return f
}

// issue reports a Read Request sent on the traffic's connection, its
// sink in a region with the local write right (now and then one without,
// or a zero-length Read), while it has fewer than 16 outstanding.
func (d *plDriver) issue(in []uint32) {
	p, r := d.p, d.rng
	q := d.cur.qp
	if q >= plReadQPs || len(d.reads[q].sinks) >= 16 {
		return
	}
	rd := &d.reads[q]
	var sk plSink
	if idx, ok := d.pick(mem.LocalWrite); ok || r.Chance(20) {
		e := d.table[idx]
		n := min(uint64(r.IntN(3000)), e.Length)
		if r.Chance(16) {
			n = 0
		}
		sk = plSink{ReadSink: cycle.ReadSink{STag: uint32(mem.MakeSTag(idx, e.Key)), TO: e.Base + uint64(r.IntN(int(e.Length-n)+1)), Len: uint32(n)}, pd: e.PD}
	}
	rd.count = max(rd.count, 1) + 1
	rd.sinks = append(rd.sinks, sk)
	p.rdIssV.Set(in, 1)
	p.rdIssQP.Set(in, uint64(q))
	p.rdIssN.Set(in, uint64(rd.count))
	p.rdIssSTag.Set(in, uint64(sk.STag))
	p.rdIssTO.Set(in, sk.TO)
	p.rdIssLen.Set(in, uint64(sk.Len))
	d.Sent["Read issued"]++
}

// answer frames the next Read Response segment of a connection with a
// Read outstanding (in the bench's belief) into d.frame, or reports
// false when none has one. One in eight is hostile: another STag, the
// wrong TO, too long, or a last segment that leaves bytes out.
func (d *plDriver) answer(ver ddp.Version) bool {
	r := d.rng
	waiting := func(q uint32) bool { // a Read outstanding, and no Terminate awaiting its clear
		return len(d.reads[q].sinks) > 0 && !slices.ContainsFunc(d.clears, func(c plClear) bool { return c.qp == q })
	}
	q := uint32(1 + r.IntN(plReadQPs-1))
	for k := 0; k < plReadQPs && !waiting(q); k++ {
		q = q%(plReadQPs-1) + 1
	}
	if !waiting(q) {
		return false
	}
	rd := &d.reads[q]
	sk := rd.sinks[0]
	left := sk.Len - rd.got
	n := uint32(r.IntN(int(min(left, 3000)) + 1))
	switch {
	case r.Chance(96):
		n = left // the rest at once
	case r.Chance(64):
		n = 0
	}
	last := n == left
	stag, to := sk.STag, sk.TO+uint64(rd.got)
	what := "Read Response answering"
	if r.Chance(32) {
		switch r.IntN(3 + int(b2u(left > 0))) {
		case 0:
			stag ^= 1 << r.IntN(32)
			n = max(n, 1)
			what = "Read Response to another STag"
		case 1:
			to += uint64(1 + r.IntN(64))
			n = max(n, 1)
			what = "Read Response at the wrong TO"
		case 2:
			n = left + uint32(1+r.IntN(64))
			what = "Read Response too long"
		default:
			last, n = true, uint32(r.IntN(int(min(left, 3000))))
			what = "Read Response cut short"
		}
	} else {
		rd.got += n
		if last {
			rd.sinks, rd.got = rd.sinks[1:], 0
		}
	}
	d.Sent[what]++
	d.cur.qp, d.cur.pd = q, sk.pd
	d.frame = ddp.TaggedFields{Last: last, Version: ver, RsvdULP: uint8(rdmap.NewControl(rdmap.Version(ver), rdmap.OpReadResponse)),
		STag: stag, TO: to}.Append(d.frame[:0])
	d.frame = append(d.frame, d.pool.Slice(r, int(n))...)
	return true
}

func (d *plDriver) Next(in []uint32) {
	d.cycle++
	p := d.p
	rng := d.rng
	p.rst.Set(in, 0)
	p.regWr.Set(in, 0)
	p.regAddr.Set(in, uint64(rng.Uint32()&0xFF))
	p.regData.Set(in, uint64(rng.Uint32()))
	p.s.Valid.Set(in, 0)
	p.drop.Set(in, 0)
	p.killV.Set(in, 0)
	p.clrV.Set(in, 0)
	p.rdChk.Set(in, 0)
	p.rdIssV.Set(in, 0)
	for i, rp := range []Port{p.dmaReady, p.hostReady, p.termReady, p.dReady} {
		p := d.readyP[i]
		if d.phase != 3 {
			p = 256
		}
		rp.Set(in, b2u(rng.Chance(p)))
	}
	switch d.phase {
	case 0:
		p.rst.Set(in, 1)
	case 2:
		if len(d.regs) > 0 && (d.mode.saturated || rng.Chance(200)) {
			w := d.regs[0]
			p.regWr.Set(in, 1)
			p.regAddr.Set(in, uint64(w.addr))
			p.regData.Set(in, uint64(w.data))
		}
	case 3:
		d.TrafficCyc++
		if !d.mode.saturated && d.cycle%4096 == 0 {
			pr := Pressures[rng.IntN(len(Pressures))]
			d.src.ValidP = pr.Valid
			for i := range d.readyP {
				d.readyP[i] = pr.Ready
				if rng.Chance(64) {
					d.readyP[i] = 256
				}
			}
		}
		if !d.mode.saturated && rng.Uint32()%400000 == 0 {
			// A reset in the middle of traffic: the table must be cleared
			// and programmed again.
			d.phase, d.resetLeft = 0, 1+rng.IntN(3)
			d.src.Abort()
			d.live, d.clears, d.wiped = nil, nil, true // the table is forgotten once this cycle's outputs are checked
			p.rst.Set(in, 1)
			d.Sent["reset"]++
			return
		}
		if len(d.live) == 0 && d.frames > 0 && !d.mode.saturated && rng.Chance(2) {
			d.liveCommit()
		}
		switch {
		case len(d.clears) > 0 && d.clears[0].at <= d.cycle:
			p.regWr.Set(in, 1)
			p.regAddr.Set(in, uint64(gen.PlacementRegMap().Reg("CONN_CLEAR").Offset))
			p.regData.Set(in, uint64(d.clears[0].qp))
			d.clears = d.clears[1:]
		case len(d.live) > 0 && rng.Chance(64):
			p.regWr.Set(in, 1)
			p.regAddr.Set(in, uint64(d.live[0].addr))
			p.regData.Set(in, uint64(d.live[0].data))
			d.liveSent = true
		}
		if !d.mode.saturated {
			// The card's ports: drop-after-fail forced on in alternate
			// stretches, outside failures and clears of the connection
			// the traffic is on, now and then.
			p.drop.Set(in, b2u(d.cycle>>13&1 == 1))
			p.killV.Set(in, b2u(rng.Chance(1)))
			p.killQP.Set(in, uint64(d.cur.qp))
			p.clrV.Set(in, b2u(rng.Chance(1)))
			p.clrQP.Set(in, uint64(d.cur.qp))
			// The Read check in alternate stretches, Read Requests sent
			// on the traffic's connection now and then.
			p.rdChk.Set(in, b2u(d.cycle>>14&1 == 1))
			if p.clrV.Get(in) != 0 && d.cur.qp < plReadQPs {
				d.reads[d.cur.qp] = plReads{} // created anew: nothing outstanding
			} else if rng.Chance(4) {
				d.issue(in)
			}
		}
		d.src.Drive(in)
		p.uLen.Set(in, uint64(d.cur.len))
		p.uQP.Set(in, uint64(d.cur.qp))
		p.uPD.Set(in, uint64(d.cur.pd))
		p.uRev.Set(in, b2u(d.cur.rev))
	}
	if d.phase != 3 {
		p.s.Data.SetBytes(in, d.pool.Slice(rng, p.s.Lanes))
		p.s.Last.Set(in, uint64(rng.Uint32()&1))
	}
}

func (d *plDriver) Observe(in, out []uint32) {
	p := d.p
	if p.dmaValid.Get(out) != 0 {
		d.DMABeats++
		strb := p.dmaStrb.Get(out)
		if p.dmaStrb.Words > 2 {
			// 64 lanes fit the first two words; wider strobes do not exist here.
			panic("strobes wider than 64 lanes")
		}
		d.checkDMA(p.dmaAddr.Get(out), strb)
	}
	if p.hValid.Get(out) != 0 && p.hostReady.Get(in) != 0 {
		d.HostBeats++
	}
	if p.dValid.Get(out) != 0 && p.dReady.Get(in) != 0 {
		d.Dones++
	}
	if p.tValid.Get(out) != 0 && p.termReady.Get(in) != 0 {
		d.Terms[rdmap.Cause(p.tCause.Get(out))]++
		// The host tears the connection down and clears it a little later;
		// until then its segments are dropped.
		d.clears = append(d.clears, plClear{at: d.cycle + 20 + uint64(d.rng.IntN(300)), qp: uint32(p.tQP.Get(out))})
	}
	if d.wiped {
		d.table, d.used, d.wiped = make([]plShadow, d.cfg.TableDepth), nil, false
		d.rebuild()
	}
	switch d.phase {
	case 0:
		d.resetLeft--
		if d.resetLeft == 0 {
			d.phase = 1
		}
	case 1:
		if p.initDone.Get(out) != 0 {
			d.plan(true)
			d.phase = 2
		}
	case 2:
		if len(d.regs) > 0 && p.regWr.Get(in) != 0 {
			d.regs = d.regs[1:]
		}
		if len(d.regs) == 0 {
			d.phase, d.frames = 3, 200+d.rng.IntN(400)
			d.src.ValidP = 256
		}
	case 3:
		if p.s.Valid.Get(in) != 0 && p.s.Ready.Get(out) != 0 {
			d.TrafficBeat++
		}
		if d.liveSent {
			d.live, d.liveSent = d.live[1:], false
		}
		d.src.Observe(in, out)
		// A live commit is finished before the table is reprogrammed: the
		// staging registers are shared.
		if d.frames <= 0 && d.src.frame == nil && !d.src.holding && len(d.live) == 0 {
			d.phase, d.drain = 4, 32
		}
	case 4:
		d.drain--
		if d.drain == 0 {
			d.plan(false)
			d.phase = 2
		}
	}
}

// summary lists what the driver sent and saw, for the test log.
func (d *plDriver) summary() string {
	var keys []string
	for k := range d.Sent {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := fmt.Sprintf("DMA beats %d, host beats %d, Read Response completions %d; sent:", d.DMABeats, d.HostBeats, d.Dones)
	for _, k := range keys {
		s += fmt.Sprintf(" %s=%d", k, d.Sent[k])
	}
	s += "; Terminates:"
	var cs []int
	for c := range d.Terms {
		cs = append(cs, int(c))
	}
	sort.Ints(cs)
	for _, c := range cs {
		s += fmt.Sprintf(" %#04x=%d", c, d.Terms[rdmap.Cause(c)])
	}
	return s
}

// BenchmarkPlacementThroughput measures the engine at full speed (every
// ready high, tvalid always high) with the 4096-entry table full, on RDMA
// Writes of a fixed payload: input beats accepted per cycle while traffic
// flows (table programming excluded), with host buffers at random
// alignments and at fixed offsets from a 64-byte boundary. Every cycle is still checked
// against the model.
func BenchmarkPlacementThroughput(b *testing.B) {
	for _, w := range gen.PlacementWidths {
		for _, payload := range []int{256, 1024, 4096} {
			for _, skew := range []int{-1, 0, 8} {
				name := fmt.Sprintf("w%d/%dB_", w, payload)
				if skew < 0 {
					name += "random"
				} else {
					name += fmt.Sprintf("at%d", skew)
				}
				b.Run(name, func(b *testing.B) {
					var drv *plDriver
					bench, err := placementBench(w, plMode{saturated: true, payload: payload, aligned: skew >= 0, skew: max(skew, 0)}, &drv)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := bench.Run(1, uint64(max(b.N, 300000))); err != nil {
						b.Fatal(err)
					}
					if drv.Violation != "" {
						b.Fatal(drv.Violation)
					}
					b.ReportMetric(float64(drv.TrafficBeat)/float64(drv.TrafficCyc), "beats/cycle")
					b.ReportMetric(float64(drv.DMABeats)/float64(drv.TrafficCyc), "dma/cycle")
				})
			}
		}
	}
}
