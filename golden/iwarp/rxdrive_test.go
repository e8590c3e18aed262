package iwarp

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// Tests of the receive path run by CQ waiters (Endpoint.driveRx): every
// way a waiter blocked in the socket must be woken, and every way the
// socket must still be read when waiters come and go. A lost wakeup
// shows as a hang (the helpers wait up to 20 s).

func recvBuf(t *testing.T, s *side, n int) *mem.MR {
	return s.reg(t, make([]byte, n), 0, mem.LocalWrite)
}

// TestWaiterDrivesReceive: a ping-pong where each side's waiter reads its
// own socket; Sends land in order, and a Signaled Write's completion,
// which comes from the transmitter, wakes a waiter blocked in the socket.
func TestWaiterDrivesReceive(t *testing.T) {
	checkLeaks(t)
	a, b := pair(t, pairOpts{})
	am, bm := recvBuf(t, a, 8), recvBuf(t, b, 8)
	for i := range 200 {
		require.NoError(t, b.ep.PostRecv(RecvWR{ID: uint64(i), SGL: []SGE{{Addr: 0, Length: 8, LKey: bm.STag}}}))
		require.NoError(t, a.ep.PostSend(SendWR{Opcode: WRSend, Inline: []byte{byte(i)}}))
		c := waitOK(t, b.rcq, uint64(i), WCRecv)
		require.Equal(t, uint32(1), c.ByteLen)
		require.Equal(t, byte(i), bm.Buf[0])
		require.NoError(t, a.ep.PostRecv(RecvWR{ID: uint64(i), SGL: []SGE{{Addr: 0, Length: 8, LKey: am.STag}}}))
		require.NoError(t, b.ep.PostSend(SendWR{Opcode: WRSend, Inline: []byte{byte(i + 1)}}))
		waitOK(t, a.rcq, uint64(i), WCRecv)
	}
	// a's send CQ is fed by a alone: its waiter drives a's socket, where
	// nothing comes; the Write's completion comes from the transmitter.
	src := a.reg(t, make([]byte, 4096), 0, all)
	dst := b.reg(t, make([]byte, 4096), 0, all)
	for i := range 50 {
		require.NoError(t, a.ep.PostSend(SendWR{ID: uint64(i), Opcode: WRWrite, SGL: []SGE{{Addr: 0, Length: 4096, LKey: src.STag}}, RKey: dst.STag, Signaled: true}))
		waitOK(t, a.scq, uint64(i), WCWrite)
	}
}

// TestWaitersOnBothCQs: one endpoint, a waiter on its send CQ and one on
// its receive CQ at once; only one can read the socket, and the other
// must take over when the first leaves.
func TestWaitersOnBothCQs(t *testing.T) {
	checkLeaks(t)
	a, b := pair(t, pairOpts{})
	bm := recvBuf(t, b, 8)
	src := a.reg(t, make([]byte, 64), 0, all)
	const n = 200 // within the queue depths (256)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, cq := range []*CQ{b.scq, b.rcq} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, end := testwatch.Step(t, "200 completions")
			defer end()
			for range n {
				c, err := cq.Wait(ctx)
				if err == nil && c.Status != WCSuccess {
					err = errors.New(c.Status.String())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range n {
		require.NoError(t, b.ep.PostRecv(RecvWR{ID: uint64(i), SGL: []SGE{{Addr: 0, Length: 8, LKey: bm.STag}}}))
		require.NoError(t, a.ep.PostSend(SendWR{Opcode: WRSend, Inline: []byte{1}}))
		// b's Read: its response comes through b's socket, completes on b's send CQ.
		require.NoError(t, b.ep.PostSend(SendWR{ID: uint64(i), Opcode: WRRead, SGL: []SGE{{Addr: 0, Length: 8, LKey: bm.STag}}, RKey: src.STag, RemoteAddr: 0, Signaled: true}))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestWaiterCancelled: a waiter blocked in the socket returns when its
// context ends, and the socket works as before afterwards (the kick's
// read deadline is gone).
func TestWaiterCancelled(t *testing.T) {
	checkLeaks(t)
	a, b := pair(t, pairOpts{})
	bm := recvBuf(t, b, 8)
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(20 * time.Millisecond); cancel() }()
		_, err := b.rcq.Wait(ctx)
		require.ErrorIs(t, err, context.Canceled)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.rcq.Wait(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, b.ep.PostRecv(RecvWR{ID: 9, SGL: []SGE{{Addr: 0, Length: 8, LKey: bm.STag}}}))
	require.NoError(t, a.ep.PostSend(SendWR{Opcode: WRSend, Inline: []byte("ok")}))
	waitOK(t, b.rcq, 9, WCRecv)
	require.Equal(t, "ok", string(bm.Buf[:2]))
}

// TestNoWaiterAfterWaits: once the waiters are gone, the receive goroutine
// reads again: a peer's Writes and Read Requests are served, and a Send
// completes, with the ULP only polling.
func TestNoWaiterAfterWaits(t *testing.T) {
	checkLeaks(t)
	a, b := pair(t, pairOpts{})
	bm := recvBuf(t, b, 8)
	require.NoError(t, b.ep.PostRecv(RecvWR{ID: 1, SGL: []SGE{{Addr: 0, Length: 8, LKey: bm.STag}}}))
	require.NoError(t, a.ep.PostSend(SendWR{Opcode: WRSend, Inline: []byte{1}}))
	waitOK(t, b.rcq, 1, WCRecv) // b's waiter drove b's socket
	src := b.reg(t, []byte("served without a waiter"), 0, all)
	sink := a.reg(t, make([]byte, len(src.Buf)), 0, all)
	require.NoError(t, b.ep.PostRecv(RecvWR{ID: 2, SGL: []SGE{{Addr: 0, Length: 8, LKey: bm.STag}}}))
	require.NoError(t, a.ep.PostSend(
		SendWR{Opcode: WRWrite, SGL: []SGE{{Addr: 0, Length: 8, LKey: sink.STag}}, RKey: src.STag, RemoteAddr: 0},
		SendWR{ID: 3, Opcode: WRRead, SGL: []SGE{{Addr: 0, Length: uint32(len(src.Buf)), LKey: sink.STag}}, RKey: src.STag, Signaled: true},
		SendWR{Opcode: WRSend, Inline: []byte{2}},
	))
	waitOK(t, a.scq, 3, WCRead) // b answered the Read with nobody waiting on b's CQs
	require.Equal(t, src.Buf, sink.Buf)
	require.Equal(t, uint64(2), pollFor(t, b.rcq).ID, "b's Send, with b only polling")
}

// pollFor polls cq until a completion comes.
func pollFor(t *testing.T, cq *CQ) Completion {
	var wc [1]Completion
	if !testwatch.Until(t, "a completion while only polling", func() bool { return cq.Poll(wc[:]) == 1 }) {
		t.FailNow()
	}
	return wc[0]
}

// TestCloseWhileWaiterReads: closing either end while a waiter is blocked
// in the socket ends the wait with the flushed receive.
func TestCloseWhileWaiterReads(t *testing.T) {
	for _, closer := range []string{"self", "peer"} {
		t.Run(closer, func(t *testing.T) {
			checkLeaks(t)
			a, b := pair(t, pairOpts{})
			bm := recvBuf(t, b, 8)
			require.NoError(t, b.ep.PostRecv(RecvWR{ID: 4, SGL: []SGE{{Addr: 0, Length: 8, LKey: bm.STag}}}))
			got := make(chan Completion, 1)
			go func() { got <- wait(t, b.rcq) }()
			time.Sleep(10 * time.Millisecond) // let the waiter block in the socket (either way is correct)
			if closer == "self" {
				require.NoError(t, b.ep.Close())
			} else {
				require.NoError(t, a.ep.Close())
			}
			c := <-got
			require.Equal(t, uint64(4), c.ID)
			require.Equal(t, WCFlushErr, c.Status)
			<-b.ep.Done()
			require.ErrorIs(t, b.ep.Err(), ErrClosed)
		})
	}
}

// TestDestroyWakesWaiters: Destroy ends every wait on the CQ, the one
// blocked in the socket and one parked on the CQ, and later ones; what
// completes afterwards can still be polled.
func TestDestroyWakesWaiters(t *testing.T) {
	checkLeaks(t)
	a, b := pair(t, pairOpts{})
	bm := recvBuf(t, b, 8)
	errs := make(chan error, 2)
	for range 2 {
		go func() { _, err := b.rcq.Wait(context.Background()); errs <- err }()
	}
	time.Sleep(10 * time.Millisecond) // let them block (either way is correct)
	b.rcq.Destroy()
	for range 2 {
		require.ErrorIs(t, <-errs, ErrCQDestroyed)
	}
	_, err := b.rcq.Wait(context.Background())
	require.ErrorIs(t, err, ErrCQDestroyed)
	require.NoError(t, b.ep.PostRecv(RecvWR{ID: 6, SGL: []SGE{{Addr: 0, Length: 8, LKey: bm.STag}}}))
	require.NoError(t, a.ep.PostSend(SendWR{Opcode: WRSend, Inline: []byte{1}}))
	require.Equal(t, uint64(6), pollFor(t, b.rcq).ID)
}

// noDeadlines is a connection that refuses read deadlines, as some
// net.Conn implementations do.
type noDeadlines struct{ net.Conn }

func (noDeadlines) SetReadDeadline(time.Time) error { return errors.New("no deadlines here") }

// TestWaiterWithoutDeadlines: on a connection that takes no read
// deadline, a waiter could not be woken out of the socket, so it never
// reads it: the receive goroutine does, and waits still end.
func TestWaiterWithoutDeadlines(t *testing.T) {
	checkLeaks(t)
	o := pairOpts{}
	cc, cp, sc, sp := connectMPA(t, mpaConfig(o), mpaConfig(o))
	a, b := newSide(t, cc, cp, o), newSide(t, noDeadlines{sc}, sp, o)
	require.False(t, b.ep.kickable)
	bm := recvBuf(t, b, 8)
	for i := range 20 {
		require.NoError(t, b.ep.PostRecv(RecvWR{ID: uint64(i), SGL: []SGE{{Addr: 0, Length: 8, LKey: bm.STag}}}))
		require.NoError(t, a.ep.PostSend(SendWR{Opcode: WRSend, Inline: []byte{byte(i)}}))
		waitOK(t, b.rcq, uint64(i), WCRecv)
	}
}

// TestIdleResponders: many endpoints whose waiters left are all back at
// their sockets, and answer Reads with nobody waiting on their CQs.
func TestIdleResponders(t *testing.T) {
	checkLeaks(t)
	const n = 32
	type pr struct{ a, b *side }
	prs := make([]pr, n)
	for i := range prs {
		a, b := pair(t, pairOpts{})
		prs[i] = pr{a, b}
		bm := recvBuf(t, b, 8)
		require.NoError(t, b.ep.PostRecv(RecvWR{ID: 1, SGL: []SGE{{Addr: 0, Length: 8, LKey: bm.STag}}}))
		require.NoError(t, a.ep.PostSend(SendWR{Opcode: WRSend, Inline: []byte{1}}))
		waitOK(t, b.rcq, 1, WCRecv) // b's waiter drove b's socket, then left
	}
	for _, p := range prs {
		src := p.b.reg(t, []byte("read me"), 0, all)
		sink := p.a.reg(t, make([]byte, 7), 0, all)
		require.NoError(t, p.a.ep.PostSend(SendWR{ID: 2, Opcode: WRRead, SGL: []SGE{{Addr: 0, Length: 7, LKey: sink.STag}}, RKey: src.STag, Signaled: true}))
	}
	for _, p := range prs {
		waitOK(t, p.a.scq, 2, WCRead) // b answered with nobody waiting on its CQs
	}
}

// TestReadAnswersNeverBlockReceive: the receive path answers small Reads
// itself (answerReads), but must never wait for room in the socket: here
// the peer reads nothing until its Send has been received, with both
// socket buffers shrunk so that the answers to 16 Reads cannot all be
// taken at once. The Send is still received (the receive path went on
// reading), and then every answer arrives whole and in order (what the
// socket did not take went out from the transmit goroutine).
func TestReadAnswersNeverBlockReceive(t *testing.T) {
	checkLeaks(t)
	h, v := hostilePair(t, pairOpts{})
	require.NoError(t, h.conn.(*net.TCPConn).SetReadBuffer(4096))
	require.NoError(t, v.ep.conn.(*net.TCPConn).SetWriteBuffer(4096))
	const n, size = 16, 4096
	buf := make([]byte, n*size)
	fill(buf, 3)
	src := v.reg(t, buf, 0x10000, mem.RemoteRead)
	rb := recvBuf(t, v, 8)
	require.NoError(t, v.ep.PostRecv(RecvWR{ID: 7, SGL: []SGE{{Addr: 0, Length: 8, LKey: rb.STag}}}))
	var msgs [][]byte
	for i := range n {
		msgs = append(msgs, readReq(uint32(i+1), rdmap.ReadRequestFields{SinkSTag: 0x99, SinkTO: uint64(i * size), Size: size,
			SrcSTag: uint32(src.STag), SrcTO: 0x10000 + uint64(i*size)}))
	}
	msgs = append(msgs, untagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte{1}))
	h.send(t, msgs...)
	waitOK(t, v.rcq, 7, WCRecv)

	h.conn.SetReadDeadline(testwatch.Deadline()) // a watchdog: the answers stalled for good
	var got [][]byte
	rd := make([]byte, 64<<10)
	for len(got) < n {
		k, err := h.conn.Read(rd)
		require.NoError(t, err, "reading the answers (%d of %d so far)", len(got), n)
		require.NoError(t, h.df.Feed(rd[:k], func(u mpa.ULPDU) error {
			got = append(got, append([]byte(nil), u.Data...))
			return nil
		}))
	}
	require.Len(t, got, n)
	for i, u := range got {
		m, err := rdmap.Parse(u)
		require.NoError(t, err)
		require.Equal(t, rdmap.OpReadResponse, m.Opcode(), "answer %d", i)
		require.Equal(t, uint64(i*size), m.Tagged().TO(), "answer %d", i)
		require.Equal(t, buf[i*size:(i+1)*size], m.Payload, "answer %d", i)
	}
}
