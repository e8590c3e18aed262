package qp

import (
	"errors"
	"fmt"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// Memory is the registered memory a QP reads and places through, with the
// STag check of package mem done by every call: *mem.Table, or a card's
// placement engine. A call that returns a fault places nothing.
type Memory interface {
	// Verify checks req without touching memory.
	Verify(req mem.Request) mem.Fault
	// View returns the req.Len octets req names, in place: a local
	// gather (mem.UseLocalRead) for a WR that is outstanding until they
	// are sent.
	View(req mem.Request) ([]byte, mem.Fault)
	// Read appends the req.Len octets req names to dst: a copy, which a
	// revocation cannot race (the source of a peer's RDMA Read).
	Read(dst []byte, req mem.Request) ([]byte, mem.Fault)
	// Place writes data where req names (untagged placement into a
	// receive's SGE, req.Len unset).
	Place(req mem.Request, data []byte) mem.Fault
	// PlaceTagged places a tagged segment's payload (an RDMA Write or a
	// Read Response); ulpdu is the whole DDP segment.
	PlaceTagged(req mem.Request, ulpdu, payload []byte) mem.Fault
	// Invalidate invalidates one of the PD's STags (Local Invalidate).
	Invalidate(stag mem.STag, pd uint32) error
	// RemoteInvalidate invalidates stag for the peer of stream qp (Send
	// with Invalidate), false if mem.CanInvalidate refuses it.
	RemoteInvalidate(stag mem.STag, pd, qp uint32) bool
}

// Completer takes the QP's completions: the CQs. A false return is a lost
// completion (the CQ overflowed), which ends the stream with a Local
// Catastrophic error (RFC 5040 §8.1.1 #10).
type Completer interface {
	CompleteSend(c Completion) bool
	CompleteRecv(c Completion, solicited bool) bool
}

// Config configures a QP.
type Config struct {
	Memory    Memory    // required
	Completer Completer // required
	PD        uint32    // the QP's protection domain
	QPN       uint32    // the stream number STags may be scoped to
	// Version is the DDP and RDMAP version: 1 (RFC 5040/5041), or 0 for
	// the RDMA Consortium drafts (MPA Rev 0).
	Version uint8
	// MULPDU is the largest DDP segment sent (at least mpa.MinMULPDU).
	MULPDU           int
	SQDepth, RQDepth int // 0: 256
	// ORD is the most RDMA Reads outstanding, IRD the most inbound Reads
	// accepted at once (0: 16 each).
	ORD, IRD int
	// FirstMSN is the first MSN on every queue (0: 1, RFC 5041 §4.3).
	FirstMSN uint32
	// HoldTx: an MPA Responder sends nothing before the Initiator's first
	// FPDU has arrived (RFC 5044 §7.1.2 rule 4).
	HoldTx bool
	// RTR, if not nil, is the RFC 6581 ready-to-receive message the
	// Initiator sends first; it is never completed.
	RTR *SendWR
}

// State is where a QP is in its life.
type State uint8

// QP states.
const (
	Live    State = iota
	Closing       // graceful close requested: drain, then FIN
	Failed        // abortive: Terminate (if any) pending, queues flushed
	Closed
)

// Defaults of Config.
const (
	DefaultDepth = 256 // SQDepth, RQDepth
	DefaultRd    = 16  // ORD, IRD
)

type sqEntry struct {
	wr       SendWR
	sgl      [ownSGEs]SGE    // wr.SGL's own storage: the WR is copied at post time, as in verbs
	inline   [ownInline]byte // wr.Inline's, when it fits
	internal bool            // an RTR message: never completed to the ULP
	// inFlight: its last FPDUs are being handed to the LLP (HandOver), and
	// Written completes it; a flush racing with that write leaves it alone.
	inFlight bool
	done     bool
	status   Status
	got      uint64 // Read: response bytes placed
}

type rqEntry struct {
	wr     RecvWR
	sgl    [ownSGEs]SGE // wr.SGL's own storage
	cap    uint64
	got    uint64 // bytes placed
	sc     cursor
	status Status // the error it completes with if the stream fails on it
}

// A posted WR is copied, SGL and inline payload included, so that the
// caller may reuse its slices at once (ibv_post_send semantics). Entries
// hold this much of them without a further allocation.
const (
	ownSGEs   = 2
	ownInline = 64
)

type inboundRead struct {
	rr  rdmap.ReadRequestFields
	hdr []byte // the Read Request's DDP header, for a Terminate
}

// QP is one RDMAP stream's protocol state: send and receive queues,
// transmit scheduling, the receive checks and placement, completions and
// the error path. It is deterministic and does no I/O; its methods must
// not be called concurrently (the endpoint holds one lock around them).
type QP struct {
	cfg Config
	mem Memory
	dv  ddp.Version
	rv  rdmap.Version

	state   State
	err     error
	sq      []*sqEntry // posted, not yet completed, in posting order
	sqNext  int        // first entry of sq not yet taken by the transmitter
	nonRead int        // entries of sq that are not Reads
	orq     []*sqEntry // Reads sent, awaiting their response
	rq      []*rqEntry
	irq     []inboundRead
	// Completed entries, for reuse while the stream is live: nothing else
	// refers to an entry once it has completed normally, and one flushed
	// in error is never handed out again (posting then fails).
	sqFree []*sqEntry
	rqFree []*rqEntry

	term    *rdmap.Terminate // to send
	firstRx bool             // HoldTx satisfied
	finned  bool             // TakeTerminate has run: nothing more goes out
	rxDone  bool             // the LLP's receive side has ended
	revoked *rdmap.Terminate // a Read source revoked mid-response: the abort after the next hand-over

	// transmit
	cur       txMsg
	txMSN     [rdmap.NumQueues]uint32
	unflushed []*sqEntry // WRs whose last segment was emitted, completed by Written
	hdr       []byte
	pieces    [][]byte
	gather    []byte // a Read Response's payload, copied

	// receive
	rxMSN    [rdmap.NumQueues]uint32
	dropping bool

	rxMsgs  uint32 // messages received (Sends, Read Responses)
	readsIn uint32 // Read Requests accepted
	wakeups uint32 // events that may unblock the transmitter
}

// New returns a QP in state Live.
func New(cfg Config) (*QP, error) {
	if cfg.Memory == nil || cfg.Completer == nil {
		return nil, fmt.Errorf("%w: qp.Config needs Memory and Completer", ErrInvalidWR)
	}
	if cfg.MULPDU < mpa.MinMULPDU || cfg.MULPDU > mpa.MaxULPDULength {
		return nil, fmt.Errorf("%w: MULPDU %d outside [%d, %d]", ErrInvalidWR, cfg.MULPDU, mpa.MinMULPDU, mpa.MaxULPDULength)
	}
	if cfg.Version > 1 {
		return nil, fmt.Errorf("%w: DDP/RDMAP version %d", ErrInvalidWR, cfg.Version)
	}
	def := func(v, d int) int {
		if v <= 0 {
			return d
		}
		return v
	}
	cfg.SQDepth, cfg.RQDepth = def(cfg.SQDepth, DefaultDepth), def(cfg.RQDepth, DefaultDepth)
	cfg.ORD, cfg.IRD = def(cfg.ORD, DefaultRd), def(cfg.IRD, DefaultRd)
	q := &QP{cfg: cfg, mem: cfg.Memory, dv: ddp.Version(cfg.Version), rv: rdmap.Version(cfg.Version), firstRx: !cfg.HoldTx}
	msn := cfg.FirstMSN
	if msn == 0 {
		msn = 1 // RFC 5041 §4.3
	}
	for i := range q.txMSN {
		q.txMSN[i], q.rxMSN[i] = msn, msn
	}
	if cfg.RTR != nil {
		e := q.newSQEntry(cfg.RTR)
		e.internal = true
		q.pushSQ(e)
	}
	return q, nil
}

// RTRFor is the RFC 6581 ready-to-receive message agreed in MPA (rtr, the
// RTR flags of mpa.Params): a zero-length Write (to STag 1, as siw
// does), Read or Send.
func RTRFor(rtr mpa.RTR) *SendWR {
	switch {
	case rtr&mpa.RTRWrite != 0:
		return &SendWR{Opcode: WRWrite, RKey: 1}
	case rtr&mpa.RTRRead != 0:
		return &SendWR{Opcode: WRRead, RKey: 1}
	}
	return &SendWR{Opcode: WRSend}
}

// State returns the QP's state.
func (q *QP) State() State { return q.state }

// Err reports why the stream ended: nil while it runs, ErrClosed after a
// graceful close, ErrConnLost, or an *Error with the Terminate cause.
func (q *QP) Err() error { return q.err }

// NonReads counts the send WRs outstanding that are not RDMA Reads.
func (q *QP) NonReads() int { return q.nonRead }

// SQLen counts the send WRs outstanding.
func (q *QP) SQLen() int { return len(q.sq) }

// ReadsQueued counts the inbound Reads not yet answered.
func (q *QP) ReadsQueued() int { return len(q.irq) }

// Unflushed counts the WRs whose last segment is emitted but not written.
func (q *QP) Unflushed() int { return len(q.unflushed) }

// MessagesIn counts the messages received (Sends and Read Responses).
func (q *QP) MessagesIn() uint32 { return q.rxMsgs }

// ReadsIn counts the Read Requests accepted.
func (q *QP) ReadsIn() uint32 { return q.readsIn }

// Wakeups counts the events that may give the transmitter work other than
// a Read Request (ReadsIn) or a post: the first inbound ULPDU, a Read
// completed, the stream failing.
func (q *QP) Wakeups() uint32 { return q.wakeups }

// newSQEntry copies wr into an entry, reusing a completed one if any.
func (q *QP) newSQEntry(wr *SendWR) *sqEntry {
	var e *sqEntry
	if n := len(q.sqFree); n > 0 {
		e, q.sqFree = q.sqFree[n-1], q.sqFree[:n-1]
		*e = sqEntry{}
	} else {
		e = new(sqEntry)
	}
	e.wr = SendWR{ID: wr.ID, Opcode: wr.Opcode, Signaled: wr.Signaled, Solicited: wr.Solicited, Fence: wr.Fence,
		InvalidateSTag: wr.InvalidateSTag, Bind: wr.Bind, RemoteAddr: wr.RemoteAddr, RKey: wr.RKey}
	switch {
	case wr.Inline != nil && len(wr.Inline) <= ownInline:
		e.wr.Inline = append(e.inline[:0], wr.Inline...)
	case wr.Inline != nil:
		e.wr.Inline = append([]byte(nil), wr.Inline...)
	case len(wr.SGL) > 0:
		e.wr.SGL = append(e.sgl[:0], wr.SGL...)
	}
	if wr.Bind != nil {
		b := *wr.Bind
		e.wr.Bind = &b
	}
	return e
}

func (q *QP) pushSQ(e *sqEntry) {
	q.sq = append(q.sq, e)
	if e.wr.Opcode != WRRead {
		q.nonRead++
	}
}

// newRQEntry copies wr into an entry, reusing a completed one if any.
func (q *QP) newRQEntry(wr *RecvWR, capacity uint64) *rqEntry {
	var e *rqEntry
	if n := len(q.rqFree); n > 0 {
		e, q.rqFree = q.rqFree[n-1], q.rqFree[:n-1]
		*e = rqEntry{}
	} else {
		e = new(rqEntry)
	}
	e.wr.ID, e.cap = wr.ID, capacity
	if len(wr.SGL) > 0 {
		e.wr.SGL = append(e.sgl[:0], wr.SGL...)
	}
	e.sc = cursor{sgl: e.wr.SGL}
	return e
}

// PostSend queues send work requests: all or none. It fails if the QP is
// no longer live, the queue is full, or a WR is malformed (ErrInvalidWR:
// opcode, bind, a Read's SGL, an SGE the local check refuses, a message of
// 2^32 bytes or more). The WRs are copied (SGL, inline data, bind).
func (q *QP) PostSend(wrs ...SendWR) error {
	for i := range wrs {
		if err := q.validSend(&wrs[i]); err != nil {
			return err
		}
	}
	if q.state != Live {
		return q.stateErr()
	}
	if len(q.sq)+len(wrs) > q.cfg.SQDepth {
		return fmt.Errorf("%w: send queue holds %d of %d", ErrQueueFull, len(q.sq), q.cfg.SQDepth)
	}
	for i := range wrs {
		q.pushSQ(q.newSQEntry(&wrs[i]))
	}
	return nil
}

func (q *QP) validSend(wr *SendWR) error {
	if wr.Opcode > WRBindMW {
		return fmt.Errorf("%w: opcode %d", ErrInvalidWR, wr.Opcode)
	}
	if wr.Opcode == WRBindMW && (wr.Bind == nil || wr.Bind.MW == nil || wr.Bind.MR == nil) {
		return fmt.Errorf("%w: BIND_MW needs Bind with MW and MR", ErrInvalidWR)
	}
	if wr.Opcode == WRRead && (len(wr.SGL) > 1 || wr.Inline != nil) {
		return fmt.Errorf("%w: an RDMA Read takes one SGE (one Read Response writes one tagged buffer)", ErrInvalidWR)
	}
	if wr.Inline == nil {
		var n uint64
		for _, s := range wr.SGL {
			n += uint64(s.Length)
			if f := q.mem.Verify(q.req(s.LKey, s.Addr, uint64(s.Length), localUse(wr.Opcode))); f != mem.OK && s.Length > 0 {
				return fmt.Errorf("%w: SGE %v at %#x+%d: %v", ErrInvalidWR, s.LKey, s.Addr, s.Length, f)
			}
		}
		if n > 1<<32-1 {
			return fmt.Errorf("%w: message of %d bytes (RFC 5041 §5.2: less than 2^32)", ErrInvalidWR, n)
		}
	}
	return nil
}

func (q *QP) req(stag mem.STag, to, n uint64, use mem.Use) mem.Request {
	return mem.Request{STag: stag, PD: q.cfg.PD, QP: q.cfg.QPN, TO: to, Len: n, Use: use}
}

func localUse(op WROpcode) mem.Use {
	if op == WRRead {
		return mem.UseReadResponse
	}
	return mem.UseLocalRead
}

// PostRecv queues receive work requests, copying them and their SGLs: all
// or none. Receives may be posted while the QP is closing.
func (q *QP) PostRecv(wrs ...RecvWR) error {
	for _, wr := range wrs {
		for _, s := range wr.SGL {
			if f := q.mem.Verify(q.req(s.LKey, s.Addr, uint64(s.Length), mem.UseLocalWrite)); f != mem.OK && s.Length > 0 {
				return fmt.Errorf("%w: receive SGE %v at %#x+%d: %v", ErrInvalidWR, s.LKey, s.Addr, s.Length, f)
			}
		}
	}
	if q.state != Live && q.state != Closing {
		return q.stateErr()
	}
	if len(q.rq)+len(wrs) > q.cfg.RQDepth {
		return fmt.Errorf("%w: receive queue holds %d of %d", ErrQueueFull, len(q.rq), q.cfg.RQDepth)
	}
	for i := range wrs {
		var n uint64
		for _, s := range wrs[i].SGL {
			n += uint64(s.Length)
		}
		q.rq = append(q.rq, q.newRQEntry(&wrs[i], n))
	}
	return nil
}

func (q *QP) stateErr() error {
	if q.err != nil {
		return q.err
	}
	return ErrClosed
}

// Close starts a graceful close: nothing more may be posted to the send
// queue; what is queued is still sent (Next), and the transmitter's work
// ends with JobExit once it is and every Read has its response.
func (q *QP) Close() {
	if q.state == Live {
		q.state = Closing
		q.wakeups++
	}
}

// Fail ends the stream with err; term, if not nil, is the Terminate to
// send (TakeTerminate). The first call wins (RFC 5040 §7.1: the Terminate
// describes the first error). Every outstanding WR completes in error.
func (q *QP) Fail(err error, term *rdmap.Terminate) {
	if q.state == Failed || q.state == Closed {
		return
	}
	if q.finned {
		term = nil // our FIN is out: no FPDU can follow it
	}
	q.state, q.err, q.term = Failed, err, term
	q.cur = txMsg{}
	q.revoked = nil
	q.flush(err)
	q.wakeups++
}

// LLPEnded reports the end of the LLP's receive side: the peer's FIN
// (lost nil) or a broken connection. A FIN after a graceful close of ours
// is the normal end; anything else ends the stream with the outstanding
// work flushed.
func (q *QP) LLPEnded(lost error) {
	q.rxDone = true
	q.wakeups++
	if q.state != Live && q.state != Closing {
		return
	}
	if q.state == Closing || lost == nil {
		q.err = ErrClosed // our graceful close, or the peer's
	} else {
		q.err = fmt.Errorf("%w: %v", ErrConnLost, lost)
	}
	q.state = Failed
	q.cur = txMsg{}
	q.revoked = nil
	q.flush(q.err)
}

// MPAError ends the stream on an error of the MPA deframer (RFC 5044 §8):
// a Terminate with layer LLP and no headers, unless the error requires
// closing TCP at once.
func (q *QP) MPAError(err error) {
	c, term := MPATerminate(err)
	// The FPDU that failed was the Initiator's first one, or a later one:
	// either way the Initiator is sending FPDUs, and the Responder may
	// answer with its Terminate (RFC 5044 §7.1.2 rule 4 holds back FPDUs
	// only until the Initiator's first one has arrived).
	q.firstRx = true
	q.dropping = true
	q.Fail(&Error{Cause: c, Msg: "MPA", Err: err}, term)
}

// TakeTerminate is the ULPDU of the Terminate to send before the FIN, or
// nil when there is none or it may not go (the Responder has received
// nothing: RFC 5044 §7.1.2 rule 4). Once it has been called, nothing more
// goes out: a later error is not reported on the wire.
func (q *QP) TakeTerminate() []byte {
	q.finned = true
	q.dropUnflushed()
	if q.term == nil || !q.firstRx {
		return nil
	}
	return q.term.AppendMessage(nil, q.rv, q.dv, q.txMSN[rdmap.QNTerminate])
}

// Finish records that the connection is closed: the stream ends with
// ErrClosed unless it had failed, and everything left completes with
// WCFlushErr.
func (q *QP) Finish() {
	if q.err == nil {
		q.err = ErrClosed
	}
	if q.state != Failed {
		q.flush(ErrClosed)
	}
	q.state = Closed
	q.cur = txMsg{}
}

// flush completes every outstanding work request in error.
func (q *QP) flush(cause error) {
	first := WCFlushErr
	var e *Error
	if errors.As(cause, &e) && e.Remote {
		first = remoteStatus(e.Cause)
	}
	// The peer's error most likely hit the oldest WR the transmitter took
	// that is not complete: not one whose FPDUs are being handed to the
	// LLP (inFlight), which Written completes with success.
	blame := true
	for i, s := range q.sq {
		if s.done || s.inFlight {
			continue
		}
		s.done, s.status = true, WCFlushErr
		if blame && i < q.sqNext {
			s.status = first
		}
		blame = false
	}
	q.sqNext = len(q.sq)
	q.orq, q.irq = nil, nil
	q.complete()
	for _, r := range q.rq {
		st := r.status
		if st == WCSuccess {
			st = WCFlushErr
		}
		q.cfg.Completer.CompleteRecv(Completion{ID: r.wr.ID, Status: st, Opcode: WCRecv, QP: q.cfg.QPN}, false)
	}
	q.rq = nil
}

// cqOverflow ends the stream when its CQ has lost a completion: a local
// resource failure (Local Catastrophic, digest §3.7). Streams on other
// CQs are not affected (RFC 5040 §8.1.1 #10).
func (q *QP) cqOverflow() {
	c := rdmap.RDMAPLocalCatastrophic
	q.dropping = true
	q.Fail(&Error{Cause: c, Msg: "completion queue overflow", Err: ErrCQOverflow}, &rdmap.Terminate{Cause: c})
}

// ErrCQOverflow is the cause of a stream ended by a lost completion.
var ErrCQOverflow = errors.New("iwarp: completion queue overflow")

// complete reports finished send WRs in posting order (RFC 5040 §5.5 rule
// 15). A full CQ ends the stream, but only once the reported entries are
// off the queue: ending it flushes the queue, which completes again.
func (q *QP) complete() {
	k, overflow := 0, false
	for k < len(q.sq) && q.sq[k].done {
		s := q.sq[k]
		k++
		if s.internal || (s.status == WCSuccess && !s.wr.Signaled) {
			continue
		}
		c := Completion{ID: s.wr.ID, Status: s.status, Opcode: wcOpcode(s.wr.Opcode), QP: q.cfg.QPN}
		if s.status == WCSuccess {
			c.ByteLen = uint32(s.wr.Len())
		}
		if !q.cfg.Completer.CompleteSend(c) {
			overflow = true
		}
	}
	if k > 0 {
		for _, s := range q.sq[:k] {
			if s.wr.Opcode != WRRead {
				q.nonRead--
			}
		}
		if q.state < Failed {
			q.sqFree = append(q.sqFree, q.sq[:k]...)
		}
		copy(q.sq, q.sq[k:])
		clear(q.sq[len(q.sq)-k:])
		q.sq = q.sq[:len(q.sq)-k]
		q.sqNext -= k
	}
	if overflow {
		q.cqOverflow()
	}
}

func wcOpcode(op WROpcode) WCOpcode {
	switch op {
	case WRWrite:
		return WCWrite
	case WRRead:
		return WCRead
	case WRLocalInvalidate:
		return WCLocalInv
	case WRBindMW:
		return WCBindMW
	}
	return WCSend
}

// cursor walks an SGL in order.
type cursor struct {
	sgl []SGE
	i   int
	off uint32
}

// next calls fn for the pieces of the next n bytes.
func (c *cursor) next(n uint64, fn func(s SGE, off uint32, k uint32) mem.Fault) mem.Fault {
	for n > 0 {
		for c.i < len(c.sgl) && c.off == c.sgl[c.i].Length {
			c.i, c.off = c.i+1, 0
		}
		if c.i == len(c.sgl) {
			return mem.BaseBounds
		}
		s := c.sgl[c.i]
		k := uint32(min(uint64(s.Length-c.off), n))
		if f := fn(s, c.off, k); f != mem.OK {
			return f
		}
		c.off += k
		n -= uint64(k)
	}
	return mem.OK
}
