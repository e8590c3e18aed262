package iwarp

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/iwarp/qp"
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

var qpCounter atomic.Uint32

// Endpoint is one RDMAP stream: a queue pair over an MPA connection. Its
// protocol state is a qp.QP, which every goroutine calls with mu held;
// the endpoint adds the connection: goroutines, framing, writes and
// reads, and the CQ waiters' turns at the socket.
type Endpoint struct {
	conn   net.Conn
	params mpa.Params
	cfg    Config
	pd     *mem.PD
	tab    *mem.Table
	qpn    uint32
	rv     rdmap.Version // the negotiated versions, which the core runs
	dv     ddp.Version
	mulpdu int
	framer Framer
	defr   Deframer

	mu    sync.Mutex
	cond  *sync.Cond
	q     *qp.QP // the protocol core (mu)
	woken uint32 // q.Wakeups() at the last broadcast (mu)
	// sqNonRead is q.NonReads() as of the last core call (worthDriving
	// reads it without mu).
	sqNonRead atomic.Int32
	// txSeenRx is q.MessagesIn() when PostSend last sent a WR itself (mu).
	txSeenRx uint32

	txMu      sync.Mutex  // held by whoever transmits (see txRun)
	txPending atomic.Bool // the transmitter holds unwritten FPDUs or unreported WRs

	// transmitter-owned (txMu). What is pending for the socket is vec
	// followed by wbuf[wopen:]: wbuf holds FPDUs, or with zero-copy
	// framing (zc) only their headers and trailers, while vec also points
	// at the payloads in registered memory (vecLen bytes of them).
	wbuf     []byte
	raw      syscall.RawConn // the socket's, for writes that must not block (answerReads); nil if none
	txNoWait bool            // writeOut writes only what the socket takes at once (answerReads)
	vec      net.Buffers
	wv       net.Buffers // what WriteTo has left of vec (a field: no allocation per write)
	wopen    int
	vecLen   int
	zc       *mpa.Framer
	ulp      []byte

	// receiver-owned (rxMu; see rxLoop)
	rxMu      sync.Mutex
	rxBuf     []byte
	deliver   func(mpa.ULPDU) error // ep.onULPDU, made once
	dropping  bool
	rxEnded   bool   // the socket reported EOF or an error
	rxAnswer  bool   // a Read Request came in: answerReads after this read
	readsSeen uint32 // q.ReadsIn() as of the last ULPDU

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
	flushAt   = 1 << 20   // pending bytes that are written without waiting for the WR's end
	rxBufSize = 256 << 10 // bytes read from the socket at once (smaller ones stay in cache for the CRC)
)

// cqPair is the core's Completer: the endpoint's CQs.
type cqPair struct{ send, recv *CQ }

func (c cqPair) CompleteSend(wc Completion) bool                 { return c.send.push(wc, false) }
func (c cqPair) CompleteRecv(wc Completion, solicited bool) bool { return c.recv.push(wc, solicited) }

// placerMemory is the table with Config.Placer doing tagged placement.
type placerMemory struct {
	*mem.Table
	placer TaggedPlacer
}

func (m placerMemory) PlaceTagged(req mem.Request, ulpdu, payload []byte) mem.Fault {
	return m.placer.PlaceTagged(req, ulpdu, payload)
}

// New starts an endpoint on conn, on which the MPA startup exchange p has
// just completed (mpa.Initiate or mpa.Respond).
func New(conn net.Conn, p mpa.Params, cfg Config) (*Endpoint, error) {
	if cfg.PD == nil || cfg.SendCQ == nil || cfg.RecvCQ == nil {
		return nil, fmt.Errorf("%w: Config needs PD, SendCQ and RecvCQ", ErrInvalidWR)
	}
	ep := &Endpoint{conn: conn, params: p, cfg: cfg, pd: cfg.PD, tab: cfg.PD.Table(),
		qpn: qpCounter.Add(1), dv: ddp.Version(p.DDPVersion()), rv: rdmap.Version(p.DDPVersion()),
		done: make(chan struct{}), rxExit: make(chan struct{}), rxResume: make(chan struct{}, 1),
		rxBuf: make([]byte, rxBufSize), kickable: conn.SetReadDeadline(time.Time{}) == nil}
	ep.cond = sync.NewCond(&ep.mu)
	ep.deliver = ep.onULPDU
	ord := cfg.ORD
	if p.Rev == mpa.Rev2 && p.PeerIRD > 0 {
		if ord <= 0 {
			ord = qp.DefaultRd
		}
		ord = min(ord, int(p.PeerIRD))
	}
	if ep.cfg.Linger <= 0 {
		ep.cfg.Linger = 2 * time.Second
	}
	ep.mulpdu = cfg.MULPDU
	if ep.mulpdu <= 0 {
		ep.mulpdu = mpa.MULPDU(emss(conn), p.TxMarkers)
	}
	ep.mulpdu = min(max(ep.mulpdu, mpa.MinMULPDU), mpa.MaxULPDULength)
	var memory qp.Memory = ep.tab
	if cfg.Placer != nil {
		memory = placerMemory{ep.tab, cfg.Placer}
	}
	qc := qp.Config{Memory: memory, Completer: cqPair{cfg.SendCQ, cfg.RecvCQ}, PD: ep.pd.ID, QPN: ep.qpn,
		Version: p.DDPVersion(), MULPDU: ep.mulpdu, SQDepth: cfg.SQDepth, RQDepth: cfg.RQDepth, ORD: ord, IRD: cfg.IRD,
		FirstMSN: cfg.firstMSN, HoldTx: p.WaitFirstFPDU}
	if p.Initiator && p.RTR != 0 {
		qc.RTR = qp.RTRFor(p.RTR) // RFC 6581 peer-to-peer: the Initiator's first FPDU
	}
	q, err := qp.New(qc)
	if err != nil {
		return nil, fmt.Errorf("iwarp: %w", err)
	}
	ep.q = q
	ep.sqNonRead.Store(int32(q.NonReads()))
	ep.framer, ep.defr = cfg.Framer, cfg.Deframer
	if ep.framer == nil {
		f := p.Framer()
		ep.framer = &f
	}
	if ep.defr == nil {
		ep.defr = p.Deframer(0)
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
		if err := q.PostRecv(cfg.Recv...); err != nil {
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

// unlock releases mu after calls to the core, waking the transmitter if
// they may have given it work.
func (ep *Endpoint) unlock() {
	ep.sqNonRead.Store(int32(ep.q.NonReads()))
	if w := ep.q.Wakeups(); w != ep.woken {
		ep.woken = w
		ep.cond.Broadcast()
	}
	ep.mu.Unlock()
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
	return ep.q.Err()
}

// PostSend queues send work requests. It fails if the endpoint is no
// longer running, the queue is full, or a WR is malformed. The WRs are
// copied (SGL, inline data, bind): the caller may reuse them at once.
func (ep *Endpoint) PostSend(wrs ...SendWR) error {
	if len(wrs) == 0 {
		return nil
	}
	ep.mu.Lock()
	if err := ep.q.PostSend(wrs...); err != nil {
		ep.unlock()
		return err
	}
	// An idle queue pair sends a lone small WR from this goroutine,
	// saving a goroutine handoff: an inline one always (the verbs way to
	// ask for low latency), another one (up to 4 KiB, or a Read) when a
	// message has arrived since the last one sent so, as in a request and
	// response. Anything else, a stream of WRs above all, goes to the
	// transmit goroutine, which batches it into fewer writes.
	w := &wrs[0]
	in := ep.q.MessagesIn()
	small := w.Inline != nil || in != ep.txSeenRx && (w.Opcode == WRRead || w.Len() <= inlineMax)
	if len(wrs) != 1 || ep.q.SQLen() != 1 || ep.q.ReadsQueued() > 0 || !small || !ep.txMu.TryLock() {
		ep.cond.Broadcast()
		ep.unlock()
		return nil
	}
	ep.txSeenRx = in
	ep.unlock()
	ep.txRun(true) // what it leaves, it leaves to the transmit goroutine
	ep.txMu.Unlock()
	return nil
}

// PostRecv queues receive work requests, copying them and their SGLs.
func (ep *Endpoint) PostRecv(wrs ...RecvWR) error {
	ep.mu.Lock()
	defer ep.unlock()
	return ep.q.PostRecv(wrs...)
}

// Close ends the stream gracefully: queued work is sent, outstanding Reads
// are given Linger to finish, TCP is closed with a FIN, and everything left
// completes with WCFlushErr. It returns once both goroutines have exited.
func (ep *Endpoint) Close() error {
	ep.mu.Lock()
	ep.q.Close()
	ep.unlock()
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
	ep.q.Fail(err, term)
	ep.unlock()
}
