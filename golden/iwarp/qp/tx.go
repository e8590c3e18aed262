package qp

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// JobKind is what the transmitter should do next (Peek).
type JobKind uint8

// Transmitter jobs.
const (
	JobWait         JobKind = iota // nothing now: wait for a post, an inbound ULPDU or the end
	JobFlush                       // hand what was emitted to the LLP (HandOver, Written)
	JobTerminate                   // the stream failed: send TakeTerminate's ULPDU, then FIN
	JobExit                        // the stream is over (or drained after Close): FIN
	JobReadResponse                // Next emits a Read Response
	JobWR                          // Next emits (or runs) a send WR
)

// Job is the transmitter's next job, with the message it concerns.
type Job struct {
	Kind JobKind
	Op   WROpcode // JobWR: the WR's opcode
	Len  uint64   // JobWR and JobReadResponse: the message's payload length
}

// Peek says what the transmitter should do next. A caller that holds
// emitted octets not yet written (its own buffers) flushes them before
// JobWait or JobExit.
func (q *QP) Peek() Job {
	switch q.state {
	case Failed, Closed:
		// A Terminate goes out even after the peer's FIN: a half-closed
		// peer still reads (and a broken connection just fails the write).
		if q.term != nil && q.firstRx && !q.finned {
			return Job{Kind: JobTerminate}
		}
		return Job{Kind: JobExit}
	}
	if q.revoked != nil {
		return Job{Kind: JobFlush}
	}
	if q.cur.active {
		if q.cur.s == nil {
			return Job{Kind: JobReadResponse, Len: q.cur.total}
		}
		return Job{Kind: JobWR, Op: q.cur.s.wr.Opcode, Len: q.cur.total}
	}
	if !q.firstRx {
		// RFC 5044 §7.1.2 rule 4: the Responder sends no FPDU before the
		// Initiator's first one. Closing with nothing queued needs none:
		// the FIN goes at once. Queued work waits for that FPDU.
		if q.rxDone || q.state == Closing && q.sqNext == len(q.sq) {
			return Job{Kind: JobExit}
		}
		return Job{Kind: JobWait}
	}
	if len(q.irq) > 0 {
		return Job{Kind: JobReadResponse, Len: uint64(q.irq[0].rr.Size)}
	}
	if q.sqNext < len(q.sq) {
		s := q.sq[q.sqNext]
		blocked := s.wr.Fence && len(q.orq) > 0 || s.wr.Opcode == WRRead && len(q.orq) >= q.cfg.ORD
		if !blocked {
			return Job{Kind: JobWR, Op: s.wr.Opcode, Len: s.wr.Len()}
		}
	}
	if len(q.unflushed) > 0 {
		return Job{Kind: JobFlush}
	}
	if q.rxDone || q.state == Closing && q.sqNext == len(q.sq) && len(q.orq) == 0 {
		return Job{Kind: JobExit}
	}
	return Job{Kind: JobWait}
}

// Segment is one DDP segment to send: the ULPDU is Header followed by the
// Payload pieces. Header is the QP's and valid until the next call; the
// pieces are views of registered memory (or of the WR's inline copy).
type Segment struct {
	Header  []byte
	Payload [][]byte
	Len     int  // octets in Payload
	Last    bool // the last segment of its message
	// Stable: Payload is a send WR's registered memory, which stays valid
	// until the WR completes (Written), so the caller may send it in place
	// (writev). Otherwise (inline data, a Read Response's copy) it copies
	// Payload before its next call.
	Stable bool
}

// txMsg is the message being segmented.
type txMsg struct {
	active     bool
	s          *sqEntry    // the WR, or nil for a Read Response
	ir         inboundRead // the Read Response's request
	total, off uint64
	g          cursor
	ctl        uint8
	msn, inv   uint32
}

// Next emits the next segment: of the message in progress, or of the one
// Peek names (JobWR, JobReadResponse), which it starts. Memory WRs
// (Local Invalidate, Bind) take effect here, in send-queue order, and
// emit nothing. It returns false when there is nothing to emit now: a
// memory WR ran, the stream failed, or the job is not a message.
func (q *QP) Next() (Segment, bool) {
	if !q.cur.active && !q.start() {
		return Segment{}, false
	}
	m := &q.cur
	if m.s != nil && m.s.wr.Opcode == WRRead {
		return q.readRequest(), true
	}
	hdrLen := ddp.TaggedHeaderLen
	if m.s != nil && m.s.wr.Opcode != WRWrite {
		hdrLen = ddp.UntaggedHeaderLen
	}
	n := min(uint64(ddp.MaxPayload(q.cfg.MULPDU, hdrLen)), m.total-m.off)
	last := m.off+n == m.total
	seg := Segment{Len: int(n), Last: last}
	q.pieces = q.pieces[:0]
	var f mem.Fault
	switch {
	case m.s == nil:
		rr := m.ir.rr
		q.hdr = ddp.TaggedFields{Last: last, Version: q.dv, RsvdULP: m.ctl, STag: rr.SinkSTag, TO: rr.SinkTO + m.off}.Append(q.hdr[:0])
		if n > 0 {
			q.gather, f = q.mem.Read(q.gather[:0], q.req(mem.STag(rr.SrcSTag), rr.SrcTO+m.off, n, mem.UseRemoteRead))
			q.pieces = append(q.pieces, q.gather)
		}
	default:
		wr := &m.s.wr
		if wr.Opcode == WRWrite {
			q.hdr = ddp.TaggedFields{Last: last, Version: q.dv, RsvdULP: m.ctl, STag: uint32(wr.RKey), TO: wr.RemoteAddr + m.off}.Append(q.hdr[:0])
		} else {
			q.hdr = ddp.UntaggedFields{Last: last, Version: q.dv, RsvdULP0: m.ctl, RsvdULP1: m.inv, QN: rdmap.QNSend, MSN: m.msn, MO: uint32(m.off)}.Append(q.hdr[:0])
		}
		if wr.Inline != nil {
			q.pieces = append(q.pieces, wr.Inline[m.off:m.off+n])
			break
		}
		seg.Stable = true
		f = m.g.next(n, func(sg SGE, o, k uint32) mem.Fault {
			p, f := q.mem.View(q.req(sg.LKey, sg.Addr+uint64(o), uint64(k), mem.UseLocalRead))
			if f == mem.OK && len(p) > 0 {
				q.pieces = append(q.pieces, p)
			}
			return f
		})
	}
	if f != mem.OK {
		q.pieces = q.pieces[:0]
		q.sourceFault(f)
		return Segment{}, false
	}
	seg.Header, seg.Payload = q.hdr, q.pieces
	m.off += n
	if last {
		q.finish()
	}
	return seg, true
}

// start takes the message Peek names. Memory WRs run here.
func (q *QP) start() bool {
	j := q.Peek()
	switch j.Kind {
	case JobReadResponse:
		q.cur = txMsg{active: true, ir: q.irq[0], total: uint64(q.irq[0].rr.Size), ctl: uint8(rdmap.NewControl(q.rv, rdmap.OpReadResponse))}
		return true
	case JobWR:
	default:
		return false
	}
	s := q.sq[q.sqNext]
	q.sqNext++
	wr := &s.wr
	switch wr.Opcode {
	case WRLocalInvalidate, WRBindMW:
		q.memoryWR(s)
		return false
	case WRRead:
		q.orq = append(q.orq, s)
		q.cur = txMsg{active: true, s: s}
		return true
	}
	q.cur = txMsg{active: true, s: s, total: wr.Len(), g: cursor{sgl: wr.SGL}}
	switch wr.Opcode {
	case WRWrite:
		q.cur.ctl = uint8(rdmap.NewControl(q.rv, rdmap.OpWrite))
	default:
		op := rdmap.OpSend
		if wr.Opcode == WRSendInvalidate {
			op, q.cur.inv = rdmap.OpSendInvalidate, uint32(wr.InvalidateSTag)
		}
		if wr.Solicited {
			op += rdmap.OpSendSE - rdmap.OpSend
		}
		q.cur.ctl, q.cur.msn = uint8(rdmap.NewControl(q.rv, op)), q.txMSN[rdmap.QNSend]
		q.txMSN[rdmap.QNSend]++
	}
	return true
}

// memoryWR runs a Local Invalidate or a Bind: nothing on the wire; they
// take effect in send-queue order and complete in posting order. As in
// verbs, a failed one puts the QP in error.
func (q *QP) memoryWR(s *sqEntry) {
	wr := &s.wr
	var err error
	if wr.Opcode == WRLocalInvalidate {
		err = q.mem.Invalidate(wr.InvalidateSTag, q.cfg.PD)
	} else {
		b := wr.Bind
		_, err = b.MW.Bind(b.MR, b.Addr, b.Length, b.Access, q.cfg.QPN)
	}
	s.done = true
	if err != nil {
		s.status = WCLocProtErr
		if wr.Opcode == WRBindMW {
			s.status = WCMWBindErr // IBV_WC_MW_BIND_ERR, as the card reports it
		}
		q.complete()
		q.Fail(&Error{Cause: rdmap.RDMAPLocalCatastrophic, Msg: fmt.Sprintf("WR %d (%v)", wr.ID, wr.Opcode), Err: err},
			&rdmap.Terminate{Cause: rdmap.RDMAPLocalCatastrophic})
		return
	}
	q.complete()
}

// readRequest emits the Read Request of the WR in progress.
func (q *QP) readRequest() Segment {
	wr := &q.cur.s.wr
	rr := rdmap.ReadRequestFields{SrcSTag: uint32(wr.RKey), SrcTO: wr.RemoteAddr}
	if len(wr.SGL) == 1 {
		rr.SinkSTag, rr.SinkTO, rr.Size = uint32(wr.SGL[0].LKey), wr.SGL[0].Addr, wr.SGL[0].Length
	}
	msn := q.txMSN[rdmap.QNReadRequest]
	q.txMSN[rdmap.QNReadRequest]++
	q.hdr = ddp.UntaggedFields{Last: true, Version: q.dv, RsvdULP0: uint8(rdmap.NewControl(q.rv, rdmap.OpReadRequest)),
		QN: rdmap.QNReadRequest, MSN: msn}.Append(q.hdr[:0])
	q.hdr = rr.Append(q.hdr)
	q.cur = txMsg{} // the Read completes on its response, not on the flush
	return Segment{Header: q.hdr, Last: true}
}

// finish ends the message in progress after its last segment.
func (q *QP) finish() {
	m := q.cur
	q.cur = txMsg{}
	if m.s == nil {
		if len(q.irq) > 0 {
			q.irq = q.irq[1:] // the IRD slot is free once the response is handed on
		}
		return
	}
	q.unflushed = append(q.unflushed, m.s)
}

// sourceFault ends the stream on a local protection error met while
// reading a message's payload.
func (q *QP) sourceFault(f mem.Fault) {
	m := q.cur
	q.cur = txMsg{}
	if m.s == nil {
		// The source was revoked while the Read was being answered: report
		// it with the Read Request header updated to where it stopped (RFC
		// 5040 §4.8), once what was read before the revocation is handed
		// over, so that the updated header says what the peer has received.
		q.revoked = ReadSourceRevoked(f, m.ir.rr, uint32(m.off), m.ir.hdr)
		return
	}
	// RFC 5040 §7.1: an error building an outbound request is a
	// Terminate with no headers; the WR completes with a protection error.
	m.s.done, m.s.status = true, WCLocProtErr
	q.complete()
	q.Fail(&Error{Cause: rdmap.RDMAPLocalCatastrophic, Msg: fmt.Sprintf("WR %d", m.s.wr.ID), Err: localFault{f}},
		&rdmap.Terminate{Cause: rdmap.RDMAPLocalCatastrophic})
}

// localFault is a local protection error found while gathering a WR's data.
type localFault struct{ f mem.Fault }

func (l localFault) Error() string { return "gathering the work request: " + l.f.String() }

// HandOver is called before the caller writes what it has emitted to the
// LLP. It returns false if the stream has failed: then nothing more may
// be written (only the Terminate), and the caller drops it all. The WRs
// whose last segments are among those octets are then in flight: a
// failure racing with the write no longer flushes them, and Written
// completes them.
func (q *QP) HandOver() bool {
	if q.state == Failed || q.state == Closed {
		// The failure flushed every WR not in flight; one in flight whose
		// octets the LLP had not all taken was not handed over either.
		q.dropUnflushed()
		return false
	}
	for _, s := range q.unflushed {
		s.inFlight = !s.done
	}
	return true
}

// Written reports that the LLP has taken everything emitted since
// HandOver (failed: it refused it). The WRs it finished complete, with
// success unless it failed (RFC 5040 §5.5 rule 14: handed to the LLP).
func (q *QP) Written(failed bool) {
	for _, s := range q.unflushed {
		if s.inFlight {
			s.inFlight, s.done = false, true
			if failed {
				s.status = WCFlushErr // the LLP did not take it
			}
		}
	}
	clear(q.unflushed)
	q.unflushed = q.unflushed[:0]
	q.complete()
	if t := q.revoked; t != nil {
		q.revoked = nil
		if !failed {
			q.Fail(&Error{Cause: t.Cause, Msg: "Read source revoked while answering"}, t)
		}
	}
}

// dropUnflushed forgets the emitted WRs whose octets are dropped, those in
// flight completing in error.
func (q *QP) dropUnflushed() {
	for _, s := range q.unflushed {
		if s.inFlight {
			s.inFlight, s.done, s.status = false, true, WCFlushErr
		}
	}
	clear(q.unflushed)
	q.unflushed = q.unflushed[:0]
	q.complete()
}
