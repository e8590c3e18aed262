package verbs

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/host/driver"
)

// QPCap sizes a QP (ibv_qp_cap). Zero values take the defaults.
type QPCap struct {
	MaxSendWR, MaxRecvWR   int // queue depths (256)
	MaxSendSGE, MaxRecvSGE int // SGEs per work request (the device's MaxSGE)
	MaxInlineData          int // bytes of inline data (the device's MaxInline)
}

// QPInitAttr creates a QP (ibv_qp_init_attr, with the Read limits of
// rdma_conn_param).
type QPInitAttr struct {
	SendCQ, RecvCQ *CQ
	Cap            QPCap
	// ORD is the most RDMA Reads this QP has outstanding, IRD the most it
	// answers at once (0: 16). With MPA Rev 2 both are exchanged and the
	// ORD is capped by the peer's IRD.
	ORD, IRD int
	// MULPDU caps the DDP segment size (0: from the TCP MSS).
	MULPDU int
}

// QPState is the state of a QP (a subset of ibv_qp_state).
type QPState uint8

// QP states.
const (
	QPSInit  QPState = iota // created; receives may be posted, sends may not
	QPSRTS                  // connected: ready to send
	QPSError                // the stream ended; everything outstanding was flushed
)

func (s QPState) String() string { return [...]string{"INIT", "RTS", "ERR"}[s] }

// QP is a reliable-connected queue pair (ibv_qp of type IBV_QPT_RC). It
// is created in QPSInit, connected by Dial or ConnRequest.Accept, and
// then posts work to the card.
type QP struct {
	pd   *PD
	attr QPInitAttr

	// live is the card QP while connected and not destroyed: posting
	// reads it without taking mu.
	live atomic.Pointer[cardQP]

	mu        sync.Mutex
	dqp       driver.QP
	connected bool // a connection was attached once
	destroyed bool
	preRecv   []RecvWR // receives posted in INIT, handed to the card on connect
	params    mpa.Params
	laddr     net.Addr
	raddr     net.Addr
}

// CreateQP creates an RC QP in pd (ibv_create_qp).
func (pd *PD) CreateQP(attr QPInitAttr) (*QP, error) {
	if err := pd.live("CreateQP"); err != nil {
		return nil, err
	}
	if err := attr.SendCQ.live("CreateQP (send CQ)"); err != nil {
		return nil, err
	}
	if err := attr.RecvCQ.live("CreateQP (receive CQ)"); err != nil {
		return nil, err
	}
	if attr.SendCQ.ctx != pd.ctx || attr.RecvCQ.ctx != pd.ctx {
		return nil, fmt.Errorf("%w: CreateQP: CQs of another device", ErrInvalid)
	}
	in := pd.ctx.card.Info()
	c := &attr.Cap
	def := func(v *int, d, max int, what string) error {
		if *v == 0 {
			*v = d
		}
		if *v < 0 || max > 0 && *v > max {
			return fmt.Errorf("%w: CreateQP: %s %d (0 to %d)", ErrInvalid, what, *v, max)
		}
		return nil
	}
	for _, e := range []error{
		def(&c.MaxSendWR, 256, in.MaxQPWR, "MaxSendWR"), def(&c.MaxRecvWR, 256, in.MaxQPWR, "MaxRecvWR"),
		def(&c.MaxSendSGE, in.MaxSGE, in.MaxSGE, "MaxSendSGE"), def(&c.MaxRecvSGE, in.MaxSGE, in.MaxSGE, "MaxRecvSGE"),
		def(&c.MaxInlineData, in.MaxInline, in.MaxInline, "MaxInlineData"),
		def(&attr.ORD, 16, in.MaxORD, "ORD"), def(&attr.IRD, 16, in.MaxIRD, "IRD"),
	} {
		if e != nil {
			return nil, e
		}
	}
	return &QP{pd: pd, attr: attr}, nil
}

// State is the QP's state.
func (qp *QP) State() QPState {
	qp.mu.Lock()
	d := qp.dqp
	qp.mu.Unlock()
	if d == nil {
		return QPSInit
	}
	select {
	case <-d.Done():
		return QPSError
	default:
		return QPSRTS
	}
}

// Num is the QP number (0 before the QP is connected).
func (qp *QP) Num() uint32 {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.dqp == nil {
		return 0
	}
	return qp.dqp.QPN()
}

// MULPDU is the largest DDP segment the connected QP sends.
func (qp *QP) MULPDU() int {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.dqp == nil {
		return 0
	}
	return qp.dqp.MULPDU()
}

// Params are the MPA parameters negotiated when the QP connected.
func (qp *QP) Params() mpa.Params {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.params
}

// LocalAddr and RemoteAddr are the TCP endpoints of the connection.
func (qp *QP) LocalAddr() net.Addr  { qp.mu.Lock(); defer qp.mu.Unlock(); return qp.laddr }
func (qp *QP) RemoteAddr() net.Addr { qp.mu.Lock(); defer qp.mu.Unlock(); return qp.raddr }

// Done is closed when the connected QP's stream has ended (nil before).
func (qp *QP) Done() <-chan struct{} {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.dqp == nil {
		return nil
	}
	return qp.dqp.Done()
}

// Err is why the stream ended: nil while it runs, iwarp.ErrClosed after a
// graceful disconnect, iwarp.ErrConnLost, or an *iwarp.Error with the
// Terminate cause.
func (qp *QP) Err() error {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.dqp == nil {
		return nil
	}
	return qp.dqp.Err()
}

type cardQP struct{ driver.QP }

// card returns the card QP for posting, or why there is none.
func (qp *QP) card(what string) (driver.QP, error) {
	if qp == nil {
		return nil, fmt.Errorf("%w: %s on a nil QP", ErrInvalid, what)
	}
	if err := qp.pd.ctx.live(what); err != nil {
		return nil, err
	}
	if c := qp.live.Load(); c != nil {
		return c.QP, nil
	}
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.destroyed {
		return nil, fmt.Errorf("%w: %s on a destroyed QP", ErrClosed, what)
	}
	return qp.dqp, nil
}

// PostSend posts send work requests (ibv_post_send). It fails, posting
// none of them, on a QP that is not connected (ErrNotConnected) or whose
// stream has ended (ErrQPError), on a malformed request or a bad lkey
// (iwarp.ErrInvalidWR) and on a full send queue (iwarp.ErrQueueFull).
// The WRs are copied, SGLs and inline data included: the caller may reuse
// them once PostSend returns. The memory an SGE names is read later, until
// the WR completes (or, unsignaled, until a later one does).
func (qp *QP) PostSend(wrs ...SendWR) error {
	d, err := qp.card("PostSend")
	if err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("%w: PostSend before Dial or Accept", ErrNotConnected)
	}
	for i := range wrs {
		w := &wrs[i]
		if len(w.SGL) > qp.attr.Cap.MaxSendSGE {
			return fmt.Errorf("%w: PostSend: WR %d has %d SGEs (MaxSendSGE %d)", ErrInvalid, w.ID, len(w.SGL), qp.attr.Cap.MaxSendSGE)
		}
		if len(w.Inline) > qp.attr.Cap.MaxInlineData {
			return fmt.Errorf("%w: PostSend: WR %d has %d bytes inline (MaxInlineData %d)", ErrInvalid, w.ID, len(w.Inline), qp.attr.Cap.MaxInlineData)
		}
	}
	return qp.postErr(d, "PostSend", d.PostSend(wrs...))
}

func (qp *QP) postErr(d driver.QP, what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, iwarp.ErrTerminated) || errors.Is(err, iwarp.ErrClosed) || errors.Is(err, iwarp.ErrConnLost) {
		return fmt.Errorf("%w: %s on QP %d: %w", ErrQPError, what, d.QPN(), err)
	}
	return fmt.Errorf("verbs: %s on QP %d: %w", what, d.QPN(), err)
}

// PostRecv posts receive work requests (ibv_post_recv). Receives posted
// before the QP connects are handed to the card when it does, so the
// first Send from the peer finds them. The WRs and SGLs are copied.
func (qp *QP) PostRecv(wrs ...RecvWR) error {
	d, err := qp.card("PostRecv")
	if err != nil {
		return err
	}
	for i := range wrs {
		if len(wrs[i].SGL) > qp.attr.Cap.MaxRecvSGE {
			return fmt.Errorf("%w: PostRecv: WR %d has %d SGEs (MaxRecvSGE %d)", ErrInvalid, wrs[i].ID, len(wrs[i].SGL), qp.attr.Cap.MaxRecvSGE)
		}
	}
	if d == nil {
		qp.mu.Lock()
		defer qp.mu.Unlock()
		if qp.dqp == nil { // still not connected
			if len(qp.preRecv)+len(wrs) > qp.attr.Cap.MaxRecvWR {
				return fmt.Errorf("verbs: PostRecv: receive queue holds %d of %d", len(qp.preRecv), qp.attr.Cap.MaxRecvWR)
			}
			for _, wr := range wrs {
				wr.SGL = append([]SGE(nil), wr.SGL...) // the caller may reuse its SGL once posted
				qp.preRecv = append(qp.preRecv, wr)
			}
			return nil
		}
		d = qp.dqp
	}
	return qp.postErr(d, "PostRecv", d.PostRecv(wrs...))
}

// RegMR registers buf as a region scoped to this QP's stream: only such
// regions can be invalidated by the peer with Send with Invalidate (RFC
// 5040 §8.1.1 #7: a PD-wide STag is shared by every stream of the PD). The
// QP must be connected.
func (qp *QP) RegMR(buf []byte, access Access) (*MR, error) {
	d, err := qp.card("RegMR")
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("%w: a stream-scoped region needs a connected QP", ErrNotConnected)
	}
	return qp.pd.regMR(buf, access, d.QPN())
}

// connectable fails if qp cannot take a connection.
func (qp *QP) connectable(what string) error {
	d, err := qp.card(what)
	if err == nil && d != nil {
		err = fmt.Errorf("%w: %s: the QP was connected already (create a new one)", ErrNotConnected, what)
	}
	return err
}

// attach gives the QP its connection; conn is closed on failure.
func (qp *QP) attach(conn net.Conn, p mpa.Params, ird int) error {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	fail := func(err error) error { conn.Close(); return err }
	switch {
	case qp.destroyed:
		return fail(fmt.Errorf("%w: connecting a destroyed QP", ErrClosed))
	case qp.connected:
		return fail(fmt.Errorf("%w: the QP was connected already (create a new one)", ErrNotConnected))
	}
	if err := qp.pd.ctx.live("connect"); err != nil {
		return fail(err)
	}
	a := qp.attr
	if m := qp.pd.ctx.card.Info().MaxIRD; m > 0 && ird > m {
		ird = m // a listener's IRD beyond what the card answers
	}
	// The receives posted before connecting go in with the attach, so they
	// are queued before the card reads the stream's first segment.
	d, err := qp.pd.ctx.card.Attach(conn, p, driver.QPConfig{PD: qp.pd.pd, SendCQ: a.SendCQ.cq, RecvCQ: a.RecvCQ.cq,
		SQDepth: a.Cap.MaxSendWR, RQDepth: a.Cap.MaxRecvWR, ORD: a.ORD, IRD: ird, MULPDU: a.MULPDU,
		Recv: qp.preRecv})
	if err != nil {
		return fail(fmt.Errorf("verbs: connecting QP: %w", err))
	}
	qp.dqp, qp.connected, qp.params = d, true, p
	qp.live.Store(&cardQP{d})
	qp.laddr, qp.raddr = conn.LocalAddr(), conn.RemoteAddr()
	qp.preRecv = nil
	return nil
}

// Disconnect ends the connection gracefully (rdma_disconnect): queued
// work is sent, outstanding Reads get a bounded time to finish, TCP is
// closed and everything left completes with WCWRFlushErr. The QP is then
// in QPSError.
func (qp *QP) Disconnect() error {
	d, err := qp.card("Disconnect")
	if err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("%w: Disconnect", ErrNotConnected)
	}
	return d.Close()
}

// Destroy disconnects the QP if it is connected and releases it
// (ibv_destroy_qp). Receives posted before a connection are dropped
// without completions, as no card ever held them.
func (qp *QP) Destroy() error {
	qp.mu.Lock()
	if qp.destroyed {
		qp.mu.Unlock()
		return fmt.Errorf("%w: QP destroyed twice", ErrClosed)
	}
	qp.destroyed = true
	qp.live.Store(nil)
	d := qp.dqp
	qp.preRecv = nil
	qp.mu.Unlock()
	if d != nil {
		return d.Close()
	}
	return nil
}
