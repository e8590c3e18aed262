package iwarp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
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
// deadline in the past (kick). The receive goroutine comes back when no
// waiter has wanted the socket for a lease, when a waiter gives it up,
// and for a close.

// rxLease is how long the receive goroutine stays aside once no waiter
// has used the socket: what arrives meanwhile (a Read Request on a QP
// whose application has stopped waiting on its CQs, say) waits one to
// two leases. A shorter lease buys nothing: when every goroutine is
// idle, Go's netpoller sleeps in whole milliseconds, so its timers fire
// about 1 ms late anyway (measured: a 250 µs lease resumed after 1.15 ms).
const rxLease = time.Millisecond

func (ep *Endpoint) rxLoop() {
	defer ep.wg.Done()
	defer close(ep.rxExit)
	for {
		ep.rxMu.Lock()
		if !ep.rxEnded {
			n, err := ep.conn.Read(ep.rxBuf)
			ep.rxHandle(n, err)
		}
		ended := ep.rxEnded
		ep.rxMu.Unlock()
		if ended {
			return
		}
		if ep.rxWanted.Load() > 0 {
			ep.rxStepAside()
		}
	}
}

// rxStepAside leaves the socket to CQ waiters until none has used it for
// a lease (see leases), or until resumeRx.
func (ep *Endpoint) rxStepAside() {
	ep.rxAside.Store(true) // before the nudge: a waiter that then parks sees it
	ep.nudgeCQs()          // a waiter parked on its CQ comes and reads
	leases.add(ep)
	<-ep.rxResume
	ep.rxAside.Store(false)
	leases.remove(ep)
}

// serveRx brings the receive goroutine back at once if it is aside and no
// waiter wants the socket: called by a waiter that parks on a CQ without
// driving (its completions may still need the receive path, a Read's
// response behind an unsignaled Send, say), which would otherwise wait
// for the lease.
func (ep *Endpoint) serveRx() {
	if ep.rxAside.Load() && ep.rxWanted.Load() == 0 {
		ep.resumeRx()
	}
}

// leases holds the endpoints whose receive goroutine is aside. One
// goroutine checks them all every rxLease, whatever their number, and
// brings back those that no waiter has used since the last check; it
// runs only while there are such endpoints.
var leases leaseSet

type leaseSet struct {
	mu      sync.Mutex
	eps     map[*Endpoint]uint32 // rxActivity at the last check
	running bool
}

func (l *leaseSet) add(ep *Endpoint) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.eps == nil {
		l.eps = make(map[*Endpoint]uint32)
	}
	l.eps[ep] = ep.rxActivity.Load()
	if !l.running {
		l.running = true
		go l.keep()
	}
}

func (l *leaseSet) remove(ep *Endpoint) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.eps, ep)
}

func (l *leaseSet) keep() {
	t := time.NewTicker(rxLease)
	defer t.Stop()
	for range t.C {
		l.mu.Lock()
		for ep, seen := range l.eps {
			now := ep.rxActivity.Load()
			if now == seen && ep.rxWanted.Load() == 0 {
				delete(l.eps, ep)
				ep.resumeRx()
			} else {
				l.eps[ep] = now
			}
		}
		if len(l.eps) == 0 {
			l.running = false
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
	}
}

// nudgeCQs wakes the waiters of the endpoint's CQs.
func (ep *Endpoint) nudgeCQs() {
	ep.cfg.SendCQ.nudge()
	if ep.cfg.RecvCQ != ep.cfg.SendCQ {
		ep.cfg.RecvCQ.nudge()
	}
}

// resumeRx brings the receive goroutine back to the socket (the stream
// ended in a waiter's hands, or is closing).
func (ep *Endpoint) resumeRx() {
	select {
	case ep.rxResume <- struct{}{}:
	default:
	}
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
		return false
	}
	defer ep.rxMu.Unlock()
	ep.rxActivity.Add(1)
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
		ep.resumeRx() // the receive goroutine ends too
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
	c := rdmap.MPAConnectionLost
	var me *mpa.Error
	var term *rdmap.Terminate
	if errors.As(err, &me) {
		if me.Code != 0 {
			c = rdmap.NewCause(rdmap.LayerLLP, 0, uint8(me.Code))
		}
		if !me.CloseTCP() {
			term = &rdmap.Terminate{Cause: c}
		}
	}
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
// headers RFC 5040 Fig. 10 asks for (rdmap.Cause.Headers).
func (ep *Endpoint) fail(c rdmap.Cause, op rdmap.Opcode, ulpdu []byte, rdmaHdr []byte, msg string, args ...any) error {
	t := &rdmap.Terminate{Cause: c}
	t.M, t.D, t.R = c.Headers(op)
	if t.D {
		seg, _ := ddp.Parse(ulpdu)
		t.SegLen = uint16(len(ulpdu))
		t.DDPHeader = append([]byte(nil), seg.Header...)
	}
	if t.R && op == rdmap.OpReadRequest {
		t.RDMAHeader = append([]byte(nil), rdmaHdr...)
	}
	ep.dropping = true
	ep.abort(&Error{Cause: c, Terminate: t, Msg: fmt.Sprintf(msg, args...)}, t)
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
	seg, err := ddp.Parse(d)
	if err != nil {
		c := rdmap.DDPUntaggedInvalidVersion
		if len(d) > 0 && ddp.Control(d[0]).Tagged() {
			c = rdmap.DDPTaggedInvalidVersion
		}
		return ep.fail(c, rdmap.OpSend, nil, nil, "%v", err)
	}
	tagged := seg.Control.Tagged()
	if seg.Control.Version() != ep.dv {
		c := rdmap.DDPUntaggedInvalidVersion
		if tagged {
			c = rdmap.DDPTaggedInvalidVersion
		}
		return ep.fail(c, 0, d, nil, "DDP version %d, negotiated %d", seg.Control.Version(), ep.dv)
	}
	ctl := rdmap.Control(seg.RsvdULP0())
	op := ctl.Opcode()
	if ctl.Version() != ep.rv {
		return ep.fail(rdmap.RDMAPInvalidVersion, op, d, nil, "RDMAP version %d, negotiated %d", ctl.Version(), ep.rv)
	}
	var qn uint32
	if !tagged {
		if qn = seg.Untagged().QN(); qn >= rdmap.NumQueues {
			return ep.fail(rdmap.DDPInvalidQN, op, d, nil, "QN %d", qn)
		}
	}
	if !op.Fits(tagged, qn) {
		return ep.fail(rdmap.RDMAPUnexpectedOpcode, op, d, nil, "%v on a segment with T=%v QN=%d", op, tagged, qn)
	}
	if ep.failed.Load() {
		ep.dropping = true
		return errStop
	}
	switch op {
	case rdmap.OpWrite:
		h := seg.Tagged()
		if f := ep.placer.PlaceTagged(mem.Request{STag: mem.STag(h.STag()), PD: ep.pd.ID, QP: ep.qpn, TO: h.TO(), Use: mem.UseRemoteWrite}, d, seg.Payload); f != mem.OK {
			return ep.fail(f.Cause(mem.UseRemoteWrite), op, d, nil, "RDMA Write to %v TO %#x len %d: %v", mem.STag(h.STag()), h.TO(), len(seg.Payload), f)
		}
		return nil
	case rdmap.OpReadResponse:
		return ep.rxReadResponse(seg, d)
	case rdmap.OpReadRequest:
		return ep.rxReadRequest(seg, d)
	case rdmap.OpTerminate:
		return ep.rxTerminate(seg, d)
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
	if msn := h.MSN(); msn != ep.rxMSN[rdmap.QNSend] {
		return ep.fail(rdmap.DDPInvalidMSNRange, op, d, nil, "Send MSN %d, expected %d", msn, ep.rxMSN[rdmap.QNSend])
	}
	r := first(ep, &ep.rq)
	if r == nil {
		return ep.fail(rdmap.DDPNoBuffer, op, d, nil, "Send MSN %d and no receive posted", h.MSN())
	}
	n := uint64(len(seg.Payload))
	if mo := uint64(h.MO()); mo != r.got {
		return ep.fail(rdmap.DDPInvalidMO, op, d, nil, "Send MO %d, expected %d", mo, r.got)
	}
	if r.got+n > r.cap {
		ep.mu.Lock()
		r.status = WCLocLenErr
		ep.mu.Unlock()
		return ep.fail(rdmap.DDPMessageTooLong, op, d, nil, "Send of at least %d bytes for a %d-byte receive", r.got+n, r.cap)
	}
	p := seg.Payload
	if f := r.sc.next(n, func(s SGE, off, k uint32) mem.Fault {
		f := ep.tab.Place(mem.Request{STag: s.LKey, PD: ep.pd.ID, QP: ep.qpn, TO: s.Addr + uint64(off), Use: mem.UseLocalWrite}, p[:k])
		p = p[k:]
		return f
	}); f != mem.OK {
		return ep.fail(rdmap.RDMAPLocalCatastrophic, op, d, nil, "receive buffer %d: %v", r.wr.ID, f)
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
			return ep.fail(rdmap.RDMAPCannotInvalidate, op, d, nil, "Send with Invalidate of %v", stag)
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
	op := rdmap.OpReadRequest
	h := seg.Untagged()
	if msn := h.MSN(); msn != ep.rxMSN[rdmap.QNReadRequest] {
		return ep.fail(rdmap.DDPInvalidMSNRange, op, d, nil, "Read Request MSN %d, expected %d", msn, ep.rxMSN[rdmap.QNReadRequest])
	}
	if h.MO() != 0 || !seg.Control.Last() {
		return ep.fail(rdmap.DDPInvalidMO, op, d, nil, "Read Request in more than one segment (MO %d)", h.MO())
	}
	m, err := rdmap.Parse(d)
	if err != nil {
		return ep.fail(rdmap.DDPInvalidMO, op, d, nil, "%v", err)
	}
	if len(m.Payload) > 0 {
		return ep.fail(rdmap.DDPMessageTooLong, op, d, m.ReadRequest, "Read Request with %d bytes of payload", len(m.Payload))
	}
	rr := m.ReadRequest.Fields()
	ep.mu.Lock()
	over := len(ep.irq) >= ep.cfg.IRD
	ep.mu.Unlock()
	if over {
		return ep.fail(rdmap.RDMAPCatastrophicStream, op, d, m.ReadRequest, "Read Request beyond IRD %d", ep.cfg.IRD)
	}
	if rr.Size > 0 {
		if f := ep.tab.Verify(mem.Request{STag: mem.STag(rr.SrcSTag), PD: ep.pd.ID, QP: ep.qpn, TO: rr.SrcTO, Len: uint64(rr.Size), Use: mem.UseRemoteRead}); f != mem.OK {
			return ep.fail(f.Cause(mem.UseRemoteRead), op, d, m.ReadRequest, "Read of %v TO %#x size %d: %v", mem.STag(rr.SrcSTag), rr.SrcTO, rr.Size, f)
		}
	}
	ep.rxMSN[rdmap.QNReadRequest]++
	ep.mu.Lock()
	if ep.state < stError {
		ep.irq = append(ep.irq, inboundRead{rr: rr, hdr: append([]byte(nil), seg.Header...)})
		ep.cond.Broadcast()
	}
	ep.mu.Unlock()
	return nil
}

func (ep *Endpoint) rxReadResponse(seg ddp.Segment, d []byte) error {
	op := rdmap.OpReadResponse
	h := seg.Tagged()
	s := first(ep, &ep.orq)
	if s == nil {
		return ep.fail(rdmap.DDPLocalCatastrophic, op, d, nil, "Read Response with no Read outstanding")
	}
	var sink SGE
	if len(s.wr.SGL) == 1 {
		sink = s.wr.SGL[0]
	}
	n := uint64(len(seg.Payload))
	if n > 0 {
		if mem.STag(h.STag()) != sink.LKey {
			return ep.fail(rdmap.DDPInvalidSTag, op, d, nil, "Read Response to %v, the Read's sink is %v", mem.STag(h.STag()), sink.LKey)
		}
		if h.TO() != sink.Addr+s.got || s.got+n > uint64(sink.Length) {
			return ep.fail(rdmap.DDPBaseBounds, op, d, nil, "Read Response TO %#x len %d, expected TO %#x with %d left", h.TO(), n, sink.Addr+s.got, uint64(sink.Length)-s.got)
		}
		if f := ep.placer.PlaceTagged(mem.Request{STag: sink.LKey, PD: ep.pd.ID, QP: ep.qpn, TO: h.TO(), Use: mem.UseReadResponse}, d, seg.Payload); f != mem.OK {
			return ep.fail(f.Cause(mem.UseReadResponse), op, d, nil, "Read Response placement: %v", f)
		}
		s.got += n
	}
	if !seg.Control.Last() {
		return nil
	}
	if s.got != uint64(sink.Length) {
		return ep.fail(rdmap.DDPBaseBounds, op, d, nil, "Read Response of %d bytes for a %d-byte Read", s.got, sink.Length)
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

func (ep *Endpoint) rxTerminate(seg ddp.Segment, d []byte) error {
	h := seg.Untagged()
	ep.dropping = true
	e := &Error{Remote: true, Cause: rdmap.RDMAPOperationUnspecified}
	if h.MSN() != ep.rxMSN[rdmap.QNTerminate] || h.MO() != 0 || !seg.Control.Last() {
		// Only one Terminate per stream (RFC 5040 §5.4); ignore a malformed one's content.
		e.Msg = fmt.Sprintf("malformed Terminate (MSN %d MO %d)", h.MSN(), h.MO())
	} else if t, err := rdmap.ParseTerminate(seg.Payload); err != nil {
		e.Msg, e.Err = "unparsable Terminate", err
	} else {
		t.DDPHeader = append([]byte(nil), t.DDPHeader...)
		t.RDMAHeader = append([]byte(nil), t.RDMAHeader...)
		e.Cause, e.Terminate = t.Cause, &t
	}
	ep.abort(e, nil) // never answer a Terminate with a Terminate
	return errStop
}
