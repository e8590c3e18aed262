package iwarp

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/openiwarp/openiwarp/golden/iwarp/qp"
	"github.com/openiwarp/openiwarp/golden/mpa"
)

// The receive path runs in whichever goroutine holds rxMu: the receive
// goroutine (rxLoop), or a goroutine waiting on a CQ that only this
// endpoint feeds (CQ.Wait, through driveRx) and whose completions come
// from the receive path (worthDriving). When such a waiter is about, the
// receive goroutine steps aside, and the waiter reads the socket itself:
// the netpoller then wakes the very goroutine that wants the completion,
// which saves a goroutine handoff at each end of a round trip. A waiter
// blocked in the socket is woken for completions that come from
// elsewhere (the transmitter), for Destroy or for its context by a read
// deadline in the past (kick). A waiter that finds the receive goroutine
// blocked in the socket wakes it the same way (kickRx), and it steps
// aside. The receive goroutine comes back as soon as no waiter wants the
// socket (the last one leaves CQ.Wait, or parks without driving), and for
// a close: what arrives while the application is not waiting, a Read
// Request or an RDMA Write, is served at once, as an RNIC would.

func (ep *Endpoint) rxLoop() {
	defer ep.wg.Done()
	defer close(ep.rxExit)
	for {
		ep.rxMu.Lock()
		if !ep.rxEnded {
			n, err := ep.rxRead()
			ep.rxHandle(n, err)
		}
		ended := ep.rxEnded
		ep.rxMu.Unlock()
		if ended {
			return
		}
		if ep.rxWanted.Load() > 0 && !ep.rxRecalled.Load() {
			ep.rxStepAside()
		}
	}
}

// rxRead is the receive goroutine's read of the socket, which a waiter
// that wants the socket interrupts (kickRx). Called with rxMu held.
func (ep *Endpoint) rxRead() (int, error) {
	if !ep.kickable {
		return ep.conn.Read(ep.rxBuf)
	}
	ep.rkMu.Lock()
	if ep.rxWanted.Load() > 0 && !ep.rxRecalled.Load() {
		ep.rkMu.Unlock()
		return 0, nil // a waiter came meanwhile: the socket is its
	}
	ep.rkReading = true
	ep.rkMu.Unlock()
	n, err := ep.conn.Read(ep.rxBuf)
	ep.rkMu.Lock()
	ep.rkReading = false
	if ep.rkKicked {
		ep.rkKicked = false
		ep.conn.SetReadDeadline(time.Time{})
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = nil
		}
	}
	ep.rkMu.Unlock()
	return n, err
}

// kickRx wakes the receive goroutine if it is blocked in the socket, so
// that it steps aside for a waiter that wants the socket (rxWanted counts
// it already).
func (ep *Endpoint) kickRx() {
	ep.rkMu.Lock()
	if ep.rkReading && !ep.rkKicked && !ep.rxRecalled.Load() {
		ep.rkKicked = true
		ep.conn.SetReadDeadline(aLongTimeAgo)
	}
	ep.rkMu.Unlock()
}

// rxStepAside leaves the socket to CQ waiters until none wants it (the
// last one to leave calls resumeRx), or until recallRx.
func (ep *Endpoint) rxStepAside() {
	ep.rxAside.Store(true) // before the nudge: a waiter that then parks sees it
	ep.nudgeCQs()          // a waiter parked on its CQ comes and reads
	for {
		<-ep.rxResume
		if ep.rxWanted.Load() == 0 || ep.rxRecalled.Load() {
			break
		}
		// A waiter came back before the receive goroutine did: it has
		// the socket, and resumes the goroutine when it leaves.
	}
	ep.rxAside.Store(false)
}

// serveRx brings the receive goroutine back at once if it is aside and no
// waiter wants the socket: called by a waiter that parks on a CQ without
// driving (its completions may still need the receive path, a Read's
// response behind an unsignaled Send, say).
func (ep *Endpoint) serveRx() {
	if ep.rxAside.Load() && ep.rxWanted.Load() == 0 {
		ep.resumeRx()
	}
}

// nudgeCQs wakes the waiters of the endpoint's CQs.
func (ep *Endpoint) nudgeCQs() {
	ep.cfg.SendCQ.nudge()
	if ep.cfg.RecvCQ != ep.cfg.SendCQ {
		ep.cfg.RecvCQ.nudge()
	}
}

// resumeRx brings the receive goroutine back to the socket if no waiter
// wants it by the time the goroutine looks.
func (ep *Endpoint) resumeRx() {
	select {
	case ep.rxResume <- struct{}{}:
	default:
	}
}

// recallRx brings the receive goroutine back to the socket for good,
// waiters or not: the stream ended in a waiter's hands, or is closing
// (the peer's FIN must be read).
func (ep *Endpoint) recallRx() {
	ep.rxRecalled.Store(true)
	ep.resumeRx()
}

// rxHandle runs the receive path on n octets read with error err. Called
// with rxMu held.
func (ep *Endpoint) rxHandle(n int, err error) {
	if n > 0 && !ep.dropping {
		if ferr := ep.defr.Feed(ep.rxBuf[:n], ep.deliver); ferr != nil {
			ep.dropping = true
			if !errors.Is(ferr, qp.ErrStopped) {
				ep.mpaError(ferr)
			}
		}
	}
	if ep.rxAnswer {
		ep.rxAnswer = false
		ep.answerReads()
	}
	if err == nil {
		return
	}
	ep.rxEnded = true
	var lost error // the peer closed (nil), or the connection broke
	if !errors.Is(err, io.EOF) {
		lost = err
	}
	ep.mu.Lock()
	ep.q.LLPEnded(lost)
	ep.unlock()
}

// driveRx is CQ.Wait's turn at the receive path of ep, the only endpoint
// feeding cq: it reads the socket once, unless the receive path is busy
// elsewhere or a completion is already there. It reports whether it did
// anything (the caller polls again) or must wait on the CQ instead.
func (ep *Endpoint) driveRx(cq *CQ, ctx context.Context) bool {
	if !ep.rxMu.TryLock() {
		ep.kickRx() // if it is the receive goroutine's, it steps aside and nudges
		return false
	}
	defer ep.rxMu.Unlock()
	if ep.rxEnded {
		return false
	}
	cq.mu.Lock()
	if cq.n > 0 || cq.overflow || cq.destroyed {
		cq.mu.Unlock()
		return true
	}
	cq.reader = ep
	cq.watchLocked(ctx)
	ep.kReading = true
	if ctx.Err() != nil {
		ep.kick() // ended before the watch: the read must not block
	}
	cq.mu.Unlock()
	n, err := ep.conn.Read(ep.rxBuf)
	cq.mu.Lock()
	cq.reader = nil
	ep.kReading = false
	kicked := ep.kicked
	if kicked {
		ep.kicked = false
		ep.conn.SetReadDeadline(time.Time{})
	}
	cq.mu.Unlock()
	if kicked && errors.Is(err, os.ErrDeadlineExceeded) {
		err = nil
	}
	ep.rxHandle(n, err)
	if ep.rxEnded {
		ep.recallRx() // the receive goroutine ends too
	}
	return true
}

// worthDriving reports whether a waiter on cq should run the receive
// path: the completions it waits for come from there (receives, Reads),
// not from the transmitter (Sends and Writes complete once written),
// whose completions would have to kick it out of the socket one by one.
func (ep *Endpoint) worthDriving(cq *CQ) bool {
	if !ep.kickable {
		return false // a waiter blocked in such a socket could not be woken
	}
	return cq != ep.cfg.SendCQ || ep.sqNonRead.Load() == 0 // every WR still to complete is a Read
}

// kick wakes a CQ waiter blocked in ep's socket. Called with the mu of
// the CQ whose reader ep is: one at a time, as driveRx runs under rxMu.
func (ep *Endpoint) kick() {
	if ep.kReading && !ep.kicked {
		ep.kicked = true
		ep.conn.SetReadDeadline(aLongTimeAgo)
	}
}

var aLongTimeAgo = time.Unix(1, 0)

// mpaError ends the stream on an MPA error (RFC 5044 §8): a Terminate with
// layer LLP and no headers, unless the error requires closing TCP at once.
func (ep *Endpoint) mpaError(err error) {
	ep.mu.Lock()
	ep.q.MPAError(err)
	ep.unlock()
}

// onULPDU hands one inbound ULPDU to the core (qp.QP.Receive). A Read
// Request it accepts is answered once this read is handled (answerReads)
// or by the transmit goroutine.
func (ep *Endpoint) onULPDU(u mpa.ULPDU) error {
	ep.mu.Lock()
	err := ep.q.Receive(u.Data)
	if r := ep.q.ReadsIn(); r != ep.readsSeen {
		ep.readsSeen = r
		if ep.raw != nil {
			ep.rxAnswer = true
		} else {
			ep.cond.Broadcast()
		}
	}
	ep.unlock()
	return err
}
