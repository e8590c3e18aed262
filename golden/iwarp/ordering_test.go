package iwarp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// next reads the victim's stream until n more messages have arrived, or
// the timeout passes; it returns what arrived.
func (h *hostile) next(t *testing.T, n int, timeout time.Duration) []rdmap.Message {
	var got []rdmap.Message
	buf := make([]byte, 1<<16)
	deadline := time.Now().Add(timeout)
	for len(got) < n {
		h.conn.SetReadDeadline(deadline)
		k, err := h.conn.Read(buf)
		if k > 0 {
			require.NoError(t, h.df.Feed(buf[:k], func(u mpa.ULPDU) error {
				m, err := rdmap.Parse(append([]byte(nil), u.Data...))
				require.NoError(t, err)
				got = append(got, m)
				return nil
			}))
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return got
		}
		require.NoError(t, err)
	}
	return got
}

// await reads the victim's stream until n more messages have arrived; if
// they have not after testwatch.Patience, the test fails saying so.
func (h *hostile) await(t *testing.T, n int) []rdmap.Message {
	t.Helper()
	got := h.next(t, n, testwatch.Patience())
	if len(got) < n {
		testwatch.Stuck(t, fmt.Sprintf("%d messages from the victim (%d arrived)", n, len(got)), testwatch.Patience())
	}
	return got
}

// expect reads exactly n more messages: n arrive within a generous time,
// then nothing more for a short while.
func (h *hostile) expect(t *testing.T, n int) []rdmap.Message {
	var got []rdmap.Message
	if n > 0 {
		got = h.await(t, n)
		require.Len(t, got, n)
	}
	require.Empty(t, h.next(t, 1, 200*time.Millisecond), "more than %d messages", n)
	return got
}

func noCompletion(t *testing.T, cq *CQ) {
	var wc [1]Completion
	require.Zero(t, cq.Poll(wc[:]), "unexpected completion %+v", wc[0])
}

// TestCompletionOrder: a Send posted after a Read completes after it,
// though its data left first (RFC 5040 §5.5 rule 15, requirement 74).
func TestCompletionOrder(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{})
	sink := make([]byte, 16)
	mr := v.reg(t, sink, 0x100, all)
	h.send(t, write(1, 0, true, nil)) // the MPA Responder may now speak
	require.NoError(t, v.ep.PostSend(
		SendWR{ID: 1, Opcode: WRRead, SGL: []SGE{{Addr: 0x100, Length: 16, LKey: mr.STag}}, RemoteAddr: 0x5000, RKey: 0x77, Signaled: true},
		SendWR{ID: 2, Opcode: WRSend, Inline: []byte("after"), Signaled: true},
	))
	msgs := h.await(t, 2)
	require.Len(t, msgs, 2)
	assert.Equal(t, rdmap.OpReadRequest, msgs[0].Opcode())
	assert.Equal(t, rdmap.OpSend, msgs[1].Opcode())
	rr := msgs[0].ReadRequest.Fields()
	assert.Equal(t, rdmap.ReadRequestFields{SinkSTag: uint32(mr.STag), SinkTO: 0x100, Size: 16, SrcSTag: 0x77, SrcTO: 0x5000}, rr)
	time.Sleep(50 * time.Millisecond)
	noCompletion(t, v.scq) // the Send's data is out, but the Read is not done
	h.send(t, readResp(mem.STag(rr.SinkSTag), rr.SinkTO, []byte("0123456789abcdef")))
	waitOK(t, v.scq, 1, WCRead)
	waitOK(t, v.scq, 2, WCSend)
	assert.Equal(t, "0123456789abcdef", string(sink))
}

// TestORD: no more than ORD Reads are outstanding; later WRs wait behind
// the blocked Read (requirements 82, 84).
func TestORD(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{cfg: Config{ORD: 2}})
	sink := make([]byte, 5)
	mr := v.reg(t, sink, 0, all)
	h.send(t, write(1, 0, true, nil))
	for i := 0; i < 5; i++ {
		require.NoError(t, v.ep.PostSend(SendWR{ID: uint64(i), Opcode: WRRead, SGL: []SGE{{Addr: uint64(i), Length: 1, LKey: mr.STag}}, RKey: 9, RemoteAddr: uint64(i), Signaled: true}))
	}
	require.NoError(t, v.ep.PostSend(SendWR{ID: 99, Opcode: WRSend, Inline: []byte("s"), Signaled: true}))
	h.expect(t, 2) // only ORD Read Requests may be outstanding
	// Each response frees one ORD slot for the next Read; the Send behind
	// the fifth Read goes with it (Sends are not limited by ORD).
	want := []int{1, 1, 2, 0, 0}
	for i := 0; i < 5; i++ {
		h.send(t, readResp(mr.STag, uint64(i), []byte{byte('a' + i)}))
		got := h.expect(t, want[i])
		if i == 2 {
			assert.Equal(t, rdmap.OpReadRequest, got[0].Opcode())
			assert.Equal(t, rdmap.OpSend, got[1].Opcode())
		}
		waitOK(t, v.scq, uint64(i), WCRead)
	}
	waitOK(t, v.scq, 99, WCSend)
	assert.Equal(t, "abcde", string(sink))
}

// TestFence: a fenced Write waits until the earlier Read completes (§3.4).
func TestFence(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{})
	sink := make([]byte, 4)
	mr := v.reg(t, sink, 0, all)
	h.send(t, write(1, 0, true, nil))
	require.NoError(t, v.ep.PostSend(
		SendWR{ID: 1, Opcode: WRRead, SGL: []SGE{{Addr: 0, Length: 4, LKey: mr.STag}}, RKey: 5, Signaled: true},
		SendWR{ID: 2, Opcode: WRWrite, Inline: []byte("w"), RKey: 5, Fence: true, Signaled: true},
	))
	got := h.expect(t, 1)
	assert.Equal(t, rdmap.OpReadRequest, got[0].Opcode())
	h.send(t, readResp(mr.STag, 0, []byte("data")))
	got = h.await(t, 1)
	require.Len(t, got, 1)
	assert.Equal(t, rdmap.OpWrite, got[0].Opcode())
	waitOK(t, v.scq, 1, WCRead)
	waitOK(t, v.scq, 2, WCWrite)
}

// TestZeroLength: zero-length Reads and Writes are not checked against
// their STags, and a zero-length Read is answered with one empty, last
// Read Response (requirements 42, 150).
func TestZeroLength(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{})
	h.send(t, write(0xdeadbeef, ^uint64(0), true, nil),
		readReq(1, rdmap.ReadRequestFields{SinkSTag: 0x42, SinkTO: 7, Size: 0, SrcSTag: 0xbad, SrcTO: ^uint64(0)}))
	got := h.await(t, 1)
	require.Len(t, got, 1)
	m := got[0]
	assert.Equal(t, rdmap.OpReadResponse, m.Opcode())
	assert.True(t, m.Segment.Control.Last())
	assert.Equal(t, uint32(0x42), m.Tagged().STag())
	assert.Equal(t, uint64(7), m.Tagged().TO())
	assert.Empty(t, m.Payload)
	assert.NoError(t, v.ep.Err())
}

// TestReadResponseChecks: a Read Response that does not match the
// outstanding Read is refused before placement (requirement 47).
func TestReadResponseChecks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		resp  func(mr *mem.MR) []byte
		cause rdmap.Cause
	}{
		{"wrong STag", func(mr *mem.MR) []byte { return readResp(mr.STag^0x100, 0, []byte("ab")) }, rdmap.DDPInvalidSTag},
		{"wrong TO", func(mr *mem.MR) []byte { return readResp(mr.STag, 1, []byte("ab")) }, rdmap.DDPBaseBounds},
		{"too long", func(mr *mem.MR) []byte { return readResp(mr.STag, 0, []byte("abcde")) }, rdmap.DDPBaseBounds},
		{"too short", func(mr *mem.MR) []byte { return readResp(mr.STag, 0, []byte("ab")) }, rdmap.DDPBaseBounds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			h, v := hostilePair(t, pairOpts{})
			arena := []byte("________")
			mr := v.reg(t, arena[2:6:6], 0, all)
			h.send(t, write(1, 0, true, nil))
			require.NoError(t, v.ep.PostSend(SendWR{ID: 1, Opcode: WRRead, SGL: []SGE{{Addr: 0, Length: 4, LKey: mr.STag}}, RKey: 5, Signaled: true}))
			require.Len(t, h.await(t, 1), 1)
			h.send(t, tc.resp(mr))
			term := h.terminate(t)
			assert.Equal(t, tc.cause, term.Cause, "%v", term.Cause)
			c := wait(t, v.scq)
			assert.Equal(t, WCFlushErr, c.Status)
			// A refused segment writes nothing, the short last one too.
			assert.Equal(t, "________", string(arena))
		})
	}
}

// TestSolicitedEvent: a CQ armed for solicited events fires on a Send with
// SE and not on a plain Send (requirement 53).
func TestSolicitedEvent(t *testing.T) {
	checkLeaks(t)
	a, b := pair(t, pairOpts{})
	rb := make([]byte, 8)
	rmr := b.reg(t, rb, 0, mem.LocalWrite)
	require.NoError(t, b.ep.PostRecv(RecvWR{ID: 1, SGL: []SGE{{Addr: 0, Length: 4, LKey: rmr.STag}}}, RecvWR{ID: 2, SGL: []SGE{{Addr: 4, Length: 4, LKey: rmr.STag}}}))
	b.rcq.Arm(true)
	require.NoError(t, a.ep.PostSend(SendWR{ID: 1, Opcode: WRSend, Inline: []byte("no")}))
	waitOK(t, b.rcq, 1, WCRecv)
	select {
	case <-b.rcq.Events():
		t.Fatal("event for an unsolicited Send")
	default:
	}
	require.NoError(t, a.ep.PostSend(SendWR{ID: 2, Opcode: WRSend, Solicited: true, Inline: []byte("yes")}))
	if !testwatch.Done(t, b.rcq.Events(), "the solicited event") {
		t.FailNow()
	}
	c := waitOK(t, b.rcq, 2, WCRecv)
	assert.True(t, c.Solicited)
}

// TestGracefulClose: Close sends what is queued, then FIN; the peer sees a
// clean close and its posted receives are flushed.
func TestGracefulClose(t *testing.T) {
	checkLeaks(t)
	a, b := pair(t, pairOpts{})
	rb := make([]byte, 8)
	rmr := b.reg(t, rb, 0, mem.LocalWrite)
	require.NoError(t, b.ep.PostRecv(RecvWR{ID: 1, SGL: []SGE{{Addr: 0, Length: 8, LKey: rmr.STag}}}, RecvWR{ID: 2, SGL: []SGE{{Addr: 0, Length: 8, LKey: rmr.STag}}}))
	require.NoError(t, a.ep.PostSend(SendWR{ID: 1, Opcode: WRSend, Inline: []byte("bye"), Signaled: true}))
	require.NoError(t, a.ep.Close())
	waitOK(t, a.scq, 1, WCSend)
	waitOK(t, b.rcq, 1, WCRecv)
	c := wait(t, b.rcq)
	assert.Equal(t, WCFlushErr, c.Status)
	<-b.ep.Done()
	assert.ErrorIs(t, a.ep.Err(), ErrClosed)
	assert.ErrorIs(t, b.ep.Err(), ErrClosed)
	assert.ErrorIs(t, a.ep.PostSend(SendWR{Opcode: WRSend}), ErrClosed)
}

// TestConnectionLost: a reset connection flushes everything with no Terminate.
func TestConnectionLost(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{})
	rb := make([]byte, 8)
	rmr := v.reg(t, rb, 0, mem.LocalWrite)
	require.NoError(t, v.ep.PostRecv(RecvWR{ID: 1, SGL: []SGE{{Addr: 0, Length: 8, LKey: rmr.STag}}}))
	h.conn.(*net.TCPConn).SetLinger(0)
	h.conn.Close()
	c := wait(t, v.rcq)
	assert.Equal(t, WCFlushErr, c.Status)
	<-v.ep.Done()
	assert.ErrorIs(t, v.ep.Err(), ErrConnLost)
}

// TestManyConnections runs many endpoints with many WRs in flight each.
func TestManyConnections(t *testing.T) {
	checkLeaks(t)
	const conns, ops, size = 8, 64, 8192
	ctx := testwatch.Context(t, "traffic on many connections")
	errc := make(chan error, conns)
	for c := 0; c < conns; c++ {
		a, b := pair(t, pairOpts{markers: c%2 == 0, noCRC: c%3 == 0})
		go func() { errc <- traffic(ctx, a, b, ops, size, byte(c)) }()
	}
	for c := 0; c < conns; c++ {
		require.NoError(t, <-errc)
	}
}

// traffic posts ops Writes, Sends and Reads at once from a to b and checks
// every byte and every completion.
func traffic(ctx context.Context, a, b *side, ops, size int, seed byte) error {
	var err error
	reg := func(sd *side, addr uint64, acc mem.Access) ([]byte, *mem.MR) {
		buf := make([]byte, ops*size)
		var mr *mem.MR
		if err == nil {
			mr, err = sd.pd.RegisterMR(buf, addr, acc, 0)
		}
		return buf, mr
	}
	src, amr := reg(a, 0x100000, all)
	fill(src, seed)
	dst, bmr := reg(b, 0x900000, all)
	recv, rmr := reg(b, 0, mem.LocalWrite)
	back, backMR := reg(a, 0, all)
	if err != nil {
		return err
	}
	for i := 0; i < ops; i++ {
		if err := b.ep.PostRecv(RecvWR{ID: uint64(i), SGL: []SGE{{Addr: uint64(i * size), Length: uint32(size), LKey: rmr.STag}}}); err != nil {
			return err
		}
	}
	var wrs []SendWR
	for i := 0; i < ops; i++ {
		off := uint64(i * size)
		wrs = append(wrs,
			SendWR{ID: uint64(3 * i), Opcode: WRWrite, SGL: []SGE{{Addr: 0x100000 + off, Length: uint32(size), LKey: amr.STag}}, RemoteAddr: 0x900000 + off, RKey: bmr.STag, Signaled: true},
			SendWR{ID: uint64(3*i + 1), Opcode: WRSend, SGL: []SGE{{Addr: 0x100000 + off, Length: uint32(size), LKey: amr.STag}}, Signaled: i%4 == 0},
			SendWR{ID: uint64(3*i + 2), Opcode: WRRead, SGL: []SGE{{Addr: off, Length: uint32(size), LKey: backMR.STag}}, RemoteAddr: 0x900000 + off, RKey: bmr.STag, Signaled: true})
	}
	if err := a.ep.PostSend(wrs...); err != nil {
		return err
	}
	last := uint64(0)
	for n := 0; n < ops*2+ops/4; n++ {
		c, err := a.scq.Wait(ctx)
		if err != nil {
			return err
		}
		if c.Status != WCSuccess || (n > 0 && c.ID <= last) {
			return errors.New("send completion out of order or failed: " + c.Status.String())
		}
		last = c.ID
	}
	for i := 0; i < ops; i++ {
		c, err := b.rcq.Wait(ctx)
		if err != nil {
			return err
		}
		if c.Status != WCSuccess || c.ID != uint64(i) || c.ByteLen != uint32(size) {
			return errors.New("receive completion wrong")
		}
	}
	if string(src) != string(dst) || string(src) != string(recv) || string(src) != string(back) {
		return errors.New("data differs")
	}
	return nil
}

// TestCQOverflow: a full CQ ends the streams that report to it, with a
// Local Catastrophic Terminate; a stream on another CQ keeps working
// (RFC 5040 §8.1.1 #10, security test S10).
func TestCQOverflow(t *testing.T) {
	checkLeaks(t)
	a, b := pair(t, pairOpts{cqDepth: 1})
	small := b.rcq
	a2, b2 := pair(t, pairOpts{})
	rb := make([]byte, 16)
	rmr := b.reg(t, rb, 0, mem.LocalWrite)
	require.NoError(t, b.ep.PostRecv(RecvWR{ID: 1, SGL: []SGE{{Addr: 0, Length: 8, LKey: rmr.STag}}}, RecvWR{ID: 2, SGL: []SGE{{Addr: 8, Length: 8, LKey: rmr.STag}}}))
	require.NoError(t, a.ep.PostSend(SendWR{ID: 1, Opcode: WRSend, Inline: []byte("1")}, SendWR{ID: 2, Opcode: WRSend, Inline: []byte("2")}))
	<-b.ep.Done()
	var ee *Error
	require.ErrorAs(t, b.ep.Err(), &ee)
	assert.Equal(t, rdmap.RDMAPLocalCatastrophic, ee.Cause)
	assert.ErrorIs(t, ee, ErrCQOverflow)
	<-a.ep.Done()
	require.ErrorAs(t, a.ep.Err(), &ee)
	assert.True(t, ee.Remote)
	assert.Equal(t, rdmap.RDMAPLocalCatastrophic, ee.Cause)
	assert.True(t, small.Overflowed())
	// The other pair, on its own CQs, is unaffected.
	buf := make([]byte, 4)
	mr := b2.reg(t, buf, 0, mem.LocalWrite)
	require.NoError(t, b2.ep.PostRecv(RecvWR{ID: 9, SGL: []SGE{{Addr: 0, Length: 4, LKey: mr.STag}}}))
	require.NoError(t, a2.ep.PostSend(SendWR{ID: 9, Opcode: WRSend, Inline: []byte("ok"), Signaled: true}))
	waitOK(t, b2.rcq, 9, WCRecv)
}
