package iwarp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// errStop ends a Feed after the stream has failed: later segments are
// silently dropped (RFC 5041 §7.1).
var errStop = errors.New("iwarp: stream failed")

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
		if ferr := ep.defr.Feed(ep.rxBuf[:n], ep.deliver); ferr != nil && !errors.Is(ferr, errStop) {
			ep.dropping = true
			ep.mpaError(ferr)
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
	ep.mu.Lock()
	ep.rxDone = true
	if ep.state == stLive || ep.state == stClosing {
		// The peer closed or the connection broke. A FIN after a
		// graceful close of ours is the normal end; anything else
		// ends the stream with the outstanding work flushed.
		if ep.state == stClosing || errors.Is(err, io.EOF) {
			ep.err = ErrClosed // our graceful close, or the peer's
		} else {
			ep.err = fmt.Errorf("%w: %v", ErrConnLost, err)
		}
		ep.state = stError
		ep.failed.Store(true)
		ep.flushLocked(ep.err)
	}
	ep.cond.Broadcast()
	ep.mu.Unlock()
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
	c, term := MPATerminate(err)
	ep.mu.Lock()
	defer ep.mu.Unlock()
	// The FPDU that failed was the Initiator's first one, or a later one:
	// either way the Initiator is sending FPDUs, and the Responder may
	// answer with its Terminate (RFC 5044 §7.1.2 rule 4 holds back FPDUs
	// only until the Initiator's first one has arrived).
	ep.firstRx = true
	ep.abortLocked(&Error{Cause: c, Msg: "MPA", Err: err}, term)
}

// fail reports the first error on an inbound segment: a Terminate with the
// headers RFC 5040 Fig. 10 asks for (Reject.Terminate).
func (ep *Endpoint) fail(r *Reject) error {
	t := r.Terminate()
	ep.dropping = true
	ep.abort(&Error{Cause: r.Cause, Terminate: t, Msg: r.Msg}, t)
	return errStop
}

func (ep *Endpoint) onULPDU(u mpa.ULPDU) error {
	if ep.dropping {
		return errStop
	}
	if !ep.firstRx {
		ep.mu.Lock()
		ep.firstRx = true
		ep.cond.Broadcast()
		ep.mu.Unlock()
	}
	d := u.Data
	seg, op, rj := CheckHeaders(d, ep.dv, ep.rv)
	if rj != nil {
		return ep.fail(rj)
	}
	if ep.failed.Load() {
		ep.dropping = true
		return errStop
	}
	switch op {
	case rdmap.OpWrite:
		h := seg.Tagged()
		f := ep.placer.PlaceTagged(mem.Request{STag: mem.STag(h.STag()), PD: ep.pd.ID, QP: ep.qpn, TO: h.TO(), Use: mem.UseRemoteWrite}, d, seg.Payload)
		if rj := CheckWrite(seg, d, f); rj != nil {
			return ep.fail(rj)
		}
		return nil
	case rdmap.OpReadResponse:
		return ep.rxReadResponse(seg, d)
	case rdmap.OpReadRequest:
		return ep.rxReadRequest(seg, d)
	case rdmap.OpTerminate:
		return ep.rxTerminate(seg)
	}
	return ep.rxSend(seg, op, d)
}

// first returns the head of one of the endpoint's queues, or nil.
func first[T any](ep *Endpoint, q *[]*T) *T {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if len(*q) == 0 {
		return nil
	}
	return (*q)[0]
}

func (ep *Endpoint) rxSend(seg ddp.Segment, op rdmap.Opcode, d []byte) error {
	h := seg.Untagged()
	r := first(ep, &ep.rq)
	st := RecvState{MSN: ep.rxMSN[rdmap.QNSend], Posted: r != nil}
	if r != nil {
		st.Got, st.Cap = r.got, r.cap
	}
	if rj := CheckSend(seg, op, d, st); rj != nil {
		if rj.Cause == rdmap.DDPMessageTooLong {
			ep.mu.Lock()
			r.status = WCLocLenErr
			ep.mu.Unlock()
		}
		return ep.fail(rj)
	}
	n := uint64(len(seg.Payload))
	p := seg.Payload
	if f := r.sc.next(n, func(s SGE, off, k uint32) mem.Fault {
		f := ep.tab.Place(mem.Request{STag: s.LKey, PD: ep.pd.ID, QP: ep.qpn, TO: s.Addr + uint64(off), Use: mem.UseLocalWrite}, p[:k])
		p = p[k:]
		return f
	}); f != mem.OK {
		return ep.fail(SendPlacementFailed(op, d, r.wr.ID, f))
	}
	r.got += n
	if !seg.Control.Last() {
		return nil
	}
	info, _ := op.Info()
	c := Completion{ID: r.wr.ID, Opcode: WCRecv, ByteLen: uint32(r.got), QP: ep.qpn, Solicited: info.Solicited}
	if info.Invalidate {
		stag := mem.STag(h.RsvdULP1())
		if !ep.tab.RemoteInvalidate(stag, ep.pd.ID, ep.qpn) {
			return ep.fail(CannotInvalidate(op, d, stag))
		}
		c.Invalidated, c.InvalidatedSTag = true, stag
	}
	ep.rxMSN[rdmap.QNSend]++
	ep.mu.Lock()
	ep.rxMsgs++
	if ep.state < stError {
		copy(ep.rq, ep.rq[1:]) // not rq[1:]: appends would then reallocate it
		ep.rq[len(ep.rq)-1] = nil
		ep.rq = ep.rq[:len(ep.rq)-1]
		ep.rqFree = append(ep.rqFree, r)
		if !ep.cfg.RecvCQ.push(c, info.Solicited) {
			ep.cqOverflowLocked()
			ep.dropping = true
		}
	}
	ep.mu.Unlock()
	return nil
}

func (ep *Endpoint) rxReadRequest(seg ddp.Segment, d []byte) error {
	ep.mu.Lock()
	queued := len(ep.irq)
	ep.mu.Unlock()
	rr, hdr, rj := CheckReadRequest(seg, d, ep.rxMSN[rdmap.QNReadRequest], queued, ep.cfg.IRD)
	if rj != nil {
		return ep.fail(rj)
	}
	if rr.Size > 0 {
		f := ep.tab.Verify(mem.Request{STag: mem.STag(rr.SrcSTag), PD: ep.pd.ID, QP: ep.qpn, TO: rr.SrcTO, Len: uint64(rr.Size), Use: mem.UseRemoteRead})
		if rj := ReadSourceFault(d, hdr, rr, f); rj != nil {
			return ep.fail(rj)
		}
	}
	ep.rxMSN[rdmap.QNReadRequest]++
	ep.mu.Lock()
	if ep.state < stError {
		ep.irq = append(ep.irq, inboundRead{rr: rr, hdr: append([]byte(nil), seg.Header...)})
		if ep.raw != nil {
			ep.rxAnswer = true // answered once this read is handled (answerReads)
		} else {
			ep.cond.Broadcast()
		}
	}
	ep.mu.Unlock()
	return nil
}

func (ep *Endpoint) rxReadResponse(seg ddp.Segment, d []byte) error {
	h := seg.Tagged()
	s := first(ep, &ep.orq)
	rs := ReadSink{Outstanding: s != nil}
	if s != nil {
		if len(s.wr.SGL) == 1 {
			rs.Sink = s.wr.SGL[0]
		}
		rs.Got = s.got
	}
	if rj := CheckReadResponse(seg, d, rs); rj != nil {
		return ep.fail(rj)
	}
	if n := uint64(len(seg.Payload)); n > 0 {
		f := ep.placer.PlaceTagged(mem.Request{STag: rs.Sink.LKey, PD: ep.pd.ID, QP: ep.qpn, TO: h.TO(), Use: mem.UseReadResponse}, d, seg.Payload)
		if rj := ReadResponsePlacement(d, f); rj != nil {
			return ep.fail(rj)
		}
		s.got += n
	}
	if !seg.Control.Last() {
		return nil
	}
	if rj := ReadResponseShort(d, s.got, rs.Sink.Length); rj != nil {
		return ep.fail(rj)
	}
	ep.mu.Lock()
	ep.rxMsgs++
	if ep.state < stError && len(ep.orq) > 0 {
		ep.orq = ep.orq[1:]
		s.done = true
		ep.completeLocked()
		ep.cond.Broadcast()
	}
	ep.mu.Unlock()
	return nil
}

func (ep *Endpoint) rxTerminate(seg ddp.Segment) error {
	ep.dropping = true
	c, t, msg, err := TerminateReceived(seg, ep.rxMSN[rdmap.QNTerminate])
	e := &Error{Remote: true, Cause: c, Terminate: t, Msg: msg, Err: err}
	ep.abort(e, nil) // never answer a Terminate with a Terminate
	return errStop
}
