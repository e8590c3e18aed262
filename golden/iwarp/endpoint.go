package iwarp

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// Framer turns ULPDUs into the stream: *mpa.Framer, or the simulated RTL's transmitter.
type Framer interface {
	AppendFPDU(dst, ulpdu []byte) ([]byte, error)
}

// Deframer turns the stream into ULPDUs: *mpa.Deframer, or the simulated RTL's receiver.
type Deframer interface {
	Feed(p []byte, fn func(mpa.ULPDU) error) error
}

// TaggedPlacer places the payload of a tagged segment (an RDMA Write or
// a Read Response) into registered memory, checking the STag, rights and
// bounds first: *mem.Table, or a card's placement engine. ulpdu is the
// whole DDP segment, headers included; payload is its data. A placer
// returns mem.OK only if every byte was placed, and places nothing
// otherwise.
type TaggedPlacer interface {
	PlaceTagged(req mem.Request, ulpdu, payload []byte) mem.Fault
}

// Config configures an endpoint.
type Config struct {
	PD             *mem.PD // required: the endpoint's protection domain
	SendCQ, RecvCQ *CQ     // required (may be the same CQ)
	SQDepth        int     // send queue depth (0: 256)
	RQDepth        int     // receive queue depth (0: 256)
	// ORD is the most RDMA Reads this side has outstanding (0: 16); with
	// MPA Rev 2 it is also capped by the peer's IRD. IRD is the most
	// inbound Reads this side accepts at once (0: 16); one more is a
	// Terminate (RFC 5040 §6.1).
	ORD, IRD int
	// MULPDU is the largest DDP segment sent (0: from the TCP MSS, RFC 5044 §4.5).
	MULPDU int
	// Framer and Deframer replace the MPA layer (nil: from the Params).
	Framer   Framer
	Deframer Deframer
	// Placer replaces tagged placement (nil: the PD's table).
	Placer TaggedPlacer
	// AlignFPDUs hands each FPDU to the connection in its own Write, so a
	// connection that maps writes to TCP segments starts every segment with
	// an FPDU, as RFC 5044 §4.2 asks of an MPA-aware TCP. Off, FPDUs are
	// batched into large writes (faster on a kernel socket).
	AlignFPDUs bool
	// Linger bounds the wait for the peer's FIN after ours (0: 2 s).
	Linger time.Duration
	// Recv are receives posted before the stream starts (post_recv on a
	// QP not yet connected): they are on the receive queue before the
	// first segment is read, so the peer's first Send finds them.
	Recv []RecvWR

	firstMSN uint32 // tests only: the first MSN on every queue (0: 1)
}

type state uint8

const (
	stLive    state = iota
	stClosing       // graceful close requested: drain, then FIN
	stError         // abortive: Terminate (if any) pending, queues flushed
	stClosed
)

type sqEntry struct {
	wr       SendWR
	sgl      [ownSGEs]SGE    // wr.SGL's own storage: the WR is copied at post time, as in verbs
	inline   [ownInline]byte // wr.Inline's, when it fits
	internal bool            // an RTR message: never completed to the ULP
	// inFlight: the transmitter is handing its last FPDUs to TCP and
	// completes it itself, with success once they are written, so a flush
	// racing with that Write must leave it alone (handOver).
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

// newSQEntry copies wr into an entry, reusing a completed one if any.
// Called with mu held.
func (ep *Endpoint) newSQEntry(wr *SendWR) *sqEntry {
	var e *sqEntry
	if n := len(ep.sqFree); n > 0 {
		e, ep.sqFree = ep.sqFree[n-1], ep.sqFree[:n-1]
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

// pushSQLocked queues e on the send queue. Called with mu held.
func (ep *Endpoint) pushSQLocked(e *sqEntry) {
	ep.sq = append(ep.sq, e)
	if e.wr.Opcode != WRRead {
		ep.sqNonRead.Add(1)
	}
}

// newRQEntry copies wr into an entry, reusing a completed one if any.
// Called with mu held.
func (ep *Endpoint) newRQEntry(wr *RecvWR, capacity uint64) *rqEntry {
	var e *rqEntry
	if n := len(ep.rqFree); n > 0 {
		e, ep.rqFree = ep.rqFree[n-1], ep.rqFree[:n-1]
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

type inboundRead struct {
	rr  rdmap.ReadRequestFields
	hdr []byte // the Read Request's DDP header, for a Terminate
}

var qpCounter atomic.Uint32

// Endpoint is one RDMAP stream: a queue pair over an MPA connection.
type Endpoint struct {
	conn   net.Conn
	params mpa.Params
	cfg    Config
	pd     *mem.PD
	tab    *mem.Table
	placer TaggedPlacer // tagged placement: tab unless Config.Placer
	qpn    uint32
	dv     ddp.Version
	rv     rdmap.Version
	mulpdu int
	ord    int
	framer Framer
	defr   Deframer

	mu     sync.Mutex
	cond   *sync.Cond
	state  state
	err    error
	sq     []*sqEntry // posted, not yet completed, in posting order
	sqNext int        // first entry of sq not yet handed to the transmitter
	// sqNonRead counts the entries of sq that are not Reads (worthDriving
	// reads it without mu).
	sqNonRead atomic.Int32
	orq       []*sqEntry // Reads sent, awaiting their response
	rq        []*rqEntry
	// Completed entries, for reuse while the stream is live: nothing else
	// refers to an entry once it has completed normally, and one flushed
	// in error is never handed out again (posting then fails).
	sqFree []*sqEntry
	rqFree []*rqEntry
	// rxMsgs counts the messages received (Sends, Read Responses);
	// txSeenRx is its value when PostSend last sent a WR itself.
	rxMsgs, txSeenRx uint32
	irq              []inboundRead
	term             *rdmap.Terminate // to send
	firstRx          bool             // WaitFirstFPDU satisfied
	finned           bool             // shutdown has taken the Terminate (if any): our FIN goes next
	rxDone           bool
	failed           atomic.Bool // state is stError or stClosed: place nothing more

	txMu      sync.Mutex  // held by whoever transmits (see txRun)
	txPending atomic.Bool // the transmitter holds unwritten FPDUs or unreported WRs

	// transmitter-owned (txMu). What is pending for the socket is vec
	// followed by wbuf[wopen:]: wbuf holds FPDUs, or with zero-copy
	// framing (zc) only their headers and trailers, while vec also points
	// at the payloads in registered memory (vecLen bytes of them).
	wbuf      []byte
	raw       syscall.RawConn // the socket's, for writes that must not block (answerReads); nil if none
	txNoWait  bool            // writeOut writes only what the socket takes at once (answerReads)
	vec       net.Buffers
	wv        net.Buffers // what WriteTo has left of vec (a field: no allocation per write)
	wopen     int
	vecLen    int
	zc        *mpa.Framer
	ulp       []byte
	txMSN     [rdmap.NumQueues]uint32
	unflushed []*sqEntry

	// receiver-owned (rxMu; see rxLoop)
	rxMu     sync.Mutex
	rxBuf    []byte
	deliver  func(mpa.ULPDU) error // ep.onULPDU, made once
	rxMSN    [rdmap.NumQueues]uint32
	dropping bool
	rxEnded  bool // the socket reported EOF or an error
	rxAnswer bool // a Read Request came in: answerReads after this read

	rxWanted   atomic.Int32  // CQ waiters that drive, or would drive, the receive path
	rxAside    atomic.Bool   // the receive goroutine is aside (rxStepAside)
	rxRecalled atomic.Bool   // the receive goroutine reads to the end (recallRx)
	rxResume   chan struct{} // brings the receive goroutine back (resumeRx)
	kickable   bool          // the connection takes read deadlines

	// The receive goroutine blocked in the socket, and its kick (kickRx).
	rkMu      sync.Mutex
	rkReading bool
	rkKicked  bool

	// A waiter blocked in the socket, and its kick: guarded by the mu of
	// the CQ whose reader ep is (driveRx).
	kReading bool
	kicked   bool

	wg     sync.WaitGroup
	done   chan struct{}
	rxExit chan struct{}
}

const (
	defaultDepth = 256
	defaultRd    = 16
	flushAt      = 1 << 20   // pending bytes that are written without waiting for the WR's end
	rxBufSize    = 256 << 10 // bytes read from the socket at once (smaller ones stay in cache for the CRC)
)

// New starts an endpoint on conn, on which the MPA startup exchange p has
// just completed (mpa.Initiate or mpa.Respond).
func New(conn net.Conn, p mpa.Params, cfg Config) (*Endpoint, error) {
	if cfg.PD == nil || cfg.SendCQ == nil || cfg.RecvCQ == nil {
		return nil, fmt.Errorf("%w: Config needs PD, SendCQ and RecvCQ", ErrInvalidWR)
	}
	ep := &Endpoint{conn: conn, params: p, cfg: cfg, pd: cfg.PD, tab: cfg.PD.Table(),
		qpn: qpCounter.Add(1), dv: ddp.Version(p.DDPVersion()), rv: rdmap.Version(p.DDPVersion()),
		firstRx: !p.WaitFirstFPDU, done: make(chan struct{}), rxExit: make(chan struct{}), rxResume: make(chan struct{}, 1),
		rxBuf: make([]byte, rxBufSize), kickable: conn.SetReadDeadline(time.Time{}) == nil}
	ep.cond = sync.NewCond(&ep.mu)
	ep.deliver = ep.onULPDU
	msn := cfg.firstMSN
	if msn == 0 {
		msn = 1 // RFC 5041 §4.3
	}
	for i := range ep.txMSN {
		ep.txMSN[i], ep.rxMSN[i] = msn, msn
	}
	def := func(v, d int) int {
		if v <= 0 {
			return d
		}
		return v
	}
	ep.cfg.SQDepth, ep.cfg.RQDepth = def(cfg.SQDepth, defaultDepth), def(cfg.RQDepth, defaultDepth)
	ep.cfg.IRD, ep.ord = def(cfg.IRD, defaultRd), def(cfg.ORD, defaultRd)
	if p.Rev == mpa.Rev2 && p.PeerIRD > 0 {
		ep.ord = min(ep.ord, int(p.PeerIRD))
	}
	ep.cfg.Linger = time.Duration(def(int(cfg.Linger), int(2*time.Second)))
	ep.mulpdu = cfg.MULPDU
	if ep.mulpdu <= 0 {
		ep.mulpdu = mpa.MULPDU(emss(conn), p.TxMarkers)
	}
	ep.mulpdu = min(max(ep.mulpdu, mpa.MinMULPDU), mpa.MaxULPDULength)
	ep.framer, ep.defr = cfg.Framer, cfg.Deframer
	if ep.framer == nil {
		f := p.Framer()
		ep.framer = &f
	}
	if ep.defr == nil {
		ep.defr = p.Deframer(0)
	}
	ep.placer = cfg.Placer
	if ep.placer == nil {
		ep.placer = ep.tab
	}
	if p.Initiator && p.RTR != 0 {
		// RFC 6581 peer-to-peer: the Initiator's first FPDU is the agreed RTR message.
		wr := SendWR{Opcode: WRWrite, RKey: 1} // zero-length Write; STag 1 as siw does
		switch {
		case p.RTR&mpa.RTRWrite != 0:
		case p.RTR&mpa.RTRRead != 0:
			wr.Opcode = WRRead
		default:
			wr.Opcode = WRSend
		}
		e := ep.newSQEntry(&wr)
		e.internal = true
		ep.pushSQLocked(e)
	}
	ep.wbuf = make([]byte, 0, 2*mpa.MaxFPDUWireLen)
	if sc, ok := conn.(syscall.Conn); ok && !cfg.AlignFPDUs {
		ep.raw, _ = sc.SyscallConn()
	}
	if f, ok := ep.framer.(*mpa.Framer); ok && !f.Markers && !cfg.AlignFPDUs {
		if _, tcp := conn.(*net.TCPConn); tcp {
			ep.zc = f // writev: payloads go from registered memory to the socket
		}
	}
	ep.ulp = make([]byte, 0, mpa.MaxULPDULength)
	if len(cfg.Recv) > 0 {
		// No goroutine runs yet: nothing can arrive before these are queued.
		if err := ep.PostRecv(cfg.Recv...); err != nil {
			return nil, fmt.Errorf("iwarp: receives posted before the stream started: %w", err)
		}
	}
	cqs := []*CQ{cfg.SendCQ}
	if cfg.RecvCQ != cfg.SendCQ {
		cqs = append(cqs, cfg.RecvCQ)
	}
	for _, cq := range cqs {
		cq.attach(ep, 1)
	}
	ep.wg.Add(2)
	go ep.txLoop()
	go ep.rxLoop()
	go func() {
		ep.wg.Wait()
		for _, cq := range cqs {
			cq.attach(ep, -1)
		}
		close(ep.done)
	}()
	return ep, nil
}

// emss is the TCP MSS of conn, or 1460 when it cannot be read.
func emss(conn net.Conn) int {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 1460
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 1460
	}
	mss := 1460
	_ = rc.Control(func(fd uintptr) {
		if v, err := syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG); err == nil && v > 0 {
			mss = v
		}
	})
	return mss
}

// QPN is the endpoint's stream number: the QP a stream-scoped STag or a
// type 2 window is bound to.
func (ep *Endpoint) QPN() uint32 { return ep.qpn }

// PD returns the endpoint's protection domain.
func (ep *Endpoint) PD() *mem.PD { return ep.pd }

// MULPDU is the largest DDP segment this endpoint sends.
func (ep *Endpoint) MULPDU() int { return ep.mulpdu }

// Done is closed when both goroutines have exited and the connection is closed.
func (ep *Endpoint) Done() <-chan struct{} { return ep.done }

// Err reports why the stream ended: nil while it runs, ErrClosed after a
// graceful close, ErrConnLost, or an *Error with the Terminate cause.
func (ep *Endpoint) Err() error {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.err
}

// PostSend queues send work requests. It fails if the endpoint is no
// longer running, the queue is full, or a WR is malformed. The WRs are
// copied (SGL, inline data, bind): the caller may reuse them at once.
func (ep *Endpoint) PostSend(wrs ...SendWR) error {
	for i := range wrs {
		if err := ep.validSend(&wrs[i]); err != nil {
			return err
		}
	}
	ep.mu.Lock()
	if ep.state != stLive {
		defer ep.mu.Unlock()
		return ep.stateErr()
	}
	if len(ep.sq)+len(wrs) > ep.cfg.SQDepth {
		defer ep.mu.Unlock()
		return fmt.Errorf("%w: send queue holds %d of %d", ErrQueueFull, len(ep.sq), ep.cfg.SQDepth)
	}
	for i := range wrs {
		ep.pushSQLocked(ep.newSQEntry(&wrs[i]))
	}
	// An idle queue pair sends a lone small WR from this goroutine,
	// saving a goroutine handoff: an inline one always (the verbs way to
	// ask for low latency), another one (up to 4 KiB, or a Read) when a
	// message has arrived since the last one sent so, as in a request and
	// response. Anything else, a stream of WRs above all, goes to the
	// transmit goroutine, which batches it into fewer writes.
	w := &wrs[0]
	small := w.Inline != nil || ep.rxMsgs != ep.txSeenRx && (w.Opcode == WRRead || wrLen(w) <= inlineMax)
	if len(wrs) != 1 || len(ep.sq) != 1 || len(ep.irq) > 0 || !small || !ep.txMu.TryLock() {
		ep.cond.Broadcast()
		ep.mu.Unlock()
		return nil
	}
	ep.txSeenRx = ep.rxMsgs
	ep.mu.Unlock()
	ep.txRun(true) // what it leaves, it leaves to the transmit goroutine
	ep.txMu.Unlock()
	return nil
}

func (ep *Endpoint) validSend(wr *SendWR) error {
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
			if f := ep.tab.Verify(mem.Request{STag: s.LKey, PD: ep.pd.ID, QP: ep.qpn, TO: s.Addr, Len: uint64(s.Length), Use: localUse(wr.Opcode)}); f != mem.OK && s.Length > 0 {
				return fmt.Errorf("%w: SGE %v at %#x+%d: %v", ErrInvalidWR, s.LKey, s.Addr, s.Length, f)
			}
		}
		if n > 1<<32-1 {
			return fmt.Errorf("%w: message of %d bytes (RFC 5041 §5.2: less than 2^32)", ErrInvalidWR, n)
		}
	}
	return nil
}

func localUse(op WROpcode) mem.Use {
	if op == WRRead {
		return mem.UseReadResponse
	}
	return mem.UseLocalRead
}

// PostRecv queues receive work requests, copying them and their SGLs.
func (ep *Endpoint) PostRecv(wrs ...RecvWR) error {
	for _, wr := range wrs {
		for _, s := range wr.SGL {
			if f := ep.tab.Verify(mem.Request{STag: s.LKey, PD: ep.pd.ID, QP: ep.qpn, TO: s.Addr, Len: uint64(s.Length), Use: mem.UseLocalWrite}); f != mem.OK && s.Length > 0 {
				return fmt.Errorf("%w: receive SGE %v at %#x+%d: %v", ErrInvalidWR, s.LKey, s.Addr, s.Length, f)
			}
		}
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.state != stLive && ep.state != stClosing {
		return ep.stateErr()
	}
	if len(ep.rq)+len(wrs) > ep.cfg.RQDepth {
		return fmt.Errorf("%w: receive queue holds %d of %d", ErrQueueFull, len(ep.rq), ep.cfg.RQDepth)
	}
	for i := range wrs {
		var n uint64
		for _, s := range wrs[i].SGL {
			n += uint64(s.Length)
		}
		ep.rq = append(ep.rq, ep.newRQEntry(&wrs[i], n))
	}
	return nil
}

func (ep *Endpoint) stateErr() error {
	if ep.err != nil {
		return ep.err
	}
	return ErrClosed
}

// Close ends the stream gracefully: queued work is sent, outstanding Reads
// are given Linger to finish, TCP is closed with a FIN, and everything left
// completes with WCFlushErr. It returns once both goroutines have exited.
func (ep *Endpoint) Close() error {
	ep.mu.Lock()
	if ep.state == stLive {
		ep.state = stClosing
		ep.cond.Broadcast()
	}
	ep.mu.Unlock()
	t := time.NewTimer(2 * ep.cfg.Linger)
	defer t.Stop()
	select {
	case <-ep.done:
	case <-t.C:
		ep.conn.Close()
		<-ep.done
	}
	return nil
}

// abort ends the stream with err; term, if not nil, is sent first. The
// first call wins (RFC 5040 §7.1: the Terminate describes the first error).
func (ep *Endpoint) abort(err error, term *rdmap.Terminate) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	ep.abortLocked(err, term)
}

func (ep *Endpoint) abortLocked(err error, term *rdmap.Terminate) {
	if ep.state == stError || ep.state == stClosed {
		return
	}
	if ep.finned {
		term = nil // our FIN is out: no FPDU can follow it
	}
	ep.state, ep.err, ep.term = stError, err, term
	ep.failed.Store(true)
	ep.flushLocked(err)
	ep.cond.Broadcast()
}

// flushLocked completes every outstanding work request in error.
func (ep *Endpoint) flushLocked(cause error) {
	first := WCFlushErr
	var e *Error
	if errors.As(cause, &e) && e.Remote {
		first = remoteStatus(e.Cause)
	}
	// The peer's error most likely hit the oldest WR the transmitter took
	// that is not complete: not one whose FPDUs are being handed to TCP
	// (inFlight), which the transmitter completes with success.
	blame := true
	for i, s := range ep.sq {
		if s.done || s.inFlight {
			continue
		}
		s.done, s.status = true, WCFlushErr
		if blame && i < ep.sqNext {
			s.status = first
		}
		blame = false
	}
	ep.sqNext = len(ep.sq)
	ep.orq, ep.irq = nil, nil
	ep.completeLocked()
	for _, r := range ep.rq {
		st := r.status
		if st == WCSuccess {
			st = WCFlushErr
		}
		ep.cfg.RecvCQ.push(Completion{ID: r.wr.ID, Status: st, Opcode: WCRecv, QP: ep.qpn}, false)
	}
	ep.rq = nil
}

// cqOverflowLocked ends the stream when its CQ has lost a completion: a
// local resource failure (Local Catastrophic, digest §3.7). Streams on
// other CQs are not affected (RFC 5040 §8.1.1 #10).
func (ep *Endpoint) cqOverflowLocked() {
	c := rdmap.RDMAPLocalCatastrophic
	ep.abortLocked(&Error{Cause: c, Msg: "completion queue overflow", Err: ErrCQOverflow}, &rdmap.Terminate{Cause: c})
}

// completeLocked reports finished send WRs in posting order (RFC 5040 §5.5 rule 15).
// A full CQ ends the stream, but only once the reported entries are off the
// queue: ending it flushes the queue, which calls completeLocked again.
func (ep *Endpoint) completeLocked() {
	k, overflow := 0, false
	for k < len(ep.sq) && ep.sq[k].done {
		s := ep.sq[k]
		k++
		if s.internal || (s.status == WCSuccess && !s.wr.Signaled) {
			continue
		}
		c := Completion{ID: s.wr.ID, Status: s.status, Opcode: wcOpcode(s.wr.Opcode), QP: ep.qpn}
		if s.status == WCSuccess {
			c.ByteLen = uint32(wrLen(&s.wr))
		}
		if !ep.cfg.SendCQ.push(c, false) {
			overflow = true
		}
	}
	if k > 0 {
		for _, s := range ep.sq[:k] {
			if s.wr.Opcode != WRRead {
				ep.sqNonRead.Add(-1)
			}
		}
		if ep.state < stError {
			ep.sqFree = append(ep.sqFree, ep.sq[:k]...)
		}
		copy(ep.sq, ep.sq[k:])
		for i := len(ep.sq) - k; i < len(ep.sq); i++ {
			ep.sq[i] = nil
		}
		ep.sq = ep.sq[:len(ep.sq)-k]
		ep.sqNext -= k
	}
	if overflow {
		ep.cqOverflowLocked()
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

func wrLen(wr *SendWR) uint64 {
	if wr.Inline != nil {
		return uint64(len(wr.Inline))
	}
	var n uint64
	for _, s := range wr.SGL {
		n += uint64(s.Length)
	}
	return n
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
