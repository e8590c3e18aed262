package rnic

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// bridgeSide is one direction of a QP's stream bridge.
type bridgeSide struct {
	wakeCh  chan struct{} // a TX_DATA or RX_SPACE event, or a post
	fin     chan struct{} // the QP is ending: finish up
	finOne  sync.Once
	done    chan struct{} // the goroutine exited
	closing atomic.Bool   // the driver closes the connection: errors are expected
	sent    atomic.Uint32 // transmit: TXS_CI, the stream bytes handed to TCP
	discard atomic.Bool   // receive: the QP is in error, read and drop until the peer's FIN
}

func (b *bridgeSide) init() {
	b.wakeCh, b.fin, b.done = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
}

// wake wakes the goroutine if it waits (an event, or a post that may have
// given it work).
func (b *bridgeSide) wake() {
	select {
	case b.wakeCh <- struct{}{}:
	default:
	}
}

// kick is wake, named for the posting side.
func (b *bridgeSide) kick() { b.wake() }

func (b *bridgeSide) finish() { b.finOne.Do(func() { close(b.fin) }) }

func (b *bridgeSide) finishing() bool {
	select {
	case <-b.fin:
		return true
	default:
		return false
	}
}

// stream writes the STREAM doorbell.
func (q *qp) stream(bits uint32) error { return q.c.write(q.db+cs.QPDBStream, bits) }

// lost reports a connection failure to the card (RX_LOST): it puts the QP
// in error and the QP ends with iwarp.ErrConnLost.
func (q *qp) lost(err error) {
	q.setReason(fmt.Errorf("rnic: QP %d: connection lost: %w", q.qpn, errors.Join(iwarp.ErrConnLost, err)))
	if q.stream(1<<cs.QPDBStreamRXLostShift) != nil {
		q.fail(iwarp.ErrConnLost)
	}
}

// corrupt ends the QP on a status record that cannot be right.
func (q *qp) corrupt(msg string) {
	q.fail(&RecordError{Record: "QPSTAT", Obj: q.qpn, Msg: fmt.Sprintf("QP %d: %s", q.qpn, msg)})
}

// txSendLocked writes the bytes the card has put on the transmit ring up
// to the status record's TXS_PI to the socket, with one writev straight
// from the ring (two pieces where it wraps), then gives the space back
// (TXS_CI). With nonblock it writes what the socket takes at once and
// leaves the rest (and any error) to the transmit goroutine. It reports
// whether it moved TXS_CI, and stop when the QP is done for (an error was
// reported). Called with txMu held.
func (q *qp) txSendLocked(nonblock bool) (moved, stop bool) {
	b := &q.tx
	if q.txGone {
		return false, true // a post raced the QP's end: the ring is freed
	}
	size := uint32(len(q.txs.b))
	ci := q.txCI
	pi := q.statWord(0)
	n := pi - ci
	if n == 0 {
		return false, false
	}
	if n > size {
		q.corrupt(fmt.Sprintf("TXS_PI %d is more than a ring (%d bytes) past TXS_CI %d", pi, size, ci))
		return false, true
	}
	s := ci % size
	pieces := q.txPieces[:1]
	if s+n <= size {
		pieces[0] = q.txs.b[s : s+n]
	} else {
		pieces = q.txPieces[:2]
		pieces[0], pieces[1] = q.txs.b[s:], q.txs.b[:s+n-size]
	}
	if raceBuild {
		// The race detector learns that a socket orders the writer's
		// memory accesses before the reader's from write(2), which Go
		// annotates, not from writev(2).
		q.conn.Write(nil)
	}
	if nonblock {
		k := q.tryWritev(pieces)
		if k <= 0 {
			return false, false
		}
		n = uint32(k)
	} else {
		bufs := net.Buffers(pieces)
		if _, err := bufs.WriteTo(q.conn); err != nil {
			if !b.closing.Load() {
				q.lost(err)
			}
			return false, true
		}
	}
	q.txCI = ci + n
	b.sent.Store(q.txCI)
	if err := q.c.write(q.db+cs.QPDBTXSCI, q.txCI); err != nil {
		q.fail(err)
		return false, true
	}
	return true, false
}

// tryWritev writes what the socket takes of pieces without waiting: the
// bytes written, 0 when it takes none or cannot be written this way.
func (q *qp) tryWritev(pieces [][]byte) int {
	if q.raw == nil {
		return 0
	}
	q.wvIn, q.wvOut = pieces, 0
	q.raw.Write(q.wvFn)
	q.wvIn = nil
	return q.wvOut
}

// writevOnce is tryWritev's RawConn.Write callback (made once per QP: a
// closure per call would allocate): one writev of wvIn, its byte count in
// wvOut, and never a wait for the socket. Called with txMu held.
func (q *qp) writevOnce(fd uintptr) bool {
	if n, err := unix.Writev(int(fd), q.wvIn); err == nil {
		q.wvOut = n
	}
	return true
}

// txPush sends, from the posting goroutine, what a doorbell's first steps
// of the card put on the transmit ring, as far as the socket takes it at
// once; the transmit goroutine is woken only if it holds the ring or
// bytes are left, so a small Send costs no goroutine handoff.
func (q *qp) txPush() {
	if !q.txMu.TryLock() {
		q.tx.kick()
		return
	}
	_, stop := q.txSendLocked(true)
	left := !stop && q.statWord(0) != q.txCI
	q.txMu.Unlock()
	if left {
		q.tx.kick()
	}
}

// txLoop copies the transmit stream ring to the socket (txSendLocked).
// Idle, it arms ARM_TX and sleeps until the TX_DATA event or a post's
// kick. Once the card has closed the stream (TX_CLOSED) and the ring is
// drained, it shuts down the socket's sending side.
func (q *qp) txLoop() {
	b := &q.tx
	defer close(b.done)
	armed := false
	pause := 20 * time.Microsecond
	for {
		q.txMu.Lock()
		moved, stop := q.txSendLocked(false)
		pi := q.txCI
		q.txMu.Unlock()
		if stop {
			return
		}
		if moved {
			armed = false
			continue
		}
		if q.statWord(12)>>8&1 != 0 {
			if q.statWord(0) != pi {
				// The card wrote its last bytes (a Terminate) and TX_CLOSED
				// between the two reads: send them first.
				continue
			}
			if tc, ok := q.conn.(interface{ CloseWrite() error }); ok {
				tc.CloseWrite()
			}
			return
		}
		if b.finishing() {
			// The QP ended: the card writes what it still sends (a
			// Terminate) and then TX_CLOSED, which raises no event: look
			// again shortly, until then or until the driver closes the
			// connection (Options.Linger).
			if b.closing.Load() {
				return
			}
			time.Sleep(pause)
			pause = min(2*pause, 5*time.Millisecond)
			continue
		}
		if !armed {
			if err := q.stream(1 << cs.QPDBStreamArmTXShift); err != nil {
				q.fail(err)
				return
			}
			armed = true
			continue // bytes written before the arm raise no event: look again
		}
		select {
		case <-b.wakeCh:
			armed = false
		case <-b.fin:
		}
	}
}

// rxLoop reads the socket straight into the receive stream ring, as much
// as the free space up to the ring's end allows, and rings RXS_PI. With
// the ring full it arms ARM_RX and sleeps until RX_SPACE. The peer's FIN
// becomes STREAM.RX_FIN, a socket error STREAM.RX_LOST.
func (q *qp) rxLoop() {
	b := &q.rx
	defer close(b.done)
	size := uint32(len(q.rxs.b))
	var pi uint32
	armed := false
	for {
		if b.discard.Load() {
			q.rxDiscard()
			return
		}
		ci := q.statWord(4)
		used := pi - ci
		if used > size {
			q.corrupt(fmt.Sprintf("RXS_CI %d is past RXS_PI %d", ci, pi))
			return
		}
		if used == size {
			switch {
			case b.finishing():
				return
			case b.discard.Load():
				continue // the loop's head drops what comes
			case !armed:
				if err := q.stream(1 << cs.QPDBStreamArmRXShift); err != nil {
					q.fail(err)
					return
				}
				armed = true
				continue
			}
			select {
			case <-b.wakeCh:
				armed = false
			case <-b.fin:
			}
			continue
		}
		n, err := q.rxRead(pi%size, size-used)
		if n > 0 {
			pi += uint32(n)
			if werr := q.c.write(q.db+cs.QPDBRXSPI, pi); werr != nil {
				q.fail(werr)
				return
			}
			// The doorbell's first steps of the card may have completed
			// a receive or sent a Read Response: a waiter wakes from
			// here, not through the event goroutine, and what is on the
			// transmit ring goes out.
			q.rcq.poke()
			if q.scq != q.rcq {
				q.scq.poke()
			}
			q.txPush()
		}
		if err != nil {
			switch {
			case b.closing.Load():
			case errors.Is(err, io.EOF):
				if werr := q.stream(1 << cs.QPDBStreamRXFinShift); werr != nil {
					q.fail(werr)
				}
			default:
				q.lost(err)
			}
			return
		}
	}
}

// rxRead reads the socket into n bytes of the receive ring's free space
// from offset s: one read(2), or where the space wraps one readv(2) of
// both pieces, so that each system call may take all the free space (as a
// plain socket reader's buffer) and not only what lies before the ring's
// end. A connection that is not a socket gets one Read up to the end.
func (q *qp) rxRead(s, n uint32) (int, error) {
	size := uint32(len(q.rxs.b))
	if s+n <= size || q.raw == nil {
		return q.conn.Read(q.rxs.b[s:min(size, s+n)])
	}
	q.rvIn = append(q.rvIn[:0], q.rxs.b[s:], q.rxs.b[:s+n-size])
	q.rvOut, q.rvErr = 0, nil
	if err := q.raw.Read(q.rvFn); err != nil {
		return 0, err
	}
	switch {
	case q.rvErr != nil:
		return 0, fmt.Errorf("readv: %w", q.rvErr)
	case q.rvOut == 0:
		return 0, io.EOF
	}
	return q.rvOut, nil
}

// readvOnce is rxRead's RawConn.Read callback (made once per QP): one
// readv of rvIn, waiting for the socket (false) while it has nothing.
func (q *qp) readvOnce(fd uintptr) bool {
	for {
		n, err := unix.Readv(int(fd), q.rvIn)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		q.rvOut, q.rvErr = n, err
		if raceBuild && err == nil {
			// As in txSendLocked: the race detector learns that the
			// socket orders the peer's writes before these reads from
			// read(2), which Go annotates, not from readv(2). A read of
			// nothing takes no bytes.
			syscall.Read(int(fd), nil)
		}
		return true
	}
}

// rxDiscard reads and drops what the peer still sends once the QP is in
// error, until its FIN or the driver closes the connection: a socket
// closed with unread data sends a reset, which can overtake (and so
// lose) the Terminate the card wrote last.
func (q *qp) rxDiscard() {
	buf := make([]byte, 32<<10)
	for {
		if _, err := q.conn.Read(buf); err != nil {
			return
		}
	}
}
