package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"

	"github.com/openiwarp/openiwarp/cmd/iwping/rping"
	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
)

// regionBase is the first tagged offset iwping advertises: rping advertises
// its buffers' virtual addresses, iwping VA-like tagged offsets.
const regionBase = 0x7f10_0000_0000

// engineConn is an rping.Conn on the openiwarp "model" card: the reference
// engine (golden/iwarp) over the kernel's TCP socket. Like rping it keeps one
// 16-octet receive posted and uses one CQ for sends and receives.
type engineConn struct {
	ep       *iwarp.Endpoint
	pd       *mem.PD
	cq       *iwarp.CQ
	recv     *mem.MR
	nextAddr uint64
	nextID   uint64
	stash    []iwarp.Completion // completions that arrived while waiting for another
	recvErr  error              // no receive is posted: why
}

// newEngineConn starts the engine on conn once the MPA exchange p is done,
// with the receive posted before the engine reads its first FPDU (a peer
// may send right after the MPA Reply).
func newEngineConn(conn net.Conn, p mpa.Params, ird, ord int) (*engineConn, error) {
	pd := mem.NewTable().AllocPD()
	cq := iwarp.NewCQ(64)
	g := &gatedConn{Conn: conn, open: make(chan struct{})}
	ep, err := iwarp.New(g, p, iwarp.Config{PD: pd, SendCQ: cq, RecvCQ: cq, IRD: ird, ORD: ord, SQDepth: 16, RQDepth: 2})
	if err != nil {
		g.release()
		return nil, err
	}
	c := &engineConn{ep: ep, pd: pd, cq: cq, nextAddr: regionBase}
	c.recv, err = pd.RegisterMR(make([]byte, rping.InfoLen), c.takeAddr(rping.InfoLen), mem.LocalWrite, 0)
	if err == nil {
		err = c.postRecv()
	}
	g.release()
	if err != nil {
		ep.Close()
		return nil, fmt.Errorf("iwping: post the first receive: %w", err)
	}
	return c, nil
}

func (c *engineConn) takeAddr(n int) uint64 {
	a := c.nextAddr
	c.nextAddr += (uint64(n) + 4095) &^ 4095
	return a
}

func (c *engineConn) postRecv() error {
	c.nextID++
	return c.ep.PostRecv(iwarp.RecvWR{ID: c.nextID, SGL: []iwarp.SGE{{Addr: c.recv.Addr, Length: rping.InfoLen, LKey: c.recv.STag}}})
}

func (c *engineConn) Register(buf []byte) (rping.Region, error) {
	mr, err := c.pd.RegisterMR(buf, c.takeAddr(len(buf)), mem.LocalWrite|mem.RemoteRead|mem.RemoteWrite, 0)
	if err != nil {
		return rping.Region{}, err
	}
	return rping.Region{Buf: buf, Addr: mr.Addr, RKey: uint32(mr.STag)}, nil
}

// wait returns the next completion that match accepts, keeping the others.
func (c *engineConn) wait(ctx context.Context, match func(iwarp.Completion) bool) (iwarp.Completion, error) {
	for i, wc := range c.stash {
		if match(wc) {
			c.stash = append(c.stash[:i], c.stash[i+1:]...)
			return wc, nil
		}
	}
	for {
		wc, err := c.cq.Wait(ctx)
		if err != nil {
			return wc, fmt.Errorf("%w (engine: %v)", err, c.ep.Err())
		}
		if match(wc) {
			return wc, nil
		}
		c.stash = append(c.stash, wc)
	}
}

// WCError is a work completion in error, with the engine's reason.
type WCError struct {
	Op     string
	Status iwarp.Status
	Cause  error // the endpoint's Err(): iwarp.ErrClosed on a graceful peer close
}

func (e *WCError) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s completed with %v: %v", e.Op, e.Status, e.Cause)
	}
	return fmt.Sprintf("%s completed with %v", e.Op, e.Status)
}
func (e *WCError) Unwrap() error { return e.Cause }

func (c *engineConn) post(ctx context.Context, wr iwarp.SendWR) error {
	c.nextID++
	wr.ID, wr.Signaled = c.nextID, true
	if err := c.ep.PostSend(wr); err != nil {
		return fmt.Errorf("post %v: %w", wr.Opcode, err)
	}
	wc, err := c.wait(ctx, func(wc iwarp.Completion) bool { return wc.ID == wr.ID })
	if err != nil {
		return fmt.Errorf("wait for %v: %w", wr.Opcode, err)
	}
	if wc.Status != iwarp.WCSuccess {
		return &WCError{Op: wr.Opcode.String(), Status: wc.Status, Cause: c.ep.Err()}
	}
	return nil
}

func (c *engineConn) Send(ctx context.Context, msg []byte) error {
	return c.post(ctx, iwarp.SendWR{Opcode: iwarp.WRSend, Inline: msg})
}

func (c *engineConn) Recv(ctx context.Context) ([]byte, error) {
	if c.recvErr != nil {
		return nil, c.recvErr
	}
	wc, err := c.wait(ctx, func(wc iwarp.Completion) bool { return wc.Opcode == iwarp.WCRecv })
	if err != nil {
		return nil, fmt.Errorf("wait for a Send: %w", err)
	}
	if wc.Status != iwarp.WCSuccess {
		return nil, &WCError{Op: "RECV", Status: wc.Status, Cause: c.ep.Err()}
	}
	msg := append([]byte(nil), c.recv.Buf[:wc.ByteLen]...)
	if err := c.postRecv(); err != nil {
		// The message is good; the stream ended after it (the peer may
		// close right after its last Send). The next Recv reports it.
		c.recvErr = fmt.Errorf("repost receive: %w", err)
	}
	return msg, nil
}

func (c *engineConn) rdma(ctx context.Context, op iwarp.WROpcode, local rping.Region, n int, addr uint64, rkey uint32) error {
	if n > len(local.Buf) {
		return fmt.Errorf("%v of %d octets into a %d-octet buffer", op, n, len(local.Buf))
	}
	return c.post(ctx, iwarp.SendWR{Opcode: op, SGL: []iwarp.SGE{{Addr: local.Addr, Length: uint32(n), LKey: mem.STag(local.RKey)}},
		RemoteAddr: addr, RKey: mem.STag(rkey)})
}

func (c *engineConn) Read(ctx context.Context, local rping.Region, n int, addr uint64, rkey uint32) error {
	return c.rdma(ctx, iwarp.WRRead, local, n, addr, rkey)
}

func (c *engineConn) Write(ctx context.Context, local rping.Region, n int, addr uint64, rkey uint32) error {
	return c.rdma(ctx, iwarp.WRWrite, local, n, addr, rkey)
}

// Close ends the stream gracefully (TCP FIN, as rdma_disconnect on siw).
func (c *engineConn) Close() error { return c.ep.Close() }

// peerClosed reports whether err is the peer's graceful disconnect.
func peerClosed(err error) bool { return errors.Is(err, iwarp.ErrClosed) }

// gatedConn holds the engine's first read until the first receive is
// posted.
type gatedConn struct {
	net.Conn
	open chan struct{}
	once sync.Once
}

func (g *gatedConn) release() { g.once.Do(func() { close(g.open) }) }

func (g *gatedConn) Read(p []byte) (int, error) {
	<-g.open
	return g.Conn.Read(p)
}

func (g *gatedConn) Close() error {
	g.release()
	return g.Conn.Close()
}

// SyscallConn exposes the socket so the engine can read the TCP MSS.
func (g *gatedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := g.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("iwping: not a socket")
	}
	return sc.SyscallConn()
}
