package cardmodel

import (
	"testing"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// pair is two cards, each with one QP, linked back to back.
type pair struct {
	h      *testHost
	a, b   *dev
	qa, qb *tqp
}

func newPair(t testing.TB, oa, ob qpOpts) *pair {
	h := newTestHost()
	p := &pair{h: h, a: newDev(t, h), b: newDev(t, h)}
	ca, cb := p.a.cq(1, 10), p.b.cq(1, 10)
	p.qa = p.a.qp(1, ca, ca, oa)
	p.qb = p.b.qp(1, cb, cb, ob)
	return p
}

func (p *pair) run(t testing.TB) { link(t, [][2]*tqp{{p.qa, p.qb}}, 0) }

func wantCQE(t testing.TB, got []cs.CQE, want ...cs.WCStatus) {
	t.Helper()
	if len(got) != len(want) {
		for _, e := range got {
			t.Logf("CQE wr %d op %v status %v len %d", e.WRID(), e.Opcode(), e.Status(), e.ByteLen())
		}
		t.Fatalf("%d CQEs, want %d", len(got), len(want))
	}
	for i, e := range got {
		if e.Status() != want[i] {
			t.Fatalf("CQE %d (wr %d, %v): status %v, want %v", i, e.WRID(), e.Opcode(), e.Status(), want[i])
		}
	}
}

func TestSendRecvWriteRead(t *testing.T) {
	for _, o := range []qpOpts{{}, {crc: true, markersTX: true, markersRX: true}, {rev0: true, crc: true}} {
		p := newPair(t, o, o)
		h := p.h
		const n = 100_000
		src := h.alloc(n, 64)
		want := append([]byte(nil), h.fill(src, n, 1)...)
		dst := h.alloc(n, 64)
		lk := p.a.mr(1, 0x11, 1, 0, src, n, mem.LocalWrite|mem.RemoteRead)
		rk := p.b.mr(2, 0x22, 1, 0, dst, n, mem.LocalWrite|mem.RemoteWrite|mem.RemoteRead)

		// Send into a posted receive.
		p.qb.recv(7, sge{addr: dst, length: n, lkey: uint32(rk)})
		p.qa.post(sendWR{op: cs.WQEOpcodeSend, id: 1, signaled: true, sgl: []sge{{addr: src, length: n, lkey: uint32(lk)}}})
		p.run(t)
		wantCQE(t, p.a.poll(p.qa.scq), cs.WCStatusSuccess)
		rc := p.b.poll(p.qb.rcq)
		wantCQE(t, rc, cs.WCStatusSuccess)
		if rc[0].ByteLen() != n || rc[0].WRID() != 7 || rc[0].Opcode() != cs.WCOpcodeRecv {
			t.Fatalf("receive CQE: len %d wr %d op %v", rc[0].ByteLen(), rc[0].WRID(), rc[0].Opcode())
		}
		equalMem(t, "Send payload", h.mem(dst, n), want)

		// RDMA Write.
		clear(h.mem(dst, n))
		p.qa.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: 2, signaled: true, raddr: dst, rkey: uint32(rk), sgl: []sge{{addr: src, length: n, lkey: uint32(lk)}}})
		p.run(t)
		wantCQE(t, p.a.poll(p.qa.scq), cs.WCStatusSuccess)
		equalMem(t, "RDMA Write payload", h.mem(dst, n), want)

		// RDMA Read back into a cleared source.
		clear(h.mem(src, n))
		p.qa.post(sendWR{op: cs.WQEOpcodeRDMARead, id: 3, signaled: true, raddr: dst, rkey: uint32(rk), sgl: []sge{{addr: src, length: n, lkey: uint32(lk)}}})
		p.run(t)
		rd := p.a.poll(p.qa.scq)
		wantCQE(t, rd, cs.WCStatusSuccess)
		if rd[0].Opcode() != cs.WCOpcodeRDMARead || rd[0].ByteLen() != n {
			t.Fatalf("Read CQE: %v len %d", rd[0].Opcode(), rd[0].ByteLen())
		}
		equalMem(t, "RDMA Read payload", h.mem(src, n), want)
		if ev := p.a.events(); len(ev) != 0 {
			t.Fatalf("unexpected event %v", ev[0].Type())
		}
	}
}

// TestRecvSGLCheckedWhole: a Send segment spanning two receive SGEs, the
// second with an lkey of another PD, writes no byte at all (not even the
// first SGE's part, which passes its check): every piece of a segment is
// checked before any is written. The receiver sends the Terminate of a
// failed placement and its receive completes in error.
func TestRecvSGLCheckedWhole(t *testing.T) {
	p := newPair(t, qpOpts{}, qpOpts{})
	h := p.h
	src, dst, other := h.alloc(64, 64), h.alloc(64, 64), h.alloc(64, 64)
	h.fill(src, 64, 3)
	lk := p.a.mr(1, 0x11, 1, 0, src, 64, mem.LocalWrite)
	rk := p.b.mr(2, 0x22, 1, 0, dst, 64, mem.LocalWrite)
	bad := p.b.mr(3, 0x33, 2, 0, other, 64, mem.LocalWrite) // PD 2: not the QP's
	var written []uint64
	h.refuse = func(addr uint64, write bool) bool {
		if write && (addr >= dst && addr < dst+64 || addr >= other && addr < other+64) {
			written = append(written, addr)
		}
		return false
	}
	p.qb.recv(7, sge{addr: dst, length: 16, lkey: uint32(rk)}, sge{addr: other, length: 48, lkey: uint32(bad)})
	p.qa.post(sendWR{op: cs.WQEOpcodeSend, id: 1, signaled: true, sgl: []sge{{addr: src, length: 64, lkey: uint32(lk)}}})
	p.run(t)
	if len(written) != 0 {
		t.Fatalf("%d payload writes (first at %#x) from a segment that failed its check", len(written), written[0])
	}
	if ev := p.b.events(); len(ev) == 0 || ev[0].Type() != cs.EQETypeTermSent {
		t.Fatalf("receiver events %v, want TERM_SENT first", evTypes(ev))
	}
}
