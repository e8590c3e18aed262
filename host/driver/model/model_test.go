package model

import (
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

func TestRegs(t *testing.T) {
	c := New("model")
	r := c.Regs()
	v, err := r.Read32(RegID)
	require.NoError(t, err)
	require.Equal(t, uint32(IDValue), v)
	require.NoError(t, r.Write64(RegScratch, 0x1122334455667788))
	lo, _ := r.Read32(RegScratch)
	hi, _ := r.Read32(RegScratch + 4)
	require.Equal(t, []uint32{0x55667788, 0x11223344}, []uint32{lo, hi})
	require.NoError(t, r.Write32(RegScratch+4, 7))
	v64, _ := r.Read64(RegScratch)
	require.Equal(t, uint64(0x755667788), v64)
	for _, bad := range []func() error{
		func() error { return r.Write32(RegID, 1) },
		func() error { _, err := r.Read32(2); return err },
		func() error { _, err := r.Read64(RegSpace); return err },
	} {
		require.ErrorIs(t, bad(), driver.ErrInvalid)
	}
	pd, _ := c.AllocPD()
	_, err = c.RegisterMR(pd, make([]byte, 10), 0, mem.LocalWrite, 0)
	require.NoError(t, err)
	n, _ := r.Read32(RegMRs)
	require.Equal(t, uint32(1), n)
	require.NoError(t, c.Close())
	_, err = r.Read32(RegID)
	require.ErrorIs(t, err, driver.ErrClosed)
}

func TestDMA(t *testing.T) {
	c := New("model")
	defer c.Close()
	a, err := c.DMA().Alloc(100)
	require.NoError(t, err)
	b, err := c.DMA().Alloc(5000)
	require.NoError(t, err)
	require.Len(t, b.Bytes, 5000)
	require.NotEqual(t, a.IOVA, b.IOVA)
	require.Zero(t, a.IOVA%4096)
	require.NoError(t, c.DMA().Free(a))
	require.ErrorIs(t, c.DMA().Free(a), driver.ErrInvalid)
	_, err = c.DMA().Alloc(0)
	require.ErrorIs(t, err, driver.ErrInvalid)
}

// TestAttach runs an RDMA Write between two model cards over TCP and
// checks the async event each side reports when the stream ends.
func TestAttach(t *testing.T) {
	ctx := testwatch.Context(t, "two model cards moving an RDMA Write")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	type side struct {
		card *Card
		pd   *mem.PD
		cq   driver.CQ
		buf  []byte
		mr   *mem.MR
	}
	mk := func() *side {
		s := &side{card: New("model"), buf: make([]byte, 1<<20)}
		s.pd, _ = s.card.AllocPD()
		s.cq, _ = s.card.CreateCQ(16)
		s.mr, err = s.card.RegisterMR(s.pd, s.buf, 0x1000, mem.LocalWrite|mem.RemoteWrite, 0)
		require.NoError(t, err)
		return s
	}
	a, b := mk(), mk()
	defer a.card.Close()
	defer b.card.Close()
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
	_, err = a.card.Attach(conn, p, driver.QPConfig{PD: a.pd, SendCQ: a.cq, RecvCQ: b.cq})
	require.ErrorIs(t, err, driver.ErrInvalid, "a CQ of another card")
	qa, err := a.card.Attach(conn, p, driver.QPConfig{PD: a.pd, SendCQ: a.cq, RecvCQ: a.cq})
	require.NoError(t, err)
	qb := <-qpc
	require.NotNil(t, qb)
	for i := range a.buf {
		a.buf[i] = byte(i * 7)
	}
	require.NoError(t, qa.PostSend(iwarp.SendWR{ID: 9, Opcode: iwarp.WRWrite, Signaled: true,
		SGL: []iwarp.SGE{{Addr: 0x1000, Length: 1 << 20, LKey: a.mr.STag}}, RemoteAddr: 0x1000, RKey: b.mr.STag}))
	wc, err := a.cq.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, iwarp.WCSuccess, wc.Status)
	require.Equal(t, uint64(9), wc.ID)
	// A zero-length Read behind the Write: once it completes, the Write is placed (digest §3.2 note 1).
	require.NoError(t, qa.PostSend(iwarp.SendWR{ID: 10, Opcode: iwarp.WRRead, Signaled: true, RKey: b.mr.STag, RemoteAddr: 0x1000}))
	wc, err = a.cq.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, iwarp.WCSuccess, wc.Status, wc.Status.String())
	require.Equal(t, a.buf, b.buf)
	require.NoError(t, qa.Close())
	<-qb.Done()
	for _, c := range []*Card{a.card, b.card} {
		select {
		case ev := <-c.Events():
			require.Equal(t, driver.EventQPClosed, ev.Type, "%v", ev.Err)
			require.True(t, errors.Is(ev.Err, iwarp.ErrClosed))
		case <-ctx.Done():
			t.Fatal("no QP event")
		}
	}
}
