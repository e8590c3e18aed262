package ipoib

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/openiwarp/openiwarp/golden/ipoibcm"
	"github.com/openiwarp/openiwarp/host/verbs"
)

// Reliable connections: RFC 4755's RC QPs as verbs RC QPs. The IB CM
// exchange is the connection manager's Dial / Accept / Reject, i.e. TCP
// connect plus the MPA Request/Reply with the private data inside (digest
// §13); the initiator's "ready" control message is the RTU.

var errTxQueueFull = errors.New("connection transmit queue full: no free send frame")

// Send frames: each connection registers one memory region of send frames,
// each one connection MTU plus the encapsulation header. A packet is
// encapsulated straight into a free frame, waits in the queue for a credit,
// and goes as a Send gathering from the frame (no inline copy). Data Sends
// are signaled and their completion returns the frame, so the card is done
// with a frame before it is reused. The frames are the connection's transmit
// ring: when none is free the packet is dropped (counted) and TCP recovers.
//
// txFramesPerCredit frames per credit the peer grants (at most maxTxFrames)
// cover the Sends in flight plus a burst as long again waiting for credits.
const (
	txFramesPerCredit = 2
	maxTxFrames       = 256
)

// txFrame is a queued packet: its frame and length.
type txFrame struct{ slot, n int }

// rcConn is one connection and its flow control.
type rcConn struct {
	l         *Link
	id        ipoibcm.ConnID
	peer      ipoibcm.LinkAddr
	mtu       int
	initiator bool
	qp        *verbs.QP
	mr        *verbs.MR // receive buffers
	bufSize   int
	smr       *verbs.MR // send frames (registered in run, when the MTU is known)
	frameSize int
	nFrames   int
	depth     int
	rcq, scq  *verbs.CQ
	ctx       context.Context
	cancel    context.CancelFunc

	mu        sync.Mutex
	cond      *sync.Cond
	fc        *ipoibcm.FlowControl
	q         []txFrame    // packets waiting for credits, in order
	free      []int        // send frames not in use
	wcs       [16]verbs.WC // send completions polled at once
	closed    bool
	failed    bool // connDown has been started
	peerReady bool // initiator: the responder's ready has arrived
}

// sqDepth sizes the send queue. Credits bound the Sends the peer has not
// received, but the engine keeps a Send on its queue until its transmitter
// next flushes, so more can sit there; post waits while it is full.
const sqDepth = 512

// newQP makes a QP with its receive buffers registered and every receive
// posted before the connection exists: verbs hands receives posted early to
// the card when the QP connects, so the peer's first Send finds them.
func (l *Link) newQP() (*rcConn, error) {
	c := &rcConn{l: l, bufSize: int(l.cfg.RecvMTU), depth: l.cfg.Depth}
	c.cond = sync.NewCond(&c.mu)
	var err error
	if c.rcq, err = l.dev.CreateCQ(c.depth + 8); err != nil {
		return nil, err
	}
	// Only data Sends are signaled (one completion per frame in use, at
	// most maxTxFrames); errors and flushes fit too, one per send WR.
	if c.scq, err = l.dev.CreateCQ(sqDepth + 8); err != nil {
		c.release()
		return nil, err
	}
	if c.mr, err = l.pd.RegMR(make([]byte, c.depth*c.bufSize), verbs.AccessLocalWrite); err != nil {
		c.release()
		return nil, fmt.Errorf("registering receive buffers: %w", err)
	}
	c.qp, err = l.pd.CreateQP(verbs.QPInitAttr{SendCQ: c.scq, RecvCQ: c.rcq,
		Cap: verbs.QPCap{MaxSendWR: sqDepth, MaxRecvWR: c.depth}})
	if err != nil {
		c.release()
		return nil, err
	}
	for i := 0; i < c.depth; i++ {
		if err := c.postRecv(i); err != nil {
			c.release()
			return nil, err
		}
	}
	return c, nil
}

// release frees what newQP made; a connected QP disconnects first.
func (c *rcConn) release() {
	if c.qp != nil {
		_ = c.qp.Destroy()
	}
	for _, mr := range []*verbs.MR{c.mr, c.smr} {
		if mr != nil {
			_ = mr.Dereg()
		}
	}
	for _, cq := range []*verbs.CQ{c.rcq, c.scq} {
		if cq != nil {
			_ = cq.Destroy()
		}
	}
}

// run starts a connected QP: flow control, the opening messages, and the
// goroutines. The initiator opens with a zero-length RDMA Write, which needs
// no receive at the responder; the responder, whose receives are posted by
// now, answers with ready; the initiator sends no Send before ready (see
// ipoibcm.ControlReady). So no first Send depends on how quickly either end
// hands its receives to its card.
func (c *rcConn) run(id ipoibcm.ConnID, peer ipoibcm.LinkAddr, mtu, peerCredits int, initiator bool) error {
	c.id, c.peer, c.mtu, c.initiator = id, peer.WithoutFlags(), mtu, initiator
	var err error
	if c.fc, err = ipoibcm.NewFlowControl(c.depth, peerCredits); err != nil {
		return err
	}
	// One octet over the MTU lets the transmit loop read from the stack
	// into a frame and still notice a packet too big for it (see lend).
	c.frameSize, c.nFrames = mtu+ipoibcm.HeaderLen+1, min(txFramesPerCredit*peerCredits, maxTxFrames)
	if c.smr, err = c.l.pd.RegMR(make([]byte, c.nFrames*c.frameSize), 0); err != nil {
		return fmt.Errorf("registering send frames: %w", err)
	}
	c.free = make([]int, c.nFrames)
	for i := range c.free {
		c.free[i] = c.nFrames - 1 - i
	}
	c.ctx, c.cancel = context.WithCancel(c.l.ctx)
	c.mu.Lock()
	if initiator {
		err = c.qp.PostSend(verbs.SendWR{Opcode: verbs.WRRDMAWrite})
	} else {
		var r ipoibcm.Control
		if r, err = c.fc.TakeReady(); err == nil {
			err = c.postControl(r.Append(nil))
		}
	}
	c.mu.Unlock()
	if err != nil {
		c.cancel()
		return fmt.Errorf("opening the connection: %w", err)
	}
	c.l.goRun(c.rxLoop)
	c.l.goRun(c.txLoop)
	c.l.goRun(c.watch)
	return nil
}

func (c *rcConn) postRecv(slot int) error {
	return c.qp.PostRecv(verbs.RecvWR{ID: uint64(slot), SGL: []verbs.SGE{c.mr.SGE(slot*c.bufSize, c.bufSize)}})
}

// postControl posts a control message: a small unsignaled inline Send.
func (c *rcConn) postControl(msg []byte) error {
	return c.post(verbs.SendWR{Opcode: verbs.WRSend, Inline: msg})
}

// postFrame posts a queued packet as a signaled Send from its frame; the
// completion's ID is the slot plus one (control Sends have ID 0).
func (c *rcConn) postFrame(f txFrame) error {
	return c.post(verbs.SendWR{ID: uint64(f.slot) + 1, Opcode: verbs.WRSend, Signaled: true,
		SGL: []verbs.SGE{c.smr.SGE(f.slot*c.frameSize, f.n)}})
}

// post posts one Send, waiting while the send queue is full. It is called
// with c.mu held and releases it while waiting.
func (c *rcConn) post(wr verbs.SendWR) error {
	for {
		err := c.qp.PostSend(wr)
		if !errors.Is(err, verbs.ErrQueueFull) {
			return err
		}
		c.l.st.sqFull.Add(1)
		c.mu.Unlock()
		time.Sleep(50 * time.Microsecond)
		c.mu.Lock()
		if c.closed {
			return verbs.ErrClosed
		}
	}
}

// frame lends a free send frame for a packet of n octets (header
// included), reaping send completions when none is free.
func (c *rcConn) frame(n int) ([]byte, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, 0, fmt.Errorf("connection %d: %w", c.id, verbs.ErrClosed)
	}
	if n > c.frameSize {
		return nil, 0, fmt.Errorf("connection %d: packet of %d octets over the send frame size %d", c.id, n, c.frameSize)
	}
	if len(c.free) == 0 {
		c.reapLocked()
	}
	if len(c.free) == 0 {
		return nil, 0, errTxQueueFull
	}
	slot := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	off := slot * c.frameSize
	return c.smr.Bytes()[off : off+n : off+c.frameSize], slot, nil
}

// lend lends a whole free frame to read a packet from the stack into, if
// the connection's MTU holds any packet of an interface MTU of ifMTU; the
// read buffer is the frame after HeaderLen, one octet longer than ifMTU
// allows. The frame goes back with send or unlend.
func (c *rcConn) lend(ifMTU int) ([]byte, int, bool) {
	if c.mtu < ifMTU {
		return nil, 0, false
	}
	b, slot, err := c.frame(c.frameSize)
	if err != nil {
		return nil, 0, false
	}
	return b[:ipoibcm.HeaderLen+ifMTU+1], slot, true
}

// unlend returns a frame from lend that was not sent.
func (c *rcConn) unlend(slot int) {
	c.mu.Lock()
	c.free = append(c.free, slot)
	c.mu.Unlock()
}

// reapLocked returns the frames of completed data Sends to the free list.
// A failed completion fails the connection. Called with c.mu held.
func (c *rcConn) reapLocked() {
	for {
		n, err := c.scq.Poll(c.wcs[:])
		if err != nil {
			c.failLocked(fmt.Errorf("send completions: %w", err))
			return
		}
		for _, wc := range c.wcs[:n] {
			switch {
			case wc.Status != verbs.WCSuccess:
				c.failLocked(fmt.Errorf("send completion: %v", wc.Status))
			case wc.ID >= 1 && wc.ID <= uint64(c.nFrames):
				c.free = append(c.free, int(wc.ID-1))
			}
		}
		if n < len(c.wcs) {
			return
		}
	}
}

// send sends the packet in frame slot (from c.frame), already sized to
// the connection MTU. When nothing is queued before it and a credit is
// free it posts the Send itself, which saves waking the transmit loop for
// every packet; otherwise it queues the packet for the transmit loop.
func (c *rcConn) send(b []byte, slot int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("connection %d: %w", c.id, verbs.ErrClosed)
	}
	f := txFrame{slot: slot, n: len(b)}
	if len(c.q) == 0 && (!c.initiator || c.peerReady) && c.fc.TrySendData() {
		if err := c.postFrame(f); err != nil {
			c.failLocked(err)
			return fmt.Errorf("connection %d: %w", c.id, err)
		}
		c.l.st.rcOut.Add(1)
		if c.fc.UpdateDue() {
			c.cond.Signal()
		}
		return nil
	}
	c.q = append(c.q, f)
	c.cond.Signal()
	return nil
}

// txLoop posts queued packets while credits last and sends credit updates
// as soon as they are due.
func (c *rcConn) txLoop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for !c.closed && (c.initiator && !c.peerReady || !(len(c.q) > 0 && c.fc.Credits() >= 2) && !c.fc.UpdateDue()) {
			if len(c.q) > 0 {
				c.l.st.noCredit.Add(1)
			}
			c.cond.Wait()
		}
		if c.closed {
			return
		}
		if u, ok := c.fc.TakeUpdate(); ok {
			if err := c.postControl(u.Append(nil)); err != nil {
				c.failLocked(err)
				return
			}
		}
		for len(c.q) > 0 && !c.closed && c.fc.TrySendData() {
			f := c.q[0]
			c.q = c.q[1:]
			if err := c.postFrame(f); err != nil {
				c.failLocked(err)
				return
			}
			c.l.st.rcOut.Add(1)
		}
	}
}

// rxLoop takes each received message, hands it on, posts the buffer again
// and only then counts the credit it owes, so a grant never names a buffer
// that is not posted.
func (c *rcConn) rxLoop() {
	for {
		wc, err := c.rcq.Wait(c.ctx)
		if err != nil {
			c.fail(err)
			return
		}
		if wc.Status != verbs.WCSuccess {
			c.fail(fmt.Errorf("receive completion: %v", wc.Status))
			return
		}
		slot := int(wc.ID)
		off := slot * c.bufSize
		isData, err := c.input(c.mr.Bytes()[off : off+int(wc.ByteLen)])
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
		c.mu.Lock()
		defer c.mu.Unlock()
		switch {
		case ctl.Kind == ipoibcm.ControlGrant:
			err = c.fc.Granted(ctl)
		case !c.initiator:
			err = fmt.Errorf("ready from the initiator")
		case c.peerReady:
			err = fmt.Errorf("second ready")
		default:
			c.peerReady = true
		}
		c.cond.Signal()
		return false, err
	}
	if c.initiator && !c.ready() {
		return false, fmt.Errorf("data before ready")
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

func (c *rcConn) ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peerReady
}

// watch notices the stream ending (peer closed, Terminate, TCP lost).
func (c *rcConn) watch() {
	select {
	case <-c.qp.Done():
		c.fail(c.qp.Err())
	case <-c.ctx.Done():
	}
}

func (c *rcConn) fail(err error) {
	c.mu.Lock()
	c.failLocked(err)
	c.mu.Unlock()
}

// failLocked has the link drop the connection, once.
func (c *rcConn) failLocked(err error) {
	if c.closed || c.failed {
		return
	}
	c.failed = true
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
	_ = c.qp.Disconnect()
	c.release()
}

// connDown removes a failed connection; packets to the peer will set up a new one.
func (l *Link) connDown(c *rcConn, err error) {
	l.mu.Lock()
	if l.conns[c.id] == c {
		l.tb.Close(c.id)
		delete(l.conns, c.id)
	}
	l.mu.Unlock()
	if err != nil && !errors.Is(err, verbs.ErrStreamClosed) && !errors.Is(err, context.Canceled) {
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
		Extension: ipoibcm.Extension{Credits: uint16(l.cfg.Depth), ServiceID: sid, RejectReason: reason}}.Append(nil)
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
	q := l.pending[c.peer]
	delete(l.pending, c.peer)
	l.mu.Unlock()
	l.log.Printf("connection %d with %v up (%s, MTU %d)", c.id, c.peer, map[bool]string{true: "active", false: "passive"}[c.initiator], c.mtu)
	for _, p := range q {
		if info, err := parseIP(p); err == nil {
			l.sendSized(p, info, c.mtu, c)
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
		l.debugf("connect to %v: %v: crossing requests, using the peer's connection", peer, err)
	} else {
		l.log.Printf("connect to %v: %v", peer, err)
	}
}

type rejectErr struct{ reason uint8 }

func (e *rejectErr) Error() string { return fmt.Sprintf("rejected by the peer, reason %d", e.reason) }

func (l *Link) dialErr(peer ipoibcm.LinkAddr, id ipoibcm.ConnID) error {
	sid, err := ipoibcm.ServiceID(peer.QPN(), l.cfg.SIDMode)
	if err != nil {
		return err
	}
	c, err := l.newQP()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(l.ctx, l.cfg.ConnectTimeout)
	defer cancel()
	addr := netip.AddrPortFrom(peer.Underlay(), uint16(l.cfg.TCPPort)).String()
	err = verbs.Dial(ctx, addr, c.qp, verbs.ConnParam{PrivateData: l.hello(sid, 0), StartupTimeout: l.cfg.ConnectTimeout})
	var rej *verbs.RejectError
	if errors.As(err, &rej) {
		c.release()
		h, perr := ipoibcm.ParseHello(rej.PrivateData)
		l.mu.Lock()
		_ = l.tb.Rejected(id, perr == nil && h.RejectReason == ipoibcm.RejectReasonConsumer)
		l.mu.Unlock()
		if perr != nil {
			return fmt.Errorf("rejected with unreadable private data: %w", perr)
		}
		return &rejectErr{h.RejectReason}
	}
	if err != nil {
		c.release()
		return err
	}
	h, err := ipoibcm.ParseHello(c.qp.Params().PeerPD)
	if err == nil && int(h.Credits) < ipoibcm.MinQueueDepth {
		err = fmt.Errorf("peer grants %d credits: %w", h.Credits, ipoibcm.ErrCredits)
	}
	var mtu int
	if err == nil {
		l.mu.Lock()
		mtu, err = l.tb.Replied(id, h.PrivateData, time.Now())
		l.mu.Unlock()
	}
	if err == nil {
		err = c.run(id, peer, mtu, int(h.Credits), true)
	}
	if err != nil {
		c.release()
		return fmt.Errorf("reply: %w", err)
	}
	l.register(c, nil)
	return nil
}

func (l *Link) acceptLoop() {
	for {
		req, err := l.ln.Accept(l.ctx)
		if err != nil {
			if l.ctx.Err() == nil {
				l.log.Printf("accept: %v", err)
			}
			return
		}
		l.goRun(func() { l.respond(req) })
	}
}

// respond is the passive side: it applies RFC 4755 to the request's
// private data and answers with ours, in a Reply (REP) or a Reject (REJ),
// which carries our private data too (§3.2).
func (l *Link) respond(req *verbs.ConnRequest) {
	if l.cfg.AcceptDelay > 0 {
		// A slow connection manager (as an IB CM behind MADs can be):
		// requests stay outstanding, so crossing requests can be tested.
		select {
		case <-time.After(l.cfg.AcceptDelay):
		case <-l.ctx.Done():
			_ = req.Reject(nil)
			return
		}
	}
	remote := netip.Addr{}
	if ta, ok := req.RemoteAddr().(*net.TCPAddr); ok {
		remote = ta.AddrPort().Addr().Unmap()
	}
	h, err := ipoibcm.ParseHello(req.PrivateData)
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
	var (
		id         ipoibcm.ConnID
		peer       ipoibcm.LinkAddr
		mtu        int
		superseded []ipoibcm.ConnID
	)
	d := ipoibcm.RejectInvalid
	if err == nil {
		// §4.3: the requester's address from its UD QPN and its "GID",
		// which on iWARP is the TCP peer address.
		if peer, err = ipoibcm.NewUnderlayLinkAddr(0, h.UDQPN, remote); err == nil {
			l.mu.Lock()
			id, mtu, d, superseded, err = l.tb.Request(peer, h.PrivateData, time.Now())
			l.mu.Unlock()
		}
	}
	if d != ipoibcm.Accept {
		ownSID, _ := ipoibcm.ServiceID(l.me.QPN(), l.cfg.SIDMode)
		_ = req.Reject(l.hello(ownSID, ipoibcm.RejectReason(d, err)))
		if err != nil {
			l.debugf("request from %v rejected: %v: %v", remote, d, err)
		} else {
			l.debugf("request from %v rejected: %v", remote, d)
		}
		return
	}
	fail := func(err error) {
		l.mu.Lock()
		l.tb.Close(id)
		l.mu.Unlock()
		l.closeConns(superseded)
		l.log.Printf("request from %v: %v", remote, err)
	}
	c, err := l.newQP()
	if err != nil {
		_ = req.Reject(l.hello(sid, ipoibcm.RejectReasonNoResources))
		fail(err)
		return
	}
	if err := req.Accept(c.qp, l.hello(sid, 0)); err != nil {
		c.release()
		fail(err)
		return
	}
	if err := c.run(id, peer, mtu, int(h.Credits), false); err != nil {
		c.release()
		fail(err)
		return
	}
	l.register(c, superseded)
}
