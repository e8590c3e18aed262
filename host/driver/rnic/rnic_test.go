package rnic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/driver"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

func openFake(t *testing.T, opt Options) (*fakePhys, *Card) {
	t.Helper()
	f := newFake(t)
	if opt.Watchdog == 0 {
		opt.Watchdog = time.Minute
	}
	c, err := Open(f, opt)
	require.NoError(t, err)
	t.Cleanup(func() { closeFake(t, f, c) })
	return f, c
}

// closeFake closes the card, ending its QPs as a card would on CLOSE.
func closeFake(t *testing.T, f *fakePhys, c *Card) {
	f.mu.Lock()
	f.onWrite = func(off, v uint32) {
		if off == cs.QPCmd && (v == uint32(cs.QPOpClose) || v == uint32(cs.QPOpError)) {
			go f.endQP(f.lastOf(cs.QPNum), cs.QPErrHost)
		}
	}
	f.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("closing the card did not return in 30 s")
	}
}

// tcpPair is a connected pair of TCP sockets on 127.0.0.1.
func tcpPair(t *testing.T) (a, b net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	a, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	b = <-ch
	require.NotNil(t, b)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

type fixture struct {
	f    *fakePhys
	c    *Card
	pd   *mem.PD
	cq   driver.CQ
	qp   driver.QP
	peer net.Conn
	buf  []byte
	mr   *mem.MR
}

func attach(t *testing.T, cfg driver.QPConfig) *fixture {
	t.Helper()
	x := &fixture{}
	x.f, x.c = openFake(t, Options{})
	var err error
	x.pd, err = x.c.AllocPD()
	require.NoError(t, err)
	x.cq, err = x.c.CreateCQ(16)
	require.NoError(t, err)
	x.buf = make([]byte, 8192)
	x.mr, err = x.c.RegisterMR(x.pd, x.buf, 0x1000, mem.LocalWrite|mem.RemoteWrite, 0)
	require.NoError(t, err)
	conn, peer := tcpPair(t)
	x.peer = peer
	cfg.PD, cfg.SendCQ, cfg.RecvCQ = x.pd, x.cq, x.cq
	x.qp, err = x.c.Attach(conn, mpa.Params{Rev: mpa.Rev1, CRC: true}, cfg)
	require.NoError(t, err)
	return x
}

func TestIdentify(t *testing.T) {
	for _, c := range []struct {
		name    string
		id, ver uint32
		want    error
	}{
		{"wrong-vendor", cs.DeviceID<<16 | 0x8086, cs.InterfaceVersion, ErrNotCard},
		{"wrong-device", 0x1234<<16 | cs.VendorID, cs.InterfaceVersion, ErrNotCard},
		{"all-ones", 0xffffffff, 0xffffffff, ErrNotCard},
		{"major-2", cs.DeviceID<<16 | cs.VendorID, 2 << 16, ErrVersion},
		{"major-0", cs.DeviceID<<16 | cs.VendorID, 0x0007, ErrVersion},
		{"older-minor", cs.DeviceID<<16 | cs.VendorID, cs.InterfaceVersion - 1, ErrVersion},
		{"newer-minor", cs.DeviceID<<16 | cs.VendorID, cs.InterfaceVersion + 3, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			f.id, f.ver = c.id, c.ver
			card, err := Open(f, Options{Watchdog: time.Minute})
			if c.want == nil {
				require.NoError(t, err)
				closeFake(t, f, card)
				return
			}
			require.ErrorIs(t, err, c.want)
			var ie *IdentError
			require.ErrorAs(t, err, &ie)
			require.Equal(t, c.id, ie.ID)
			require.Empty(t, f.writes(cs.Reset), "a refused card is not reset")
		})
	}
}

func TestInitDoneWatchdog(t *testing.T) {
	f := newFake(t)
	f.initDone = false
	_, err := Open(f, Options{Watchdog: 50 * time.Millisecond})
	require.ErrorIs(t, err, ErrStuck)
	var se *StuckError
	require.ErrorAs(t, err, &se)
	require.Contains(t, se.What, "INIT_DONE")
}

func TestSetup(t *testing.T) {
	f, c := openFake(t, Options{EQLog: 5})
	require.Equal(t, []uint32{1}, f.writes(cs.Reset))
	require.Equal(t, uint32(5|1<<31), f.lastOf(cs.EQCfg))
	require.Zero(t, (uint64(f.lastOf(cs.EQBaseHi))<<32|uint64(f.lastOf(cs.EQBaseLo)))%(cs.EQESize<<5), "EQ aligned to its size")
	require.Equal(t, uint32(1), f.lastOf(cs.Ctrl))
	in := c.Info()
	require.Equal(t, 1023, in.MaxQP)
	require.Equal(t, cs.MaxSGE, in.MaxSGE)
	require.Equal(t, cs.MaxInline, in.MaxInline)
	require.Equal(t, 1<<16/8, in.MaxQPWR)
}

func TestPostSendEncodesWQEs(t *testing.T) {
	x := attach(t, driver.QPConfig{SQDepth: 4})
	qpn := x.qp.QPN()
	sizes := x.f.qpSizes(qpn)
	sqBBs := 1 << (sizes & 0x1f)
	require.Equal(t, 32, sqBBs, "4 WRs of up to 8 blocks")
	sq := x.f.qpRing(qpn, cs.QPSQBaseLo, sqBBs*cs.BB)
	sgl := []iwarp.SGE{{Addr: 0x1000, Length: 100, LKey: x.mr.STag}, {Addr: 0x2000, Length: 7, LKey: x.mr.STag}}
	require.NoError(t, x.qp.PostSend(iwarp.SendWR{ID: 77, Opcode: iwarp.WRWrite, SGL: sgl, Signaled: true, Fence: true, RemoteAddr: 0xabc, RKey: 0x1234}))
	w := cs.WQE(sq)
	require.Equal(t, cs.WQEOpcodeRDMAWrite, w.Opcode())
	require.True(t, w.Signaled())
	require.True(t, w.Fence())
	require.Equal(t, uint8(1), w.BBS())
	require.Equal(t, uint8(2), w.NSGE())
	require.Equal(t, uint64(77), w.WRID())
	require.Equal(t, uint64(0xabc), w.RemoteAddr())
	require.Equal(t, uint32(0x1234), w.RKey())
	s := cs.SGE(sq[cs.WQEHdr+cs.SGESize:])
	require.Equal(t, uint64(0x2000), s.Addr())
	require.Equal(t, uint32(7), s.Length())
	require.Equal(t, uint32(x.mr.STag), s.LKey())
	db := cs.QPDBBase + qpn*cs.QPDBStride
	require.Equal(t, []uint32{1}, x.f.writes(db+cs.QPDBSQPI))

	// 30 SGEs take 8 blocks; two WRs in one post ring the doorbell once.
	big := make([]iwarp.SGE, cs.MaxSGE)
	for i := range big {
		big[i] = iwarp.SGE{Addr: 0x1000 + uint64(i), Length: 1, LKey: x.mr.STag}
	}
	require.NoError(t, x.qp.PostSend(iwarp.SendWR{ID: 1, Opcode: iwarp.WRSend, SGL: big},
		iwarp.SendWR{ID: 2, Opcode: iwarp.WRSend, Inline: []byte(strings.Repeat("x", 100))}))
	require.Equal(t, uint8(8), cs.WQE(sq[cs.BB:]).BBS())
	w = cs.WQE(sq[9*cs.BB:])
	require.True(t, w.Inline())
	require.Equal(t, uint8(3), w.BBS(), "32 + 100 bytes")
	require.Equal(t, uint16(100), w.InlineLen())
	require.Equal(t, []uint32{1, 12}, x.f.writes(db+cs.QPDBSQPI))

	// The queue holds 4 WRs: the fifth waits for the card's SQ_CI.
	require.NoError(t, x.qp.PostSend(iwarp.SendWR{ID: 3, Opcode: iwarp.WRSend, SGL: big[:4]}))
	err := x.qp.PostSend(iwarp.SendWR{ID: 4, Opcode: iwarp.WRSend})
	require.ErrorIs(t, err, iwarp.ErrQueueFull)
	x.f.qpstat(qpn, func(r cs.QPStat) { r.SetSQCI(14) })
	// 8 + 8 + 6 blocks from 14: the last WQE wraps past the ring's end (32).
	require.NoError(t, x.qp.PostSend(iwarp.SendWR{ID: 4, Opcode: iwarp.WRSend, SGL: big[:28]},
		iwarp.SendWR{ID: 5, Opcode: iwarp.WRSend, SGL: big[:28]}, iwarp.SendWR{ID: 6, Opcode: iwarp.WRSend, SGL: big[:20]}))
	w = cs.WQE(sq[30*cs.BB:])
	require.Equal(t, uint64(6), w.WRID())
	require.Equal(t, uint8(6), w.BBS())
	require.Equal(t, uint64(0x1000+19), cs.SGE(sq[3*cs.BB+16:]).Addr(), "the last SGE, in the wrapped block")
	require.NoError(t, x.qp.PostSend(iwarp.SendWR{ID: 7, Opcode: iwarp.WRSend}))
	require.ErrorIs(t, x.qp.PostSend(iwarp.SendWR{ID: 8, Opcode: iwarp.WRSend}), iwarp.ErrQueueFull, "4 WRs outstanding")
	require.Equal(t, []uint32{1, 12, 14, 36, 37}, x.f.writes(db+cs.QPDBSQPI))

	// Bad lkeys and shapes are refused at post time, posting nothing.
	for _, wr := range []iwarp.SendWR{
		{Opcode: iwarp.WRSend, SGL: []iwarp.SGE{{Addr: 0x1000, Length: 8, LKey: x.mr.STag + 1}}},
		{Opcode: iwarp.WRSend, SGL: []iwarp.SGE{{Addr: 0x1000 + 8190, Length: 8, LKey: x.mr.STag}}},
		{Opcode: iwarp.WRRead, SGL: sgl},
		{Opcode: iwarp.WRSend, Inline: make([]byte, cs.MaxInline+1)},
		{Opcode: iwarp.WROpcode(9)},
	} {
		require.ErrorIs(t, x.qp.PostSend(wr), iwarp.ErrInvalidWR, "%+v", wr)
	}
}

func TestPushWindow(t *testing.T) {
	x := attach(t, driver.QPConfig{})
	qpn := x.qp.QPN()
	db := cs.QPDBBase + qpn*cs.QPDBStride
	require.NoError(t, x.qp.PostSend(iwarp.SendWR{ID: 9, Opcode: iwarp.WRSend, Inline: []byte("ping"), Solicited: true, Signaled: true}))
	require.Empty(t, x.f.writes(db+cs.QPDBSQPI), "a pushed WQE needs no SQ_PI")
	sq := x.f.qpRing(qpn, cs.QPSQBaseLo, cs.BB)
	var pushed [cs.BB]byte
	for i := 0; i < cs.BB; i += 4 {
		v := x.f.writes(db + cs.QPDBPush + uint32(i))
		require.Len(t, v, 1, "push word %d", i/4)
		pushed[i], pushed[i+1], pushed[i+2], pushed[i+3] = byte(v[0]), byte(v[0]>>8), byte(v[0]>>16), byte(v[0]>>24)
	}
	require.Equal(t, sq, pushed[:], "the pushed block is the SQ's")
	w := cs.WQE(pushed[:])
	require.True(t, w.Solicited())
	require.Equal(t, "ping", string(pushed[cs.WQEHdr:cs.WQEHdr+4]))
	// Too long to push: SQ_PI.
	require.NoError(t, x.qp.PostSend(iwarp.SendWR{ID: 10, Opcode: iwarp.WRSend, Inline: make([]byte, cs.PushInline+1)}))
	require.Equal(t, []uint32{3}, x.f.writes(db+cs.QPDBSQPI))
}

func TestPostRecvBeforeAndAfter(t *testing.T) {
	f, c := openFake(t, Options{})
	pd, _ := c.AllocPD()
	cq, err := c.CreateCQ(4)
	require.NoError(t, err)
	buf := make([]byte, 4096)
	mr, err := c.RegisterMR(pd, buf, 0, mem.LocalWrite, 0)
	require.NoError(t, err)
	conn, _ := tcpPair(t)
	q, err := c.Attach(conn, mpa.Params{Rev: mpa.Rev1}, driver.QPConfig{PD: pd, SendCQ: cq, RecvCQ: cq, RQDepth: 2,
		Recv: []iwarp.RecvWR{{ID: 5, SGL: []iwarp.SGE{{Addr: 10, Length: 20, LKey: mr.STag}}}}})
	require.NoError(t, err)
	db := cs.QPDBBase + q.QPN()*cs.QPDBStride
	require.Equal(t, []uint32{1}, f.writes(db+cs.QPDBRQPI), "receives posted before the QP existed")
	rq := f.qpRing(q.QPN(), cs.QPRQBaseLo, 2*cs.BB)
	w := cs.WQE(rq)
	require.Equal(t, cs.WQEOpcodeRecv, w.Opcode())
	require.Equal(t, uint64(5), w.WRID())
	require.Equal(t, uint32(20), cs.SGE(rq[cs.WQEHdr:]).Length())
	require.NoError(t, q.PostRecv(iwarp.RecvWR{ID: 6}))
	require.Equal(t, uint8(0), cs.WQE(rq[cs.BB:]).NSGE())
	require.ErrorIs(t, q.PostRecv(iwarp.RecvWR{ID: 7}), iwarp.ErrQueueFull)
	require.ErrorIs(t, q.PostRecv(iwarp.RecvWR{SGL: []iwarp.SGE{{Addr: 0, Length: 8, LKey: 77}}}), iwarp.ErrInvalidWR)
}

func TestCQPollWaitArm(t *testing.T) {
	x := attach(t, driver.QPConfig{})
	q := x.cq.(*cq)
	qpn := x.qp.QPN()
	var wc [8]iwarp.Completion
	require.Zero(t, x.cq.Poll(wc[:]))
	// 40 completions through a 16-entry ring: the owner bit flips each pass.
	for round := range 5 {
		for i := range 8 {
			x.f.cqe(q.cqn, func(e cs.CQE) {
				e.SetWRID(uint64(round*8 + i))
				e.SetQPN(uint16(qpn))
				e.SetOpcode(cs.WCOpcodeRecv)
				e.SetByteLen(uint32(i))
				e.SetSolicited(i == 3)
			})
		}
		require.Equal(t, 8, x.cq.Poll(wc[:]))
		for i := range 8 {
			require.Equal(t, uint64(round*8+i), wc[i].ID)
			require.Equal(t, iwarp.WCRecv, wc[i].Opcode)
			require.Equal(t, qpn, wc[i].QP)
			require.Equal(t, i == 3, wc[i].Solicited)
		}
		require.Zero(t, x.cq.Poll(wc[:]))
	}
	ci := x.f.writes(q.db)
	require.Equal(t, uint32(40), ci[len(ci)-1]&cs.CQDBCICIMask)

	// Wait arms the CQ and sleeps until CQ_NOTIFY.
	got := make(chan iwarp.Completion, 1)
	go func() {
		c, err := x.cq.Wait(context.Background())
		require.NoError(t, err)
		got <- c
	}()
	for {
		if v := x.f.writes(q.db); v[len(v)-1]>>cs.CQDBCIArmShift&1 != 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	x.f.cqe(q.cqn, func(e cs.CQE) { e.SetWRID(1000); e.SetQPN(uint16(qpn)) })
	x.f.eqe(cs.EQETypeCQNotify, q.cqn, 0, nil)
	require.Equal(t, uint64(1000), (<-got).ID)

	// Arm for solicited only: the card is armed so, and fires on one.
	x.cq.Arm(true)
	v := x.f.writes(q.db)
	require.Equal(t, uint32(1<<31|1<<30|41), v[len(v)-1])
	x.f.cqe(q.cqn, func(e cs.CQE) { e.SetWRID(1001); e.SetQPN(uint16(qpn)); e.SetSolicited(true) })
	x.f.eqe(cs.EQETypeCQNotify, q.cqn, 0, nil)
	select {
	case <-x.cq.Notify():
	case <-time.After(30 * time.Second):
		t.Fatal("no notification")
	}
	require.Equal(t, 1, x.cq.Poll(wc[:]))

	// The card lost one: the queue reports the overflow once drained.
	x.f.cqe(q.cqn, func(e cs.CQE) { e.SetWRID(1002); e.SetQPN(uint16(qpn)) })
	x.f.eqe(cs.EQETypeCQOverrun, q.cqn, 0, nil)
	c, err := x.cq.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, uint64(1002), c.ID)
	_, err = x.cq.Wait(context.Background())
	require.ErrorIs(t, err, iwarp.ErrCQOverflow)
	require.True(t, x.cq.Overflowed())
}

// TestSolicitedArmRace: armed by the user for solicited completions, the
// driver re-arms the card after an event for an ordinary one; a solicited
// completion written just before that re-arm reaches the card raises no
// event of its own, and must still notify.
func TestSolicitedArmRace(t *testing.T) {
	x := attach(t, driver.QPConfig{})
	q := x.cq.(*cq)
	qpn := x.qp.QPN()
	x.cq.Arm(true)
	// A Wait arms the card for any completion; an ordinary one comes.
	got := make(chan iwarp.Completion, 1)
	go func() {
		c, err := x.cq.Wait(context.Background())
		assert.NoError(t, err)
		got <- c
	}()
	for {
		if v := x.f.writes(q.db); v[len(v)-1]>>cs.CQDBCIArmSolicitedShift&1 == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	var once sync.Once
	x.f.hook(func(off, v uint32) {
		if off == q.db && v>>cs.CQDBCIArmSolicitedShift&1 != 0 {
			once.Do(func() {
				x.f.cqe(q.cqn, func(e cs.CQE) { e.SetWRID(2); e.SetQPN(uint16(qpn)); e.SetSolicited(true) })
			})
		}
	})
	x.f.cqe(q.cqn, func(e cs.CQE) { e.SetWRID(1); e.SetQPN(uint16(qpn)) })
	x.f.eqe(cs.EQETypeCQNotify, q.cqn, 0, nil)
	require.Equal(t, uint64(1), (<-got).ID)
	select {
	case <-x.cq.Notify():
	case <-time.After(30 * time.Second):
		t.Fatal("the solicited completion written before the re-arm notified no one")
	}
}

func TestCorruptCQE(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(e cs.CQE, qpn uint32)
		msg  string
	}{
		{"status", func(e cs.CQE, qpn uint32) { e.SetQPN(uint16(qpn)); e.SetStatus(42) }, "status 42"},
		{"opcode", func(e cs.CQE, qpn uint32) { e.SetQPN(uint16(qpn)); e.SetOpcode(200) }, "opcode 200"},
		{"qpn", func(e cs.CQE, qpn uint32) { e.SetQPN(uint16(qpn + 5)) }, "does not complete on this CQ"},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := attach(t, driver.QPConfig{})
			qpn := x.qp.QPN()
			x.f.hook(func(off, v uint32) {
				if off == cs.QPCmd && v == uint32(cs.QPOpError) {
					go x.f.endQP(qpn, cs.QPErrHost)
				}
			})
			x.f.cqe(x.cq.(*cq).cqn, func(e cs.CQE) { c.set(e, qpn) })
			_, err := x.cq.Wait(context.Background())
			require.ErrorIs(t, err, ErrCorrupt)
			var re *RecordError
			require.ErrorAs(t, err, &re)
			require.Contains(t, re.Msg, c.msg)
			<-x.qp.Done()
			require.ErrorIs(t, x.qp.Err(), ErrCorrupt, "the QP ends with the CQE's error")
			_, err = x.cq.Wait(context.Background())
			require.ErrorIs(t, err, ErrCorrupt, "sticky")
			require.ErrorIs(t, x.qp.PostSend(iwarp.SendWR{Opcode: iwarp.WRSend}), ErrCorrupt)
		})
	}
}

func TestEvents(t *testing.T) {
	x := attach(t, driver.QPConfig{})
	qpn := x.qp.QPN()
	x.f.eqe(cs.EQETypeTermRecv, qpn+3, 0, nil)
	ev := <-x.c.Events()
	require.Equal(t, driver.EventQPFatal, ev.Type)
	require.ErrorIs(t, ev.Err, ErrCorrupt)
	require.Contains(t, ev.Err.Error(), "does not exist")
	x.f.eqe(cs.EQEType(99), 1, 0, nil)
	ev = <-x.c.Events()
	require.ErrorIs(t, ev.Err, ErrCorrupt)

	// The peer's Terminate ends the QP with its cause.
	x.f.qpstat(qpn, func(r cs.QPStat) { r.SetTXClosed(true); r.SetState(cs.QPStateError) })
	x.f.eqe(cs.EQETypeTermRecv, qpn, 0, func(e cs.EQE) { e.SetTermLayer(1); e.SetTermType(1); e.SetTermCode(1) })
	<-x.qp.Done()
	var ie *iwarp.Error
	require.ErrorAs(t, x.qp.Err(), &ie)
	require.True(t, ie.Remote)
	require.Equal(t, rdmap.DDPBaseBounds, ie.Cause)
	ev = <-x.c.Events()
	require.Equal(t, driver.EventQPFatal, ev.Type)
	require.Equal(t, qpn, ev.QPN)
	require.Contains(t, x.f.writes(cs.QPCmd), uint32(cs.QPOpDestroy))
	require.ErrorIs(t, x.qp.PostSend(iwarp.SendWR{Opcode: iwarp.WRSend}), iwarp.ErrTerminated)
	_, err := x.peer.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the connection is closed")
}

func TestDMAFault(t *testing.T) {
	x := attach(t, driver.QPConfig{})
	qpn := x.qp.QPN()
	x.f.mu.Lock()
	x.f.fault = [3]uint32{0xdead000, 0x1, qpn | 2<<16 | 1<<18 | 1<<24}
	x.f.mu.Unlock()
	x.f.hook(func(off, v uint32) {
		if off == cs.QPCmd && v == uint32(cs.QPOpError) {
			go x.f.endQP(qpn, cs.QPErrDMA)
		}
	})
	x.f.eqe(cs.EQETypeDMAFault, qpn, 0xdead000, nil)
	<-x.qp.Done()
	var de *DMAFaultError
	require.ErrorAs(t, x.qp.Err(), &de)
	require.Equal(t, uint64(0x1_0dead000), de.Addr)
	require.True(t, de.Write)
	require.Equal(t, qpn, de.QPN)
}

// TestCQError: CQ_ERROR (a CQE's write faulted) makes the CQ give the
// completions before the lost slot, then a *CQError naming the fault,
// for good, and fires an armed CQ's notification; the QP_ERROR DMA that
// follows ends the QP with ErrDMAFault.
func TestCQError(t *testing.T) {
	x := attach(t, driver.QPConfig{})
	qpn := x.qp.QPN()
	cqn := x.cq.(*cq).cqn
	x.f.cqe(cqn, func(e cs.CQE) { e.SetQPN(uint16(qpn)); e.SetWRID(7); e.SetOpcode(cs.WCOpcodeRDMAWrite) })
	slot := x.f.cqs[cqn].base + cs.CQESize
	x.f.mu.Lock()
	x.f.fault = [3]uint32{uint32(slot), uint32(slot >> 32), qpn | 2<<16 | 1<<18 | 1<<24}
	x.f.mu.Unlock()
	x.f.hook(func(off, v uint32) {
		if off == cs.QPCmd && v == uint32(cs.QPOpError) {
			go x.f.endQP(qpn, cs.QPErrDMA)
		}
	})
	wc, err := x.cq.Wait(context.Background())
	require.NoError(t, err, "the completion before the lost slot")
	require.Equal(t, uint64(7), wc.ID)
	x.cq.Arm(false)
	x.f.eqe(cs.EQETypeCQError, cqn, uint32(slot), nil)
	testwatch.Wait(t, x.cq.Notify(), "the armed CQ's notification of its error")
	for range 2 {
		_, err = x.cq.Wait(context.Background())
		require.ErrorIs(t, err, ErrDMAFault)
		var ce *CQError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, cqn, ce.CQN)
		require.Equal(t, slot, ce.Fault.Addr)
		require.Equal(t, qpn, ce.Fault.QPN)
		require.True(t, ce.Fault.Write)
	}
	x.f.eqe(cs.EQETypeQPError, qpn, uint32(cs.QPErrDMA), nil)
	<-x.qp.Done()
	require.ErrorIs(t, x.qp.Err(), ErrDMAFault)

	// DMA_FAULT_* hold a later fault: the CQ's error says what the event
	// alone knows (the address's low word), not another fault's QP.
	cq2, err := x.c.CreateCQ(8)
	require.NoError(t, err)
	cqn2 := cq2.(*cq).cqn
	x.f.eqe(cs.EQETypeCQError, cqn2, 0x1234_5000, nil)
	_, err = cq2.Wait(context.Background())
	var ce *CQError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, &DMAFaultError{Addr: 0x1234_5000, Write: true, Low32: true}, ce.Fault)
	require.Contains(t, err.Error(), "bits 31:0 are 0x12345000")

	// A CQ_ERROR for a CQ that does not exist is a corrupt event.
	for len(x.c.Events()) > 0 {
		<-x.c.Events()
	}
	x.f.eqe(cs.EQETypeCQError, cqn+9, 0, nil)
	for ev := range x.c.Events() {
		var re *RecordError
		if errors.As(ev.Err, &re) {
			require.Contains(t, re.Msg, "does not exist")
			break
		}
	}
}

// TestDMAFaultFatal: a DMA_FAULT with OBJ 0 is the card's own write (a
// QP's status record, named in DMA_FAULT_INFO) that stopped it
// (STATUS.FATAL): every QP ends with ErrCardFatal, which carries the
// fault, not only the QP whose record it was.
func TestDMAFaultFatal(t *testing.T) {
	x := attach(t, driver.QPConfig{})
	qpn := x.qp.QPN()
	x.f.mu.Lock()
	x.f.fault = [3]uint32{0x2000 + 32*qpn, 0, qpn | 2<<16 | 1<<18 | 1<<24}
	x.f.fatal = true
	x.f.mu.Unlock()
	x.f.eqe(cs.EQETypeDMAFault, 0, 0x2000+32*qpn, nil)
	<-x.qp.Done()
	require.ErrorIs(t, x.qp.Err(), ErrCardFatal)
	var de *DMAFaultError
	require.ErrorAs(t, x.qp.Err(), &de)
	require.Equal(t, uint64(0x2000+32*qpn), de.Addr)
	require.Equal(t, qpn, de.QPN)
}

// watchedQP is a QP on a fake card whose watchdog bound is bound.
func watchedQP(t *testing.T, bound time.Duration) (*fakePhys, *Card, *mem.PD, driver.QP) {
	f := newFake(t)
	c, err := Open(f, Options{Watchdog: bound})
	require.NoError(t, err)
	t.Cleanup(func() { closeFake(t, f, c) })
	pd, _ := c.AllocPD()
	cq, _ := c.CreateCQ(4)
	conn, _ := tcpPair(t)
	q, err := c.Attach(conn, mpa.Params{Rev: mpa.Rev1}, driver.QPConfig{PD: pd, SendCQ: cq, RecvCQ: cq})
	require.NoError(t, err)
	return f, c, pd, q
}

func TestStuckQP(t *testing.T) {
	_, _, _, q := watchedQP(t, 100*time.Millisecond)
	require.NoError(t, q.PostSend(iwarp.SendWR{Opcode: iwarp.WRSend}))
	// The card never consumes the WQE nor answers QP_CMD ERROR.
	select {
	case <-q.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("a stuck card hung the QP")
	}
	require.ErrorIs(t, q.Err(), ErrStuck)
	require.Contains(t, q.Err().Error(), "SQ_CI")
}

// TestStuckCompletion: a card that takes a signaled WR from the SQ and
// never completes it ends the QP with a StuckError naming the WR; a
// completion written but not polled yet, or one that waits on the peer's
// Read Response, is not the card being stuck.
func TestStuckCompletion(t *testing.T) {
	for _, c := range []struct {
		name  string
		wr    iwarp.SendWR
		cqe   bool // the card writes the completion (nobody polls it)
		stuck bool
	}{
		{"send never completed", iwarp.SendWR{ID: 0x51, Opcode: iwarp.WRSend, Signaled: true}, false, true},
		{"write never completed", iwarp.SendWR{ID: 0x52, Opcode: iwarp.WRWrite, Signaled: true, RKey: 0x100}, false, true},
		{"completion not polled", iwarp.SendWR{ID: 0x53, Opcode: iwarp.WRSend, Signaled: true}, true, false},
		{"read waits on the peer", iwarp.SendWR{ID: 0x54, Opcode: iwarp.WRRead, Signaled: true, RKey: 0x100,
			SGL: []iwarp.SGE{{Addr: 0x1000, Length: 64}}}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, cl, pd, q := watchedQP(t, 100*time.Millisecond)
			mr, err := cl.RegisterMR(pd, make([]byte, 4096), 0x1000, mem.LocalWrite, 0)
			require.NoError(t, err)
			wr := c.wr
			for i := range wr.SGL {
				wr.SGL[i].LKey = mr.STag
			}
			require.NoError(t, q.PostSend(wr))
			// The card takes the WR (and, where asked, writes its CQE).
			f.qpstat(q.QPN(), func(r cs.QPStat) { r.SetSQCI(uint16(sendBBs(&wr))) })
			if c.cqe {
				f.cqe(0, func(e cs.CQE) { e.SetWRID(wr.ID); e.SetQPN(uint16(q.QPN())); e.SetOpcode(cs.WCOpcodeSend) })
			}
			if !c.stuck {
				time.Sleep(1500 * time.Millisecond) // the watchdog looks many times past its bound
				require.NoError(t, q.Err())
				return
			}
			select {
			case <-q.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("a card that never completes hung the QP")
			}
			require.ErrorIs(t, q.Err(), ErrStuck)
			require.Contains(t, q.Err().Error(), fmt.Sprintf("WR %#x", wr.ID))
			require.Contains(t, q.Err().Error(), "completion")
		})
	}
}

func TestStreamBridge(t *testing.T) {
	x := attach(t, driver.QPConfig{})
	qpn := x.qp.QPN()
	db := cs.QPDBBase + qpn*cs.QPDBStride
	size := 1 << (x.f.qpSizes(qpn) >> 16 & 0x1f)
	txs := x.f.qpRing(qpn, cs.QPTXSBaseLo, size)
	rxs := x.f.qpRing(qpn, cs.QPRXSBaseLo, size)

	// The card writes stream bytes that wrap the ring: they reach the
	// socket in order, and TXS_CI follows.
	var sent []byte
	pi := uint32(0)
	for _, n := range []int{1000, size - 1000 - 10, 300} {
		chunk := make([]byte, n)
		for i := range chunk {
			chunk[i] = byte(len(sent) + i*7)
		}
		for i, b := range chunk {
			txs[(int(pi)+i)%size] = b
		}
		pi += uint32(n)
		sent = append(sent, chunk...)
		x.f.qpstat(qpn, func(r cs.QPStat) { r.SetTXSPI(pi) })
		x.f.eqe(cs.EQETypeTXData, qpn, 0, nil)
		got := make([]byte, n)
		_, err := io.ReadFull(x.peer, got)
		require.NoError(t, err)
		require.Equal(t, chunk, got)
	}
	for {
		if v := x.f.writes(db + cs.QPDBTXSCI); len(v) > 0 && v[len(v)-1] == pi {
			break
		}
		time.Sleep(time.Millisecond)
	}
	require.Contains(t, x.f.writes(db+cs.QPDBStream), uint32(1<<cs.QPDBStreamArmTXShift), "idle, it arms TX_DATA")

	// What the peer sends lands in the receive ring; RXS_PI follows.
	msg := []byte("hello, card")
	_, err := x.peer.Write(msg)
	require.NoError(t, err)
	for {
		if v := x.f.writes(db + cs.QPDBRXSPI); len(v) > 0 && v[len(v)-1] == uint32(len(msg)) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, msg, rxs[:len(msg)])
	// The card consumes what came; what the peer sends next fills the free
	// space across the ring's end (one readv of both pieces where the
	// socket has the bytes), in order, and RXS_PI follows.
	rxpi := func(want uint32) {
		for {
			if v := x.f.writes(db + cs.QPDBRXSPI); len(v) > 0 && v[len(v)-1] == want {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	x.f.qpstat(qpn, func(r cs.QPStat) { r.SetRXSCI(uint32(len(msg))) })
	more := make([]byte, 500)
	_, err = x.peer.Write(more)
	require.NoError(t, err)
	pi = uint32(len(msg) + len(more))
	rxpi(pi)
	wrap := make([]byte, size-len(more)-100) // room left: the FIN is read
	for i := range wrap {
		wrap[i] = byte(i*13 + 5)
	}
	_, err = x.peer.Write(wrap)
	require.NoError(t, err)
	rxpi(pi + uint32(len(wrap)))
	for i, b := range wrap {
		require.Equal(t, b, rxs[(int(pi)+i)%size], "receive ring byte %d of the wrapped write", i)
	}
	// The peer's FIN: RX_FIN.
	require.NoError(t, x.peer.(*net.TCPConn).CloseWrite())
	for !contains(x.f.writes(db+cs.QPDBStream), 1<<cs.QPDBStreamRXFinShift) {
		time.Sleep(time.Millisecond)
	}
	// The card answers STREAM_END, flushes (QP_CMD ERROR from the driver)
	// and closes its stream: the QP ends gracefully and the peer sees EOF.
	x.f.hook(func(off, v uint32) {
		if off == cs.QPCmd && v == uint32(cs.QPOpError) {
			go x.f.endQP(qpn, cs.QPErrHost)
		}
	})
	x.f.eqe(cs.EQETypeStreamEnd, qpn, 0, nil)
	<-x.qp.Done()
	require.ErrorIs(t, x.qp.Err(), iwarp.ErrClosed)
	_, err = x.peer.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
	ev := <-x.c.Events()
	require.Equal(t, driver.EventQPClosed, ev.Type)
}

func TestConnectionLost(t *testing.T) {
	x := attach(t, driver.QPConfig{})
	qpn := x.qp.QPN()
	db := cs.QPDBBase + qpn*cs.QPDBStride
	x.f.hook(func(off, v uint32) {
		if off == db+cs.QPDBStream && v&(1<<cs.QPDBStreamRXLostShift) != 0 {
			go x.f.endQP(qpn, cs.QPErrLLPLost)
		}
	})
	require.NoError(t, x.peer.(*net.TCPConn).SetLinger(0))
	x.peer.Close() // a reset
	select {
	case <-x.qp.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the QP did not end after its connection was reset")
	}
	require.ErrorIs(t, x.qp.Err(), iwarp.ErrConnLost)
}

func contains(v []uint32, x uint32) bool {
	for _, e := range v {
		if e == x {
			return true
		}
	}
	return false
}

var _ = errors.Is

// TestWatchdogNotEarly: a card that takes its time (well inside the
// bound) is not declared stuck, even on the watchdog's first look.
func TestWatchdogNotEarly(t *testing.T) {
	f, _, _, q := watchedQP(t, 10*time.Second)
	require.NoError(t, q.PostSend(iwarp.SendWR{Opcode: iwarp.WRSend}))
	time.Sleep(3 * time.Second) // the watchdog looks at least twice
	require.NoError(t, q.Err())
	f.qpstat(q.QPN(), func(r cs.QPStat) { r.SetSQCI(1) })
}

// announcingFake is the fake card as a backend that announces the
// completions it writes (driver.Announcer), as the model card does.
type announcingFake struct {
	*fakePhys
	announce func()
}

func (a *announcingFake) OnCompletions(fn func()) { a.announce = fn }

// On a card that announces completions, a Wait sleeps without arming its
// CQ, one announcement wakes every Wait a completion is there for, and an
// announcement made with the CQ's lock held (from a register write the
// driver makes under it) does not block.
func TestAnnouncedCompletions(t *testing.T) {
	a := &announcingFake{fakePhys: newFake(t)}
	c, err := Open(a, Options{Watchdog: time.Minute})
	require.NoError(t, err)
	defer closeFake(t, a.fakePhys, c)
	require.NotNil(t, a.announce)
	pd, err := c.AllocPD()
	require.NoError(t, err)
	dcq, err := c.CreateCQ(16)
	require.NoError(t, err)
	q := dcq.(*cq)
	conn, _ := tcpPair(t)
	x, err := c.Attach(conn, mpa.Params{Rev: mpa.Rev1}, driver.QPConfig{PD: pd, SendCQ: dcq, RecvCQ: dcq})
	require.NoError(t, err)
	qpn := x.QPN()

	got := make(chan uint64, 2)
	for range 2 {
		go func() {
			c, err := dcq.Wait(context.Background())
			assert.NoError(t, err)
			got <- c.ID
		}()
	}
	for asleep := 0; asleep < 2; time.Sleep(time.Millisecond) {
		q.mu.Lock()
		asleep = q.waiters
		q.mu.Unlock()
	}
	for _, v := range a.writes(q.db) {
		require.Zero(t, v>>cs.CQDBCIArmShift&1, "a Wait armed CQ_DB (%#x) on a card that announces completions", v)
	}
	a.cqe(q.cqn, func(e cs.CQE) { e.SetWRID(1); e.SetQPN(uint16(qpn)) })
	a.cqe(q.cqn, func(e cs.CQE) { e.SetWRID(2); e.SetQPN(uint16(qpn)) })
	announced := make(chan struct{})
	go func() {
		q.mu.Lock()
		a.announce()
		q.mu.Unlock()
		close(announced)
	}()
	ids := map[uint64]bool{}
	for range 2 {
		select {
		case id := <-got:
			ids[id] = true
		case <-time.After(30 * time.Second):
			t.Fatalf("one announcement of two completions woke %d of the two Waits", len(ids))
		}
	}
	require.Equal(t, map[uint64]bool{1: true, 2: true}, ids)
	select {
	case <-announced:
	case <-time.After(30 * time.Second):
		t.Fatal("an announcement made with the CQ's lock held blocked")
	}
}

// TestCommandRefused has the card refuse a CQ_CMD and a QP_CMD through
// CMD_STATUS (a BAR write is posted: the write itself succeeds): the
// driver's call fails with a *CommandError naming the command and why,
// which ErrRefused and driver.ErrInvalid match, and the next command is
// taken. A card that never decides a command trips the watchdog.
func TestCommandRefused(t *testing.T) {
	f, c := openFake(t, Options{})
	refuse := func(why cs.CmdWhy) {
		f.mu.Lock()
		f.refuse = why
		f.mu.Unlock()
	}
	refuse(cs.CmdWhyBadSize)
	_, err := c.CreateCQ(16)
	require.ErrorIs(t, err, ErrRefused)
	require.ErrorIs(t, err, driver.ErrInvalid)
	var ce *CommandError
	require.ErrorAs(t, err, &ce)
	require.EqualValues(t, cs.CQCmd, ce.Reg)
	require.Equal(t, cs.CmdWhyBadSize, ce.Why)
	require.Contains(t, err.Error(), "CQ_CMD CREATE of CQ")
	require.Contains(t, err.Error(), "BAD_SIZE")
	cq, err := c.CreateCQ(16)
	require.NoError(t, err)

	pd, err := c.AllocPD()
	require.NoError(t, err)
	cfg := driver.QPConfig{PD: pd, SendCQ: cq, RecvCQ: cq}
	conn, _ := tcpPair(t)
	refuse(cs.CmdWhyNoCQ)
	_, err = c.Attach(conn, mpa.Params{Rev: mpa.Rev1, CRC: true}, cfg)
	require.ErrorAs(t, err, &ce)
	require.EqualValues(t, cs.QPCmd, ce.Reg)
	require.Equal(t, cs.CmdWhyNoCQ, ce.Why)
	require.Contains(t, err.Error(), "QP_CMD CREATE of QP")
	conn, _ = tcpPair(t)
	_, err = c.Attach(conn, mpa.Params{Rev: mpa.Rev1, CRC: true}, cfg)
	require.NoError(t, err, "the QP after a refused one")

	f2, c2 := openFake(t, Options{Watchdog: 100 * time.Millisecond})
	f2.mu.Lock()
	f2.mute = true
	f2.mu.Unlock()
	_, err = c2.CreateCQ(16)
	require.ErrorIs(t, err, ErrStuck)
	require.Contains(t, err.Error(), "CMD_STATUS.SEQ")
	f2.mu.Lock()
	f2.mute = false
	f2.cmdSeq = c2.cmdSeq // the card decides it late: the driver's count goes on
	f2.mu.Unlock()
}
