package qp

import (
	"errors"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// ErrStopped is returned by Receive once the stream has failed: later
// segments are silently dropped (RFC 5041 §7.1), and the caller may stop
// deframing.
var ErrStopped = errors.New("iwarp: stream failed")

// Receive processes one inbound ULPDU (a whole DDP segment, as the MPA
// deframer delivers it): every check of the receive-side error matrix
// runs before a byte is placed; placement goes through Memory,
// completions through the Completer. The first error fails the stream
// with its Terminate (TakeTerminate) and every later segment is dropped;
// a Terminate received fails it without an answer. It returns ErrStopped
// once the stream has failed. d is not retained.
func (q *QP) Receive(d []byte) error {
	if q.dropping {
		return ErrStopped
	}
	if !q.firstRx {
		q.firstRx = true
		q.wakeups++
	}
	seg, op, rj := CheckHeaders(d, q.dv, q.rv)
	if rj != nil {
		return q.reject(rj)
	}
	if q.state == Failed || q.state == Closed {
		q.dropping = true
		return ErrStopped
	}
	switch op {
	case rdmap.OpWrite:
		h := seg.Tagged()
		f := q.mem.PlaceTagged(q.req(mem.STag(h.STag()), h.TO(), 0, mem.UseRemoteWrite), d, seg.Payload)
		if rj := CheckWrite(seg, d, f); rj != nil {
			return q.reject(rj)
		}
		return nil
	case rdmap.OpReadResponse:
		return q.rxReadResponse(seg, d)
	case rdmap.OpReadRequest:
		return q.rxReadRequest(seg, d)
	case rdmap.OpTerminate:
		return q.rxTerminate(seg)
	}
	return q.rxSend(seg, op, d)
}

// reject fails the stream on the first error of an inbound segment, with
// the Terminate RFC 5040 Fig. 10 asks for (Reject.Terminate).
func (q *QP) reject(r *Reject) error {
	t := r.Terminate()
	q.dropping = true
	q.Fail(&Error{Cause: r.Cause, Terminate: t, Msg: r.Msg}, t)
	return ErrStopped
}

func (q *QP) rxSend(seg ddp.Segment, op rdmap.Opcode, d []byte) error {
	h := seg.Untagged()
	var r *rqEntry
	if len(q.rq) > 0 {
		r = q.rq[0]
	}
	st := RecvState{MSN: q.rxMSN[rdmap.QNSend], Posted: r != nil}
	if r != nil {
		st.Got, st.Cap = r.got, r.cap
	}
	if rj := CheckSend(seg, op, d, st); rj != nil {
		if rj.Cause == rdmap.DDPMessageTooLong {
			r.status = WCLocLenErr
		}
		return q.reject(rj)
	}
	n := uint64(len(seg.Payload))
	p := seg.Payload
	if f := r.sc.next(n, func(s SGE, off, k uint32) mem.Fault {
		f := q.mem.Place(q.req(s.LKey, s.Addr+uint64(off), 0, mem.UseLocalWrite), p[:k])
		p = p[k:]
		return f
	}); f != mem.OK {
		return q.reject(SendPlacementFailed(op, d, r.wr.ID, f))
	}
	r.got += n
	if !seg.Control.Last() {
		return nil
	}
	info, _ := op.Info()
	c := Completion{ID: r.wr.ID, Opcode: WCRecv, ByteLen: uint32(r.got), QP: q.cfg.QPN, Solicited: info.Solicited}
	if info.Invalidate {
		stag := mem.STag(h.RsvdULP1())
		if !q.mem.RemoteInvalidate(stag, q.cfg.PD, q.cfg.QPN) {
			return q.reject(CannotInvalidate(op, d, stag))
		}
		c.Invalidated, c.InvalidatedSTag = true, stag
	}
	q.rxMSN[rdmap.QNSend]++
	q.rxMsgs++
	copy(q.rq, q.rq[1:]) // not rq[1:]: appends would then reallocate it
	q.rq[len(q.rq)-1] = nil
	q.rq = q.rq[:len(q.rq)-1]
	q.rqFree = append(q.rqFree, r)
	if !q.cfg.Completer.CompleteRecv(c, info.Solicited) {
		q.cqOverflow()
		return ErrStopped
	}
	return nil
}

func (q *QP) rxReadRequest(seg ddp.Segment, d []byte) error {
	rr, hdr, rj := CheckReadRequest(seg, d, q.rxMSN[rdmap.QNReadRequest], len(q.irq), q.cfg.IRD)
	if rj != nil {
		return q.reject(rj)
	}
	if rr.Size > 0 {
		f := q.mem.Verify(q.req(mem.STag(rr.SrcSTag), rr.SrcTO, uint64(rr.Size), mem.UseRemoteRead))
		if rj := ReadSourceFault(d, hdr, rr, f); rj != nil {
			return q.reject(rj)
		}
	}
	q.rxMSN[rdmap.QNReadRequest]++
	q.irq = append(q.irq, inboundRead{rr: rr, hdr: append([]byte(nil), seg.Header...)})
	q.readsIn++
	return nil
}

func (q *QP) rxReadResponse(seg ddp.Segment, d []byte) error {
	h := seg.Tagged()
	var s *sqEntry
	if len(q.orq) > 0 {
		s = q.orq[0]
	}
	rs := ReadSink{Outstanding: s != nil}
	if s != nil {
		if len(s.wr.SGL) == 1 {
			rs.Sink = s.wr.SGL[0]
		}
		rs.Got = s.got
	}
	if rj := CheckReadResponse(seg, d, rs); rj != nil {
		return q.reject(rj)
	}
	if n := uint64(len(seg.Payload)); n > 0 {
		f := q.mem.PlaceTagged(q.req(rs.Sink.LKey, h.TO(), 0, mem.UseReadResponse), d, seg.Payload)
		if rj := ReadResponsePlacement(d, f); rj != nil {
			return q.reject(rj)
		}
		s.got += n
	}
	if !seg.Control.Last() {
		return nil
	}
	q.rxMsgs++
	q.orq = q.orq[1:]
	s.done = true
	q.complete()
	q.wakeups++ // ORD and Fence may let the next WR go
	return nil
}

func (q *QP) rxTerminate(seg ddp.Segment) error {
	q.dropping = true
	c, t, msg, err := TerminateReceived(seg, q.rxMSN[rdmap.QNTerminate])
	q.Fail(&Error{Remote: true, Cause: c, Terminate: t, Msg: msg, Err: err}, nil) // never answer a Terminate with a Terminate
	return ErrStopped
}
