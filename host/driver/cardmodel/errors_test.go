package cardmodel

import (
	"testing"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// single is one card with one QP whose peer is the test.
type single struct {
	h   *testHost
	d   *dev
	c   *tcq
	q   *tqp
	buf uint64
	lk  mem.STag
}

func newSingle(t testing.TB, o qpOpts) *single {
	h := newTestHost()
	d := newDev(t, h)
	c := d.cq(1, 6)
	s := &single{h: h, d: d, c: c, q: d.qp(1, c, c, o), buf: h.alloc(1<<16, 4096)}
	s.lk = d.mr(1, 1, 1, 0, s.buf, 1<<16, mem.LocalWrite|mem.RemoteWrite|mem.RemoteRead)
	return s
}

func wantEvents(t testing.TB, got []cs.EQE, want ...cs.EQEType) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", evTypes(got), want)
	}
	for i := range got {
		if got[i].Type() != want[i] {
			t.Fatalf("events %v, want %v", evTypes(got), want)
		}
	}
}

// TestMalformedWQE: each malformed WQE completes with LOC_QP_OP_ERR, puts
// the QP in error with a Terminate, and the WQE after it is flushed.
func TestMalformedWQE(t *testing.T) {
	sg := func(n int) []sge {
		s := make([]sge, n)
		for i := range s {
			s[i] = sge{length: 1}
		}
		return s
	}
	for _, tc := range []struct {
		name string
		wr   sendWR
	}{
		{"opcode 7", sendWR{op: 7}},
		{"RECV on the SQ", sendWR{op: cs.WQEOpcodeRecv}},
		{"BBS 0", sendWR{op: cs.WQEOpcodeSend, bbs: 0, nsge: 0, inline: []byte{}, push: true}},
		{"BBS 9", sendWR{op: cs.WQEOpcodeSend, bbs: 9}},
		{"NSGE 31", sendWR{op: cs.WQEOpcodeSend, bbs: 8, nsge: 31}},
		{"NSGE past BBS", sendWR{op: cs.WQEOpcodeSend, sgl: sg(3), bbs: 1}},
		{"inline past BBS", sendWR{op: cs.WQEOpcodeSend, inline: make([]byte, 100), bbs: 1}},
		{"inline Read", sendWR{op: cs.WQEOpcodeRDMARead, inline: []byte("x")}},
		{"Read with two SGEs", sendWR{op: cs.WQEOpcodeRDMARead, sgl: sg(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSingle(t, qpOpts{})
			wr := tc.wr
			wr.id = 1
			if tc.name == "BBS 0" {
				b := wr.encode()
				cs.WQE(b).SetBBS(0)
				s.q.writeBlocks(s.q.sq, s.q.sqLog, s.q.sqPI, b)
				s.q.sqPI++
				s.q.db(cs.QPDBSQPI, uint32(s.q.sqPI))
			} else {
				s.q.post(wr)
			}
			s.d.c.Run()
			s.q.post(sendWR{op: cs.WQEOpcodeSend, id: 2, signaled: true, inline: []byte("after")})
			s.d.c.Run()
			c := s.d.poll(s.c)
			wantCQE(t, c, cs.WCStatusLocQPOpErr, cs.WCStatusWRFlushErr)
			ev := s.d.events()
			wantEvents(t, ev, cs.EQETypeTermSent)
			term := terminateIn(t, s.q.txBytes(), false, false)
			if term.Cause != rdmap.RDMAPLocalCatastrophic {
				t.Fatalf("Terminate %v", term.Cause)
			}
			if st := s.q.stat(); st.State() != cs.QPStateError || st.SQCI() != s.q.sqPI {
				t.Fatalf("state %v SQ_CI %d (PI %d)", st.State(), st.SQCI(), s.q.sqPI)
			}
		})
	}
}

// TestLocalProtection: an lkey of another PD, past its region, or
// invalidated fails the WQE with LOC_PROT_ERR before a byte is read.
func TestLocalProtection(t *testing.T) {
	for _, tc := range []struct {
		name string
		sge  func(s *single) sge
	}{
		{"another PD", func(s *single) sge {
			k := s.d.mr(2, 2, 7, 0, s.buf, 4096, mem.LocalWrite)
			return sge{addr: s.buf, length: 16, lkey: uint32(k)}
		}},
		{"past the region", func(s *single) sge { return sge{addr: s.buf + 1<<16 - 8, length: 16, lkey: uint32(s.lk)} }},
		{"wrong key", func(s *single) sge { return sge{addr: s.buf, length: 16, lkey: uint32(s.lk) ^ 1} }},
		{"stream-scoped to another QP", func(s *single) sge {
			k := s.d.mr(3, 3, 1, 9, s.buf, 4096, mem.LocalWrite)
			return sge{addr: s.buf, length: 16, lkey: uint32(k)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSingle(t, qpOpts{})
			bad := tc.sge(s)
			reads := 0
			s.h.refuse = func(addr uint64, write bool) bool {
				if !write && addr >= s.buf && addr < s.buf+1<<16 {
					reads++
				}
				return false
			}
			s.q.post(sendWR{op: cs.WQEOpcodeSend, id: 1, sgl: []sge{{addr: s.buf, length: 8, lkey: uint32(s.lk)}, bad}})
			s.d.c.Run()
			wantCQE(t, s.d.poll(s.c), cs.WCStatusLocProtErr)
			if reads != 0 {
				t.Fatalf("%d payload reads before the check failed", reads)
			}
			wantEvents(t, s.d.events(), cs.EQETypeTermSent)
		})
	}
}

// TestBadDoorbell: a producer index past the ring, or behind what the
// card took, is QP_ERROR BAD_DOORBELL.
func TestBadDoorbell(t *testing.T) {
	for _, tc := range []struct {
		name string
		ring func(q *tqp)
	}{
		{"SQ past the ring", func(q *tqp) { q.db(cs.QPDBSQPI, 1<<q.sqLog+1) }},
		{"RQ past the ring", func(q *tqp) { q.db(cs.QPDBRQPI, 1<<q.rqLog+1) }},
		{"SQ backwards", func(q *tqp) {
			q.post(sendWR{op: cs.WQEOpcodeSend, inline: []byte("x")})
			q.d.c.Run()
			q.db(cs.QPDBSQPI, 0xffff)
		}},
		{"RXS past the ring", func(q *tqp) { q.db(cs.QPDBRXSPI, 1<<q.rxsLog+1) }},
		{"TXS_CI past TXS_PI", func(q *tqp) {
			q.db(cs.QPDBTXSCI, 100)
			q.post(sendWR{op: cs.WQEOpcodeSend, inline: []byte("x")})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSingle(t, qpOpts{sqLog: 4, rqLog: 4})
			tc.ring(s.q)
			s.d.c.Run()
			ev := s.d.events()
			if len(ev) == 0 || ev[0].Type() != cs.EQETypeQPError || cs.QPErr(ev[0].Info()) != cs.QPErrBadDoorbell {
				t.Fatalf("events %v", evTypes(ev))
			}
			if s.q.stat().State() != cs.QPStateError {
				t.Fatal("QP not in error")
			}
		})
	}
}

// TestDMAFault: a refused DMA read of the SQ is DMA_FAULT, QP_ERROR DMA,
// the fault registers; a refused write of the EQ stops the card.
func TestDMAFault(t *testing.T) {
	s := newSingle(t, qpOpts{})
	sq := s.q.sq
	s.h.refuse = func(addr uint64, write bool) bool { return !write && addr == sq }
	s.q.post(sendWR{op: cs.WQEOpcodeSend, id: 1, inline: []byte("x")})
	s.d.c.Run()
	s.h.refuse = nil
	wantEvents(t, s.d.events(), cs.EQETypeDMAFault, cs.EQETypeQPError)
	lo, _ := s.d.c.Read32(cs.DMAFaultAddrLo)
	hi, _ := s.d.c.Read32(cs.DMAFaultAddrHi)
	info, _ := s.d.c.Read32(cs.DMAFaultInfo)
	if uint64(hi)<<32|uint64(lo) != sq || info&0xffff != 1 || info>>24 != 1 || info>>18&1 != 0 {
		t.Fatalf("fault registers %#x %#x info %#x", hi, lo, info)
	}
	if term := terminateIn(t, s.q.txBytes(), false, false); term.Cause != rdmap.RDMAPLocalCatastrophic {
		t.Fatalf("Terminate %v after a DMA fault, want Local Catastrophic", term.Cause)
	}

	// A fault writing the transmit ring ends the stream without a Terminate.
	s = newSingle(t, qpOpts{})
	txs := s.q.txs
	s.h.refuse = func(addr uint64, write bool) bool { return write && addr == txs }
	s.q.post(sendWR{op: cs.WQEOpcodeSend, id: 1, inline: []byte("x")})
	s.d.c.Run()
	s.h.refuse = nil
	wantEvents(t, s.d.events(), cs.EQETypeDMAFault, cs.EQETypeQPError)
	if st := s.q.stat(); st.TXSPI() != 0 || !st.TXClosed() {
		t.Fatalf("TXS_PI %d, TX_CLOSED %v after a fault on the ring", st.TXSPI(), st.TXClosed())
	}

	// An FPDU that wraps round the ring, its second piece refused: TXS_PI
	// stays at the FPDU's start (a card publishes whole FPDUs only).
	s = newSingle(t, qpOpts{txsLog: 13, mulpdu: 4000})
	txs = s.q.txs
	s.q.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: 1, raddr: 0x1000, rkey: 7, sgl: []sge{{addr: s.buf, length: 7900, lkey: uint32(s.lk)}}})
	s.d.c.Run()
	first := len(s.q.txBytes())
	if first < 4096 || 8192-first >= 300 {
		t.Fatalf("the first FPDU took %d bytes of the ring", first)
	}
	s.h.refuse = func(addr uint64, write bool) bool { return write && addr >= txs && addr < txs+4096 }
	s.q.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: 2, raddr: 0x1000, rkey: 7, sgl: []sge{{addr: s.buf, length: 300, lkey: uint32(s.lk)}}})
	s.d.c.Run()
	s.h.refuse = nil
	wantEvents(t, s.d.events(), cs.EQETypeDMAFault, cs.EQETypeQPError)
	if st := s.q.stat(); st.TXSPI() != uint32(first) || !st.TXClosed() {
		t.Fatalf("TXS_PI %d (the wrapping FPDU starts at %d), TX_CLOSED %v", st.TXSPI(), first, st.TXClosed())
	}

	s = newSingle(t, qpOpts{})
	eq := s.d.eq
	s.h.refuse = func(addr uint64, write bool) bool { return write && addr >= eq && addr < eq+cs.EQESize<<s.d.eqLog }
	s.d.w(cs.QPCmd, uint32(cs.QPOpError))
	s.d.c.Run()
	if v, _ := s.d.c.Read32(cs.Status); v&2 == 0 {
		t.Fatal("a fault on the EQ did not set STATUS.FATAL")
	}
	if s.d.c.Step() {
		t.Fatal("a fatal card still works")
	}
}

// TestCQError: a CQE whose write faults puts its CQ in error (CQ_ERROR,
// the fault registers name the CQE) and every QP on that CQ in error
// (QP_ERROR DMA, a Local Catastrophic Terminate); the CQ never gets a CQE
// again until it is destroyed, and a QP on other CQs goes on.
func TestCQError(t *testing.T) {
	h := newTestHost()
	d := newDev(t, h)
	bad, other := d.cq(1, 4), d.cq(2, 4)
	q1 := d.qp(1, bad, other, qpOpts{})
	q2 := d.qp(2, other, bad, qpOpts{})
	q3 := d.qp(3, other, other, qpOpts{})
	q1.post(sendWR{op: cs.WQEOpcodeSend, id: 1, signaled: true, inline: []byte("a")})
	d.c.Run()
	if got := d.poll(bad); len(got) != 1 {
		t.Fatalf("%d CQEs before the fault", len(got))
	}
	slot := bad.base + cs.CQESize // the second CQE's
	h.refuse = func(addr uint64, write bool) bool { return write && addr == slot }
	q1.post(sendWR{op: cs.WQEOpcodeSend, id: 2, signaled: true, inline: []byte("b")})
	d.c.Run()
	h.refuse = nil
	ev := d.events()
	wantEvents(t, ev, cs.EQETypeCQError, cs.EQETypeQPError, cs.EQETypeQPError)
	if ev[0].Obj() != bad.n || ev[0].Info() != uint32(slot) {
		t.Fatalf("CQ_ERROR of CQ %d at %#x, want CQ %d at %#x", ev[0].Obj(), ev[0].Info(), bad.n, uint32(slot))
	}
	for i, want := range []uint32{1, 2} {
		if e := ev[1+i]; e.Obj() != want || cs.QPErr(e.Info()) != cs.QPErrDMA {
			t.Fatalf("event %d: QP_ERROR of QP %d (%v), want QP %d, DMA", 1+i, e.Obj(), cs.QPErr(e.Info()), want)
		}
	}
	lo, _ := d.c.Read32(cs.DMAFaultAddrLo)
	info, _ := d.c.Read32(cs.DMAFaultInfo)
	if lo != uint32(slot) || info&0xffff != 1 || info>>18&1 != 1 {
		t.Fatalf("DMA_FAULT_ADDR_LO %#x, INFO %#x: want the CQE's address, QP 1, a write", lo, info)
	}
	for _, q := range []*tqp{q1, q2} {
		if term := terminateIn(t, q.txBytes(), false, false); term.Cause != rdmap.RDMAPLocalCatastrophic {
			t.Fatalf("QP %d: Terminate %v, want Local Catastrophic", q.n, term.Cause)
		}
	}
	// The CQ takes nothing more: QP 2's flush goes to its send CQ only.
	q2.post(sendWR{op: cs.WQEOpcodeSend, id: 3, signaled: true, inline: []byte("c")})
	q2.recv(4, sge{addr: 0, length: 0})
	q3.post(sendWR{op: cs.WQEOpcodeSend, id: 5, signaled: true, inline: []byte("d")})
	d.c.Run()
	if got := d.poll(bad); len(got) != 0 {
		t.Fatalf("a CQ in error got %d CQEs", len(got))
	}
	got := d.poll(other)
	if len(got) != 2 || got[0].WRID() != 3 || got[0].Status() != cs.WCStatusWRFlushErr || got[1].WRID() != 5 || got[1].Status() != cs.WCStatusSuccess {
		t.Fatalf("other CQ: %v", got)
	}
	if ev := d.events(); len(ev) != 0 {
		t.Fatalf("events after the CQ error: %v", evTypes(ev))
	}
	// DESTROY and CREATE give a CQ that works.
	for _, n := range []uint32{1, 2} {
		d.w(cs.QPNum, n)
		d.w(cs.QPCmd, uint32(cs.QPOpDestroy))
	}
	d.w(cs.CQNum, bad.n)
	d.w(cs.CQCmd, uint32(cs.CQOpDestroy))
	bad = d.cq(1, 4)
	q4 := d.qp(4, bad, bad, qpOpts{})
	q4.post(sendWR{op: cs.WQEOpcodeSend, id: 6, signaled: true, inline: []byte("e")})
	d.c.Run()
	if got := d.poll(bad); len(got) != 1 || got[0].Status() != cs.WCStatusSuccess {
		t.Fatalf("a CQ created again: %v", got)
	}
}

// TestCQOverrun: a full CQ loses the completion, reports CQ_OVERRUN once
// and puts its QPs in error.
func TestCQOverrun(t *testing.T) {
	h := newTestHost()
	d := newDev(t, h)
	c := d.cq(1, 1)
	q := d.qp(1, c, c, qpOpts{})
	for i := 0; i < 4; i++ {
		q.post(sendWR{op: cs.WQEOpcodeSend, id: uint64(i), signaled: true, inline: []byte("x")})
	}
	d.c.Run()
	ev := d.events()
	wantEvents(t, ev, cs.EQETypeCQOverrun, cs.EQETypeQPError)
	if ev[0].Obj() != 1 || cs.QPErr(ev[1].Info()) != cs.QPErrCQOverrun {
		t.Fatalf("overrun of CQ %d, QP error %v", ev[0].Obj(), cs.QPErr(ev[1].Info()))
	}
	if got := d.poll(c); len(got) != 2 {
		t.Fatalf("%d CQEs in a 2-entry CQ", len(got))
	}
	if term := terminateIn(t, q.txBytes(), false, false); term.Cause != rdmap.RDMAPLocalCatastrophic {
		t.Fatalf("Terminate %v after a CQ overrun, want Local Catastrophic", term.Cause)
	}
}

// TestArming: CQ arming (any, solicited only), EQ arming and the
// interrupt, at most one per arm.
func TestArming(t *testing.T) {
	p := newPair(t, qpOpts{}, qpOpts{})
	h := p.h
	buf := h.alloc(4096, 4096)
	k := p.b.mr(1, 1, 1, 0, buf, 4096, mem.LocalWrite)
	for i := 0; i < 4; i++ {
		p.qb.recv(uint64(i), sge{addr: buf, length: 4096, lkey: uint32(k)})
	}
	cq := p.qb.rcq
	p.b.w(cs.CQDBBase+cq.n*cs.CQDBStride, 1<<30|1<<31) // solicited only
	p.b.w(cs.EQDB, 1<<31)
	p.qa.post(sendWR{op: cs.WQEOpcodeSend, inline: []byte("plain")})
	p.run(t)
	if ev := p.b.events(); len(ev) != 0 || len(h.irqs) != 0 {
		t.Fatalf("a plain Send notified a solicited-only CQ: %v, %d interrupts", evTypes(ev), len(h.irqs))
	}
	p.qa.post(sendWR{op: cs.WQEOpcodeSend, inline: []byte("se"), solicited: true})
	p.qa.post(sendWR{op: cs.WQEOpcodeSend, inline: []byte("se again"), solicited: true})
	p.run(t)
	ev := p.b.events()
	wantEvents(t, ev, cs.EQETypeCQNotify)
	if ev[0].Obj() != cq.n || len(h.irqs) != 1 || h.irqs[0] != 3 {
		t.Fatalf("CQ_NOTIFY of CQ %d, interrupts %v", ev[0].Obj(), h.irqs)
	}
	// Re-arm with an event pending past CI: the interrupt comes at once.
	p.b.w(cs.CQDBBase+cq.n*cs.CQDBStride, 1<<30)
	p.qa.post(sendWR{op: cs.WQEOpcodeSend, inline: []byte("any")})
	p.run(t)
	p.b.w(cs.EQDB, p.b.eqCI|1<<31)
	p.b.c.Run()
	if len(h.irqs) != 2 {
		t.Fatalf("interrupts %v after arming with an event pending", h.irqs)
	}
}

// TestStreamEnd: RX_FIN at an FPDU boundary is STREAM_END; inside an
// FPDU, QP_ERROR STREAM_CUT; RX_LOST is QP_ERROR LLP_LOST and flushes.
func TestStreamEnd(t *testing.T) {
	f := mpa.Framer{CRC: true}
	fpdu, _ := f.AppendFPDU(nil, hWrite(1, 0, true, nil))
	for _, tc := range []struct {
		name  string
		feed  []byte
		flags uint32
		want  []cs.EQEType
		info  cs.QPErr
	}{
		{"FIN at a boundary", fpdu, 1 << cs.QPDBStreamRXFinShift, []cs.EQEType{cs.EQETypeStreamEnd}, 0},
		{"FIN inside an FPDU", fpdu[:len(fpdu)-1], 1 << cs.QPDBStreamRXFinShift, []cs.EQEType{cs.EQETypeQPError}, cs.QPErrStreamCut},
		{"FIN inside the length", fpdu[:1], 1 << cs.QPDBStreamRXFinShift, []cs.EQEType{cs.EQETypeQPError}, cs.QPErrStreamCut},
		{"connection lost", nil, 1 << cs.QPDBStreamRXLostShift, []cs.EQEType{cs.EQETypeQPError}, cs.QPErrLLPLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSingle(t, qpOpts{crc: true})
			s.q.recv(5, sge{addr: s.buf, length: 8, lkey: uint32(s.lk)})
			s.q.feed(tc.feed)
			s.d.c.Run()
			s.q.db(cs.QPDBStream, tc.flags)
			s.d.c.Run()
			ev := s.d.events()
			wantEvents(t, ev, tc.want...)
			if tc.info != 0 {
				if cs.QPErr(ev[0].Info()) != tc.info {
					t.Fatalf("QP_ERROR %v, want %v", cs.QPErr(ev[0].Info()), tc.info)
				}
				wantCQE(t, s.d.poll(s.c), cs.WCStatusWRFlushErr)
				if st := s.q.stat(); st.State() != cs.QPStateError || !st.TXClosed() {
					t.Fatalf("state %v", st.State())
				}
				if len(s.q.txBytes()) != 0 {
					t.Fatal("a Terminate was sent for a lost stream")
				}
			}
		})
	}
}

// TestTerminateReceived: a peer's Terminate is TERM_RECV with its cause,
// the WQE in flight completes with the matching remote error, the rest
// is flushed, and no Terminate answers it.
func TestTerminateReceived(t *testing.T) {
	s := newSingle(t, qpOpts{crc: true})
	s.q.post(sendWR{op: cs.WQEOpcodeRDMARead, id: 1, signaled: true, raddr: 0, rkey: 5, sgl: []sge{{addr: s.buf, length: 64, lkey: uint32(s.lk)}}})
	s.q.post(sendWR{op: cs.WQEOpcodeSend, id: 2, signaled: true, inline: []byte("x")})
	s.q.recv(3, sge{addr: s.buf, length: 64, lkey: uint32(s.lk)})
	s.d.c.Run()
	sent := s.q.txBytes()
	term := &rdmap.Terminate{Cause: rdmap.RDMAPInvalidSTag}
	f := mpa.Framer{CRC: true}
	b, _ := f.AppendFPDU(nil, term.AppendMessage(nil, 1, 1, 1))
	s.q.feed(b)
	s.d.c.Run()
	ev := s.d.events()
	wantEvents(t, ev, cs.EQETypeTermRecv)
	if c := rdmap.NewCause(rdmap.Layer(ev[0].TermLayer()), ev[0].TermType(), ev[0].TermCode()); c != rdmap.RDMAPInvalidSTag {
		t.Fatalf("TERM_RECV cause %v", c)
	}
	c := s.d.poll(s.c)
	if len(c) != 3 || c[0].Status() != cs.WCStatusRemAccessErr || c[0].TermCode() != 0 || c[0].TermType() != 1 ||
		c[1].Status() != cs.WCStatusSuccess && c[1].Status() != cs.WCStatusWRFlushErr || c[2].Status() != cs.WCStatusWRFlushErr {
		for _, e := range c {
			t.Logf("wr %d %v", e.WRID(), e.Status())
		}
		t.Fatal("completions after a received Terminate")
	}
	if more := s.q.txBytes(); len(more) != 0 {
		t.Fatalf("%d bytes sent after a received Terminate (%d before)", len(more), len(sent))
	}
}

// TestStreamEvents: TX_DATA and RX_SPACE once armed, and a 1 MiB Write
// through a transmit ring of two FPDUs, which holds whole FPDUs only.
func TestStreamEvents(t *testing.T) {
	p := newPair(t, qpOpts{txsLog: 12, mulpdu: 2048}, qpOpts{})
	h := p.h
	src, dst := h.alloc(1<<20, 4096), h.alloc(1<<20, 4096)
	lk := p.a.mr(1, 1, 1, 0, src, 1<<20, 0)
	rk := p.b.mr(1, 2, 1, 0, dst, 1<<20, mem.RemoteWrite)
	h.fill(src, 1<<20, 7)
	p.qa.db(cs.QPDBStream, 1<<cs.QPDBStreamArmTXShift)
	p.qb.db(cs.QPDBStream, 1<<cs.QPDBStreamArmRXShift)
	p.qa.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: 1, signaled: true, raddr: dst, rkey: uint32(rk), sgl: []sge{{addr: src, length: 1 << 20, lkey: uint32(lk)}}})
	p.a.c.Run()
	wantEvents(t, p.a.events(), cs.EQETypeTXData)
	if pi := p.qa.stat().TXSPI(); pi == 0 || pi > 4096 || 4096-pi >= pi {
		t.Fatalf("TXS_PI %d with a 4 KiB ring and nothing consumed: not the end of the whole FPDUs it holds", pi)
	}
	p.run(t)
	wantEvents(t, p.b.events(), cs.EQETypeRXSpace)
	wantCQE(t, p.a.poll(p.qa.scq), cs.WCStatusSuccess)
	equalMem(t, "1 MiB through a 4 KiB ring", h.mem(dst, 1<<20), h.mem(src, 1<<20))
}

// TestQPErrorCommand: ERROR flushes posted work (also posted later) and
// ends the stream without a Terminate; DESTROY then frees the QP.
func TestQPErrorCommand(t *testing.T) {
	s := newSingle(t, qpOpts{})
	s.q.recv(1, sge{addr: s.buf, length: 8, lkey: uint32(s.lk)})
	s.d.w(cs.Ctrl, 0) // doorbells recorded, not served
	s.q.post(sendWR{op: cs.WQEOpcodeSend, id: 2, inline: []byte("x")})
	s.d.w(cs.QPCmd, uint32(cs.QPOpError))
	s.d.w(cs.Ctrl, 1)
	s.q.post(sendWR{op: cs.WQEOpcodeSend, id: 3, inline: []byte("y")})
	s.d.c.Run()
	c := s.d.poll(s.c)
	wantCQE(t, c, cs.WCStatusWRFlushErr, cs.WCStatusWRFlushErr, cs.WCStatusWRFlushErr)
	ev := s.d.events()
	wantEvents(t, ev, cs.EQETypeQPError)
	if cs.QPErr(ev[0].Info()) != cs.QPErrHost {
		t.Fatalf("QP_ERROR %v", cs.QPErr(ev[0].Info()))
	}
	if len(s.q.txBytes()) != 0 || !s.q.stat().TXClosed() {
		t.Fatal("the stream did not end without a Terminate")
	}
	s.d.w(cs.QPCmd, uint32(cs.QPOpDestroy))
	s.q.post(sendWR{op: cs.WQEOpcodeSend, id: 4, inline: []byte("z")})
	if s.d.c.Run() != 0 {
		t.Fatal("a destroyed QP still works")
	}
}

// TestStreamEndFlushesReads: the peer's stream ends with a Read
// outstanding; the Read is flushed and a CLOSE can finish.
func TestStreamEndFlushesReads(t *testing.T) {
	s := newSingle(t, qpOpts{})
	s.q.post(sendWR{op: cs.WQEOpcodeRDMARead, id: 1, signaled: true, rkey: 5, sgl: []sge{{addr: s.buf, length: 64, lkey: uint32(s.lk)}}})
	s.q.post(sendWR{op: cs.WQEOpcodeSend, id: 2, signaled: true, inline: []byte("x")})
	s.d.c.Run()
	s.d.w(cs.QPNum, 1)
	s.d.w(cs.QPCmd, uint32(cs.QPOpClose))
	s.q.db(cs.QPDBStream, 1<<cs.QPDBStreamRXFinShift)
	s.d.c.Run()
	wantCQE(t, s.d.poll(s.c), cs.WCStatusWRFlushErr, cs.WCStatusSuccess)
	wantEvents(t, s.d.events(), cs.EQETypeStreamEnd, cs.EQETypeQPClosed)
	if st := s.q.stat(); st.State() != cs.QPStateClosed || !st.TXClosed() {
		t.Fatalf("state %v", st.State())
	}
}

// TestEventsLost: an event that finds the EQ full or disabled is dropped
// and counted; the card goes on.
func TestEventsLost(t *testing.T) {
	s := newSingle(t, qpOpts{})
	s.d.w(cs.EQCfg, 1|1<<cs.EQCfgEnableShift) // two entries
	s.d.eqLog, s.d.eqCI = 1, 0
	for i := uint32(0); i < 3; i++ {
		s.q.db(cs.QPDBStream, 1<<cs.QPDBStreamArmTXShift)
		s.q.post(sendWR{op: cs.WQEOpcodeSend, inline: []byte("x")})
		s.d.c.Run()
	}
	if s.d.c.EventsLost() != 1 {
		t.Fatalf("%d events lost, want 1", s.d.c.EventsLost())
	}
	wantEvents(t, s.d.events(), cs.EQETypeTXData, cs.EQETypeTXData)
	s.d.w(cs.EQCfg, 1) // disabled
	s.q.db(cs.QPDBStream, 1<<cs.QPDBStreamArmTXShift)
	s.d.c.Run()
	if s.d.c.EventsLost() != 2 {
		t.Fatalf("%d events lost, want 2", s.d.c.EventsLost())
	}
}
