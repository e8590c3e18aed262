package iwarp

import (
	"errors"
	"syscall"
	"time"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/qp"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// job is the transmitter's next job: the core's (qp.QP.Peek), or a flush
// of what the transmitter still holds. Called with mu held.
func (ep *Endpoint) job() qp.Job {
	j := ep.q.Peek()
	if (j.Kind == qp.JobWait || j.Kind == qp.JobExit) && ep.q.State() < qp.Failed && ep.txPending.Load() {
		j.Kind = qp.JobFlush
	}
	return j
}

// The transmitter's state (wbuf, vec, ulp) belongs to whoever holds txMu:
// the transmit goroutine, a PostSend caller that finds it idle and sends
// its own small WR inline, or the receive path answering small Reads
// (answerReads), which saves a goroutine handoff on the latency path.

func (ep *Endpoint) txLoop() {
	defer ep.wg.Done()
	for {
		ep.mu.Lock()
		for ep.job().Kind == qp.JobWait {
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
		j := ep.job()
		if j.Kind == qp.JobWait || inline && !(j.Kind == qp.JobFlush || j.Kind == qp.JobWR && (j.Op == WRRead || j.Len <= inlineMax)) {
			if j.Kind != qp.JobWait {
				ep.cond.Broadcast() // the transmit goroutine takes it once txMu is free
			}
			ep.unlock()
			return false
		}
		var err error
		switch j.Kind {
		case qp.JobWR, qp.JobReadResponse:
			err = ep.sendMessage() // releases mu
		case qp.JobFlush:
			ep.unlock()
			err = ep.flush()
		case qp.JobTerminate, qp.JobExit:
			graceful := ep.q.Err() == nil
			ep.unlock()
			if graceful {
				ep.flush() // what was queued goes out before the FIN
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

// sendMessage frames the segments of the message the core emits next
// (qp.QP.Next): a send WR or a Read Response. Large messages are handed to
// TCP every flushAt octets; the last segment is written at once unless
// more messages are ready to share the write. Called with mu held; it
// returns with mu released.
func (ep *Endpoint) sendMessage() error {
	for {
		seg, ok := ep.q.Next()
		ep.unlock()
		if !ok {
			return nil // a memory WR ran, or the stream failed: the next job says what follows
		}
		// seg's header and views stay valid: only the txMu holder calls Next.
		if err := ep.appendSegment(&seg); err != nil {
			return err
		}
		ep.txPending.Store(true)
		if seg.Last {
			break
		}
		if ep.pending() >= flushAt || ep.cfg.AlignFPDUs {
			if err := ep.handOver(); err != nil {
				return err
			}
		}
		ep.mu.Lock()
	}
	ep.mu.Lock()
	j := ep.q.Peek()
	batch := !ep.cfg.AlignFPDUs && (j.Kind == qp.JobWR || j.Kind == qp.JobReadResponse) && ep.q.Unflushed() < 64
	ep.unlock()
	if batch {
		return nil
	}
	return ep.flush()
}

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
	if ep.job().Kind != qp.JobWait {
		ep.cond.Broadcast()
	}
	ep.unlock()
}

// answerReadsLocked is answerReads' turn at the transmitter. Called with
// txMu held and txNoWait set.
func (ep *Endpoint) answerReadsLocked() error {
	if ep.txPending.Load() {
		return nil // the transmitter has FPDUs or WRs of its own to write first
	}
	oneSegment := uint64(min(inlineMax, ddp.MaxPayload(ep.mulpdu, ddp.TaggedHeaderLen)))
	for {
		ep.mu.Lock()
		if j := ep.job(); j.Kind != qp.JobReadResponse || j.Len > oneSegment {
			ep.unlock()
			break
		}
		if err := ep.sendMessage(); err != nil {
			return err
		}
	}
	return ep.flush()
}

// shutdown closes the connection as RFC 5040 §6.2.1 asks: the Terminate
// of an error, if one was decided, then FIN, then a bounded wait for the
// peer's FIN, then close. An error decided once the FIN is out cannot be
// reported on the wire (qp.QP.TakeTerminate).
func (ep *Endpoint) shutdown() {
	ep.mu.Lock()
	term := ep.q.TakeTerminate()
	ep.unlock()
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
	ep.q.Finish()
	ep.unlock()
}

// sendTerminate writes the Terminate ULPDU alone (RFC 5040 §7.1):
// whatever was pending is dropped, as the stream has failed. Best effort:
// the stream ends after this whether or not it is sent.
func (ep *Endpoint) sendTerminate(ulpdu []byte) {
	ep.dropPending()
	var err error
	if ep.wbuf, err = ep.framer.AppendFPDU(ep.wbuf, ulpdu); err == nil {
		_ = ep.writeOut() // not handOver: the stream has failed, and this is what may still go
	}
	ep.txPending.Store(false)
}

// flush writes the buffered FPDUs; the Sends and Writes they finish are
// then complete (RFC 5040 §5.5 rule 14: handed to the LLP).
func (ep *Endpoint) flush() error { return ep.handOver() }

// handOver writes what is pending, unless the stream has ended: then
// nothing more goes to TCP (only a Terminate, which shutdown writes) and
// it returns errAborted. The core decides under mu, where the stream's
// end flushes the queues, so that a WR is either handed to TCP (in
// flight, which the flush leaves alone) and completes with success once
// written, or flushed, and then none of its octets is written: its
// completion says what the peer can have received.
func (ep *Endpoint) handOver() error {
	ep.mu.Lock()
	if !ep.q.HandOver() {
		ep.unlock()
		ep.dropPending()
		ep.txPending.Store(false)
		return errAborted
	}
	ep.unlock()
	var err error
	if ep.pending() > 0 {
		err = ep.writeOut()
		if ep.pending() > 0 {
			return err // txNoWait: the rest is the transmit goroutine's (qp.JobFlush)
		}
	}
	ep.mu.Lock()
	ep.q.Written(err != nil)
	ep.unlock()
	ep.txPending.Store(false)
	return err
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

// zcMin is the smallest segment payload sent in place: below it a copy
// costs less than one more piece of writev.
const zcMin = 512

// inPlaceFramer frames a ULPDU already written after a length slot in the
// write buffer (mpa.Framer does), which saves copying every segment once.
type inPlaceFramer interface {
	FrameInPlace(dst []byte, start int) ([]byte, error)
}

// errAborted stops a message whose stream has failed mid-way.
var errAborted = errors.New("iwarp: stream failed while sending")

// appendSegment appends the FPDU of seg to what is pending: in place
// around its payload (writev) when it can, copied otherwise.
func (ep *Endpoint) appendSegment(seg *qp.Segment) error {
	if ep.zc != nil && seg.Stable && seg.Len >= zcMin {
		return ep.appendSegmentInPlace(seg)
	}
	if f, ok := ep.framer.(inPlaceFramer); ok {
		start := len(ep.wbuf)
		buf := append(append(ep.wbuf, 0, 0), seg.Header...)
		for _, p := range seg.Payload {
			buf = append(buf, p...)
		}
		var err error
		ep.wbuf, err = f.FrameInPlace(buf, start)
		return err
	}
	ulp := append(ep.ulp[:0], seg.Header...)
	for _, p := range seg.Payload {
		ulp = append(ulp, p...)
	}
	ep.ulp = ulp
	var err error
	ep.wbuf, err = ep.framer.AppendFPDU(ep.wbuf, ulp)
	return err
}

// appendSegmentInPlace frames seg around its payload in registered memory
// (mpa.Framer.FrameAround, markers off): ULPDU_Length and the headers go
// to wbuf, then the payload pieces, then PAD and CRC.
func (ep *Endpoint) appendSegmentInPlace(seg *qp.Segment) error {
	start, vecAt, wopen := len(ep.wbuf), len(ep.vec), ep.wopen
	ep.wbuf = append(append(ep.wbuf, 0, 0), seg.Header...)
	ep.vec = append(ep.vec, ep.wbuf[ep.wopen:]) // ULPDU_Length is filled in below, in the same array
	mid := len(ep.wbuf)
	ep.vec = append(ep.vec, seg.Payload...)
	var err error
	if ep.wbuf, err = ep.zc.FrameAround(ep.wbuf, start, ep.vec[vecAt+1:]); err != nil {
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
