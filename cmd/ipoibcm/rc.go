package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/openiwarp/openiwarp/golden/ipoibcm"
	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
)

// Reliable connections: RFC 4755's RC QPs as iWARP endpoints. The IB CM
// exchange is TCP connect plus the MPA Request/Reply with the private data
// inside (digest §13); the initiator's "ready" control message is the RTU.

var errTxQueueFull = errors.New("connection transmit queue full")

// txQueueLen bounds the packets waiting for credits on one connection, like
// a NIC's transmit ring; beyond it packets are dropped and TCP recovers.
const txQueueLen = 512

// rcConn is one established connection and its flow control.
type rcConn struct {
	l         *Link
	id        ipoibcm.ConnID
	peer      ipoibcm.LinkAddr
	mtu       int
	initiator bool
	ep        *iwarp.Endpoint
	mr        *mem.MR
	bufSize   int
	depth     int
	rcq, scq  *iwarp.CQ
	gate      *gatedConn
	ctx       context.Context
	cancel    context.CancelFunc

	mu     sync.Mutex
	cond   *sync.Cond
	fc     *ipoibcm.FlowControl
	q      [][]byte
	closed bool
	failed bool // connDown has been started
	err    error
}

// gatedConn holds the engine's reads until the receives are posted, so no
// Send can meet an empty receive queue however the goroutines are scheduled.
// It keeps the TCP socket's SyscallConn (the engine reads the MSS from it)
// and CloseWrite (its graceful FIN).
type gatedConn struct {
	*net.TCPConn
	open chan struct{}
}

func (g *gatedConn) Read(b []byte) (int, error) {
	<-g.open
	return g.TCPConn.Read(b)
}

func (l *Link) memPD() *mem.PD {
	l.pdOnce.Do(func() { l.pd = mem.NewTable().AllocPD() })
	return l.pd
}

// newRC starts the endpoint on an MPA-negotiated connection, posts the
// receives, and only then lets the engine read.
func (l *Link) newRC(tc *net.TCPConn, p mpa.Params, id ipoibcm.ConnID, peer ipoibcm.LinkAddr, mtu, peerCredits int) (*rcConn, error) {
	c := &rcConn{l: l, id: id, peer: peer.WithoutFlags(), mtu: mtu, initiator: p.Initiator,
		bufSize: int(l.cfg.recvMTU), depth: l.cfg.depth}
	c.cond = sync.NewCond(&c.mu)
	var err error
	if c.fc, err = ipoibcm.NewFlowControl(c.depth, peerCredits); err != nil {
		return nil, err
	}
	pd := l.memPD()
	if c.mr, err = pd.RegisterMR(make([]byte, c.depth*c.bufSize), 0, mem.LocalWrite, 0); err != nil {
		return nil, fmt.Errorf("registering receive buffers: %w", err)
	}
	c.rcq = iwarp.NewCQ(c.depth + 8)
	c.scq = iwarp.NewCQ(peerCredits + 8)
	c.gate = &gatedConn{TCPConn: tc, open: make(chan struct{})}
	_ = tc.SetNoDelay(true)
	c.ep, err = iwarp.New(c.gate, p, iwarp.Config{PD: pd, SendCQ: c.scq, RecvCQ: c.rcq,
		SQDepth: sqDepth(peerCredits), RQDepth: c.depth})
	if err != nil {
		_ = c.mr.Deregister()
		return nil, fmt.Errorf("starting endpoint: %w", err)
	}
	for i := 0; i < c.depth; i++ {
		if err := c.postRecv(i); err != nil {
			close(c.gate.open)
			c.ep.Close()
			_ = c.mr.Deregister()
			return nil, err
		}
	}
	close(c.gate.open)
	c.ctx, c.cancel = context.WithCancel(l.ctx)
	if c.initiator {
		c.mu.Lock()
		r, err := c.fc.TakeReady()
		if err == nil {
			err = c.post(r.Append(nil))
		}
		c.mu.Unlock()
		if err != nil {
			c.close()
			return nil, fmt.Errorf("sending ready: %w", err)
		}
	}
	l.goRun(c.rxLoop)
	l.goRun(c.txLoop)
	l.goRun(c.watch)
	return c, nil
}

func (c *rcConn) postRecv(slot int) error {
	return c.ep.PostRecv(iwarp.RecvWR{ID: uint64(slot), SGL: []iwarp.SGE{{
		Addr: c.mr.Addr + uint64(slot*c.bufSize), Length: uint32(c.bufSize), LKey: c.mr.STag}}})
}

// sqDepth sizes the send queue. Credits bound the Sends the peer has not
// received, but the engine keeps a Send on its queue until its transmitter
// next flushes, so more can sit there; post waits if it is full.
func sqDepth(peerCredits int) int { return max(256, 4*peerCredits) }

// post posts one Send, waiting while the send queue is full. It is called
// with c.mu held and releases it while waiting.
func (c *rcConn) post(msg []byte) error {
	for {
		err := c.ep.PostSend(iwarp.SendWR{Opcode: iwarp.WRSend, Inline: msg})
		if !errors.Is(err, iwarp.ErrQueueFull) {
			return err
		}
		c.mu.Unlock()
		time.Sleep(50 * time.Microsecond)
		c.mu.Lock()
		if c.closed {
			return iwarp.ErrClosed
		}
	}
}

// send queues one encapsulated packet (already sized to the connection MTU).
func (c *rcConn) send(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("connection %d: %w", c.id, iwarp.ErrClosed)
	}
	if len(c.q) >= txQueueLen {
		return errTxQueueFull
	}
	c.q = append(c.q, b)
	c.cond.Signal()
	return nil
}

// txLoop posts queued packets while credits last and sends credit updates
// as soon as they are due.
func (c *rcConn) txLoop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for !c.closed && !(len(c.q) > 0 && c.fc.Credits() >= 2) && !c.fc.UpdateDue() {
			c.cond.Wait()
		}
		if c.closed {
			return
		}
		if u, ok := c.fc.TakeUpdate(); ok {
			if err := c.post(u.Append(nil)); err != nil {
				c.failLocked(err)
				return
			}
		}
		for len(c.q) > 0 && !c.closed && c.fc.TrySendData() {
			b := c.q[0]
			c.q[0] = nil
			c.q = c.q[1:]
			if err := c.post(b); err != nil {
				c.failLocked(err)
				return
			}
			c.l.st.rcOut.Add(1)
		}
	}
}

// rxLoop takes each received message, hands it on, posts the buffer again
// and counts the credit it owes.
func (c *rcConn) rxLoop() {
	for {
		wc, err := c.rcq.Wait(c.ctx)
		if err != nil {
			c.fail(err)
			return
		}
		if wc.Status != iwarp.WCSuccess {
			c.fail(fmt.Errorf("receive completion: %v", wc.Status))
			return
		}
		slot := int(wc.ID)
		off := slot * c.bufSize
		data := c.mr.Buf[off : off+int(wc.ByteLen)]
		isData, err := c.input(data)
		if err == nil {
			err = c.postRecv(slot)
		}
		if err == nil {
			c.mu.Lock()
			if err = c.fc.Received(isData); err == nil {
				c.cond.Signal()
			}
			c.mu.Unlock()
		}
		if err != nil {
			c.fail(fmt.Errorf("peer %v: %w", c.peer, err))
			return
		}
	}
}

// input handles one message. A malformed one is a misbehaving peer: the
// connection goes, other peers are untouched.
func (c *rcConn) input(b []byte) (data bool, err error) {
	h, p, err := ipoibcm.ParseEncap(b, true)
	if err != nil {
		return false, err
	}
	if err := ipoibcm.CheckEtherType(h.EtherType, ipoibcm.ChannelConnected); err != nil {
		return false, err
	}
	if h.EtherType == ipoibcm.EtherTypeCredit {
		ctl, err := ipoibcm.ParseControl(p)
		if err != nil {
			return false, err
		}
		if ctl.Kind == ipoibcm.ControlGrant {
			c.mu.Lock()
			err = c.fc.Granted(ctl)
			c.cond.Signal()
			c.mu.Unlock()
		} else if c.initiator {
			err = fmt.Errorf("ready from the responder")
		}
		return false, err
	}
	if len(p) > c.mtu {
		return false, fmt.Errorf("packet of %d octets over the connection MTU %d", len(p), c.mtu)
	}
	c.l.st.rcIn.Add(1)
	c.l.touch(c.id)
	if err := c.l.inputIP(h.EtherType, p, c.peer.Underlay()); err != nil {
		c.l.st.dropped.Add(1)
		c.l.debugf("connection %d: %v", c.id, err)
	}
	return true, nil
}

// watch notices the engine ending (peer closed, Terminate, TCP lost).
func (c *rcConn) watch() {
	select {
	case <-c.ep.Done():
		c.fail(c.ep.Err())
	case <-c.ctx.Done():
	}
}

func (c *rcConn) fail(err error) {
	c.mu.Lock()
	c.failLocked(err)
	c.mu.Unlock()
}

// failLocked records why the connection ended and has the link drop it.
func (c *rcConn) failLocked(err error) {
	if c.closed || c.failed {
		return
	}
	c.failed, c.err = true, err
	go c.l.connDown(c, err)
}

// close tears the connection down gracefully (RDMAP close: drain, FIN).
func (c *rcConn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.q = nil
	c.cond.Broadcast()
	c.mu.Unlock()
	c.cancel()
	c.ep.Close()
	_ = c.mr.Deregister()
}

// connDown removes a failed connection; packets to the peer will set up a new one.
func (l *Link) connDown(c *rcConn, err error) {
	l.mu.Lock()
	if l.conns[c.id] == c {
		l.tb.Close(c.id)
		delete(l.conns, c.id)
	}
	l.mu.Unlock()
	if err != nil && !errors.Is(err, iwarp.ErrClosed) && !errors.Is(err, context.Canceled) {
		l.log.Printf("connection %d with %v dropped: %v", c.id, c.peer, err)
	} else {
		l.debugf("connection %d with %v closed", c.id, c.peer)
	}
	c.close()
}

func (l *Link) touch(id ipoibcm.ConnID) {
	l.mu.Lock()
	l.tb.Touch(id, time.Now())
	l.mu.Unlock()
}

// hello is our private data for a setup message.
func (l *Link) hello(sid uint64, reason uint8) []byte {
	b, _ := ipoibcm.Hello{PrivateData: l.tb.PrivateData(),
		Extension: ipoibcm.Extension{Credits: uint16(l.cfg.depth), ServiceID: sid, RejectReason: reason}}.Append(nil)
	return b
}

// closeConns closes connections the table no longer holds (replaced by a
// newer one, or the interface going away).
func (l *Link) closeConns(ids []ipoibcm.ConnID) {
	l.mu.Lock()
	var old []*rcConn
	for _, id := range ids {
		if oc := l.conns[id]; oc != nil {
			old = append(old, oc)
			delete(l.conns, id)
		}
	}
	l.mu.Unlock()
	for _, oc := range old {
		oc.close()
	}
}

// register makes an established connection the one to send on and sends
// what was waiting for it. superseded connections are closed.
func (l *Link) register(c *rcConn, superseded []ipoibcm.ConnID) {
	l.closeConns(superseded)
	now := time.Now()
	l.mu.Lock()
	l.conns[c.id] = c
	if !c.initiator {
		_ = l.tb.Up(c.id, now)
	}
	key := c.peer
	q := l.pending[key]
	delete(l.pending, key)
	l.mu.Unlock()
	l.log.Printf("connection %d with %v up (%s, MTU %d)", c.id, c.peer, map[bool]string{true: "active", false: "passive"}[c.initiator], c.mtu)
	for _, p := range q {
		if info, err := parseIP(p); err == nil {
			l.sendSized(p, info, c.mtu, c.send)
		}
	}
}

// dial is the active side: REQ (MPA Request with our private data), then
// REP or REJ.
func (l *Link) dial(peer ipoibcm.LinkAddr, id ipoibcm.ConnID) {
	err := l.dialErr(peer, id)
	if err == nil {
		return
	}
	l.mu.Lock()
	if _, ok := l.tb.Conn(id); ok {
		l.tb.Close(id)
	}
	var rejected *rejectErr
	crossing := errors.As(err, &rejected) && rejected.reason == ipoibcm.RejectReasonConsumer
	if !crossing {
		// Nothing will carry the waiting packets: drop them (TCP retries).
		l.st.dropped.Add(uint64(len(l.pending[peer.WithoutFlags()])))
		delete(l.pending, peer.WithoutFlags())
	}
	l.mu.Unlock()
	if crossing {
		l.debugf("connect to %v: %v; using the peer's connection", peer, err)
	} else {
		l.log.Printf("connect to %v: %v", peer, err)
	}
}

type rejectErr struct{ reason uint8 }

func (e *rejectErr) Error() string { return fmt.Sprintf("rejected by the peer, reason %d", e.reason) }

func (l *Link) dialErr(peer ipoibcm.LinkAddr, id ipoibcm.ConnID) error {
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.connectTO)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(peer.Underlay(), uint16(l.cfg.tcpPort)).String())
	if err != nil {
		return err
	}
	tc := nc.(*net.TCPConn)
	sid, err := ipoibcm.ServiceID(peer.QPN(), l.cfg.sidMode)
	if err != nil {
		tc.Close()
		return err
	}
	p, err := mpa.Initiate(ctx, tc, mpa.Config{PrivateData: l.hello(sid, 0), Timeout: l.cfg.connectTO})
	if errors.Is(err, mpa.ErrRejected) {
		tc.Close()
		h, perr := ipoibcm.ParseHello(p.PeerPD)
		l.mu.Lock()
		_ = l.tb.Rejected(id, perr == nil && h.RejectReason == ipoibcm.RejectReasonConsumer)
		l.mu.Unlock()
		if perr != nil {
			return fmt.Errorf("rejected with unreadable private data: %w", perr)
		}
		return &rejectErr{h.RejectReason}
	}
	if err != nil {
		tc.Close()
		return err
	}
	h, err := ipoibcm.ParseHello(p.PeerPD)
	if err == nil && int(h.Credits) < ipoibcm.MinQueueDepth {
		err = fmt.Errorf("peer grants %d credits: %w", h.Credits, ipoibcm.ErrCredits)
	}
	var mtu int
	if err == nil {
		l.mu.Lock()
		mtu, err = l.tb.Replied(id, h.PrivateData, time.Now())
		l.mu.Unlock()
	}
	if err != nil {
		tc.Close()
		return fmt.Errorf("reply: %w", err)
	}
	c, err := l.newRC(tc, p, id, peer, mtu, int(h.Credits))
	if err != nil {
		tc.Close()
		return err
	}
	l.register(c, nil)
	return nil
}

func (l *Link) acceptLoop() {
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if l.ctx.Err() == nil {
				l.log.Printf("accept: %v", err)
			}
			return
		}
		l.goRun(func() { l.respond(nc.(*net.TCPConn)) })
	}
}

// respond is the passive side: the Accept hook applies RFC 4755 to the
// request's private data and answers with ours (REP) or a reject (REJ),
// which carries our private data too (§3.2).
func (l *Link) respond(tc *net.TCPConn) {
	remote := tc.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
	var (
		id          ipoibcm.ConnID
		peer        ipoibcm.LinkAddr
		mtu         int
		peerCredits int
		superseded  []ipoibcm.ConnID
		why         error
	)
	accept := func(p *mpa.Params) (bool, []byte) {
		h, err := ipoibcm.ParseHello(p.PeerPD)
		sid := h.ServiceID
		if err == nil {
			var qpn uint32
			// Accept the request on either Service-ID form (digest §3).
			if qpn, _, err = ipoibcm.ParseServiceID(sid); err == nil && qpn != l.me.QPN() {
				err = fmt.Errorf("service ID %#x names endpoint %#x, we are %#x: %w", sid, qpn, l.me.QPN(), ipoibcm.ErrServiceID)
			}
		}
		if err == nil && int(h.Credits) < ipoibcm.MinQueueDepth {
			err = fmt.Errorf("peer grants %d credits: %w", h.Credits, ipoibcm.ErrCredits)
		}
		d := ipoibcm.RejectInvalid
		if err == nil {
			// §4.3: the requester's address from its UD QPN and its "GID",
			// which on iWARP is the TCP peer address.
			if peer, err = ipoibcm.NewUnderlayLinkAddr(0, h.UDQPN, remote); err == nil {
				l.mu.Lock()
				id, mtu, d, superseded, err = l.tb.Request(peer, h.PrivateData, time.Now())
				l.mu.Unlock()
				peerCredits = int(h.Credits)
			}
		}
		if d != ipoibcm.Accept {
			why = fmt.Errorf("%v: %v", d, err)
			if err == nil {
				why = errors.New(d.String())
			}
			ownSID, _ := ipoibcm.ServiceID(l.me.QPN(), l.cfg.sidMode)
			return true, l.hello(ownSID, ipoibcm.RejectReason(d, err))
		}
		return false, l.hello(sid, 0)
	}
	p, err := mpa.Respond(l.ctx, tc, mpa.Config{Accept: accept, Timeout: l.cfg.connectTO})
	if err != nil {
		tc.Close()
		if why != nil {
			l.debugf("request from %v rejected: %v", remote, why)
			return
		}
		l.log.Printf("request from %v: %v", remote, err)
		if id != 0 {
			l.mu.Lock()
			l.tb.Close(id)
			l.mu.Unlock()
			l.closeConns(superseded)
		}
		return
	}
	c, err := l.newRC(tc, p, id, peer, mtu, peerCredits)
	if err != nil {
		tc.Close()
		l.mu.Lock()
		l.tb.Close(id)
		l.mu.Unlock()
		l.closeConns(superseded)
		l.log.Printf("request from %v: %v", remote, err)
		return
	}
	l.register(c, superseded)
}

var _ syscall.Conn = (*gatedConn)(nil)
