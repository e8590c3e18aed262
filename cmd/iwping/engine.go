package main

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/openiwarp/openiwarp/cmd/iwping/rping"
	"github.com/openiwarp/openiwarp/host/verbs"
)

// verbsConn is an rping.Conn on an openiwarp card through host/verbs, set
// up as rping sets up its QP: one CQ for sends and receives, a 16-octet
// receive posted before the connection exists (so a Send that follows the
// MPA Reply at once finds it), and reposted after each completion.
type verbsConn struct {
	dev     *verbs.Context
	pd      *verbs.PD
	cq      *verbs.CQ
	qp      *verbs.QP
	recv    *verbs.MR
	nextID  uint64
	stash   []verbs.WC // completions that arrived while waiting for another
	recvErr error      // no receive is posted: why
}

// newVerbsConn opens the card and creates the PD, CQ, QP and the posted
// receive (rping_setup_qp, rping_setup_buffers, the first ibv_post_recv).
func newVerbsConn(card string, ird, ord int) (*verbsConn, error) {
	dev, err := verbs.Open(card)
	if err != nil {
		return nil, fmt.Errorf("open card %q: %w", card, err)
	}
	c := &verbsConn{dev: dev}
	if err := c.setup(ird, ord); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *verbsConn) setup(ird, ord int) error {
	var err error
	if c.pd, err = c.dev.AllocPD(); err != nil {
		return fmt.Errorf("alloc PD: %w", err)
	}
	if c.cq, err = c.dev.CreateCQ(64); err != nil {
		return fmt.Errorf("create CQ: %w", err)
	}
	c.qp, err = c.pd.CreateQP(verbs.QPInitAttr{SendCQ: c.cq, RecvCQ: c.cq, IRD: ird, ORD: ord,
		Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 2}})
	if err != nil {
		return fmt.Errorf("create QP: %w", err)
	}
	if c.recv, err = c.pd.RegMR(make([]byte, rping.InfoLen), verbs.AccessLocalWrite); err != nil {
		return fmt.Errorf("register receive buffer: %w", err)
	}
	if err := c.postRecv(); err != nil {
		return fmt.Errorf("post the first receive: %w", err)
	}
	return nil
}

func (c *verbsConn) postRecv() error {
	c.nextID++
	return c.qp.PostRecv(verbs.RecvWR{ID: c.nextID, SGL: []verbs.SGE{c.recv.SGE(0, rping.InfoLen)}})
}

func (c *verbsConn) Register(buf []byte) (rping.Region, error) {
	mr, err := c.pd.RegMR(buf, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
	if err != nil {
		return rping.Region{}, err
	}
	return rping.Region{Buf: buf, Addr: mr.Addr(), RKey: uint32(mr.RKey())}, nil
}

// wait returns the next completion that match accepts, keeping the others.
func (c *verbsConn) wait(ctx context.Context, match func(verbs.WC) bool) (verbs.WC, error) {
	for i, wc := range c.stash {
		if match(wc) {
			c.stash = append(c.stash[:i], c.stash[i+1:]...)
			return wc, nil
		}
	}
	for {
		wc, err := c.cq.Wait(ctx)
		if err != nil {
			return wc, fmt.Errorf("%w (QP: %v)", err, c.qp.Err())
		}
		if match(wc) {
			return wc, nil
		}
		c.stash = append(c.stash, wc)
	}
}

// WCError is a work completion in error, with the QP's reason.
type WCError struct {
	Op     string
	Status verbs.WCStatus
	Cause  error // the QP's Err(): verbs.ErrStreamClosed on a graceful peer close
}

func (e *WCError) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s completed with %v: %v", e.Op, e.Status, e.Cause)
	}
	return fmt.Sprintf("%s completed with %v", e.Op, e.Status)
}
func (e *WCError) Unwrap() error { return e.Cause }

func (c *verbsConn) post(ctx context.Context, wr verbs.SendWR) error {
	c.nextID++
	wr.ID, wr.Signaled = c.nextID, true
	if err := c.qp.PostSend(wr); err != nil {
		return fmt.Errorf("post %v: %w", wr.Opcode, err)
	}
	wc, err := c.wait(ctx, func(wc verbs.WC) bool { return wc.ID == wr.ID })
	if err != nil {
		return fmt.Errorf("wait for %v: %w", wr.Opcode, err)
	}
	if wc.Status != verbs.WCSuccess {
		return &WCError{Op: wr.Opcode.String(), Status: wc.Status, Cause: c.qp.Err()}
	}
	return nil
}

func (c *verbsConn) Send(ctx context.Context, msg []byte) error {
	return c.post(ctx, verbs.SendWR{Opcode: verbs.WRSend, Inline: msg})
}

func (c *verbsConn) Recv(ctx context.Context) ([]byte, error) {
	if c.recvErr != nil {
		return nil, c.recvErr
	}
	wc, err := c.wait(ctx, func(wc verbs.WC) bool { return wc.Opcode == verbs.WCRecv })
	if err != nil {
		return nil, fmt.Errorf("wait for a Send: %w", err)
	}
	if wc.Status != verbs.WCSuccess {
		return nil, &WCError{Op: "RECV", Status: wc.Status, Cause: c.qp.Err()}
	}
	msg := append([]byte(nil), c.recv.Bytes()[:wc.ByteLen]...)
	if err := c.postRecv(); err != nil {
		// The message is good; the stream ended after it (the peer may
		// close right after its last Send). The next Recv reports it.
		c.recvErr = fmt.Errorf("repost receive: %w", err)
	}
	return msg, nil
}

func (c *verbsConn) rdma(ctx context.Context, op verbs.WROpcode, local rping.Region, n int, addr uint64, rkey uint32) error {
	if n > len(local.Buf) {
		return fmt.Errorf("%v of %d octets with a %d-octet buffer", op, n, len(local.Buf))
	}
	return c.post(ctx, verbs.SendWR{Opcode: op, SGL: []verbs.SGE{{Addr: local.Addr, Length: uint32(n), LKey: verbs.STag(local.RKey)}},
		RemoteAddr: addr, RKey: verbs.STag(rkey)})
}

func (c *verbsConn) Read(ctx context.Context, local rping.Region, n int, addr uint64, rkey uint32) error {
	return c.rdma(ctx, verbs.WRRDMARead, local, n, addr, rkey)
}

func (c *verbsConn) Write(ctx context.Context, local rping.Region, n int, addr uint64, rkey uint32) error {
	return c.rdma(ctx, verbs.WRRDMAWrite, local, n, addr, rkey)
}

// Close disconnects gracefully (TCP FIN, as rdma_disconnect on siw) and
// frees everything.
func (c *verbsConn) Close() error {
	if c.qp != nil {
		_ = c.qp.Disconnect()
		_ = c.qp.Destroy()
	}
	if c.cq != nil {
		_ = c.cq.Destroy()
	}
	if c.pd != nil {
		_ = c.pd.Dealloc()
	}
	return c.dev.Close()
}

// peerClosed reports whether err is the peer's graceful disconnect.
func peerClosed(err error) bool { return errors.Is(err, verbs.ErrStreamClosed) }

// addrs names both ends of the connection for the summary.
func (c *verbsConn) addrs() (local, peer net.Addr) { return c.qp.LocalAddr(), c.qp.RemoteAddr() }
