package iwarp

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

type jobKind uint8

const (
	jobWait jobKind = iota
	jobFlush
	jobTerm
	jobExit
	jobResp
	jobWR
)

// pickLocked chooses the transmitter's next job.
func (ep *Endpoint) pickLocked() jobKind {
	switch ep.state {
	case stError, stClosed:
		// A Terminate goes out even after the peer's FIN: a half-closed
		// peer still reads (and a broken connection just fails the write).
		if ep.term != nil && ep.firstRx {
			return jobTerm
		}
		return jobExit
	}
	if !ep.firstRx {
		// RFC 5044 §7.1.2 rule 4: the Responder sends no FPDU before the
		// Initiator's first one. Closing with nothing queued needs none:
		// the FIN goes at once. Queued work waits for that FPDU (the
		// close drains it), bounded by the Linger.
		if ep.rxDone || ep.state == stClosing && ep.sqNext == len(ep.sq) {
			return jobExit
		}
		return jobWait
	}
	if len(ep.irq) > 0 {
		return jobResp
	}
	if ep.sqNext < len(ep.sq) {
		s := ep.sq[ep.sqNext]
		blocked := s.wr.Fence && len(ep.orq) > 0 || s.wr.Opcode == WRRead && len(ep.orq) >= ep.ord
		if !blocked {
			return jobWR
		}
	}
	if ep.txPending.Load() {
		return jobFlush
	}
	if ep.rxDone || ep.state == stClosing && ep.sqNext == len(ep.sq) && len(ep.orq) == 0 {
		return jobExit
	}
	return jobWait
}

// The transmitter's state (wbuf, ulp, txMSN, unflushed) belongs to
// whoever holds txMu: the transmit goroutine, or a PostSend caller that
// finds it idle and sends its own small WR inline, which saves a goroutine
// handoff on the latency path.

func (ep *Endpoint) txLoop() {
	defer ep.wg.Done()
	for {
		ep.mu.Lock()
		for ep.pickLocked() == jobWait {
			ep.cond.Wait()
		}
		ep.mu.Unlock()
		ep.txMu.Lock()
		done := ep.txRun(false)
		ep.txMu.Unlock()
		if done {
			return
		}
	}
}

// txRun runs transmitter jobs until there is nothing to do. inline (a
// PostSend caller) stops short of jobs that may take long or end the
// stream. It reports whether the stream is finished. Called with txMu held.
func (ep *Endpoint) txRun(inline bool) bool {
	for {
		ep.mu.Lock()
		job := ep.pickLocked()
		if job == jobWait || inline && job != jobWR && job != jobFlush {
			if job != jobWait {
				ep.cond.Broadcast() // the transmit goroutine takes it once txMu is free
			}
			ep.mu.Unlock()
			return false
		}
		var s *sqEntry
		var ir inboundRead
		switch job {
		case jobWR:
			s = ep.sq[ep.sqNext]
			if inline && s.wr.Opcode != WRRead && wrLen(&s.wr) > inlineMax {
				ep.cond.Broadcast()
				ep.mu.Unlock()
				return false
			}
			ep.sqNext++
			if s.wr.Opcode == WRRead {
				ep.orq = append(ep.orq, s)
			}
		case jobResp:
			ir = ep.irq[0]
		}
		ep.mu.Unlock()

		var err error
		switch job {
		case jobFlush:
			err = ep.flush()
		case jobWR:
			err = ep.sendWR(s)
		case jobResp:
			err = ep.sendReadResponse(ir)
		case jobTerm, jobExit:
			if job == jobExit && ep.Err() == nil {
				ep.flush() // graceful: what was queued goes out before the FIN
			}
			ep.shutdown()
			return true
		}
		if err != nil && !errors.Is(err, errAborted) {
			ep.abort(&Error{Cause: rdmap.MPAConnectionLost, Msg: "sending", Err: err}, nil)
		}
	}
}

// inlineMax is the largest WR a PostSend caller transmits itself.
const inlineMax = 4096

// answerReads answers inbound Reads from the receive path itself when
// the transmitter is idle and the responses are small, which saves waking
// the transmit goroutine: the responder's side of a Read round trip then
// costs what a Send's does. Its writes never wait for room in the socket
// (a receive path blocked in a write, with its peer's blocked likewise,
// would stall both streams for good): what the socket does not take at
// once, and every other job, is left to the transmit goroutine. Called
// with rxMu held.
func (ep *Endpoint) answerReads() {
	if ep.txMu.TryLock() {
		ep.txNoWait = true
		err := ep.answerReadsLocked()
		ep.txNoWait = false
		ep.txMu.Unlock()
		if err != nil && !errors.Is(err, errAborted) {
			ep.abort(&Error{Cause: rdmap.MPAConnectionLost, Msg: "sending", Err: err}, nil)
		}
	}
	ep.mu.Lock()
	if ep.pickLocked() != jobWait {
		ep.cond.Broadcast()
	}
	ep.mu.Unlock()
}

// answerReadsLocked is answerReads' turn at the transmitter. Called with
// txMu held and txNoWait set.
func (ep *Endpoint) answerReadsLocked() error {
	if ep.pending() > 0 || len(ep.unflushed) > 0 {
		return nil // the transmitter has FPDUs of its own to write first
	}
	oneSegment := uint64(min(inlineMax, ddp.MaxPayload(ep.mulpdu, ddp.TaggedHeaderLen)))
	for {
		ep.mu.Lock()
		job := ep.pickLocked()
		var ir inboundRead
		if job == jobResp {
			ir = ep.irq[0]
		}
		ep.mu.Unlock()
		if job != jobResp || uint64(ir.rr.Size) > oneSegment {
			break
		}
		if err := ep.sendReadResponse(ir); err != nil {
			return err
		}
	}
	return ep.flush()
}

// shutdown closes the connection as RFC 5040 §6.2.1 asks: the Terminate
// of an error, if one was decided, then FIN, then a bounded wait for the
// peer's FIN, then close. An error decided once the FIN is out cannot be
// reported on the wire: its Terminate is dropped (finned).
func (ep *Endpoint) shutdown() {
	ep.mu.Lock()
	term := ep.term
	if !ep.firstRx {
		term = nil // RFC 5044 §7.1.2 rule 4: nothing came from the Initiator, nothing goes to it
	}
	ep.finned = true
	ep.mu.Unlock()
	if term != nil {
		ep.sendTerminate(term)
	}
	ep.recallRx() // the peer's FIN is read whether or not a CQ waiter is about
	if tc, ok := ep.conn.(interface{ CloseWrite() error }); ok {
		tc.CloseWrite()
		t := time.NewTimer(ep.cfg.Linger)
		select {
		case <-ep.rxExit:
		case <-t.C:
		}
		t.Stop()
	}
	ep.conn.Close()
	<-ep.rxExit
	ep.mu.Lock()
	if ep.err == nil {
		ep.err = ErrClosed
	}
	if ep.state != stError {
		ep.flushLocked(ErrClosed)
	}
	ep.state = stClosed
	ep.failed.Store(true)
	ep.mu.Unlock()
}

// sendTerminate writes term alone (RFC 5040 §7.1): whatever was pending
// is dropped, as the stream has failed. Best effort: the stream ends
// after this whether or not it is sent.
func (ep *Endpoint) sendTerminate(term *rdmap.Terminate) {
	ep.dropPending()
	ep.setUnflushed(ep.unflushed[:0])
	ep.ulp = term.AppendMessage(ep.ulp[:0], ep.rv, ep.dv, ep.txMSN[rdmap.QNTerminate])
	var err error
	if ep.wbuf, err = ep.framer.AppendFPDU(ep.wbuf, ep.ulp); err == nil {
		_ = ep.writeOut() // not handOver: the stream has failed, and this is what may still go
	}
	ep.txPending.Store(false)
}

// flush writes the buffered FPDUs; the Sends and Writes they finish are
// then complete (RFC 5040 §5.5 rule 14: handed to the LLP).
func (ep *Endpoint) flush() error {
	if err := ep.handOver(); err != nil {
		return err
	}
	// With txNoWait the socket may have taken only part: the rest is the
	// transmit goroutine's (jobFlush).
	ep.txPending.Store(ep.pending() > 0 || len(ep.unflushed) > 0)
	return nil
}

// handOver writes what is pending, unless the stream has ended: then
// nothing more goes to TCP (only a Terminate, which shutdown writes) and
// it returns errAborted. The choice is made under mu, where the stream's
// end flushes the queues, so that a WR is either handed to TCP (marked
// inFlight, which the flush leaves alone) and completes with success once
// written, or flushed, and then none of its octets is written: its
// completion says what the peer can have received. The WRs whose last
// FPDUs were pending (unflushed) complete with the write.
func (ep *Endpoint) handOver() error {
	ep.mu.Lock()
	if ep.failed.Load() {
		// The stream's end flushed every WR not in flight; one in flight
		// whose octets the socket had not all taken (txNoWait) was not
		// handed over either.
		for _, s := range ep.unflushed {
			if s.inFlight {
				s.inFlight, s.done, s.status = false, true, WCFlushErr
			}
		}
		ep.completeLocked()
		ep.mu.Unlock()
		ep.dropPending()
		ep.setUnflushed(ep.unflushed[:0])
		return errAborted
	}
	for _, s := range ep.unflushed {
		s.inFlight = !s.done
	}
	ep.mu.Unlock()
	var err error
	if ep.pending() > 0 {
		err = ep.writeOut()
		if ep.pending() > 0 {
			return err // txNoWait: the rest is the transmit goroutine's (jobFlush)
		}
	}
	if len(ep.unflushed) > 0 {
		ep.mu.Lock()
		for _, s := range ep.unflushed {
			if s.inFlight {
				s.inFlight, s.done = false, true
				if err != nil {
					s.status = WCFlushErr // TCP did not take it
				}
			}
		}
		ep.completeLocked()
		ep.mu.Unlock()
		clear(ep.unflushed)
		ep.unflushed = ep.unflushed[:0]
	}
	return err
}

// setUnflushed replaces the list of WRs waiting for the next flush.
func (ep *Endpoint) setUnflushed(u []*sqEntry) {
	ep.unflushed = u
	ep.txPending.Store(ep.pending() > 0 || len(u) > 0)
}

// pending is the number of octets waiting for the socket.
func (ep *Endpoint) pending() int { return len(ep.wbuf) + ep.vecLen }

// writeOut hands everything pending to the socket: one write, or one
// writev when payloads are referenced in place. What was pending is
// dropped even on error: the stream is failing then.
func (ep *Endpoint) writeOut() error {
	if ep.txNoWait {
		return ep.tryWriteOut()
	}
	var err error
	if len(ep.vec) == 0 {
		_, err = ep.conn.Write(ep.wbuf)
	} else {
		if ep.wopen < len(ep.wbuf) {
			ep.vec = append(ep.vec, ep.wbuf[ep.wopen:])
		}
		if raceBuild {
			// The race detector learns that a socket orders the writer's
			// memory accesses before the reader's from write(2), which
			// Go annotates, and not from writev(2): an empty write says it.
			ep.conn.Write(nil)
		}
		ep.wv = ep.vec // WriteTo consumes its receiver
		_, err = ep.wv.WriteTo(ep.conn)
		ep.wv = nil
	}
	ep.dropPending()
	return err
}

// tryWriteOut is writeOut for txNoWait: it writes the pending octets
// (wbuf alone: answerReads gathers every response) as far as the socket
// takes them at once and keeps the rest pending.
func (ep *Endpoint) tryWriteOut() error {
	var n int
	var werr error
	err := ep.raw.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), ep.wbuf) // annotated for the race detector, as net's writes are
		return true                               // never wait for room
	})
	if errors.Is(werr, syscall.EAGAIN) || errors.Is(werr, syscall.EINTR) {
		werr = nil // nothing taken now
	}
	if err == nil {
		err = werr
	}
	if err != nil {
		ep.dropPending()
		return err
	}
	if n > 0 {
		ep.wbuf = ep.wbuf[:copy(ep.wbuf, ep.wbuf[n:])]
	}
	return nil
}

// dropPending forgets the octets not yet written.
func (ep *Endpoint) dropPending() {
	clear(ep.vec) // no reference to registered memory outlives its WR
	ep.vec, ep.wbuf, ep.wopen, ep.vecLen = ep.vec[:0], ep.wbuf[:0], 0, 0
}

// source supplies the payload of a message, in order. gather appends the
// n octets at offset off to dst; view, if not nil, may be called instead
// and appends the same octets to vec in place, in pieces (zero-copy
// framing).
type source struct {
	gather func(dst []byte, off uint64, n int) ([]byte, error)
	view   func(vec net.Buffers, off uint64, n int) (net.Buffers, error)
}

// segments appends the FPDUs of one message of total payload bytes:
// hdr appends the headers of the segment at offset off, src its payload.
func (ep *Endpoint) segments(total uint64, hdrLen int, hdr func(dst []byte, off uint64, last bool) []byte, src source) error {
	maxPay := uint64(ddp.MaxPayload(ep.mulpdu, hdrLen))
	for off := uint64(0); ; {
		if ep.failed.Load() {
			return errAborted // the stream failed: the Terminate goes next
		}
		n := min(maxPay, total-off)
		last := off+n == total
		var err error
		if ep.zc != nil && src.view != nil && n >= zcMin {
			err = ep.appendSegmentInPlace(off, int(n), last, hdr, src.view)
		} else {
			err = ep.appendSegment(off, int(n), last, hdr, src.gather)
		}
		if err != nil {
			return err
		}
		ep.txPending.Store(true)
		off += n
		if last {
			// The message's last FPDU goes with a flush, once the WR is
			// among those it completes (unflushed).
			return nil
		}
		if ep.pending() >= flushAt || ep.cfg.AlignFPDUs {
			if err := ep.handOver(); err != nil {
				return err
			}
			ep.txPending.Store(ep.pending() > 0 || len(ep.unflushed) > 0)
		}
	}
}

// zcMin is the smallest segment payload sent in place: below it a copy
// costs less than one more piece of writev.
const zcMin = 512

// appendSegmentInPlace frames the segment at offset off around its payload
// in registered memory (mpa.Framer.FrameAround, markers off): ULPDU_Length
// and the headers go to wbuf, then the payload pieces, then PAD and CRC.
func (ep *Endpoint) appendSegmentInPlace(off uint64, n int, last bool, hdr func(dst []byte, off uint64, last bool) []byte,
	view func(vec net.Buffers, off uint64, n int) (net.Buffers, error)) error {
	start, vecAt, wopen := len(ep.wbuf), len(ep.vec), ep.wopen
	ep.wbuf = hdr(append(ep.wbuf, 0, 0), off, last)
	ep.vec = append(ep.vec, ep.wbuf[ep.wopen:]) // ULPDU_Length is filled in below, in the same array
	mid := len(ep.wbuf)
	var err error
	if ep.vec, err = view(ep.vec, off, n); err == nil {
		ep.wbuf, err = ep.zc.FrameAround(ep.wbuf, start, ep.vec[vecAt+1:])
	}
	if err != nil {
		clear(ep.vec[vecAt:])
		ep.vec, ep.wbuf, ep.wopen = ep.vec[:vecAt], ep.wbuf[:start], wopen
		return err
	}
	for _, p := range ep.vec[vecAt+1:] {
		ep.vecLen += len(p)
	}
	ep.wopen = mid
	return nil
}

// inPlaceFramer frames a ULPDU already written after a length slot in the
// write buffer (mpa.Framer does), which saves copying every segment once.
type inPlaceFramer interface {
	FrameInPlace(dst []byte, start int) ([]byte, error)
}

// appendSegment appends the FPDU of the segment at offset off to wbuf.
func (ep *Endpoint) appendSegment(off uint64, n int, last bool, hdr func(dst []byte, off uint64, last bool) []byte,
	src func(dst []byte, off uint64, n int) ([]byte, error)) error {
	if f, ok := ep.framer.(inPlaceFramer); ok {
		start := len(ep.wbuf)
		buf, err := src(hdr(append(ep.wbuf, 0, 0), off, last), off, n)
		if err != nil {
			return err // ep.wbuf still ends at start
		}
		ep.wbuf, err = f.FrameInPlace(buf, start)
		return err
	}
	ulp, err := src(hdr(ep.ulp[:0], off, last), off, n)
	if err != nil {
		return err
	}
	ep.ulp = ulp
	ep.wbuf, err = ep.framer.AppendFPDU(ep.wbuf, ulp)
	return err
}

// errAborted stops a message whose stream has failed mid-way.
var errAborted = errors.New("iwarp: stream failed while sending")

// localFault is a local protection error found while gathering a WR's data.
type localFault struct{ f mem.Fault }

func (l localFault) Error() string { return "gathering the work request: " + l.f.String() }

func (ep *Endpoint) sendWR(s *sqEntry) error {
	wr := &s.wr
	total := wrLen(wr)
	g := cursor{sgl: wr.SGL}
	var src source
	src.gather = func(dst []byte, off uint64, n int) ([]byte, error) {
		if wr.Inline != nil {
			return append(dst, wr.Inline[off:off+uint64(n)]...), nil
		}
		f := g.next(uint64(n), func(sg SGE, o, k uint32) mem.Fault {
			var f mem.Fault
			dst, f = ep.tab.Read(dst, mem.Request{STag: sg.LKey, PD: ep.pd.ID, QP: ep.qpn, TO: sg.Addr + uint64(o), Len: uint64(k), Use: mem.UseLocalRead})
			return f
		})
		if f != mem.OK {
			return dst, localFault{f}
		}
		return dst, nil
	}
	if wr.Inline == nil {
		// The WR is outstanding until its FPDUs are written: its buffers
		// may be read in place (mem.Table.View).
		src.view = func(vec net.Buffers, off uint64, n int) (net.Buffers, error) {
			f := g.next(uint64(n), func(sg SGE, o, k uint32) mem.Fault {
				p, f := ep.tab.View(mem.Request{STag: sg.LKey, PD: ep.pd.ID, QP: ep.qpn, TO: sg.Addr + uint64(o), Len: uint64(k), Use: mem.UseLocalRead})
				if f == mem.OK && len(p) > 0 {
					vec = append(vec, p)
				}
				return f
			})
			if f != mem.OK {
				return vec, localFault{f}
			}
			return vec, nil
		}
	}
	var err error
	switch wr.Opcode {
	case WRLocalInvalidate, WRBindMW:
		// Memory operations: nothing on the wire; they take effect in
		// send-queue order and complete in posting order.
		if wr.Opcode == WRLocalInvalidate {
			err = ep.tab.Invalidate(wr.InvalidateSTag, ep.pd.ID)
		} else {
			b := wr.Bind
			_, err = b.MW.Bind(b.MR, b.Addr, b.Length, b.Access, ep.qpn)
		}
		ep.mu.Lock()
		defer ep.mu.Unlock()
		s.done = true
		if err != nil {
			// As in verbs, a failed memory operation puts the QP in error.
			s.status = WCLocProtErr
			ep.completeLocked()
			ep.abortLocked(&Error{Cause: rdmap.RDMAPLocalCatastrophic, Msg: fmt.Sprintf("WR %d (%v)", wr.ID, wr.Opcode), Err: err},
				&rdmap.Terminate{Cause: rdmap.RDMAPLocalCatastrophic})
			return nil
		}
		ep.completeLocked()
		return nil
	case WRWrite:
		ctl := uint8(rdmap.NewControl(ep.rv, rdmap.OpWrite))
		err = ep.segments(total, ddp.TaggedHeaderLen, func(dst []byte, off uint64, last bool) []byte {
			return ddp.TaggedFields{Last: last, Version: ep.dv, RsvdULP: ctl, STag: uint32(wr.RKey), TO: wr.RemoteAddr + off}.Append(dst)
		}, src)
	case WRSend, WRSendInvalidate:
		op := rdmap.OpSend
		var inv uint32
		if wr.Opcode == WRSendInvalidate {
			op, inv = rdmap.OpSendInvalidate, uint32(wr.InvalidateSTag)
		}
		if wr.Solicited {
			op += rdmap.OpSendSE - rdmap.OpSend
		}
		ctl, msn := uint8(rdmap.NewControl(ep.rv, op)), ep.txMSN[rdmap.QNSend]
		ep.txMSN[rdmap.QNSend]++
		err = ep.segments(total, ddp.UntaggedHeaderLen, func(dst []byte, off uint64, last bool) []byte {
			return ddp.UntaggedFields{Last: last, Version: ep.dv, RsvdULP0: ctl, RsvdULP1: inv, QN: rdmap.QNSend, MSN: msn, MO: uint32(off)}.Append(dst)
		}, src)
	case WRRead:
		rr := rdmap.ReadRequestFields{SrcSTag: uint32(wr.RKey), SrcTO: wr.RemoteAddr}
		if len(wr.SGL) == 1 {
			rr.SinkSTag, rr.SinkTO, rr.Size = uint32(wr.SGL[0].LKey), wr.SGL[0].Addr, wr.SGL[0].Length
		}
		msn := ep.txMSN[rdmap.QNReadRequest]
		ep.txMSN[rdmap.QNReadRequest]++
		ep.ulp = ddp.UntaggedFields{Last: true, Version: ep.dv, RsvdULP0: uint8(rdmap.NewControl(ep.rv, rdmap.OpReadRequest)),
			QN: rdmap.QNReadRequest, MSN: msn}.Append(ep.ulp[:0])
		ep.ulp = rr.Append(ep.ulp)
		ep.wbuf, err = ep.framer.AppendFPDU(ep.wbuf, ep.ulp)
		ep.txPending.Store(true)
		if err == nil && ep.moreWorkQueued() && !ep.cfg.AlignFPDUs {
			return nil // the Read completes on its response, not on the flush
		}
		if err == nil {
			err = ep.flush()
		}
		return err
	}
	if lf, ok := err.(localFault); ok {
		// RFC 5040 §7.1: an error building an outbound request is a
		// Terminate with no headers; the WR completes with a protection error.
		ep.mu.Lock()
		s.done, s.status = true, WCLocProtErr
		ep.completeLocked()
		ep.abortLocked(&Error{Cause: rdmap.RDMAPLocalCatastrophic, Msg: fmt.Sprintf("WR %d", wr.ID), Err: lf},
			&rdmap.Terminate{Cause: rdmap.RDMAPLocalCatastrophic})
		ep.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	ep.setUnflushed(append(ep.unflushed, s))
	if !ep.cfg.AlignFPDUs && ep.moreWorkQueued() && len(ep.unflushed) < 64 {
		return nil
	}
	return ep.flush()
}

// moreWorkQueued reports whether the transmitter has another job ready,
// so that small messages are batched into one write.
func (ep *Endpoint) moreWorkQueued() bool {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	j := ep.pickLocked()
	return j == jobWR || j == jobResp
}

func (ep *Endpoint) sendReadResponse(ir inboundRead) error {
	rr := ir.rr
	ctl := uint8(rdmap.NewControl(ep.rv, rdmap.OpReadResponse))
	var fault mem.Fault
	var sent uint64
	err := ep.segments(uint64(rr.Size), ddp.TaggedHeaderLen, func(dst []byte, off uint64, last bool) []byte {
		return ddp.TaggedFields{Last: last, Version: ep.dv, RsvdULP: ctl, STag: rr.SinkSTag, TO: rr.SinkTO + off}.Append(dst)
	}, source{gather: func(dst []byte, off uint64, n int) ([]byte, error) {
		sent = off
		var f mem.Fault
		dst, f = ep.tab.Read(dst, mem.Request{STag: mem.STag(rr.SrcSTag), PD: ep.pd.ID, QP: ep.qpn, TO: rr.SrcTO + off, Len: uint64(n), Use: mem.UseRemoteRead})
		if f != mem.OK {
			fault = f
			return dst, localFault{f}
		}
		return dst, nil
	}})
	if fault != mem.OK {
		// The source was revoked while the Read was being answered: report
		// it with the Read Request header updated to where it stopped (RFC 5040 §4.8).
		// What was read before the revocation goes out, so that the
		// updated header below says what the peer has received.
		if err := ep.flush(); err != nil {
			return err
		}
		t := ReadSourceRevoked(fault, rr, uint32(sent), ir.hdr)
		ep.abort(&Error{Cause: t.Cause, Msg: "Read source revoked while answering"}, t)
		return nil
	}
	if err != nil {
		return err
	}
	ep.mu.Lock()
	if len(ep.irq) > 0 {
		ep.irq = ep.irq[1:] // the IRD slot is free once the response is handed on
	}
	ep.mu.Unlock()
	if !ep.cfg.AlignFPDUs && ep.moreWorkQueued() {
		return nil
	}
	return ep.flush()
}
