package cardmodel

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// bridge is the host side of a card QP's stream: it moves the transmit
// ring to a TCP connection and what the connection delivers into the
// receive ring, as a driver's stream bridge does.
type bridge struct {
	t       testing.TB
	q       *tqp
	conn    net.Conn
	rx      chan []byte
	pending []byte
	eof     bool
	finSent bool
}

func newBridge(t testing.TB, q *tqp, conn net.Conn) *bridge {
	b := &bridge{t: t, q: q, conn: conn, rx: make(chan []byte, 64)}
	go func() {
		defer close(b.rx)
		for {
			buf := make([]byte, 64<<10)
			n, err := conn.Read(buf)
			if n > 0 {
				b.rx <- buf[:n]
			}
			if err != nil {
				return
			}
		}
	}()
	return b
}

// until runs the card and moves the stream until cond holds.
func (b *bridge) until(what string, cond func() bool) {
	b.t.Helper()
	patience := testwatch.Patience()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			testwatch.Stuck(b.t, "bridge: "+what, patience)
			b.t.FailNow()
		}
		b.q.d.c.Run()
		if out := b.q.txBytes(); len(out) > 0 {
			if _, err := b.conn.Write(out); err != nil {
				b.t.Fatalf("bridge: write: %v", err)
			}
		}
		if st := b.q.stat(); st.TXClosed() && !b.finSent && st.TXSPI() == b.q.txsCI {
			b.finSent = true
			b.conn.(*net.TCPConn).CloseWrite()
		}
		if len(b.pending) == 0 && !b.eof {
			select {
			case p, ok := <-b.rx:
				if !ok {
					b.eof = true
					b.q.db(cs.QPDBStream, 1<<cs.QPDBStreamRXFinShift)
				}
				b.pending = p
			case <-time.After(time.Millisecond):
			}
		}
		if len(b.pending) > 0 {
			space := uint32(1)<<b.q.rxsLog - (b.q.rxsPI - b.q.stat().RXSCI())
			n := min(int(space), len(b.pending))
			b.q.feed(b.pending[:n])
			b.pending = b.pending[n:]
		}
	}
}

// TestInteropReference connects a card model QP over TCP on 127.0.0.1 to
// the reference endpoint, each role, markers and CRC on and off, MPA
// revisions 1 and 0, and moves Sends, RDMA Writes and RDMA Reads both
// ways, then closes gracefully.
func TestInteropReference(t *testing.T) {
	for _, tc := range []struct {
		cardInitiates, markers, crc, rev0 bool
	}{
		{true, false, true, false}, {false, false, true, false}, {true, true, true, false}, {false, true, false, false},
		{true, false, false, false}, {true, true, true, true},
	} {
		t.Run(fmt.Sprintf("initiator=%v/markers=%v/crc=%v/rev0=%v", tc.cardInitiates, tc.markers, tc.crc, tc.rev0), func(t *testing.T) {
			cfg := mpa.Config{Rev: mpa.Rev1, Markers: tc.markers, NoCRC: !tc.crc}
			if tc.rev0 {
				cfg = mpa.Config{Rev: mpa.Rev0, Draft01: true, Markers: tc.markers, NoCRC: !tc.crc}
			}
			interop(t, cfg, tc.cardInitiates)
		})
	}
}

func interop(t *testing.T, cfg mpa.Config, cardInitiates bool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, end := testwatch.Step(t, "the MPA startup with the reference endpoint")
	defer end()
	type res struct {
		c   net.Conn
		p   mpa.Params
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- res{err: err}
			return
		}
		p, err := mpa.Respond(ctx, c, cfg)
		ch <- res{c, p, err}
	}()
	dc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	dp, err := mpa.Initiate(ctx, dc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	cardConn, cardP, refConn, refP := dc, dp, r.c, r.p
	if !cardInitiates {
		cardConn, cardP, refConn, refP = r.c, r.p, dc, dp
	}
	defer cardConn.Close()
	defer refConn.Close()

	// The reference side.
	tab := mem.NewTable()
	pd := tab.AllocPD()
	scq, rcq := iwarp.NewCQ(256), iwarp.NewCQ(256)
	ep, err := iwarp.New(refConn, refP, iwarp.Config{PD: pd, SendCQ: scq, RecvCQ: rcq})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	const n = 1 << 20
	refBuf := make([]byte, n)
	refMR, err := pd.RegisterMR(refBuf, 0x5000_0000, mem.LocalWrite|mem.RemoteRead|mem.RemoteWrite, 0)
	if err != nil {
		t.Fatal(err)
	}

	// The card side.
	h := newTestHost()
	d := newDev(t, h)
	c := d.cq(1, 10)
	o := qpOpts{markersTX: cardP.TxMarkers, markersRX: cardP.RxMarkers, crc: cardP.CRC, rev0: cardP.Rev == mpa.Rev0, mulpdu: mpa.MULPDU(1460, cardP.TxMarkers), rxsLog: 18}
	q := d.qp(1, c, c, o)
	cardBuf := h.alloc(n, 4096)
	cardMR := d.mr(1, 0x42, 1, 0, cardBuf, n, mem.LocalWrite|mem.RemoteRead|mem.RemoteWrite)
	msgBuf := h.alloc(64, 64)
	msgMR := d.mr(2, 0x43, 1, 0, msgBuf, 64, mem.LocalWrite)
	b := newBridge(t, q, cardConn)

	var cqes []cs.CQE
	gotCQEs := func(k int) func() bool {
		return func() bool { cqes = append(cqes, d.poll(c)...); return len(cqes) >= k }
	}
	var wcs []iwarp.Completion
	gotWCs := func(cq *iwarp.CQ, k int) func() bool {
		return func() bool {
			var buf [16]iwarp.Completion
			m := cq.Poll(buf[:])
			wcs = append(wcs, buf[:m]...)
			return len(wcs) >= k
		}
	}
	check := func(what string, ok bool) {
		t.Helper()
		if !ok {
			t.Fatalf("%s", what)
		}
	}

	// The MPA Initiator sends the first FPDU (RFC 5044 §7.1.2 rule 4):
	// a Send into a receive of the Responder.
	q.recv(1, sge{addr: cardBuf, length: 1000, lkey: uint32(cardMR)})
	q.recv(2, sge{addr: msgBuf, length: 16, lkey: uint32(msgMR)})
	if cardInitiates {
		if err := ep.PostRecv(iwarp.RecvWR{ID: 9, SGL: []iwarp.SGE{{Addr: 0x5000_0000, Length: 64, LKey: refMR.STag}}}); err != nil {
			t.Fatal(err)
		}
		q.post(sendWR{op: cs.WQEOpcodeSend, id: 9, inline: []byte("hello"), push: true})
		b.until("the reference's first receive", gotWCs(rcq, 1))
		check("the first Send", wcs[0].Status == iwarp.WCSuccess && wcs[0].ByteLen == 5 && string(refBuf[:5]) == "hello")
		wcs = nil
	}
	// Reference → card: a Send, then an RDMA Write of 1 MiB and a Send
	// saying so.
	fillB(refBuf, 3)
	if err := ep.PostSend(iwarp.SendWR{ID: 1, Opcode: iwarp.WRSend, Signaled: true, SGL: []iwarp.SGE{{Addr: 0x5000_0000, Length: 1000, LKey: refMR.STag}}}); err != nil {
		t.Fatal(err)
	}
	b.until("the first receive", gotCQEs(1))
	check("Send payload", string(h.mem(cardBuf, 1000)) == string(refBuf[:1000]))
	if err := ep.PostSend(
		iwarp.SendWR{ID: 2, Opcode: iwarp.WRWrite, RemoteAddr: cardBuf, RKey: cardMR, SGL: []iwarp.SGE{{Addr: 0x5000_0000, Length: n, LKey: refMR.STag}}},
		iwarp.SendWR{ID: 3, Opcode: iwarp.WRSend, Solicited: true, Signaled: true, Inline: []byte("written")},
	); err != nil {
		t.Fatal(err)
	}
	b.until("the second receive", gotCQEs(2))
	check("CQEs of the receives", cqes[0].Status() == cs.WCStatusSuccess && cqes[1].Status() == cs.WCStatusSuccess && cqes[1].Solicited() && cqes[1].ByteLen() == 7)
	equalMem(t, "RDMA Write from the reference", h.mem(cardBuf, n), refBuf)

	// Card → reference: Send, RDMA Write, RDMA Read.
	if err := ep.PostRecv(iwarp.RecvWR{ID: 10, SGL: []iwarp.SGE{{Addr: 0x5000_0000, Length: 4096, LKey: refMR.STag}}}); err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), h.fill(cardBuf, n, 9)...)
	q.post(sendWR{op: cs.WQEOpcodeSend, id: 11, signaled: true, sgl: []sge{{addr: cardBuf, length: 4096, lkey: uint32(cardMR)}}})
	q.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: 12, signaled: true, raddr: 0x5000_0000 + 4096, rkey: uint32(refMR.STag),
		sgl: []sge{{addr: cardBuf + 4096, length: n/2 - 4096, lkey: uint32(cardMR)}}})
	copy(refBuf[n/2:], want[n/2:]) // what the Read brings back
	clear(h.mem(cardBuf+n/2, n/2))
	q.post(sendWR{op: cs.WQEOpcodeRDMARead, id: 13, signaled: true, raddr: 0x5000_0000 + n/2, rkey: uint32(refMR.STag),
		sgl: []sge{{addr: cardBuf + n/2, length: n / 2, lkey: uint32(cardMR)}}})
	cqes = nil
	b.until("the card's three completions", gotCQEs(3))
	for i, e := range cqes {
		check(fmt.Sprintf("card CQE %d: %v", i, e.Status()), e.Status() == cs.WCStatusSuccess && e.WRID() == uint64(11+i))
	}
	b.until("the reference's receive", gotWCs(rcq, 1))
	check("reference receive", wcs[0].Status == iwarp.WCSuccess && wcs[0].ByteLen == 4096)
	equalMem(t, "card → reference", refBuf[:n/2], want[:n/2])
	equalMem(t, "RDMA Read by the card", h.mem(cardBuf+n/2, n/2), want[n/2:])

	// Reference → card: an RDMA Read of the card's memory.
	clear(refBuf)
	if err := ep.PostSend(iwarp.SendWR{ID: 20, Opcode: iwarp.WRRead, Signaled: true, RemoteAddr: cardBuf, RKey: cardMR,
		SGL: []iwarp.SGE{{Addr: 0x5000_0000, Length: n, LKey: refMR.STag}}}); err != nil {
		t.Fatal(err)
	}
	wcs = nil
	b.until("the reference's Read", func() bool {
		var buf [16]iwarp.Completion
		m := scq.Poll(buf[:])
		for _, w := range buf[:m] {
			if w.ID == 20 {
				wcs = append(wcs, w)
			}
		}
		return len(wcs) > 0
	})
	check(fmt.Sprintf("reference Read: %v", wcs[0].Status), wcs[0].Status == iwarp.WCSuccess)
	equalMem(t, "RDMA Read by the reference", refBuf, h.mem(cardBuf, n))

	// Graceful close from the card: QP_CLOSED, TX_CLOSED, our FIN; the
	// reference closes too, and its FIN ends the card's receive stream.
	d.w(cs.QPNum, 1)
	d.w(cs.QPCmd, uint32(cs.QPOpClose))
	var evs []cs.EQE
	b.until("QP_CLOSED", func() bool { evs = append(evs, d.events()...); return hasEvent(evs, cs.EQETypeQPClosed) })
	go ep.Close()
	b.until("STREAM_END", func() bool { evs = append(evs, d.events()...); return hasEvent(evs, cs.EQETypeStreamEnd) })
	if st := q.stat(); st.State() != cs.QPStateClosed || !st.TXClosed() {
		t.Fatalf("after close: state %v, TX_CLOSED %v", st.State(), st.TXClosed())
	}
}

func hasEvent(evs []cs.EQE, typ cs.EQEType) bool {
	for _, e := range evs {
		if e.Type() == typ {
			return true
		}
	}
	return false
}

func fillB(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*13) + seed
	}
}
