package verbs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/openiwarp/openiwarp/golden/mpa"
)

// ConnParam is the Initiator's side of a connection (rdma_conn_param plus
// the MPA options of RFC 5044 / RFC 6581).
type ConnParam struct {
	PrivateData []byte       // sent in the MPA Request (up to 512 bytes)
	Markers     bool         // ask for markers in the FPDUs this side receives
	NoCRC       bool         // offer to run without CRC32c (both sides must)
	Rev         mpa.Revision // MPA revision sent (0: Rev 1; Rev 2 exchanges IRD/ORD)
	Draft01     bool         // speak draft-ietf-rddp-mpa-01 (Rev 0) only
	PeerToPeer  bool         // RFC 6581 peer-to-peer model (Rev 2)
	// StartupTimeout bounds the MPA startup exchange, Request to Reply
	// (0: DefaultStartupTimeout). The ctx given to Dial bounds it too.
	StartupTimeout time.Duration
	// LocalAddr, if not nil, is the local address the connection is made
	// from (rdma_resolve_addr's source address; rping -I).
	LocalAddr *net.TCPAddr
}

// RejectError is returned by Dial when the peer rejects the connection.
type RejectError struct {
	PrivateData []byte // what the Responder said, if anything
	Err         error  // the mpa error
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("verbs: connection rejected by the peer (%d bytes of private data)", len(e.PrivateData))
}

// Is makes errors.Is(err, ErrRejected) true.
func (e *RejectError) Is(target error) bool { return target == ErrRejected }

// Unwrap returns the mpa error (it matches mpa.ErrRejected).
func (e *RejectError) Unwrap() error { return e.Err }

// Dial connects qp to the listener at addr ("host:port"): a TCP
// connection, the MPA startup exchange as Initiator, then the QP is
// attached to the stream (rdma_connect). On return without error the QP
// is in QPSRTS. A rejection returns a *RejectError.
func Dial(ctx context.Context, addr string, qp *QP, cp ConnParam) error {
	if err := qp.connectable("Dial"); err != nil {
		return err
	}
	var d net.Dialer
	if cp.LocalAddr != nil {
		d.LocalAddr = cp.LocalAddr
	}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("verbs: Dial %s: %w", addr, err)
	}
	cfg := mpa.Config{Rev: cp.Rev, Draft01: cp.Draft01, Markers: cp.Markers, NoCRC: cp.NoCRC,
		PrivateData: cp.PrivateData, IRD: uint16(qp.attr.IRD), ORD: uint16(qp.attr.ORD),
		PeerToPeer: cp.PeerToPeer, Timeout: cp.StartupTimeout}
	p, err := mpa.Initiate(ctx, conn, cfg)
	if err != nil {
		if errors.Is(err, mpa.ErrRejected) {
			conn.Close()
			return &RejectError{PrivateData: append([]byte(nil), p.PeerPD...), Err: err}
		}
		return fmt.Errorf("verbs: Dial %s: MPA startup: %w", addr, err)
	}
	return qp.attach(conn, p, qp.attr.IRD)
}

// ListenConfig is the Responder's side of connections.
type ListenConfig struct {
	Markers bool         // ask for markers in the FPDUs this side receives
	NoCRC   bool         // accept running without CRC32c if the Initiator asks too
	MaxRev  mpa.Revision // the highest revision answered (0: Rev 2)
	Draft01 bool         // accept draft-01 (Rev 0) Initiators only
	// PeerToPeer allows the RFC 6581 peer-to-peer model.
	PeerToPeer bool
	// IRD and ORD are advertised in Rev 2 Replies (0: 16); the IRD is
	// also the accepting QP's, up to its card's MaxIRD.
	IRD, ORD int
	// StartupTimeout bounds each connection's MPA startup exchange, from
	// the TCP accept to the Reply, including the time the application
	// takes to Accept or Reject (0: DefaultStartupTimeout). A peer
	// that sends half a Request and then nothing is dropped after it.
	StartupTimeout time.Duration
	// Backlog is how many connection requests may wait for Accept (0: 16).
	Backlog int
	// MaxStartups bounds the connections in their MPA startup at once,
	// waiting for Accept included (0: DefaultMaxStartups). A connection
	// beyond it is closed at once, before reading anything, so that
	// clients that open connections and send nothing (slow loris) cannot
	// hold more than this many, each for at most StartupTimeout.
	MaxStartups int
	// OnStartupError, if not nil, is told of each connection whose
	// startup failed: refused beyond MaxStartups (ErrTooManyStartups),
	// timed out, malformed, rejected by the application (ErrRejected) or
	// cut by Close.
	// It is called from the listener's goroutines, one call at a time.
	OnStartupError func(remote net.Addr, err error)
}

// DefaultMaxStartups is ListenConfig.MaxStartups when zero.
const DefaultMaxStartups = 64

// ListenerStats counts the connections a listener has taken.
type ListenerStats struct {
	Accepted  uint64 // TCP connections accepted
	Connected uint64 // startups that ended with an accepted QP's Reply
	Refused   uint64 // closed at once beyond MaxStartups
	TimedOut  uint64 // startups that ran past StartupTimeout
	Failed    uint64 // other failed startups (malformed, rejected, cut)
	// InStartup is how many connections are in their startup now.
	InStartup int
}

// Listener accepts iWARP connections on a TCP port (rdma_listen).
type Listener struct {
	ln   net.Listener
	cfg  ListenConfig
	reqs chan *ConnRequest
	done chan struct{}
	ctx  context.Context // ends with done: cancels handshakes in progress
	stop context.CancelFunc
	wg   sync.WaitGroup
	once sync.Once

	startups chan struct{} // a token per connection in its startup (MaxStartups)
	statsMu  sync.Mutex
	stats    ListenerStats
}

// Listen listens on addr ("127.0.0.1:0", ":4791"...).
func Listen(addr string, cfg ListenConfig) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("verbs: Listen: %w", err)
	}
	if cfg.IRD == 0 {
		cfg.IRD = 16
	}
	if cfg.ORD == 0 {
		cfg.ORD = 16
	}
	if cfg.Backlog <= 0 {
		cfg.Backlog = 16
	}
	if cfg.MaxStartups <= 0 {
		cfg.MaxStartups = DefaultMaxStartups
	}
	if cfg.StartupTimeout <= 0 {
		cfg.StartupTimeout = DefaultStartupTimeout
	}
	l := &Listener{ln: ln, cfg: cfg, reqs: make(chan *ConnRequest, cfg.Backlog), done: make(chan struct{}),
		startups: make(chan struct{}, cfg.MaxStartups)}
	l.ctx, l.stop = context.WithCancel(context.Background())
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// Addr is the address the listener is bound to.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			return // closed
		}
		l.count(func(s *ListenerStats) { s.Accepted++ })
		select {
		case l.startups <- struct{}{}:
		default:
			conn.Close()
			l.count(func(s *ListenerStats) { s.Refused++ })
			l.startupError(conn.RemoteAddr(), fmt.Errorf("%w: %d in progress", ErrTooManyStartups, l.cfg.MaxStartups))
			continue
		}
		l.wg.Add(1)
		go l.handshake(conn)
	}
}

// Stats counts the connections the listener has taken so far.
func (l *Listener) Stats() ListenerStats {
	l.statsMu.Lock()
	defer l.statsMu.Unlock()
	s := l.stats
	s.InStartup = len(l.startups)
	return s
}

func (l *Listener) count(f func(s *ListenerStats)) {
	l.statsMu.Lock()
	f(&l.stats)
	l.statsMu.Unlock()
}

// startupError tells ListenConfig.OnStartupError, one call at a time.
func (l *Listener) startupError(remote net.Addr, err error) {
	if l.cfg.OnStartupError != nil {
		l.statsMu.Lock()
		defer l.statsMu.Unlock()
		l.cfg.OnStartupError(remote, err)
	}
}

// decision is the application's answer to a ConnRequest.
type decision struct {
	accept bool
	pd     []byte
}

type handshakeResult struct {
	p   mpa.Params
	err error
}

// handshake runs the MPA Responder on conn; its Accept hook hands the
// request to Accept and waits for the application's decision.
func (l *Listener) handshake(conn net.Conn) {
	defer l.wg.Done()
	ctx := l.ctx
	timeout := l.cfg.StartupTimeout
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	req := &ConnRequest{l: l, conn: conn, answer: make(chan decision, 1), result: make(chan handshakeResult, 1)}
	cfg := mpa.Config{Rev: l.cfg.MaxRev, Draft01: l.cfg.Draft01, Markers: l.cfg.Markers, NoCRC: l.cfg.NoCRC,
		IRD: uint16(l.cfg.IRD), ORD: uint16(l.cfg.ORD), PeerToPeer: l.cfg.PeerToPeer, Timeout: timeout,
		Accept: func(p *mpa.Params) (bool, []byte) {
			req.Params = *p
			req.PrivateData = append([]byte(nil), p.PeerPD...)
			select {
			case l.reqs <- req:
			case <-ctx.Done():
				return true, nil
			case <-deadline.C:
				return true, nil // nobody is accepting: refuse rather than let the Initiator time out
			}
			select {
			case d := <-req.answer:
				return !d.accept, d.pd
			case <-ctx.Done():
				return true, nil
			case <-deadline.C:
				return true, nil
			}
		}}
	p, err := mpa.Respond(ctx, conn, cfg)
	outcome := func(s *ListenerStats) { s.Connected++ }
	if err != nil {
		conn.Close() // a rejection leaves TCP open (RFC 5044 §7.1.2 r2): the Reply is out, close it now
		var me *mpa.Error
		switch {
		case l.ctx.Err() == nil && errors.As(err, &me) && me.Kind == mpa.KindTimeout:
			outcome = func(s *ListenerStats) { s.TimedOut++ }
		default:
			outcome = func(s *ListenerStats) { s.Failed++ }
		}
		if errors.Is(err, mpa.ErrRejected) {
			err = fmt.Errorf("%w: %w", ErrRejected, err) // by the application
		}
		l.startupError(conn.RemoteAddr(), err)
	}
	// The startup ends once reported: it is counted and leaves InStartup
	// in one step, so that Stats never shows it both counted and still
	// in its startup.
	l.count(func(s *ListenerStats) {
		outcome(s)
		<-l.startups
	})
	req.result <- handshakeResult{p, err}
}

// Accept waits for the next connection request (an RDMA_CM_EVENT_CONNECT_REQUEST).
func (l *Listener) Accept(ctx context.Context) (*ConnRequest, error) {
	select {
	case r := <-l.reqs:
		return r, nil
	case <-l.done:
		return nil, fmt.Errorf("%w: Accept on a closed listener", ErrClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("verbs: Accept: %w", ctx.Err())
	}
}

// Close stops listening; requests not yet answered are rejected. It
// returns once every handshake in progress has ended.
func (l *Listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.stop()
		l.ln.Close()
	})
	l.wg.Wait()
	for {
		select {
		case r := <-l.reqs:
			r.Reject(nil)
		default:
			return nil
		}
	}
}

// ConnRequest is a connection request: the Initiator's MPA Request has
// arrived and waits for Accept or Reject (rdma_accept, rdma_reject).
type ConnRequest struct {
	// Params is what the Request negotiates (revision, markers, CRC, the
	// peer's IRD/ORD with Rev 2).
	Params mpa.Params
	// PrivateData is the Initiator's private data.
	PrivateData []byte

	l      *Listener
	conn   net.Conn
	answer chan decision
	result chan handshakeResult
	once   sync.Once
}

// RemoteAddr is the Initiator's TCP address.
func (r *ConnRequest) RemoteAddr() net.Addr { return r.conn.RemoteAddr() }

func (r *ConnRequest) decide(d decision) (mpa.Params, error) {
	first := false
	r.once.Do(func() { first = true })
	if !first {
		return mpa.Params{}, fmt.Errorf("%w: the request was answered already", ErrInvalid)
	}
	r.answer <- d
	res := <-r.result
	return res.p, res.err
}

// Accept accepts the connection on qp, sending privateData in the MPA
// Reply, and attaches qp to the stream. On return without error qp is in
// QPSRTS (it sends once the Initiator's first FPDU has arrived, RFC 5044
// §7.1.2 rule 4).
func (r *ConnRequest) Accept(qp *QP, privateData []byte) error {
	if err := qp.connectable("Accept"); err != nil {
		r.Reject(nil)
		return err
	}
	p, err := r.decide(decision{accept: true, pd: privateData})
	if err != nil {
		return fmt.Errorf("verbs: Accept: MPA startup: %w", err)
	}
	return qp.attach(r.conn, p, r.l.cfg.IRD)
}

// Reject refuses the connection with a Reply carrying R=1 and
// privateData, then closes the TCP connection.
func (r *ConnRequest) Reject(privateData []byte) error {
	_, err := r.decide(decision{pd: privateData})
	if err != nil && !errors.Is(err, mpa.ErrRejected) {
		return fmt.Errorf("verbs: Reject: %w", err)
	}
	return nil
}
