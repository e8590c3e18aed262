package verbs_test

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// slowLoris opens a connection to addr and sends ten octets of an MPA
// Request, then nothing.
func slowLoris(t *testing.T, addr string) net.Conn {
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = c.Write([]byte("MPA ID Req"))
	require.NoError(t, err)
	return c
}

// closedByPeer waits (watchdog: testwatch.Patience) until the listener closes c and
// returns when it did.
func closedByPeer(t *testing.T, c net.Conn) time.Time {
	c.SetReadDeadline(testwatch.Deadline())
	n, err := c.Read(make([]byte, 1))
	require.Zero(t, n, "the listener sent something to a half Request")
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the listener kept a stalled startup past the watchdog")
	require.Error(t, err) // EOF, or a reset
	return time.Now()
}

// goodClient connects a well-behaved client through ln and checks that
// one Send gets across.
func goodClient(t *testing.T, ctx context.Context, ln *verbs.Listener) {
	srv := newEnd(t)
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err == nil {
			err = req.Accept(srv.qp, nil)
		}
		accepted <- err
	}()
	cli := newEnd(t)
	require.NoError(t, verbs.Dial(ctx, ln.Addr().String(), cli.qp, verbs.ConnParam{}), "the well-behaved client")
	require.NoError(t, <-accepted)
	require.NoError(t, srv.qp.PostRecv(verbs.RecvWR{ID: 1, SGL: []verbs.SGE{srv.mr.SGE(0, 16)}}))
	require.NoError(t, cli.qp.PostSend(verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Inline: []byte("served"), Signaled: true}))
	wc, err := srv.cq.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, verbs.WCSuccess, wc.Status)
	require.Equal(t, "served", string(srv.buf[:6]))
}

type end struct {
	qp  *verbs.QP
	cq  *verbs.CQ
	mr  *verbs.MR
	buf []byte
}

func newEnd(t *testing.T) *end {
	ctx, err := verbs.Open("model")
	require.NoError(t, err)
	t.Cleanup(func() { ctx.Close() })
	pd, err := ctx.AllocPD()
	require.NoError(t, err)
	e := &end{buf: make([]byte, 64)}
	e.cq, err = ctx.CreateCQ(16)
	require.NoError(t, err)
	e.qp, err = pd.CreateQP(verbs.QPInitAttr{SendCQ: e.cq, RecvCQ: e.cq})
	require.NoError(t, err)
	e.mr, err = pd.RegMR(e.buf, verbs.AccessLocalWrite)
	require.NoError(t, err)
	return e
}

// TestSlowLoris: fifty connections that send half an MPA Request and
// stall are each dropped once the startup limit has passed (not before),
// while a well-behaved client is served meanwhile.
func TestSlowLoris(t *testing.T) {
	const limit = 500 * time.Millisecond
	var mu sync.Mutex
	var reported []error
	ln, err := verbs.Listen("127.0.0.1:0", verbs.ListenConfig{StartupTimeout: limit, OnStartupError: func(_ net.Addr, err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	}})
	require.NoError(t, err)
	defer ln.Close()
	ctx := testwatch.Context(t, "fifty slow-loris connections and a good client")
	var conns []net.Conn
	var dialed []time.Time // before the dial: the listener's clock starts later
	for range 50 {
		dialed = append(dialed, time.Now())
		conns = append(conns, slowLoris(t, ln.Addr().String()))
	}
	goodClient(t, ctx, ln)
	for i, c := range conns {
		held := closedByPeer(t, c).Sub(dialed[i])
		require.GreaterOrEqual(t, held, limit, "connection %d dropped before the startup limit", i)
	}
	testwatch.Until(t, "50 startups counted as timed out", func() bool { return ln.Stats().TimedOut == 50 })
	st := ln.Stats()
	require.Equal(t, uint64(51), st.Accepted)
	require.Equal(t, uint64(1), st.Connected)
	require.Zero(t, st.Refused)
	require.Zero(t, st.InStartup)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, reported, 50)
	for _, err := range reported {
		require.ErrorContains(t, err, "incomplete")
	}
}

// TestMaxStartups: with MaxStartups stalled startups under way, one more
// connection is closed at once (long before the startup limit), counted
// and reported; once the stalled ones are gone a client is served again.
func TestMaxStartups(t *testing.T) {
	const max = 4
	refused := make(chan error, 8)
	ln, err := verbs.Listen("127.0.0.1:0", verbs.ListenConfig{StartupTimeout: time.Hour, MaxStartups: max,
		OnStartupError: func(_ net.Addr, err error) {
			if errors.Is(err, verbs.ErrTooManyStartups) {
				refused <- err
			}
		}})
	require.NoError(t, err)
	defer ln.Close()
	ctx := testwatch.Context(t, "the half-done bound")
	var stalled []net.Conn
	for range max {
		stalled = append(stalled, slowLoris(t, ln.Addr().String()))
	}
	testwatch.Until(t, "the stalled startups under way", func() bool { return ln.Stats().InStartup == max })
	extra := slowLoris(t, ln.Addr().String())
	closedByPeer(t, extra) // well within the watchdog; the limit is an hour
	select {
	case err := <-refused:
		require.ErrorContains(t, err, "4 in progress")
	case <-ctx.Done():
		t.Fatal("the refused connection was not reported")
	}
	require.Equal(t, uint64(1), ln.Stats().Refused)
	for _, c := range stalled {
		c.Close()
	}
	testwatch.Until(t, "the stalled startups gone", func() bool { return ln.Stats().InStartup == 0 })
	goodClient(t, ctx, ln)
	st := ln.Stats()
	require.Equal(t, uint64(max+2), st.Accepted)
	require.Equal(t, uint64(max), st.Failed, "the stalled ones that went away")
}
