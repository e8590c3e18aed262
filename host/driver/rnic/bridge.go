package rnic

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

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

// txLoop copies the transmit stream ring to the socket: the bytes the card
// wrote up to the status record's TXS_PI go out with one writev straight
// from the ring (two pieces where it wraps), then TXS_CI gives the space
// back. Idle, it arms ARM_TX and sleeps until the TX_DATA event. Once
// the card has closed the stream (TX_CLOSED) and the ring is drained, it
// shuts down the socket's sending side.
func (q *qp) txLoop() {
	b := &q.tx
	defer close(b.done)
	size := uint32(len(q.txs.b))
	var ci uint32
	var pieces [2][]byte
	armed := false
	pause := 20 * time.Microsecond
	for {
		pi := q.statWord(0)
		if n := pi - ci; n != 0 {
			if n > size {
				q.corrupt(fmt.Sprintf("TXS_PI %d is more than a ring (%d bytes) past TXS_CI %d", pi, size, ci))
				return
			}
			s := ci % size
			bufs := net.Buffers(pieces[:1])
			if s+n <= size {
				pieces[0] = q.txs.b[s : s+n]
			} else {
				pieces[0], pieces[1] = q.txs.b[s:], q.txs.b[:s+n-size]
				bufs = pieces[:2]
			}
			if raceBuild {
				// The race detector learns that a socket orders the
				// writer's memory accesses before the reader's from
				// write(2), which Go annotates, not from writev(2).
				q.conn.Write(nil)
			}
			if _, err := bufs.WriteTo(q.conn); err != nil {
				if !b.closing.Load() {
					q.lost(err)
				}
				return
			}
			ci = pi
			b.sent.Store(ci)
			if err := q.c.write(q.db+cs.QPDBTXSCI, ci); err != nil {
				q.fail(err)
				return
			}
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
		s := pi % size
		e := min(size, s+size-used)
		n, err := q.conn.Read(q.rxs.b[s:e])
		if n > 0 {
			pi += uint32(n)
			if werr := q.c.write(q.db+cs.QPDBRXSPI, pi); werr != nil {
				q.fail(werr)
				return
			}
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
