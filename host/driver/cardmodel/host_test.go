package cardmodel

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"testing"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	pr "github.com/openiwarp/openiwarp/host/driver/regs"
)

// testHost is host memory as a set of allocated regions; a DMA outside
// them is refused, as an IOMMU does. Each region has guard bytes on
// either side that no DMA may reach.
type testHost struct {
	regs   []*region
	next   uint64
	irqs   []int
	writes []DMAWrite // every DMA write, in order (copies)
	refuse func(addr uint64, write bool) bool
	view   bool // the card may read it in place (Viewer)
}

// inPlace makes the hosts newTestHost returns readable in place
// (Viewer); hostsMade collects them. Tests that set them do not run in
// parallel.
var (
	inPlace   bool
	hostsMade []*testHost
)

type region struct {
	addr uint64
	b    []byte
}

func newTestHost() *testHost {
	h := &testHost{next: 0x1_0000_0000, view: inPlace}
	hostsMade = append(hostsMade, h)
	return h
}

// ViewMem is Viewer, for a host made with inPlace set; it refuses what
// ReadMem would refuse, page by page.
func (h *testHost) ViewMem(addr uint64, n int) ([]byte, error) {
	b := h.find(addr, n)
	if !h.view || b == nil {
		return nil, fmt.Errorf("test host: %#x+%d not viewable", addr, n)
	}
	for a := addr; h.refuse != nil && a < addr+uint64(n); a = (a + 4096) &^ 4095 {
		if h.refuse(a, false) {
			return nil, fmt.Errorf("IOMMU: read of %#x refused", a)
		}
	}
	return b, nil
}

// alloc returns the address of n zeroed bytes aligned to align.
func (h *testHost) alloc(n int, align uint64) uint64 {
	if align < 64 {
		align = 64
	}
	a := (h.next + 4096 + align - 1) &^ (align - 1) // a guard page at least
	h.regs = append(h.regs, &region{addr: a, b: make([]byte, n)})
	h.next = a + uint64(n)
	return a
}

func (h *testHost) find(addr uint64, n int) []byte {
	i := sort.Search(len(h.regs), func(i int) bool { return h.regs[i].addr+uint64(len(h.regs[i].b)) > addr })
	if i == len(h.regs) {
		return nil
	}
	r := h.regs[i]
	if addr < r.addr || addr+uint64(n) > r.addr+uint64(len(r.b)) {
		return nil
	}
	return r.b[addr-r.addr : addr-r.addr+uint64(n)]
}

func (h *testHost) mem(addr uint64, n int) []byte {
	b := h.find(addr, n)
	if b == nil {
		panic(fmt.Sprintf("test host: no memory at %#x+%d", addr, n))
	}
	return b
}

func (h *testHost) ReadMem(addr uint64, p []byte) error {
	b := h.find(addr, len(p))
	if b == nil || h.refuse != nil && h.refuse(addr, false) {
		return fmt.Errorf("IOMMU: read of %#x+%d refused", addr, len(p))
	}
	copy(p, b)
	return nil
}

func (h *testHost) WriteMem(addr uint64, p []byte) error {
	b := h.find(addr, len(p))
	if b == nil || h.refuse != nil && h.refuse(addr, true) {
		return fmt.Errorf("IOMMU: write of %#x+%d refused", addr, len(p))
	}
	copy(b, p)
	return nil
}

func (h *testHost) Interrupt(v int) { h.irqs = append(h.irqs, v) }

// dev is a minimal test driver of one card over a testHost.
type dev struct {
	t      testing.TB
	c      *Card
	h      *testHost
	eq     uint64
	eqLog  uint32
	eqCI   uint32
	qpstat uint64
	cqs    map[uint32]*tcq
}

type tcq struct {
	n    uint32
	base uint64
	log  uint32
	ci   uint32
}

type tqp struct {
	d                *dev
	n                uint32
	sq, rq, txs, rxs uint64
	sqLog, rqLog     uint32
	txsLog, rxsLog   uint32
	sqPI, rqPI       uint16
	txsCI, rxsPI     uint32
	scq, rcq         *tcq
}

func newDev(t testing.TB, h *testHost) *dev {
	t.Helper()
	d := &dev{t: t, h: h, cqs: map[uint32]*tcq{}, eqLog: 10}
	var err error
	d.c, err = New(Config{Width: 64, Host: h, Observe: func(w DMAWrite) {
		h.writes = append(h.writes, DMAWrite{Kind: w.Kind, QPN: w.QPN, Addr: w.Addr, Data: append([]byte(nil), w.Data...)})
	}})
	if err != nil {
		t.Fatal(err)
	}
	d.eq = h.alloc(cs.EQESize<<d.eqLog, cs.EQESize<<d.eqLog)
	d.qpstat = h.alloc(cs.QPStatSize*cs.MaxQP, 4096)
	d.w(cs.EQBaseLo, uint32(d.eq))
	d.w(cs.EQBaseHi, uint32(d.eq>>32))
	d.w(cs.EQCfg, d.eqLog|1<<cs.EQCfgEnableShift|3<<cs.EQCfgVectorShift)
	d.w(cs.QpstatBaseLo, uint32(d.qpstat))
	d.w(cs.QpstatBaseHi, uint32(d.qpstat>>32))
	d.w(cs.Ctrl, 1)
	return d
}

func (d *dev) w(off, v uint32) {
	d.t.Helper()
	if err := d.c.Write32(off, v); err != nil {
		d.t.Fatalf("Write32(%#x, %#x): %v", off, v, err)
	}
}

func (d *dev) cq(n, log uint32) *tcq {
	base := d.h.alloc(cs.CQESize<<log, cs.CQESize<<log)
	d.w(cs.CQNum, n)
	d.w(cs.CQBaseLo, uint32(base))
	d.w(cs.CQBaseHi, uint32(base>>32))
	d.w(cs.CQCfg, log)
	d.w(cs.CQCmd, uint32(cs.CQOpCreate))
	q := &tcq{n: n, base: base, log: log}
	d.cqs[n] = q
	return q
}

// qpOpts are a test QP's parameters.
type qpOpts struct {
	pd                   uint32
	sqLog, rqLog         uint32
	txsLog, rxsLog       uint32
	mulpdu               int
	markersTX, markersRX bool
	crc, rev0            bool
	ord, ird             int
}

func (o qpOpts) withDefaults() qpOpts {
	if o.sqLog == 0 {
		o.sqLog = 8
	}
	if o.rqLog == 0 {
		o.rqLog = 8
	}
	if o.txsLog == 0 {
		o.txsLog = 17
	}
	if o.rxsLog == 0 {
		o.rxsLog = 17
	}
	if o.mulpdu == 0 {
		o.mulpdu = 1448
	}
	if o.ord == 0 {
		o.ord = 4
	}
	if o.ird == 0 {
		o.ird = 4
	}
	if o.pd == 0 {
		o.pd = 1
	}
	return o
}

func (d *dev) qp(n uint32, scq, rcq *tcq, o qpOpts) *tqp {
	d.t.Helper()
	o = o.withDefaults()
	q := &tqp{d: d, n: n, scq: scq, rcq: rcq, sqLog: o.sqLog, rqLog: o.rqLog, txsLog: o.txsLog, rxsLog: o.rxsLog}
	q.sq = d.h.alloc(cs.BB<<o.sqLog, cs.BB<<o.sqLog)
	q.rq = d.h.alloc(cs.BB<<o.rqLog, cs.BB<<o.rqLog)
	q.txs = d.h.alloc(1<<o.txsLog, 1<<o.txsLog)
	q.rxs = d.h.alloc(1<<o.rxsLog, 1<<o.rxsLog)
	d.w(cs.QPNum, n)
	d.w(cs.QPPD, o.pd)
	for i, a := range []uint64{q.sq, q.rq, q.txs, q.rxs} {
		d.w(cs.QPSQBaseLo+uint32(8*i), uint32(a))
		d.w(cs.QPSQBaseHi+uint32(8*i), uint32(a>>32))
	}
	d.w(cs.QPSizes, o.sqLog|o.rqLog<<8|o.txsLog<<16|o.rxsLog<<24)
	d.w(cs.QPCqs, scq.n|rcq.n<<16)
	m := uint32(o.mulpdu)
	for i, b := range []bool{o.markersTX, o.markersRX, o.crc, o.rev0} {
		if b {
			m |= 1 << (16 + i)
		}
	}
	d.w(cs.QPMPA, m)
	d.w(cs.QPRD, uint32(o.ord)|uint32(o.ird)<<8)
	d.w(cs.QPCmd, uint32(cs.QPOpCreate))
	return q
}

// stat returns the QP's status record.
func (q *tqp) stat() cs.QPStat {
	return cs.QPStat(q.d.h.mem(q.d.qpstat+uint64(q.n)*cs.QPStatSize, cs.QPStatSize))
}

func (q *tqp) db(reg, v uint32) { q.d.w(cs.QPDBBase+q.n*cs.QPDBStride+reg, v) }

// mr registers [addr, addr+n) as a contiguous region at STag index idx.
func (d *dev) mr(idx uint32, key uint8, pd, qp uint32, addr uint64, n uint64, access mem.Access) mem.STag {
	return d.mrAt(idx, key, pd, qp, addr, addr, n, access)
}

// mrAt registers n bytes at host address addr as tagged offsets from to.
func (d *dev) mrAt(idx uint32, key uint8, pd, qp uint32, to, addr uint64, n uint64, access mem.Access) mem.STag {
	p := func(off, v uint32) { d.w(cs.PlacementWindow+off, v) }
	p(pr.StagIndex, idx)
	p(pr.StagCtrl, uint32(key)|uint32(access)<<pr.StagCtrlAccessShift|1<<pr.StagCtrlValidShift)
	p(pr.StagPd, pd)
	p(pr.StagQp, qp)
	p(pr.StagBaseLo, uint32(to))
	p(pr.StagBaseHi, uint32(to>>32))
	p(pr.StagLenLo, uint32(n))
	p(pr.StagLenHi, uint32(n>>32))
	p(pr.StagAddrLo, uint32(addr))
	p(pr.StagAddrHi, uint32(addr>>32))
	p(pr.StagPbl, 0)
	p(pr.StagCommit, 0)
	return mem.MakeSTag(idx, key)
}

// sendWR is a send WQE to post.
type sendWR struct {
	op                         cs.WQEOpcode
	id                         uint64
	signaled, solicited, fence bool
	inline                     []byte
	sgl                        []sge
	raddr                      uint64
	rkey, inv                  uint32
	bind                       []byte
	bbs                        int // 0: as needed
	push                       bool
	nsge                       int // -1: as sgl
}

// encode builds the WQE's blocks.
func (wr sendWR) encode() []byte {
	body := 0
	switch {
	case wr.inline != nil:
		body = len(wr.inline)
	case wr.bind != nil:
		body = len(wr.bind)
	default:
		body = len(wr.sgl) * cs.SGESize
	}
	need := max(1, (cs.WQEHdr+body+cs.BB-1)/cs.BB)
	bbs := wr.bbs
	if bbs == 0 {
		bbs = need
	}
	b := make([]byte, max(bbs, need)*cs.BB)
	h := cs.WQE(b)
	h.SetOpcode(wr.op)
	h.SetSignaled(wr.signaled)
	h.SetSolicited(wr.solicited)
	h.SetFence(wr.fence)
	h.SetBBS(uint8(bbs))
	h.SetWRID(wr.id)
	h.SetRemoteAddr(wr.raddr)
	h.SetRKey(wr.rkey)
	h.SetInvSTag(wr.inv)
	switch {
	case wr.inline != nil:
		h.SetInline(true)
		h.SetInlineLen(uint16(len(wr.inline)))
		copy(b[cs.WQEHdr:], wr.inline)
	case wr.bind != nil:
		copy(b[cs.WQEHdr:], wr.bind)
	default:
		h.SetNSGE(uint8(len(wr.sgl)))
		for i, s := range wr.sgl {
			e := cs.SGE(b[cs.WQEHdr+i*cs.SGESize:])
			e.SetAddr(s.addr)
			e.SetLength(s.length)
			e.SetLKey(s.lkey)
		}
	}
	if wr.nsge != 0 {
		h.SetNSGE(uint8(wr.nsge))
	}
	return b
}

// post writes a WQE into the ring at its producer index and rings the
// doorbell (or pushes it).
func (q *tqp) post(wr sendWR) {
	b := wr.encode()
	if wr.bbs > 0 && wr.bbs*cs.BB < len(b) {
		b = b[:wr.bbs*cs.BB] // a WQE that does not fit its BBS
	}
	q.writeBlocks(q.sq, q.sqLog, q.sqPI, b)
	if wr.push {
		for i := 0; i < cs.BB/4; i++ {
			q.db(cs.QPDBPush+uint32(4*i), binary.LittleEndian.Uint32(b[4*i:]))
		}
		q.sqPI++
		return
	}
	q.sqPI += uint16(len(b) / cs.BB)
	q.db(cs.QPDBSQPI, uint32(q.sqPI))
}

func (q *tqp) recv(id uint64, sgl ...sge) {
	wr := sendWR{op: cs.WQEOpcodeRecv, id: id, sgl: sgl}
	b := wr.encode()
	q.writeBlocks(q.rq, q.rqLog, q.rqPI, b)
	q.rqPI += uint16(len(b) / cs.BB)
	q.db(cs.QPDBRQPI, uint32(q.rqPI))
}

func (q *tqp) writeBlocks(base uint64, log uint32, pi uint16, b []byte) {
	for i := 0; i < len(b)/cs.BB; i++ {
		idx := uint64(pi+uint16(i)) & (1<<log - 1)
		copy(q.d.h.mem(base+idx*cs.BB, cs.BB), b[i*cs.BB:])
	}
}

// poll returns the new CQEs of cq (copies) and acknowledges them.
func (d *dev) poll(q *tcq) []cs.CQE {
	var out []cs.CQE
	for {
		size := uint32(1) << q.log
		e := cs.CQE(d.h.mem(q.base+uint64(q.ci%size)*cs.CQESize, cs.CQESize))
		if e.Owner() != (q.ci>>q.log&1 == 0) {
			break
		}
		out = append(out, cs.CQE(append([]byte(nil), e...)))
		q.ci++
	}
	if len(out) > 0 {
		d.w(cs.CQDBBase+q.n*cs.CQDBStride, q.ci&cs.CQDBCICIMask)
	}
	return out
}

// events returns the new EQEs (copies) and acknowledges them.
func (d *dev) events() []cs.EQE {
	var out []cs.EQE
	for {
		size := uint32(1) << d.eqLog
		e := cs.EQE(d.h.mem(d.eq+uint64(d.eqCI%size)*cs.EQESize, cs.EQESize))
		if e.Owner() != (d.eqCI>>d.eqLog&1 == 0) {
			break
		}
		out = append(out, cs.EQE(append([]byte(nil), e...)))
		d.eqCI++
	}
	d.w(cs.EQDB, d.eqCI&cs.EQDBCIMask)
	return out
}

// pipe moves transmit stream bytes of a into the receive ring of b, as
// much as both rings allow, in pieces of at most chunk bytes (0: any).
// It reports the bytes moved.
func pipe(a, b *tqp, chunk int) int {
	moved := 0
	for {
		pi := a.stat().TXSPI()
		avail := pi - a.txsCI
		space := uint32(1)<<b.rxsLog - (b.rxsPI - b.stat().RXSCI())
		n := min(avail, space)
		if chunk > 0 {
			n = min(n, uint32(chunk))
		}
		if n == 0 {
			return moved
		}
		buf := make([]byte, n)
		a.readTX(a.txsCI, buf)
		b.writeRX(b.rxsPI, buf)
		a.txsCI += n
		b.rxsPI += n
		a.db(cs.QPDBTXSCI, a.txsCI)
		b.db(cs.QPDBRXSPI, b.rxsPI)
		moved += int(n)
	}
}

func (q *tqp) readTX(at uint32, p []byte) {
	size := uint32(1) << q.txsLog
	for len(p) > 0 {
		pos := at & (size - 1)
		k := min(uint32(len(p)), size-pos)
		copy(p, q.d.h.mem(q.txs+uint64(pos), int(k)))
		p, at = p[k:], at+k
	}
}

func (q *tqp) writeRX(at uint32, p []byte) {
	size := uint32(1) << q.rxsLog
	for len(p) > 0 {
		pos := at & (size - 1)
		k := min(uint32(len(p)), size-pos)
		copy(q.d.h.mem(q.rxs+uint64(pos), int(k)), p)
		p, at = p[k:], at+k
	}
}

// txBytes drains what the card has written to the transmit ring.
func (q *tqp) txBytes() []byte {
	pi := q.stat().TXSPI()
	buf := make([]byte, pi-q.txsCI)
	q.readTX(q.txsCI, buf)
	q.txsCI = pi
	q.db(cs.QPDBTXSCI, q.txsCI)
	return buf
}

// feed puts p into the receive ring (which must have room).
func (q *tqp) feed(p []byte) {
	q.writeRX(q.rxsPI, p)
	q.rxsPI += uint32(len(p))
	q.db(cs.QPDBRXSPI, q.rxsPI)
}

// link runs two cards, moving the stream between QP pairs, until nothing
// moves. It fails the test if it has not settled after many rounds.
func link(t testing.TB, pairs [][2]*tqp, chunk int) {
	t.Helper()
	for round := 0; ; round++ {
		if round > 1_000_000 {
			t.Fatal("link: still moving after a million rounds")
		}
		work := 0
		seen := map[*Card]bool{}
		for _, p := range pairs {
			for _, q := range p {
				if !seen[q.d.c] {
					seen[q.d.c] = true
					work += q.d.c.Run()
				}
			}
		}
		for _, p := range pairs {
			work += pipe(p[0], p[1], chunk) + pipe(p[1], p[0], chunk)
		}
		if work == 0 {
			return
		}
	}
}

func (h *testHost) fill(addr uint64, n int, seed byte) []byte {
	b := h.mem(addr, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

func equalMem(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: %d bytes differ from byte %d on", what, len(want), i)
	}
}
