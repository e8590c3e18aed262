//go:build cosim

package sim_test

import (
	"errors"
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/sim"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/host/verbs/verbstest"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// placed is a snapshot of the process-wide placement RTL counters.
type placed struct{ segs, dma, terms uint64 }

func snap() placed { return placed{sim.PlacedSegments(), sim.DMAWrites(), sim.PlacementTerminates()} }

func (p placed) since(q placed) placed {
	return placed{p.segs - q.segs, p.dma - q.dma, p.terms - q.terms}
}

// RDMA Writes and Read Responses received by a sim card are placed by the
// placement RTL: its DMA writes, not the golden table, put the bytes in
// the registered memory, and each segment costs the RTL cycles. A Write
// one byte past its region is refused by the RTL (the Terminate the
// requester learns of is the RTL's), and nothing lands.
func TestPlacementRTLInPath(t *testing.T) {
	for _, width := range []string{"64", "512"} { // "sim" (256) runs the suite
		t.Run(width, func(t *testing.T) {
			const n = 70000 // several segments, at every alignment the MR offsets give
			// Setup may build the Verilated blocks first (minutes on a
			// loaded machine): the watchdog starts after it.
			a, b := verbstest.Setup(t, "sim:"+width, n, verbs.QPInitAttr{})
			ctx := testwatch.Context(t, t.Name())
			verbstest.Connect(t, ctx, a, b, verbs.ConnParam{}, verbs.ListenConfig{})
			for i := range a.Buf {
				a.Buf[i] = byte(i*7 + 1)
			}
			require.Contains(t, a.Ctx.Info().Detail, "placement_w"+width)

			// A Write from a to b at an odd offset: b's RTL places it.
			before, cycles := snap(), b.Ctx.Info().CheckedCycles
			require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, Signaled: true,
				SGL: []verbs.SGE{a.MR.SGE(3, n-10)}, RemoteAddr: b.MR.Addr() + 5, RKey: b.MR.RKey()}))
			verbstest.Expect(t, ctx, a.CQ, 1, verbs.WCSuccess)
			// a zero-length Send behind it: everything before it is placed.
			require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: 2}))
			require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 3, Opcode: verbs.WRSend}))
			verbstest.Expect(t, ctx, b.CQ, 2, verbs.WCSuccess)
			got := snap().since(before)
			lanes := uint64(mustAtoi(t, width) / 8)
			require.GreaterOrEqual(t, got.segs, uint64(2), "the Write's segments went through the RTL")
			require.GreaterOrEqual(t, got.dma, uint64(n-10)/lanes, "one DMA write per %d-byte block at least", lanes)
			require.Zero(t, got.terms)
			require.Equal(t, a.Buf[3:n-7], b.Buf[5:n-5])
			require.Greater(t, b.Ctx.Info().CheckedCycles-cycles, uint64(n-10)/lanes, "b's card checked the placement cycles")

			// A Read: b's Read Responses are placed in a's memory by a's RTL.
			for i := range b.Buf {
				b.Buf[i] = byte(i*13 + 5)
			}
			before = snap()
			require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 4, Opcode: verbs.WRRDMARead, Signaled: true,
				SGL: []verbs.SGE{a.MR.SGE(1, n-1)}, RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()}))
			verbstest.Expect(t, ctx, a.CQ, 4, verbs.WCSuccess)
			got = snap().since(before)
			require.GreaterOrEqual(t, got.segs, uint64(2))
			require.GreaterOrEqual(t, got.dma, uint64(n-1)/lanes)
			require.Equal(t, b.Buf[:n-1], a.Buf[1:])

			// A region of a few pages is described to the RTL by a page
			// list of scattered IOVA pages: a Write across its pages lands.
			paged := make([]byte, 5*4096)
			pmr, err := b.PD.RegMR(paged, verbs.AccessRemoteWrite)
			require.NoError(t, err)
			before = snap()
			require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 7, Opcode: verbs.WRRDMAWrite, Signaled: true,
				SGL: []verbs.SGE{a.MR.SGE(100, 3*4096+77)}, RemoteAddr: pmr.Addr() + 4000, RKey: pmr.RKey()}))
			verbstest.Expect(t, ctx, a.CQ, 7, verbs.WCSuccess)
			require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: 8}))
			require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 9, Opcode: verbs.WRSend}))
			verbstest.Expect(t, ctx, b.CQ, 8, verbs.WCSuccess)
			require.Equal(t, a.Buf[100:100+3*4096+77], paged[4000:4000+3*4096+77])
			require.Equal(t, make([]byte, 4000), paged[:4000], "nothing before the Write's range")
			require.GreaterOrEqual(t, snap().since(before).dma, uint64(3*4096+77)/lanes)

			// One byte past a small region: the RTL raises the Terminate.
			small := make([]byte, 64)
			smr, err := b.PD.RegMR(small, verbs.AccessRemoteWrite)
			require.NoError(t, err)
			before = snap()
			require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 5, Opcode: verbs.WRRDMAWrite,
				SGL: []verbs.SGE{a.MR.SGE(0, 65)}, RemoteAddr: smr.Addr(), RKey: smr.RKey()},
				verbs.SendWR{ID: 6, Opcode: verbs.WRRDMARead, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, 1)}, RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()}))
			wc, err := a.CQ.Wait(ctx)
			require.NoError(t, err)
			require.NotEqual(t, verbs.WCSuccess, wc.Status, "the Read behind the refused Write")
			<-b.QP.Done()
			var ie *iwarp.Error
			require.ErrorAs(t, b.QP.Err(), &ie)
			require.Equal(t, rdmap.DDPBaseBounds, ie.Cause)
			require.False(t, errors.Is(b.QP.Err(), sim.ErrMismatch), "the RTL and the golden table agree: %v", b.QP.Err())
			got = snap().since(before)
			require.Equal(t, uint64(1), got.terms, "the RTL refused the segment")
			require.Zero(t, got.dma)
			require.Equal(t, make([]byte, 64), small, "nothing lands")
		})
	}
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// A region registered on a PD behind the card's back (the golden table has
// it, the placement RTL's table does not) is a disagreement: the RTL
// refuses the Write the golden table would place, nothing lands, and the
// receiving QP ends with an error wrapping ErrMismatch beside the
// Terminate it sent.
func TestDisagreementFailsTheQP(t *testing.T) {
	ctx := testwatch.Context(t, "the disagreement test")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	type side struct {
		card driver.Card
		pd   *mem.PD
		cq   driver.CQ
		buf  []byte
		mr   *mem.MR
	}
	mk := func() *side {
		c, err := driver.Open("sim")
		require.NoError(t, err)
		s := &side{card: c, buf: make([]byte, 4096)}
		s.pd, err = c.AllocPD()
		require.NoError(t, err)
		s.cq, err = c.CreateCQ(16)
		require.NoError(t, err)
		s.mr, err = c.RegisterMR(s.pd, s.buf, 0, mem.LocalWrite|mem.RemoteWrite, 0)
		require.NoError(t, err)
		return s
	}
	a, b := mk(), mk()
	defer a.card.Close()
	defer b.card.Close()
	hidden := make([]byte, 256)
	hmr, err := b.pd.RegisterMR(hidden, 0, mem.RemoteWrite, 0) // not through the card
	require.NoError(t, err)
	qpc := make(chan driver.QP, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			qpc <- nil
			return
		}
		p, err := mpa.Respond(ctx, conn, mpa.Config{})
		if err != nil {
			qpc <- nil
			return
		}
		q, _ := b.card.Attach(conn, p, driver.QPConfig{PD: b.pd, SendCQ: b.cq, RecvCQ: b.cq})
		qpc <- q
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	p, err := mpa.Initiate(ctx, conn, mpa.Config{})
	require.NoError(t, err)
	qa, err := a.card.Attach(conn, p, driver.QPConfig{PD: a.pd, SendCQ: a.cq, RecvCQ: a.cq})
	require.NoError(t, err)
	qb := <-qpc
	require.NotNil(t, qb)
	// The memory work requests are refused on the sim card.
	require.ErrorIs(t, qa.PostSend(iwarp.SendWR{ID: 1, Opcode: iwarp.WRLocalInvalidate, InvalidateSTag: a.mr.STag}), driver.ErrInvalid)

	for i := range a.buf {
		a.buf[i] = byte(i + 1)
	}
	require.NoError(t, qa.PostSend(iwarp.SendWR{ID: 2, Opcode: iwarp.WRWrite, SGL: []iwarp.SGE{{Length: 100, LKey: a.mr.STag}}, RKey: hmr.STag},
		iwarp.SendWR{ID: 3, Opcode: iwarp.WRRead, Signaled: true, SGL: []iwarp.SGE{{Length: 1, LKey: a.mr.STag}}, RKey: b.mr.STag}))
	select {
	case <-qb.Done():
	case <-ctx.Done():
		t.Fatal("the receiving QP did not end")
	}
	require.ErrorIs(t, qb.Err(), sim.ErrMismatch)
	var ie *iwarp.Error
	require.ErrorAs(t, qb.Err(), &ie, "the engine's Terminate is part of the error too")
	require.Equal(t, make([]byte, 256), hidden, "nothing lands")
	ev := <-b.card.Events()
	require.Equal(t, driver.EventQPFatal, ev.Type)
	require.ErrorIs(t, ev.Err, sim.ErrMismatch)
}
