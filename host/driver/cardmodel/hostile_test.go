package cardmodel

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// The hostile peer: one malformed or forbidden message per row of the
// receive-side error matrix (digest §3.7), sent to the card model and to
// the reference endpoint (golden/iwarp over net.Pipe). Both must answer
// with the same Terminate (cause, M/D/R, segment length, the offender's
// copied headers), and the card must write nothing into its guarded
// memory.

// env names the victim's STags.
type env struct {
	target, otherPD, readOnly, noRead, recv, big mem.STag
}

const (
	guard     = 256
	targetLen = 4096
	targetVA  = 0x7f0000001000
	bigLen    = 1 << 20
)

func hWrite(stag mem.STag, to uint64, last bool, p []byte) []byte {
	return append(ddp.TaggedFields{Last: last, Version: 1, RsvdULP: uint8(rdmap.NewControl(1, rdmap.OpWrite)), STag: uint32(stag), TO: to}.Append(nil), p...)
}

func hReadResp(stag mem.STag, to uint64, p []byte) []byte {
	return append(ddp.TaggedFields{Last: true, Version: 1, RsvdULP: uint8(rdmap.NewControl(1, rdmap.OpReadResponse)), STag: uint32(stag), TO: to}.Append(nil), p...)
}

func hUntagged(op rdmap.Opcode, qn, msn, mo uint32, last bool, inv uint32, p []byte) []byte {
	return append(ddp.UntaggedFields{Last: last, Version: 1, RsvdULP0: uint8(rdmap.NewControl(1, op)), RsvdULP1: inv, QN: qn, MSN: msn, MO: mo}.Append(nil), p...)
}

func hReadReq(msn uint32, rr rdmap.ReadRequestFields) []byte {
	return rr.Append(hUntagged(rdmap.OpReadRequest, 1, msn, 0, true, 0, nil))
}

type hostileRow struct {
	name  string
	recvs int
	ird   int
	msgs  func(e env) [][]byte // the last one is the offender
	cause rdmap.Cause
	read  bool // the victim has an RDMA Read of 64 bytes into its receive buffer outstanding
}

func hostileRows() []hostileRow {
	rr := func(stag mem.STag, to uint64, size uint32) rdmap.ReadRequestFields {
		return rdmap.ReadRequestFields{SinkSTag: 0x1234, SinkTO: 0, Size: size, SrcSTag: uint32(stag), SrcTO: to}
	}
	one := func(b []byte) [][]byte { return [][]byte{b} }
	return []hostileRow{
		{"DDP version tagged", 0, 0, func(e env) [][]byte {
			b := hWrite(e.target, targetVA, true, []byte("x"))
			b[0] = 0xC2
			return one(b)
		}, rdmap.DDPTaggedInvalidVersion, false},
		{"DDP version untagged", 1, 0, func(e env) [][]byte {
			b := hUntagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("x"))
			b[0] = 0x40
			return one(b)
		}, rdmap.DDPUntaggedInvalidVersion, false},
		{"RDMAP version", 1, 0, func(e env) [][]byte {
			b := hUntagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("x"))
			b[1] = 0x83
			return one(b)
		}, rdmap.RDMAPInvalidVersion, false},
		{"short ULPDU", 0, 0, func(e env) [][]byte { return one([]byte{0x41, 0x43, 0}) }, rdmap.DDPUntaggedInvalidVersion, false},
		{"reserved opcode", 1, 0, func(e env) [][]byte {
			return one(hUntagged(rdmap.Opcode(0xA), 0, 1, 0, true, 0, []byte("x")))
		}, rdmap.RDMAPUnexpectedOpcode, false},
		{"Send on a tagged segment", 1, 0, func(e env) [][]byte {
			b := hWrite(e.target, targetVA, true, []byte("x"))
			b[1] = byte(rdmap.NewControl(1, rdmap.OpSend))
			return one(b)
		}, rdmap.RDMAPUnexpectedOpcode, false},
		{"Send on QN 1", 1, 0, func(e env) [][]byte { return one(hUntagged(rdmap.OpSend, 1, 1, 0, true, 0, []byte("x"))) }, rdmap.RDMAPUnexpectedOpcode, false},
		{"invalid QN", 1, 0, func(e env) [][]byte { return one(hUntagged(rdmap.OpSend, 7, 1, 0, true, 0, []byte("x"))) }, rdmap.DDPInvalidQN, false},
		{"Send with no receive posted", 0, 0, func(e env) [][]byte { return one(hUntagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("x"))) }, rdmap.DDPNoBuffer, false},
		{"stale MSN", 2, 0, func(e env) [][]byte {
			return [][]byte{hUntagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("a")), hUntagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("b"))}
		}, rdmap.DDPInvalidMSNRange, false},
		{"skipped MSN", 2, 0, func(e env) [][]byte { return one(hUntagged(rdmap.OpSend, 0, 2, 0, true, 0, []byte("a"))) }, rdmap.DDPInvalidMSNRange, false},
		{"new message before L", 2, 0, func(e env) [][]byte {
			return [][]byte{hUntagged(rdmap.OpSend, 0, 1, 0, false, 0, []byte("a")), hUntagged(rdmap.OpSend, 0, 2, 0, true, 0, []byte("b"))}
		}, rdmap.DDPInvalidMSNRange, false},
		{"MO gap", 1, 0, func(e env) [][]byte {
			return [][]byte{hUntagged(rdmap.OpSend, 0, 1, 0, false, 0, []byte("a")), hUntagged(rdmap.OpSend, 0, 1, 2, true, 0, []byte("b"))}
		}, rdmap.DDPInvalidMO, false},
		{"MO outside the buffer", 1, 0, func(e env) [][]byte { return one(hUntagged(rdmap.OpSend, 0, 1, 1000, true, 0, []byte("a"))) }, rdmap.DDPInvalidMO, false},
		{"Send longer than the receive", 1, 0, func(e env) [][]byte { return one(hUntagged(rdmap.OpSend, 0, 1, 0, true, 0, make([]byte, 65))) }, rdmap.DDPMessageTooLong, false},
		{"unknown STag", 0, 0, func(e env) [][]byte { return one(hWrite(e.target^0x100, targetVA, true, []byte("x"))) }, rdmap.DDPInvalidSTag, false},
		{"wrong key", 0, 0, func(e env) [][]byte { return one(hWrite(e.target^1, targetVA, true, []byte("x"))) }, rdmap.DDPInvalidSTag, false},
		{"STag of another PD", 0, 0, func(e env) [][]byte { return one(hWrite(e.otherPD, 0, true, []byte("x"))) }, rdmap.DDPSTagNotAssociated, false},
		{"TO below base", 0, 0, func(e env) [][]byte { return one(hWrite(e.target, targetVA-1, true, []byte("xy"))) }, rdmap.DDPBaseBounds, false},
		{"TO+len past end", 0, 0, func(e env) [][]byte { return one(hWrite(e.target, targetVA+targetLen-1, true, []byte("xy"))) }, rdmap.DDPBaseBounds, false},
		{"TO wrap", 0, 0, func(e env) [][]byte { return one(hWrite(e.target, ^uint64(0), true, []byte("xy"))) }, rdmap.DDPTOWrap, false},
		{"Write without REMOTE_WRITE", 0, 0, func(e env) [][]byte { return one(hWrite(e.readOnly, 0, true, []byte("x"))) }, rdmap.DDPInvalidSTag, false},
		{"Read Response with no Read", 0, 0, func(e env) [][]byte { return one(hReadResp(e.target, targetVA, []byte("x"))) }, rdmap.DDPLocalCatastrophic, false},
		{"Read Request: invalid SrcSTag", 0, 0, func(e env) [][]byte { return one(hReadReq(1, rr(e.target^0x100, targetVA, 8))) }, rdmap.RDMAPInvalidSTag, false},
		{"Read Request: SrcSTag of another PD", 0, 0, func(e env) [][]byte { return one(hReadReq(1, rr(e.otherPD, 0, 8))) }, rdmap.RDMAPSTagNotAssociated, false},
		{"Read Request: no REMOTE_READ", 0, 0, func(e env) [][]byte { return one(hReadReq(1, rr(e.noRead, 0, 8))) }, rdmap.RDMAPAccessRights, false},
		{"Read Request: bounds", 0, 0, func(e env) [][]byte { return one(hReadReq(1, rr(e.target, targetVA+targetLen-4, 8))) }, rdmap.RDMAPBaseBounds, false},
		{"Read Request: SrcTO+size wraps", 0, 0, func(e env) [][]byte { return one(hReadReq(1, rr(e.target, ^uint64(0)-2, 8))) }, rdmap.RDMAPTOWrap, false},
		{"Read Request: wrong MSN", 0, 0, func(e env) [][]byte { return one(hReadReq(2, rr(e.target, targetVA, 8))) }, rdmap.DDPInvalidMSNRange, false},
		{"Read Request in two segments", 0, 0, func(e env) [][]byte {
			b := hReadReq(1, rr(e.target, targetVA, 8))
			b[0] &^= byte(ddp.ControlLast)
			return one(b)
		}, rdmap.DDPInvalidMO, false},
		{"Read Request with payload", 0, 0, func(e env) [][]byte { return one(append(hReadReq(1, rr(e.target, targetVA, 8)), 1, 2, 3, 4)) }, rdmap.DDPMessageTooLong, false},
		{"Read Requests beyond IRD", 0, 1, func(e env) [][]byte {
			return [][]byte{
				hReadReq(1, rdmap.ReadRequestFields{SinkSTag: 1, Size: bigLen, SrcSTag: uint32(e.big)}),
				hReadReq(2, rdmap.ReadRequestFields{SinkSTag: 1, Size: 8, SrcSTag: uint32(e.big)}),
			}
		}, rdmap.RDMAPCatastrophicStream, false},
		{"Send with Invalidate of a PD-shared STag", 1, 0, func(e env) [][]byte {
			return one(hUntagged(rdmap.OpSendInvalidate, 0, 1, 0, true, uint32(e.target), []byte("x")))
		}, rdmap.RDMAPCannotInvalidate, false},
		{"Send with SE and Invalidate of an unknown STag", 1, 0, func(e env) [][]byte {
			return one(hUntagged(rdmap.OpSendSEInvalidate, 0, 1, 0, true, 0x77, []byte("x")))
		}, rdmap.RDMAPCannotInvalidate, false},
		{"Read Response to another STag", 0, 0, func(e env) [][]byte { return one(hReadResp(e.target, targetVA, []byte("x"))) }, rdmap.DDPInvalidSTag, true},
		{"Read Response at the wrong TO", 0, 0, func(e env) [][]byte { return one(hReadResp(e.recv, 8, []byte("x"))) }, rdmap.DDPBaseBounds, true},
		{"Read Response longer than the Read", 0, 0, func(e env) [][]byte { return one(hReadResp(e.recv, 0, make([]byte, 65))) }, rdmap.DDPBaseBounds, true},
		{"Read Response shorter than the Read", 0, 0, func(e env) [][]byte { return one(hReadResp(e.recv, 0, make([]byte, 10))) }, rdmap.DDPBaseBounds, true},
	}
}

// frameAll frames ulpdus from the framer's offset on.
func frameAll(t testing.TB, f *mpa.Framer, ulpdus [][]byte) []byte {
	var out []byte
	for _, u := range ulpdus {
		var err error
		if out, err = f.AppendFPDU(out, u); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// terminateIn finds the Terminate in a transmit stream.
func terminateIn(t testing.TB, stream []byte, markers, crc bool) *rdmap.Terminate {
	t.Helper()
	d := mpa.NewDeframer(mpa.DeframerConfig{Markers: markers, CRC: crc})
	var term *rdmap.Terminate
	err := d.Feed(stream, func(u mpa.ULPDU) error {
		seg, err := ddp.Parse(u.Data)
		if err != nil {
			return err
		}
		if rdmap.Control(seg.RsvdULP0()).Opcode() == rdmap.OpTerminate && !seg.Control.Tagged() {
			tt, err := rdmap.ParseTerminate(seg.Payload)
			if err != nil {
				return err
			}
			tt.DDPHeader = append([]byte(nil), tt.DDPHeader...)
			tt.RDMAHeader = append([]byte(nil), tt.RDMAHeader...)
			term = &tt
		}
		return nil
	})
	if err != nil {
		t.Fatalf("transmit stream does not deframe: %v", err)
	}
	if term == nil {
		t.Fatal("no Terminate in the transmit stream")
	}
	return term
}

// cardVictim is a card QP with the victim's memory.
type cardVictim struct {
	d     *dev
	q     *tqp
	env   env
	arena uint64
	recv  uint64
}

func newCardVictim(t testing.TB, ird int, markers bool) *cardVictim {
	h := newTestHost()
	d := newDev(t, h)
	c := d.cq(1, 8)
	v := &cardVictim{d: d, q: d.qp(1, c, c, qpOpts{ird: ird, crc: true, markersRX: markers, markersTX: markers, mulpdu: 1024})}
	v.arena = h.alloc(2*guard+targetLen, 64)
	for i := range h.mem(v.arena, 2*guard+targetLen) {
		h.mem(v.arena, 2*guard+targetLen)[i] = 0xAA
	}
	v.recv = h.alloc(64, 64)
	small := h.alloc(64, 64)
	big := h.alloc(bigLen, 64)
	v.env = env{
		target:   d.mrAt(1, 0x11, 1, 0, targetVA, v.arena+guard, targetLen, mem.RemoteRead|mem.RemoteWrite|mem.LocalWrite),
		otherPD:  d.mrAt(2, 0x22, 2, 0, 0, small, 64, mem.LocalWrite|mem.RemoteRead|mem.RemoteWrite),
		readOnly: d.mrAt(3, 0x33, 1, 0, 0, small, 64, mem.RemoteRead),
		noRead:   d.mrAt(4, 0x44, 1, 0, 0, small, 64, mem.RemoteWrite),
		recv:     d.mrAt(5, 0x55, 1, 0, 0, v.recv, 64, mem.LocalWrite),
		big:      d.mrAt(6, 0x66, 1, 0, 0, big, bigLen, mem.RemoteRead),
	}
	return v
}

func (v *cardVictim) untouched(t testing.TB) {
	t.Helper()
	for i, b := range v.d.h.mem(v.arena, 2*guard+targetLen) {
		if b != 0xAA {
			t.Fatalf("card wrote victim memory at arena offset %d (target is [%d,%d))", i, guard, guard+targetLen)
		}
	}
}

// refTerminate runs the reference endpoint as the victim of stream
// (built by mk from its STags) and returns the Terminate it sends and
// the offender it got.
func refTerminate(t testing.TB, row hostileRow, markers bool, mk func(e env, f *mpa.Framer) ([]byte, []byte)) (*rdmap.Terminate, []byte) {
	t.Helper()
	tab := mem.NewTable()
	pd := tab.AllocPD()
	arena := make([]byte, 2*guard+targetLen)
	reg := func(p *mem.PD, buf []byte, addr uint64, acc mem.Access) mem.STag {
		mr, err := p.RegisterMR(buf, addr, acc, 0)
		if err != nil {
			t.Fatal(err)
		}
		return mr.STag
	}
	e := env{
		target:   reg(pd, arena[guard:guard+targetLen], targetVA, mem.RemoteRead|mem.RemoteWrite|mem.LocalWrite),
		otherPD:  reg(tab.AllocPD(), make([]byte, 64), 0, mem.LocalWrite|mem.RemoteRead|mem.RemoteWrite),
		readOnly: reg(pd, make([]byte, 64), 0, mem.RemoteRead),
		noRead:   reg(pd, make([]byte, 64), 0, mem.RemoteWrite),
		recv:     reg(pd, make([]byte, 64), 0, mem.LocalWrite),
		big:      reg(pd, make([]byte, bigLen), 0, mem.RemoteRead),
	}
	a, b := net.Pipe()
	defer b.Close()
	scq, rcq := iwarp.NewCQ(64), iwarp.NewCQ(64)
	p := mpa.Params{Rev: mpa.Rev1, CRC: true, TxMarkers: markers, RxMarkers: markers}
	ep, err := iwarp.New(a, p, iwarp.Config{PD: pd, SendCQ: scq, RecvCQ: rcq, IRD: row.ird, MULPDU: 1024, Linger: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	for i := 0; i < row.recvs; i++ {
		if err := ep.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{{Addr: 0, Length: 64, LKey: e.recv}}}); err != nil {
			t.Fatal(err)
		}
	}
	got, first := make(chan []byte, 1), make(chan struct{})
	go func() {
		var out []byte
		buf := make([]byte, 64<<10)
		for {
			n, err := b.Read(buf)
			if len(out) == 0 && n > 0 {
				close(first)
			}
			out = append(out, buf[:n]...)
			if err != nil {
				got <- out
				return
			}
		}
	}()
	if row.read {
		if err := ep.PostSend(iwarp.SendWR{ID: 99, Opcode: iwarp.WRRead, Signaled: true, RemoteAddr: 0x1000, RKey: 0x99,
			SGL: []iwarp.SGE{{Addr: 0, Length: 64, LKey: e.recv}}}); err != nil {
			t.Fatal(err)
		}
		if !testwatch.Done(t, first, "the reference endpoint's Read Request") {
			t.FailNow()
		}
	}
	f := p.Framer()
	stream, offender := mk(e, &f)
	go b.Write(stream)
	if !testwatch.Done(t, ep.Done(), "the reference endpoint to end its stream") {
		t.FailNow()
	}
	b.Close()
	return terminateIn(t, <-got, markers, true), offender
}

// cardTerminate runs the card as the victim of the same input.
func cardTerminate(t testing.TB, row hostileRow, markers bool, mk func(e env, f *mpa.Framer) ([]byte, []byte)) (*cardVictim, *rdmap.Terminate, []byte) {
	t.Helper()
	v := newCardVictim(t, row.ird, markers)
	for i := 0; i < row.recvs; i++ {
		v.q.recv(uint64(i), sge{addr: 0, length: 64, lkey: uint32(v.env.recv)})
	}
	if row.read {
		v.q.post(sendWR{op: cs.WQEOpcodeRDMARead, id: 99, signaled: true, raddr: 0x1000, rkey: 0x99, sgl: []sge{{addr: 0, length: 64, lkey: uint32(v.env.recv)}}})
		v.d.c.Run()
	}
	f := mpa.Framer{CRC: true, Markers: markers}
	stream, offender := mk(v.env, &f)
	v.q.feed(stream)
	v.d.c.Run()
	return v, terminateIn(t, v.q.txBytes(), markers, true), offender
}

func sameTerminate(t testing.TB, who string, term *rdmap.Terminate, cause rdmap.Cause, offender []byte) {
	t.Helper()
	if term.Cause != cause {
		t.Fatalf("%s: Terminate %v, want %v", who, term.Cause, cause)
	}
	m, d, r := cause.Headers(rdmap.Control(offender[1]).Opcode())
	if len(offender) < 2 {
		m, d, r = false, false, false
	}
	if term.M != m || term.D != d || term.R != r {
		t.Fatalf("%s: M D R = %v %v %v, want %v %v %v", who, term.M, term.D, term.R, m, d, r)
	}
	if d {
		hl := ddp.Control(offender[0]).HeaderLen()
		if term.SegLen != uint16(len(offender)) || string(term.DDPHeader) != string(offender[:hl]) {
			t.Fatalf("%s: copied segment length %d header %x, want %d %x", who, term.SegLen, term.DDPHeader, len(offender), offender[:hl])
		}
	}
	if r && rdmap.Control(offender[1]).Opcode() == rdmap.OpReadRequest {
		want := offender[ddp.UntaggedHeaderLen : ddp.UntaggedHeaderLen+rdmap.ReadRequestLen]
		if string(term.RDMAHeader) != string(want) {
			t.Fatalf("%s: copied Read Request header %x, want %x", who, term.RDMAHeader, want)
		}
	} else if len(term.RDMAHeader) != 0 {
		t.Fatalf("%s: RDMA header %x copied", who, term.RDMAHeader)
	}
}

func TestHostilePeer(t *testing.T) {
	for _, row := range hostileRows() {
		t.Run(row.name, func(t *testing.T) {
			mk := func(e env, f *mpa.Framer) ([]byte, []byte) {
				msgs := row.msgs(e)
				return frameAll(t, f, msgs), msgs[len(msgs)-1]
			}
			ref, refOff := refTerminate(t, row, false, mk)
			sameTerminate(t, "reference endpoint", ref, row.cause, refOff)
			v, term, off := cardTerminate(t, row, false, mk)
			sameTerminate(t, "card model", term, row.cause, off)
			v.untouched(t)
			for _, w := range v.d.h.writes {
				if w.Kind == WritePayload && w.Addr < v.arena+2*guard+targetLen && w.Addr+uint64(len(w.Data)) > v.arena {
					t.Fatalf("card placed %d bytes at %#x in the victim's arena", len(w.Data), w.Addr)
				}
			}
			if row.cause == rdmap.DDPMessageTooLong && row.recvs > 0 {
				for _, b := range v.d.h.mem(v.recv, 64) {
					if b != 0 {
						t.Fatal("part of an oversize Send was placed")
					}
				}
			}
			// TERM_SENT with the cause, QP in error, receives flushed.
			ev := v.d.events()
			if len(ev) != 1 || ev[0].Type() != cs.EQETypeTermSent || rdmap.NewCause(rdmap.Layer(ev[0].TermLayer()), ev[0].TermType(), ev[0].TermCode()) != row.cause {
				t.Fatalf("events %v, want one TERM_SENT %v", evTypes(ev), row.cause)
			}
			if st := v.q.stat(); st.State() != cs.QPStateError || !st.TXClosed() {
				t.Fatalf("QP state %v, TX_CLOSED %v", st.State(), st.TXClosed())
			}
			cqes := v.d.poll(v.q.rcq) // the send CQ too: the outstanding Read is flushed
			if want := row.recvs + btoi(row.read); len(cqes) != want {
				t.Fatalf("%d completions, want %d", len(cqes), want)
			}
			for i, e := range cqes {
				want := cs.WCStatusWRFlushErr
				if row.cause == rdmap.DDPMessageTooLong && i == 0 {
					want = cs.WCStatusLocLenErr
				}
				if e.Status() == cs.WCStatusSuccess {
					continue // an earlier, valid Send
				}
				if e.Status() != want {
					t.Fatalf("receive %d: %v, want %v", i, e.Status(), want)
				}
			}
			if row.cause == rdmap.RDMAPCannotInvalidate && !v.d.c.tab.lookup(v.env.target).Valid {
				t.Fatal("the shared STag was invalidated")
			}
		})
	}
}

func evTypes(ev []cs.EQE) []cs.EQEType {
	var out []cs.EQEType
	for _, e := range ev {
		out = append(out, e.Type())
	}
	return out
}

// TestHostileMPA: a CRC error and a marker error give a Terminate with
// layer LLP and no headers, from the card as from the reference.
func TestHostileMPA(t *testing.T) {
	for _, tc := range []struct {
		name    string
		markers bool
		corrupt func(b []byte, off uint32)
		cause   rdmap.Cause
	}{
		{"CRC", false, func(b []byte, off uint32) { b[len(b)-1] ^= 1 }, rdmap.MPACRC},
		{"marker", true, func(b []byte, off uint32) {
			b[mpa.MarkerPeriod-off+3] ^= 0x04
			binary.LittleEndian.PutUint32(b[len(b)-4:], mpa.CRC32c(b[:len(b)-4]))
		}, rdmap.MPAMarker},
		{"ULPDU_Length 0", false, func(b []byte, off uint32) { b[0], b[1] = 0, 0 }, rdmap.MPAMarker},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := hostileRow{}
			mk := func(e env, f *mpa.Framer) ([]byte, []byte) {
				good := frameAll(t, f, [][]byte{hWrite(e.target, targetVA, true, nil)})
				off := f.Offset
				bad := frameAll(t, f, [][]byte{hWrite(e.target, targetVA, true, make([]byte, 1000))})
				tc.corrupt(bad, off)
				return append(good, bad...), nil
			}
			ref, _ := refTerminate(t, row, tc.markers, mk)
			v, term, _ := cardTerminate(t, row, tc.markers, mk)
			if ref.Cause != tc.cause || term.Cause != tc.cause {
				t.Fatalf("Terminates: reference %v, card %v, want %v", ref.Cause, term.Cause, tc.cause)
			}
			if term.M || term.D || term.R || ref.M || ref.D || ref.R {
				t.Fatal("an MPA Terminate carries no headers")
			}
			v.untouched(t)
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
