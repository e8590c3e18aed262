package verbs_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// seed is $OPENIWARP_SEED, else from the clock; logged, so a failure
// can be rerun with it.
func seed(t *testing.T) uint64 {
	s := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("OPENIWARP_SEED"), 10, 64); err == nil {
		s = v
	}
	t.Logf("seed %d (OPENIWARP_SEED=%[1]d reruns it)", s)
	return s
}

// device is one side of the load tests: a device with one PD and one CQ
// shared by every QP.
type device struct {
	ctx *verbs.Context
	pd  *verbs.PD
	cq  *verbs.CQ
}

func openDevice(t *testing.T, cqDepth int) *device {
	c, err := verbs.Open("model")
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	pd, err := c.AllocPD()
	require.NoError(t, err)
	cq, err := c.CreateCQ(cqDepth)
	require.NoError(t, err)
	return &device{c, pd, cq}
}

// scale is n, or n/div under the race detector (see raceEnabled).
func scale(n, div int) int {
	if raceEnabled {
		return n / div
	}
	return n
}

// TestThousandQPs: 1,000 QPs connected at once between two devices, each
// QP of each side writing its own payload into the peer's region and
// sending a Send that names it; every payload is checked at the other
// end, and every completion is a success.
func TestThousandQPs(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 connections")
	}
	qps, size := scale(1000, 4), 2048
	rng := rand.New(rand.NewPCG(seed(t), 3))
	ctx := testwatch.Context(t, "1,000 QPs moving data both ways")
	base := testwatch.Measure()
	devs := [2]*device{openDevice(t, 4*qps), openDevice(t, 4*qps)}
	// One region per side: QP i's payload out at [2i], the peer's in at [2i+1].
	bufs := [2][]byte{make([]byte, 2*qps*size), make([]byte, 2*qps*size)}
	var mrs [2]*verbs.MR
	for k := range 2 {
		for i := range bufs[k] {
			bufs[k][i] = byte(rng.Uint32())
		}
		var err error
		mrs[k], err = devs[k].pd.RegMR(bufs[k], verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		require.NoError(t, err)
	}
	hdrs := [2][]byte{make([]byte, 8*qps), make([]byte, 8*qps)}
	var hmrs [2]*verbs.MR
	for k := range 2 {
		var err error
		hmrs[k], err = devs[k].pd.RegMR(hdrs[k], verbs.AccessLocalWrite)
		require.NoError(t, err)
	}
	var qp [2][]*verbs.QP
	for k := range 2 {
		for i := range qps {
			q, err := devs[k].pd.CreateQP(verbs.QPInitAttr{SendCQ: devs[k].cq, RecvCQ: devs[k].cq,
				Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 2}})
			require.NoError(t, err)
			require.NoError(t, q.PostRecv(verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{hmrs[k].SGE(8*i, 8)}}))
			qp[k] = append(qp[k], q)
		}
	}
	ln, err := verbs.Listen("127.0.0.1:0", verbs.ListenConfig{Backlog: 64, StartupTimeout: testwatch.Patience()})
	require.NoError(t, err)
	defer ln.Close()
	// Connect all of them: 32 dialers at a time, the listener accepting in
	// the order requests come (the Initiator names its QP in private data).
	accepted := make(chan error, 1)
	go func() {
		for range qps {
			req, err := ln.Accept(ctx)
			if err != nil {
				accepted <- err
				return
			}
			i := int(binary.BigEndian.Uint32(req.PrivateData))
			if err := req.Accept(qp[1][i], nil); err != nil {
				accepted <- fmt.Errorf("accepting QP %d: %w", i, err)
				return
			}
		}
		accepted <- nil
	}()
	start := time.Now()
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	errs := make(chan error, qps)
	for i := range qps {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			pd := binary.BigEndian.AppendUint32(nil, uint32(i))
			if err := verbs.Dial(ctx, ln.Addr().String(), qp[0][i], verbs.ConnParam{PrivateData: pd, StartupTimeout: testwatch.Patience()}); err != nil {
				errs <- fmt.Errorf("dialing QP %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	aerr, ok := testwatch.Wait(t, accepted, "the listener to accept 1,000 connections")
	require.True(t, ok)
	require.NoError(t, aerr)
	connected := time.Since(start)
	mid := testwatch.Measure()

	// Every QP of both sides: a Write of its payload, then a Send naming it.
	start = time.Now()
	for k := range 2 {
		for i, q := range qp[k] {
			peer := mrs[1-k]
			require.NoError(t, q.PostSend(
				verbs.SendWR{ID: uint64(i), Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{mrs[k].SGE(2*i*size, size)},
					RemoteAddr: peer.Addr() + uint64((2*i+1)*size), RKey: peer.RKey()},
				verbs.SendWR{ID: uint64(qps + i), Opcode: verbs.WRSend, Signaled: true,
					Inline: binary.BigEndian.AppendUint64(nil, uint64(i))}))
		}
	}
	for k := range 2 {
		recvd, sent := 0, 0
		for recvd+sent < 2*qps {
			wc, err := devs[k].cq.Wait(ctx)
			require.NoError(t, err)
			require.Equal(t, verbs.WCSuccess, wc.Status, "side %d WR %d", k, wc.ID)
			if wc.Opcode == verbs.WCRecv {
				i := int(wc.ID)
				require.Equal(t, uint64(i), binary.BigEndian.Uint64(hdrs[k][8*i:]), "side %d: the Send on QP %d", k, i)
				require.Equal(t, bufs[1-k][2*i*size:(2*i+1)*size], bufs[k][(2*i+1)*size:(2*i+2)*size], "side %d: QP %d's payload", k, i)
				recvd++
			} else {
				sent++
			}
		}
	}
	moved := time.Since(start)
	t.Logf("%d QP pairs connected in %v, %d KiB each way verified in %v; while connected: %v (before: %v)",
		qps, connected.Round(time.Millisecond), qps*size>>10, moved.Round(time.Millisecond), mid, base)
	// Both ends of each pair at once (a graceful close waits for the
	// peer's FIN), 32 pairs at a time.
	start = time.Now()
	derr := make(chan error, 2*qps)
	for i := range qps {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			var pair sync.WaitGroup
			for k := range 2 {
				pair.Go(func() { derr <- qp[k][i].Destroy() })
			}
			pair.Wait()
		}()
	}
	wg.Wait()
	close(derr)
	for err := range derr {
		require.NoError(t, err)
	}
	t.Logf("%d QP pairs torn down in %v", qps, time.Since(start).Round(time.Millisecond))
	for k := range 2 {
		require.NoError(t, mrs[k].Dereg())
		require.NoError(t, hmrs[k].Dereg())
		require.NoError(t, devs[k].ctx.Close())
	}
	ln.Close()
	bufs, hdrs, qp, mrs, hmrs, devs = [2][]byte{}, [2][]byte{}, [2][]*verbs.QP{}, [2]*verbs.MR{}, [2]*verbs.MR{}, [2]*device{}
	// The slack covers the runtime's own: it keeps the descriptors of
	// 8,000 exited goroutines for reuse (about 3.5 MiB).
	now, err := testwatch.Back(base, 8<<20)
	t.Logf("after closing: %v", now)
	require.NoError(t, err)
}

// pingServer is a persistent server on one device: every connection gets
// a QP that takes one Send and echoes it back, then waits for the client
// to disconnect and releases everything it used.
type pingServer struct {
	dev    *device
	ln     *verbs.Listener
	ctx    context.Context // ends with stop: connections still open let go
	cancel context.CancelFunc
	wg     sync.WaitGroup
	served atomic.Int64 // echoes sent
	failed atomic.Int64 // connections that ended without an echo
}

const pingSize = 64

func startPingServer(t *testing.T, ctx context.Context, lc verbs.ListenConfig) *pingServer {
	s := &pingServer{dev: openDevice(t, 16)}
	s.ctx, s.cancel = context.WithCancel(ctx)
	ctx = s.ctx
	var err error
	s.ln, err = verbs.Listen("127.0.0.1:0", lc)
	require.NoError(t, err)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			req, err := s.ln.Accept(ctx)
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.serve(ctx, req) }()
		}
	}()
	return s
}

// stop closes the listener, lets go of the connections still open and
// waits for every connection's goroutine.
func (s *pingServer) stop() {
	s.ln.Close()
	s.cancel()
	s.wg.Wait()
}

func (s *pingServer) serve(ctx context.Context, req *verbs.ConnRequest) {
	cq, err := s.dev.ctx.CreateCQ(4)
	if err != nil {
		req.Reject(nil)
		s.failed.Add(1)
		return
	}
	defer cq.Destroy()
	qp, err := s.dev.pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Cap: verbs.QPCap{MaxSendWR: 2, MaxRecvWR: 1}})
	if err != nil {
		req.Reject(nil)
		s.failed.Add(1)
		return
	}
	defer qp.Destroy()
	buf := make([]byte, pingSize)
	mr, err := s.dev.pd.RegMR(buf, verbs.AccessLocalWrite)
	if err != nil {
		req.Reject(nil)
		s.failed.Add(1)
		return
	}
	defer mr.Dereg()
	if qp.PostRecv(verbs.RecvWR{ID: 1, SGL: []verbs.SGE{mr.SGE(0, pingSize)}}) != nil || req.Accept(qp, nil) != nil {
		s.failed.Add(1)
		return
	}
	wc, err := cq.Wait(ctx)
	if err != nil || wc.Status != verbs.WCSuccess || wc.ByteLen != pingSize ||
		qp.PostSend(verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Signaled: true, SGL: []verbs.SGE{mr.SGE(0, pingSize)}}) != nil {
		s.failed.Add(1)
		return
	}
	if wc, err := cq.Wait(ctx); err != nil || wc.Status != verbs.WCSuccess {
		s.failed.Add(1)
		return
	}
	s.served.Add(1)
	select { // the client disconnects once it has its echo
	case <-qp.Done():
	case <-ctx.Done():
	}
}

// pingClient connects to addr on dev, sends a ping of pingSize bytes from
// rng, checks the echo and disconnects.
type pingClient struct {
	dev *device
	buf []byte
	mr  *verbs.MR
}

func newPingClient(t *testing.T) *pingClient {
	c := &pingClient{dev: openDevice(t, 16), buf: make([]byte, 2*pingSize)}
	var err error
	c.mr, err = c.dev.pd.RegMR(c.buf, verbs.AccessLocalWrite)
	require.NoError(t, err)
	return c
}

func (c *pingClient) ping(ctx context.Context, addr string, tag uint64) error {
	qp, err := c.dev.pd.CreateQP(verbs.QPInitAttr{SendCQ: c.dev.cq, RecvCQ: c.dev.cq, Cap: verbs.QPCap{MaxSendWR: 2, MaxRecvWR: 1}})
	if err != nil {
		return err
	}
	defer qp.Destroy()
	r := rand.New(rand.NewPCG(tag, 5))
	for i := range pingSize {
		c.buf[i] = byte(r.Uint32())
	}
	clear(c.buf[pingSize:])
	if err := qp.PostRecv(verbs.RecvWR{ID: 1, SGL: []verbs.SGE{c.mr.SGE(pingSize, pingSize)}}); err != nil {
		return err
	}
	if err := verbs.Dial(ctx, addr, qp, verbs.ConnParam{StartupTimeout: testwatch.Patience()}); err != nil {
		return err
	}
	if err := qp.PostSend(verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Signaled: true, SGL: []verbs.SGE{c.mr.SGE(0, pingSize)}}); err != nil {
		return err
	}
	for range 2 {
		wc, err := c.dev.cq.Wait(ctx)
		if err != nil {
			return err
		}
		if wc.Status != verbs.WCSuccess {
			return fmt.Errorf("WR %d: %v", wc.ID, wc.Status)
		}
	}
	if string(c.buf[:pingSize]) != string(c.buf[pingSize:]) {
		return errors.New("the echo differs from the ping")
	}
	return qp.Disconnect()
}

// pingAll pings addr with connections first to last-1, spread over the
// clients, which run at once; the first failure fails t.
func pingAll(t *testing.T, ctx context.Context, addr string, clients []*pingClient, first, last int, seed uint64) {
	errs := make(chan error, len(clients))
	for w, c := range clients {
		go func() {
			for i := first + w; i < last; i += len(clients) {
				if err := c.ping(ctx, addr, seed+uint64(i)); err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		err, ok := testwatch.Wait(t, errs, "the pinging clients")
		require.True(t, ok)
		require.NoError(t, err)
	}
}

// TestChurn: 10,000 connection setups and teardowns against one
// persistent server, each moving a verified ping and its echo. The
// server's goroutines, file descriptors and heap are back to their level
// after a warm-up once the last connection is gone.
func TestChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 connections")
	}
	conns, warm, workers := scale(10000, 10), 200, 4
	ctx := testwatch.Context(t, "10,000 connections")
	sd := seed(t)
	s := startPingServer(t, ctx, verbs.ListenConfig{StartupTimeout: testwatch.Patience()})
	addr := s.ln.Addr().String()
	var clients []*pingClient
	for range workers {
		clients = append(clients, newPingClient(t))
	}
	// A warm-up, then the starting level, then the rest from several
	// clients at once.
	for i := range warm {
		require.NoError(t, clients[0].ping(ctx, addr, sd+uint64(i)), "connection %d", i)
	}
	require.True(t, testwatch.Until(t, "the warm-up connections to be released", func() bool { return s.served.Load() == int64(warm) }))
	base := testwatch.Measure()
	start := time.Now()
	pingAll(t, ctx, addr, clients, warm, conns, sd)
	took := time.Since(start)
	require.True(t, testwatch.Until(t, "the server to see every client go", func() bool { return s.served.Load() == int64(conns) }))
	now, err := testwatch.Back(base, 4<<20)
	t.Logf("%d connections set up, pinged and torn down by %d clients in %v (%.0f/s) after %d warm-up ones; before: %v; after: %v",
		conns-warm, workers, took.Round(time.Millisecond), float64(conns-warm)/took.Seconds(), warm, base, now)
	require.NoError(t, err)
	require.Zero(t, s.failed.Load())
	s.stop()
}

// TestServerSurvivesMisbehavingClients: one persistent server, good
// clients pinging it from several goroutines while others misbehave at
// every stage (silence after connecting, garbage instead of an MPA
// Request, half a Request, a Request and then garbage FPDUs, a reset in
// the middle, a connection that stops reading). Every good client gets
// its echo, verified.
func TestServerSurvivesMisbehavingClients(t *testing.T) {
	ctx := testwatch.Context(t, "good clients among misbehaving ones")
	quit := make(chan struct{}) // the misbehaving clients go away
	sd := seed(t)
	s := startPingServer(t, ctx, verbs.ListenConfig{StartupTimeout: testwatch.Patience(), Backlog: 64})
	addr := s.ln.Addr().String()
	bad := []struct {
		name string
		run  func(c net.Conn) error
	}{
		{"silent", func(c net.Conn) error { <-quit; return nil }},
		{"garbage-startup", func(c net.Conn) error {
			_, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
			return err
		}},
		{"half-request", func(c net.Conn) error {
			req, err := (&mpa.Frame{CRC: true, Rev: mpa.Rev1}).Append(nil)
			if err != nil {
				return err
			}
			_, err = c.Write(req[:10])
			<-quit
			return err
		}},
		{"garbage-fpdus", func(c net.Conn) error {
			req, err := (&mpa.Frame{CRC: true, Rev: mpa.Rev1}).Append(nil)
			if err != nil {
				return err
			}
			if _, err := c.Write(req); err != nil {
				return err
			}
			if _, err := mpa.ReadFrame(c, mpa.MaxPrivateData); err != nil {
				return err
			}
			junk := make([]byte, 3000)
			for i := range junk {
				junk[i] = byte(i * 7)
			}
			c.Write(junk)
			io.Copy(io.Discard, c) // the Terminate, then the end
			return nil
		}},
		{"reset", func(c net.Conn) error {
			req, err := (&mpa.Frame{CRC: true, Rev: mpa.Rev1}).Append(nil)
			if err != nil {
				return err
			}
			c.Write(req)
			mpa.ReadFrame(c, mpa.MaxPrivateData)
			c.(*net.TCPConn).SetLinger(0)
			return c.Close()
		}},
		{"stops-reading", func(c net.Conn) error {
			req, err := (&mpa.Frame{CRC: true, Rev: mpa.Rev1}).Append(nil)
			if err != nil {
				return err
			}
			c.Write(req)
			<-quit
			return nil
		}},
	}
	const goodWorkers, goodEach, badEach = 4, 25, 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		badConns []net.Conn
	)
	for _, b := range bad {
		for range badEach {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Errorf("%s: dial: %v", b.name, err)
					return
				}
				mu.Lock()
				badConns = append(badConns, c)
				mu.Unlock()
				b.run(c)
			}()
		}
	}
	var clients []*pingClient
	for range goodWorkers {
		clients = append(clients, newPingClient(t))
	}
	pingAll(t, ctx, addr, clients, 0, goodWorkers*goodEach, sd)
	require.True(t, testwatch.Until(t, "the server to release the good clients", func() bool {
		return s.served.Load() == goodWorkers*goodEach
	}))
	t.Logf("%d good pings served beside %d misbehaving connections (%d ended without an echo)",
		s.served.Load(), len(bad)*badEach, s.failed.Load())
	// The misbehaving ones go away; the server stops cleanly.
	close(quit)
	mu.Lock()
	for _, c := range badConns {
		c.Close()
	}
	mu.Unlock()
	s.stop()
	wg.Wait()
}
