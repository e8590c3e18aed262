package cardmodel

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// TestSizes moves Sends, RDMA Writes and RDMA Reads of 0 B to 16 MiB
// between two cards, markers and CRC on.
func TestSizes(t *testing.T) {
	o := qpOpts{crc: true, markersTX: true, markersRX: true, mulpdu: 4000}
	p := newPair(t, o, o)
	h := p.h
	const max = 16 << 20
	src, dst := h.alloc(max, 4096), h.alloc(max, 4096)
	lk := p.a.mr(1, 1, 1, 0, src, max, mem.LocalWrite)
	rk := p.b.mr(1, 2, 1, 0, dst, max, mem.LocalWrite|mem.RemoteWrite|mem.RemoteRead)
	for i, n := range []uint32{0, 1, 3981, 3982, 3983, 65536, 1 << 20, max} {
		want := append([]byte(nil), h.fill(src, int(n), byte(i))...)
		p.qb.recv(uint64(i), sge{addr: dst, length: max, lkey: uint32(rk)})
		p.qa.post(sendWR{op: cs.WQEOpcodeSend, id: 1, signaled: true, sgl: []sge{{addr: src, length: n, lkey: uint32(lk)}}})
		p.run(t)
		wantCQE(t, p.a.poll(p.qa.scq), cs.WCStatusSuccess)
		if rc := p.b.poll(p.qb.rcq); len(rc) != 1 || rc[0].ByteLen() != n || rc[0].Status() != cs.WCStatusSuccess {
			t.Fatalf("%d-byte Send: receive completion %v", n, rc)
		}
		equalMem(t, fmt.Sprintf("%d-byte Send", n), h.mem(dst, int(n)), want)

		clear(h.mem(dst, int(n)))
		p.qa.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: 2, signaled: true, raddr: dst, rkey: uint32(rk), sgl: []sge{{addr: src, length: n, lkey: uint32(lk)}}})
		p.run(t)
		if c := p.a.poll(p.qa.scq); len(c) != 1 || c[0].Status() != cs.WCStatusSuccess || c[0].ByteLen() != n {
			t.Fatalf("%d-byte Write: %v", n, c)
		}
		equalMem(t, fmt.Sprintf("%d-byte Write", n), h.mem(dst, int(n)), want)

		clear(h.mem(src, int(n)))
		p.qa.post(sendWR{op: cs.WQEOpcodeRDMARead, id: 3, signaled: true, raddr: dst, rkey: uint32(rk), sgl: []sge{{addr: src, length: n, lkey: uint32(lk)}}})
		p.run(t)
		wantCQE(t, p.a.poll(p.qa.scq), cs.WCStatusSuccess)
		equalMem(t, fmt.Sprintf("%d-byte Read", n), h.mem(src, int(n)), want)
	}
}

// TestSGLInlinePush: 30-element gathers and scatters, inline payloads up
// to 480 bytes, a WQE pushed through BAR0, unsignaled WQEs.
func TestSGLInlinePush(t *testing.T) {
	p := newPair(t, qpOpts{crc: true}, qpOpts{crc: true})
	h := p.h
	rng := rand.New(rand.NewPCG(1, 2))
	src, dst := h.alloc(1<<20, 4096), h.alloc(1<<20, 4096)
	lk := p.a.mr(1, 1, 1, 0, src, 1<<20, mem.LocalWrite)
	rk := p.b.mr(1, 2, 1, 0, dst, 1<<20, mem.LocalWrite|mem.RemoteWrite)
	h.fill(src, 1<<20, 5)
	var gather, scatter []sge
	var want []byte
	off := uint64(0)
	for i := 0; i < cs.MaxSGE; i++ {
		n := uint32(rng.IntN(3000))
		gather = append(gather, sge{addr: src + off, length: n, lkey: uint32(lk)})
		want = append(want, h.mem(src+off, int(n))...)
		off += uint64(n) + uint64(rng.IntN(100))
	}
	rest := uint32(len(want))
	for i := 0; i < cs.MaxSGE; i++ {
		n := min(rest, uint32(rng.IntN(3000)))
		if i == cs.MaxSGE-1 {
			n = rest + 10
		}
		scatter = append(scatter, sge{addr: dst + uint64(i)*4000, length: n, lkey: uint32(rk)})
		rest -= min(rest, n)
	}
	p.qb.recv(1, scatter...)
	p.qa.post(sendWR{op: cs.WQEOpcodeSend, id: 1, signaled: true, sgl: gather})
	p.run(t)
	wantCQE(t, p.a.poll(p.qa.scq), cs.WCStatusSuccess)
	var got []byte
	left := len(want)
	for _, s := range scatter {
		k := min(left, int(s.length))
		got = append(got, h.mem(s.addr, k)...)
		left -= k
	}
	equalMem(t, "30-SGE Send", got, want)

	// Inline: 480 bytes in 8 blocks, a one-block WQE pushed, unsignaled.
	big := make([]byte, cs.MaxInline)
	for i := range big {
		big[i] = byte(i)
	}
	p.qb.recv(2, sge{addr: dst, length: 4096, lkey: uint32(rk)})
	p.qb.recv(3, sge{addr: dst + 4096, length: 4096, lkey: uint32(rk)})
	p.qa.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: 10, inline: []byte("unsignaled"), raddr: dst + 8192, rkey: uint32(rk)})
	p.qa.post(sendWR{op: cs.WQEOpcodeSend, id: 11, signaled: true, inline: big})
	pushed := []byte("pushed through BAR0, no DMA read")
	p.qa.post(sendWR{op: cs.WQEOpcodeSend, id: 12, signaled: true, inline: pushed, push: true})
	reads := 0
	sqLo, sqHi := p.qa.sq, p.qa.sq+cs.BB<<p.qa.sqLog
	h.refuse = func(addr uint64, write bool) bool {
		if !write && addr >= sqLo && addr < sqHi {
			reads++
		}
		return false
	}
	p.run(t)
	h.refuse = nil
	if reads != 9 {
		t.Fatalf("%d SQ blocks read by DMA, want 9 (1 + 8; the pushed one is not)", reads)
	}
	c := p.a.poll(p.qa.scq)
	if len(c) != 2 || c[0].WRID() != 11 || c[1].WRID() != 12 || c[0].ByteLen() != cs.MaxInline {
		t.Fatalf("send completions %v", c)
	}
	if st := p.qa.stat(); st.SQCI() != p.qa.sqPI {
		t.Fatalf("SQ_CI %d, want %d", st.SQCI(), p.qa.sqPI)
	}
	equalMem(t, "inline Write", h.mem(dst+8192, 10), []byte("unsignaled"))
	equalMem(t, "inline Send", h.mem(dst, cs.MaxInline), big)
	equalMem(t, "pushed Send", h.mem(dst+4096, len(pushed)), pushed)
}

// TestFenceORD: a Read waits for room within ORD, a fenced WQE for every
// earlier Read, and completions come in posting order.
func TestFenceORD(t *testing.T) {
	p := newPair(t, qpOpts{ord: 2}, qpOpts{})
	h := p.h
	src, dst := h.alloc(1<<16, 4096), h.alloc(1<<16, 4096)
	lk := p.a.mr(1, 1, 1, 0, src, 1<<16, mem.LocalWrite)
	rk := p.b.mr(1, 2, 1, 0, dst, 1<<16, mem.LocalWrite|mem.RemoteWrite|mem.RemoteRead)
	h.fill(dst, 1<<16, 1)
	for i := 0; i < 4; i++ {
		p.qa.post(sendWR{op: cs.WQEOpcodeRDMARead, id: uint64(i), signaled: true, raddr: dst + uint64(i)*1024, rkey: uint32(rk),
			sgl: []sge{{addr: src + uint64(i)*1024, length: 1024, lkey: uint32(lk)}}})
	}
	p.qa.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: 4, signaled: true, fence: true, raddr: dst + 8192, rkey: uint32(rk),
		sgl: []sge{{addr: src, length: 4096, lkey: uint32(lk)}}})
	p.qa.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: 5, signaled: true, inline: []byte("x"), raddr: dst + 9000, rkey: uint32(rk)})
	p.a.c.Run()
	if got := countFPDUs(t, p.qa.txBytes()); got != 2 {
		t.Fatalf("%d FPDUs sent before any response, want 2 Read Requests (ORD 2)", got)
	}
	p.qa.txsCI = p.qa.stat().TXSPI()
	// The card's transmit bytes were taken above: rewind nothing, the
	// peer never saw them. Start over with a linked pair.
	p = newPair(t, qpOpts{ord: 2}, qpOpts{})
	h = p.h
	src, dst = h.alloc(1<<16, 4096), h.alloc(1<<16, 4096)
	lk = p.a.mr(1, 1, 1, 0, src, 1<<16, mem.LocalWrite)
	rk = p.b.mr(1, 2, 1, 0, dst, 1<<16, mem.LocalWrite|mem.RemoteWrite|mem.RemoteRead)
	want := append([]byte(nil), h.fill(dst, 4096, 1)...)
	for i := 0; i < 4; i++ {
		p.qa.post(sendWR{op: cs.WQEOpcodeRDMARead, id: uint64(i), signaled: true, raddr: dst + uint64(i)*1024, rkey: uint32(rk),
			sgl: []sge{{addr: src + uint64(i)*1024, length: 1024, lkey: uint32(lk)}}})
	}
	// The fenced Write sends back what the Reads brought: it must not
	// start before they completed.
	p.qa.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: 4, signaled: true, fence: true, raddr: dst + 8192, rkey: uint32(rk),
		sgl: []sge{{addr: src, length: 4096, lkey: uint32(lk)}}})
	p.run(t)
	c := p.a.poll(p.qa.scq)
	for i, e := range c {
		if e.WRID() != uint64(i) || e.Status() != cs.WCStatusSuccess {
			t.Fatalf("completion %d: wr %d %v", i, e.WRID(), e.Status())
		}
	}
	if len(c) != 5 {
		t.Fatalf("%d completions", len(c))
	}
	equalMem(t, "fenced Write of what the Reads brought", h.mem(dst+8192, 4096), want)
}

// countFPDUs counts the FPDUs of a transmit stream (markers off).
func countFPDUs(t testing.TB, b []byte) int {
	n := 0
	for len(b) > 0 {
		l := int(b[0])<<8 | int(b[1])
		w := 2 + l + (4-(2+l)%4)%4 + 4
		if w > len(b) {
			t.Fatalf("partial FPDU in the stream")
		}
		b = b[w:]
		n++
	}
	return n
}

// TestMemoryOps: Send with Invalidate, Local Invalidate, and memory
// windows of both types, bound and used.
func TestMemoryOps(t *testing.T) {
	p := newPair(t, qpOpts{}, qpOpts{})
	h := p.h
	a, b := h.alloc(1<<16, 4096), h.alloc(1<<16, 4096)
	la := p.a.mr(1, 1, 1, 0, a, 1<<16, mem.LocalWrite|mem.RemoteWrite|mem.RemoteRead|mem.Bind)
	lb := p.b.mr(1, 2, 1, 0, b, 1<<16, mem.LocalWrite)
	scoped := p.b.mr(2, 3, 1, p.qb.n, b+8192, 4096, mem.RemoteWrite) // stream-scoped: the peer may invalidate it

	// Send with Invalidate of B's stream-scoped STag.
	p.qb.recv(1, sge{addr: b, length: 64, lkey: uint32(lb)})
	p.qa.post(sendWR{op: cs.WQEOpcodeSendInv, id: 1, signaled: true, inline: []byte("inv"), inv: uint32(scoped), solicited: true})
	p.run(t)
	rc := p.b.poll(p.qb.rcq)
	if len(rc) != 1 || !rc[0].Invalidated() || rc[0].InvSTag() != uint32(scoped) || !rc[0].Solicited() {
		t.Fatalf("receive of a Send with SE and Invalidate: %v", rc)
	}
	if p.b.c.tab.lookup(scoped).Valid {
		t.Fatal("the STag is still valid")
	}
	wantCQE(t, p.a.poll(p.qa.scq), cs.WCStatusSuccess)

	// Bind a type 1 and a type 2 window on A's region; B writes through
	// both; A invalidates the type 1 window locally.
	w1, w2 := mem.MakeSTag(10, 0x71), mem.MakeSTag(11, 0x72)
	bind := func(id uint64, w mem.STag, off uint64, access mem.Access, type2 bool) {
		rec := make([]byte, cs.BindSize)
		r := cs.Bind(rec)
		r.SetAddr(a + off)
		r.SetLength(1024)
		r.SetMRSTag(uint32(la))
		r.SetAccess(uint8(access))
		r.SetType2(type2)
		p.qa.post(sendWR{op: cs.WQEOpcodeBindMW, id: id, signaled: true, inv: uint32(w), bind: rec})
	}
	bind(2, w1, 0, mem.RemoteWrite, false)
	bind(3, w2, 2048, mem.RemoteWrite|mem.RemoteRead, true)
	p.run(t)
	c := p.a.poll(p.qa.scq)
	if len(c) != 2 || c[0].Status() != cs.WCStatusSuccess || c[1].Status() != cs.WCStatusSuccess || c[0].Opcode() != cs.WCOpcodeBindMW {
		t.Fatalf("bind completions %v", c)
	}
	p.qb.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: 4, signaled: true, inline: []byte("through window 1"), raddr: a, rkey: uint32(w1)})
	p.qb.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: 5, signaled: true, inline: []byte("through window 2"), raddr: a + 2048, rkey: uint32(w2)})
	p.run(t)
	wantCQE(t, p.b.poll(p.qb.scq), cs.WCStatusSuccess, cs.WCStatusSuccess)
	equalMem(t, "window 1", h.mem(a, 16), []byte("through window 1"))
	equalMem(t, "window 2", h.mem(a+2048, 16), []byte("through window 2"))

	p.qa.post(sendWR{op: cs.WQEOpcodeLocalInv, id: 6, signaled: true, inv: uint32(w1)})
	p.run(t)
	if c := p.a.poll(p.qa.scq); len(c) != 1 || c[0].Opcode() != cs.WCOpcodeLocalInv || c[0].Status() != cs.WCStatusSuccess {
		t.Fatalf("Local Invalidate: %v", c)
	}
	if p.a.c.tab.lookup(w1).Valid || !p.a.c.tab.lookup(w2).Valid {
		t.Fatal("Local Invalidate hit the wrong window")
	}
	// A window may not be used locally (mem.Check: windows are for
	// remote access only).
	p.qa.post(sendWR{op: cs.WQEOpcodeSend, id: 7, signaled: true, sgl: []sge{{addr: a + 2048, length: 16, lkey: uint32(w2)}}})
	p.run(t)
	wantCQE(t, p.a.poll(p.qa.scq), cs.WCStatusLocProtErr)
}

// TestBindRefused: binds mem.MW.Bind refuses get MW_BIND_ERR.
func TestBindRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		access mem.Access // of the region
		win    mem.Access
		off    uint64
		length uint64
		mrPD   uint32
		onMR   bool // the window's index holds a region
	}{
		{"region without Bind", mem.RemoteWrite, mem.RemoteWrite, 0, 16, 1, false},
		{"rights beyond the region's", mem.Bind | mem.RemoteRead, mem.RemoteWrite, 0, 16, 1, false},
		{"local rights", mem.Bind | mem.LocalWrite, mem.LocalWrite, 0, 16, 1, false},
		{"past the region", mem.Bind | mem.RemoteWrite, mem.RemoteWrite, 4090, 16, 1, false},
		{"region of another PD", mem.Bind | mem.RemoteWrite, mem.RemoteWrite, 0, 16, 2, false},
		{"window index holds a region", mem.Bind | mem.RemoteWrite, mem.RemoteWrite, 0, 16, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHost()
			d := newDev(t, h)
			c := d.cq(1, 4)
			q := d.qp(1, c, c, qpOpts{})
			buf := h.alloc(4096, 4096)
			mr := d.mr(1, 1, tc.mrPD, 0, buf, 4096, tc.access)
			w := mem.MakeSTag(2, 9)
			if tc.onMR {
				d.mr(2, 9, 1, 0, buf, 4096, mem.RemoteWrite)
			}
			rec := make([]byte, cs.BindSize)
			r := cs.Bind(rec)
			r.SetAddr(buf + tc.off)
			r.SetLength(tc.length)
			r.SetMRSTag(uint32(mr))
			r.SetAccess(uint8(tc.win))
			q.post(sendWR{op: cs.WQEOpcodeBindMW, id: 1, inv: uint32(w), bind: rec})
			d.c.Run()
			wantCQE(t, d.poll(c), cs.WCStatusMWBindErr)
			if q.stat().State() != cs.QPStateError {
				t.Fatal("QP not in error")
			}
		})
	}
}

// TestManyQPs runs 64 QP pairs at once, each moving a Send and an RDMA
// Write, with the stream moved in odd-sized pieces.
func TestManyQPs(t *testing.T) {
	h := newTestHost()
	a, b := newDev(t, h), newDev(t, h)
	ca, cb := a.cq(1, 10), b.cq(2, 10)
	const nq, size = 64, 20000
	var pairs [][2]*tqp
	type bufs struct{ src, dst, msg uint64 }
	var bs []bufs
	for i := uint32(1); i <= nq; i++ {
		qa := a.qp(i, ca, ca, qpOpts{mulpdu: 512 + int(i)*37, crc: i%2 == 0, markersTX: i%3 == 0, markersRX: i%3 == 0})
		qb := b.qp(i+100, cb, cb, qpOpts{mulpdu: 700, crc: i%2 == 0, markersTX: i%3 == 0, markersRX: i%3 == 0})
		pairs = append(pairs, [2]*tqp{qa, qb})
		x := bufs{h.alloc(size, 64), h.alloc(size, 64), h.alloc(64, 64)}
		bs = append(bs, x)
		lk := a.mr(i, 1, 1, 0, x.src, size, 0)
		rk := b.mr(i, 2, 1, 0, x.dst, size, mem.RemoteWrite)
		mk := b.mr(i+100, 3, 1, 0, x.msg, 64, mem.LocalWrite)
		h.fill(x.src, size, byte(i))
		qb.recv(uint64(i), sge{addr: x.msg, length: 64, lkey: uint32(mk)})
		qa.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: uint64(i), raddr: x.dst, rkey: uint32(rk), sgl: []sge{{addr: x.src, length: size, lkey: uint32(lk)}}})
		qa.post(sendWR{op: cs.WQEOpcodeSend, id: uint64(i), signaled: true, inline: []byte(fmt.Sprint("done ", i))})
	}
	link(t, pairs, 777)
	if got := len(a.poll(ca)); got != nq {
		t.Fatalf("%d send completions, want %d", got, nq)
	}
	rc := b.poll(cb)
	if len(rc) != nq {
		t.Fatalf("%d receive completions, want %d", len(rc), nq)
	}
	for i, x := range bs {
		equalMem(t, fmt.Sprintf("QP %d Write", i+1), h.mem(x.dst, size), h.mem(x.src, size))
		if s := fmt.Sprint("done ", i+1); string(h.mem(x.msg, len(s))) != s {
			t.Fatalf("QP %d message %q", i+1, h.mem(x.msg, len(s)))
		}
	}
}

// TestPushBroken: a push interleaved with another QP's push word, or
// written out of order, still posts its block on its last word, and the
// card reads that block from the SQ; a whole push is not read.
func TestPushBroken(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order func(q, other *tqp, b []byte)
		reads int
	}{
		{"whole", func(q, other *tqp, b []byte) { pushWords(q, b, 0, 16) }, 0},
		{"interleaved", func(q, other *tqp, b []byte) {
			pushWords(q, b, 0, 8)
			other.db(cs.QPDBPush, 0)
			pushWords(q, b, 8, 16)
		}, 1},
		{"out of order", func(q, other *tqp, b []byte) {
			pushWords(q, b, 1, 16)
		}, 1},
		{"a word twice", func(q, other *tqp, b []byte) {
			pushWords(q, b, 0, 5)
			pushWords(q, b, 4, 16)
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newTestHost()
			d := newDev(t, h)
			c := d.cq(1, 4)
			q, other := d.qp(1, c, c, qpOpts{}), d.qp(2, c, c, qpOpts{})
			b := sendWR{op: cs.WQEOpcodeSend, id: 7, signaled: true, inline: []byte("pushed")}.encode()
			q.writeBlocks(q.sq, q.sqLog, q.sqPI, b)
			reads := 0
			h.refuse = func(addr uint64, write bool) bool {
				if !write && addr == q.sq {
					reads++
				}
				return false
			}
			tc.order(q, other, b)
			d.c.Run()
			if reads != tc.reads {
				t.Fatalf("%d SQ reads, want %d", reads, tc.reads)
			}
			if c := d.poll(c); len(c) != 1 || c[0].WRID() != 7 || c[0].Status() != cs.WCStatusSuccess {
				t.Fatalf("completions %v", c)
			}
			if got := q.txBytes(); len(got) == 0 {
				t.Fatal("nothing sent")
			}
		})
	}
}

func pushWords(q *tqp, b []byte, from, to int) {
	for i := from; i < to; i++ {
		q.db(cs.QPDBPush+uint32(4*i), binary.LittleEndian.Uint32(b[4*i:]))
	}
}
