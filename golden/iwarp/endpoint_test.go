package iwarp

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryOpcode runs each RDMAP operation end to end over TCP.
func TestEveryOpcode(t *testing.T) {
	checkLeaks(t)
	a, b := pair(t, pairOpts{})
	src := make([]byte, 1000)
	fill(src, 1)
	amr := a.reg(t, src, 0x10000, all)
	dst := make([]byte, 3000)
	bmr := b.reg(t, dst, 0x20000, all)

	// RDMA Write (opcode 0): placed, never delivered at the sink.
	require.NoError(t, a.ep.PostSend(SendWR{ID: 1, Opcode: WRWrite, SGL: []SGE{{Addr: 0x10000, Length: 1000, LKey: amr.STag}}, RemoteAddr: 0x20000 + 100, RKey: bmr.STag, Signaled: true}))
	waitOK(t, a.scq, 1, WCWrite)
	noCompletion(t, b.rcq) // a Write is never delivered to the sink's ULP
	// RDMA Read Request/Response (1, 2): read back what was written.
	back := make([]byte, 1000)
	backMR := a.reg(t, back, 0, all)
	require.NoError(t, a.ep.PostSend(SendWR{ID: 2, Opcode: WRRead, SGL: []SGE{{Addr: 0, Length: 1000, LKey: backMR.STag}}, RemoteAddr: 0x20000 + 100, RKey: bmr.STag, Signaled: true}))
	c := waitOK(t, a.scq, 2, WCRead)
	assert.Equal(t, uint32(1000), c.ByteLen)
	assert.Equal(t, src, back)
	assert.Equal(t, src, dst[100:1100])
	assert.Equal(t, make([]byte, 100), dst[:100])
	noCompletion(t, b.rcq) // nor is a Read Request
	noCompletion(t, b.scq)

	// Send family (3-6): each consumes one receive.
	rbuf := make([]byte, 4*64)
	rmr := b.reg(t, rbuf, 0, mem.LocalWrite)
	for i := uint64(0); i < 4; i++ {
		require.NoError(t, b.ep.PostRecv(RecvWR{ID: 100 + i, SGL: []SGE{{Addr: i * 64, Length: 64, LKey: rmr.STag}}}))
	}
	mw, err := b.pd.AllocMW(mem.KindMW2)
	require.NoError(t, err)
	bindMR := b.reg(t, make([]byte, 64), 0, all|mem.Bind)
	w1, err := mw.Bind(bindMR, 0, 64, mem.RemoteWrite, b.ep.QPN())
	require.NoError(t, err)
	mw2, err := b.pd.AllocMW(mem.KindMW2)
	require.NoError(t, err)
	w2, err := mw2.Bind(bindMR, 0, 32, mem.RemoteRead, b.ep.QPN())
	require.NoError(t, err)
	sends := []SendWR{
		{ID: 10, Opcode: WRSend, Inline: []byte("send"), Signaled: true},
		{ID: 11, Opcode: WRSendInvalidate, Inline: []byte("send-inv"), InvalidateSTag: w1, Signaled: true},
		{ID: 12, Opcode: WRSend, Solicited: true, Inline: []byte("send-se"), Signaled: true},
		{ID: 13, Opcode: WRSendInvalidate, Solicited: true, Inline: []byte("send-se-inv"), InvalidateSTag: w2, Signaled: true},
	}
	require.NoError(t, a.ep.PostSend(sends...))
	for i, s := range sends {
		waitOK(t, a.scq, s.ID, WCSend)
		rc := waitOK(t, b.rcq, 100+uint64(i), WCRecv)
		assert.Equal(t, string(s.Inline), string(rbuf[i*64:i*64+int(rc.ByteLen)]))
		assert.Equal(t, s.Solicited, rc.Solicited, "SE flag of %d", s.ID)
		assert.Equal(t, s.Opcode == WRSendInvalidate, rc.Invalidated)
		if rc.Invalidated {
			assert.Equal(t, s.InvalidateSTag, rc.InvalidatedSTag)
			e, _ := b.tab.Lookup(s.InvalidateSTag)
			assert.False(t, e.Valid, "remote invalidation took effect")
		}
	}
	// Terminate (7) is exercised by the hostile-peer tests.
	require.NoError(t, a.ep.Close())
	require.NoError(t, b.ep.Close())
}

// TestSizes moves messages from 0 bytes to 16 MiB with markers and CRC
// each on and off.
func TestSizes(t *testing.T) {
	checkLeaks(t)
	sizes := []int{0, 1, 3, 127, 4096, 65535, 65536 + 7, 1 << 20}
	for _, markers := range []bool{false, true} {
		for _, noCRC := range []bool{false, true} {
			sz := sizes
			if markers && !noCRC {
				sz = append(sz, 16<<20)
			}
			t.Run(fmt.Sprintf("markers=%v,crc=%v", markers, !noCRC), func(t *testing.T) {
				a, b := pair(t, pairOpts{markers: markers, noCRC: noCRC})
				for _, n := range sz {
					src := make([]byte, n)
					fill(src, byte(n))
					amr := a.reg(t, src, 0x1000, all)
					dst := make([]byte, n+16)
					bmr := b.reg(t, dst, 0x7000000, all)
					// Write at offset 8 of the sink.
					require.NoError(t, a.ep.PostSend(SendWR{ID: 1, Opcode: WRWrite, SGL: []SGE{{Addr: 0x1000, Length: uint32(n), LKey: amr.STag}}, RemoteAddr: 0x7000008, RKey: bmr.STag, Signaled: true}))
					waitOK(t, a.scq, 1, WCWrite)
					// Read it back into a fresh buffer: completes after the Write is placed.
					back := make([]byte, n)
					rmr := a.reg(t, back, 0, all)
					require.NoError(t, a.ep.PostSend(SendWR{ID: 2, Opcode: WRRead, SGL: []SGE{{Addr: 0, Length: uint32(n), LKey: rmr.STag}}, RemoteAddr: 0x7000008, RKey: bmr.STag, Signaled: true}))
					waitOK(t, a.scq, 2, WCRead)
					require.True(t, bytes.Equal(src, back), "size %d: read-back differs", n)
					require.Equal(t, make([]byte, 8), dst[:8])
					require.Equal(t, make([]byte, 8), dst[8+n:])
					// Send it, split over two SGEs on both sides.
					recv := make([]byte, n+5)
					recvMR := b.reg(t, recv, 0, mem.LocalWrite)
					h := uint32(n / 2)
					require.NoError(t, b.ep.PostRecv(RecvWR{ID: 3, SGL: []SGE{{Addr: 0, Length: h, LKey: recvMR.STag}, {Addr: uint64(h), Length: uint32(n) - h + 5, LKey: recvMR.STag}}}))
					require.NoError(t, a.ep.PostSend(SendWR{ID: 4, Opcode: WRSend, SGL: []SGE{{Addr: 0x1000, Length: h, LKey: amr.STag}, {Addr: 0x1000 + uint64(h), Length: uint32(n) - h, LKey: amr.STag}}, Signaled: true}))
					waitOK(t, a.scq, 4, WCSend)
					rc := waitOK(t, b.rcq, 3, WCRecv)
					require.Equal(t, uint32(n), rc.ByteLen)
					require.True(t, bytes.Equal(src, recv[:n]), "size %d: Send payload differs", n)
				}
			})
		}
	}
}

// TestRev0 runs the RDMA Consortium versions (DDP DV=0, RDMAP RV=0) that go
// with MPA revision 0 (draft-01), and checks the version on the wire.
func TestRev0(t *testing.T) {
	checkLeaks(t)
	a, b := pair(t, pairOpts{draft01: true})
	require.Equal(t, ddp.VersionRDMAC, a.ep.dv)
	require.Equal(t, rdmap.VersionRDMAC, b.ep.rv)
	src := []byte("rdmac")
	amr := a.reg(t, src, 0, all)
	dst := make([]byte, 5)
	bmr := b.reg(t, dst, 0, all)
	rb := make([]byte, 5)
	rmr := b.reg(t, rb, 0, mem.LocalWrite)
	require.NoError(t, b.ep.PostRecv(RecvWR{ID: 1, SGL: []SGE{{Addr: 0, Length: 5, LKey: rmr.STag}}}))
	require.NoError(t, a.ep.PostSend(
		SendWR{ID: 1, Opcode: WRWrite, SGL: []SGE{{Addr: 0, Length: 5, LKey: amr.STag}}, RKey: bmr.STag, Signaled: true},
		SendWR{ID: 2, Opcode: WRSend, SGL: []SGE{{Addr: 0, Length: 5, LKey: amr.STag}}, Signaled: true}))
	waitOK(t, a.scq, 1, WCWrite)
	waitOK(t, a.scq, 2, WCSend)
	waitOK(t, b.rcq, 1, WCRecv)
	assert.Equal(t, "rdmac", string(dst))
	assert.Equal(t, "rdmac", string(rb))
}

// TestMemoryWRs: binding a window and invalidating an STag as send-queue
// work requests, in order with the rest (digest §4.3, §4.4; S4).
func TestMemoryWRs(t *testing.T) {
	checkLeaks(t)
	a, b := pair(t, pairOpts{})
	region := make([]byte, 64)
	mr := b.reg(t, region, 0x4000, all|mem.Bind)
	mw, err := b.pd.AllocMW(mem.KindMW2)
	require.NoError(t, err)
	require.NoError(t, b.ep.PostSend(SendWR{ID: 1, Opcode: WRBindMW, Signaled: true,
		Bind: &MWBind{MW: mw, MR: mr, Addr: 0x4010, Length: 16, Access: mem.RemoteWrite}}))
	waitOK(t, b.scq, 1, WCBindMW)
	win := mw.STag
	e, ok := b.tab.Lookup(win)
	require.True(t, ok)
	require.True(t, e.Valid)
	assert.Equal(t, b.ep.QPN(), e.QP, "a type 2 window is bound to the endpoint's stream")

	require.NoError(t, a.ep.PostSend(SendWR{ID: 1, Opcode: WRWrite, Inline: []byte("window"), RemoteAddr: 0x4010, RKey: win, Signaled: true}))
	waitOK(t, a.scq, 1, WCWrite)
	// A Read back through the region's own STag orders after the Write.
	back := make([]byte, 6)
	bmr := a.reg(t, back, 0, all)
	require.NoError(t, a.ep.PostSend(SendWR{ID: 2, Opcode: WRRead, SGL: []SGE{{Addr: 0, Length: 6, LKey: bmr.STag}}, RemoteAddr: 0x4010, RKey: mr.STag, Signaled: true}))
	waitOK(t, a.scq, 2, WCRead)
	assert.Equal(t, "window", string(back))

	require.NoError(t, b.ep.PostSend(SendWR{ID: 2, Opcode: WRLocalInvalidate, InvalidateSTag: win, Signaled: true}))
	waitOK(t, b.scq, 2, WCLocalInv)
	require.NoError(t, a.ep.PostSend(SendWR{ID: 3, Opcode: WRWrite, Inline: []byte("late"), RemoteAddr: 0x4010, RKey: win}))
	<-b.ep.Done()
	var ee *Error
	require.ErrorAs(t, b.ep.Err(), &ee)
	assert.Equal(t, rdmap.DDPInvalidSTag, ee.Cause)
	assert.Equal(t, "window", string(region[16:22]), "nothing placed after the invalidation")
}

// TestPostCopiesWR checks the verbs rule that a WR is consumed at post
// time: the caller may reuse its SGL and inline slices at once, and
// completed entries reused for later WRs carry nothing over.
func TestPostCopiesWR(t *testing.T) {
	checkLeaks(t)
	a, b := pair(t, pairOpts{})
	rbuf := make([]byte, 4*64)
	rmr := b.reg(t, rbuf, 0, all)
	src := make([]byte, 3*64)
	fill(src, 7)
	smr := a.reg(t, src, 0, all)
	for round := 0; round < 3; round++ { // later rounds run on reused entries
		clear(rbuf)
		sgl := []SGE{{Addr: 0, Length: 64, LKey: rmr.STag}, {Addr: 128, Length: 64, LKey: rmr.STag}}
		require.NoError(t, b.ep.PostRecv(RecvWR{ID: 1, SGL: sgl}))
		sgl[0], sgl[1] = SGE{Addr: 64, Length: 64, LKey: rmr.STag}, SGE{Addr: 64, Length: 64, LKey: rmr.STag} // reused by the caller
		inline := []byte("inline payload")
		ssgl := []SGE{{Addr: 64, Length: 64, LKey: smr.STag}}
		wrs := []SendWR{
			{ID: 2, Opcode: WRSend, Inline: inline, Signaled: true},
			{ID: 3, Opcode: WRWrite, SGL: ssgl, RKey: rmr.STag, RemoteAddr: 192},
		}
		require.NoError(t, b.ep.PostRecv(RecvWR{ID: 4, SGL: []SGE{{Addr: 64, Length: 64, LKey: rmr.STag}}}))
		require.NoError(t, a.ep.PostSend(wrs...))
		copy(inline, "XXXXXXXXXXXXXX")
		ssgl[0] = SGE{Addr: 0, Length: 1, LKey: smr.STag}
		wrs[1].RKey = 0
		waitOK(t, a.scq, 2, WCSend)
		c := waitOK(t, b.rcq, 1, WCRecv)
		assert.Equal(t, uint32(14), c.ByteLen)
		assert.Equal(t, "inline payload", string(rbuf[:14]), "round %d: the Send went to the posted SGL", round)
		// A zero-length Send after the Write: when it is delivered, the Write is placed.
		require.NoError(t, a.ep.PostSend(SendWR{ID: 5, Opcode: WRSend, Signaled: true}))
		waitOK(t, a.scq, 5, WCSend)
		waitOK(t, b.rcq, 4, WCRecv)
		assert.Equal(t, src[64:128], rbuf[192:], "round %d: the Write sent the posted SGE", round)
	}
}
