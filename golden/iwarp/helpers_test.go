package iwarp

import (
	"net"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// side is one end of a test connection.
type side struct {
	ep  *Endpoint
	tab *mem.Table
	pd  *mem.PD
	scq *CQ
	rcq *CQ
}

type pairOpts struct {
	markers, noCRC bool
	rev            mpa.Revision
	cfg            Config // ORD, IRD, depths
	cqDepth        int    // 0: 4096
	draft01        bool   // MPA Rev 0: DDP and RDMAP version 0 (RDMA Consortium)
}

// checkLeaks fails the test if goroutines started during it outlive it.
func checkLeaks(t testing.TB) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		if !testwatch.Settle(func() bool { return runtime.NumGoroutine() <= before }) {
			n := runtime.NumGoroutine()
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			var ours []string
			for _, g := range strings.Split(string(buf), "\n\n") {
				if strings.Contains(g, "golden/iwarp") && !strings.Contains(g, "checkLeaks") && !strings.Contains(g, "testing.tRunner") {
					ours = append(ours, g)
				}
			}
			t.Errorf("goroutine leak: %d before, %d after:\n%s", before, n, strings.Join(ours, "\n\n"))
		}
	})
}

func listen(t testing.TB) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return ln
}

func mpaConfig(o pairOpts) mpa.Config {
	c := mpa.Config{Rev: o.rev, Markers: o.markers, NoCRC: o.noCRC, IRD: 16, ORD: 16, Draft01: o.draft01}
	if o.draft01 {
		return c
	}
	if c.Rev == 0 {
		c.Rev = mpa.Rev2
	}
	if c.Rev == mpa.Rev2 {
		c.PeerToPeer, c.RTR = true, mpa.RTRWrite
	}
	return c
}

func newSide(t testing.TB, conn net.Conn, p mpa.Params, o pairOpts) *side {
	tab := mem.NewTable()
	depth := o.cqDepth
	if depth == 0 {
		depth = 4096
	}
	s := &side{tab: tab, pd: tab.AllocPD(), scq: NewCQ(depth), rcq: NewCQ(depth)}
	cfg := o.cfg
	cfg.PD, cfg.SendCQ, cfg.RecvCQ = s.pd, s.scq, s.rcq
	ep, err := New(conn, p, cfg)
	require.NoError(t, err)
	s.ep = ep
	t.Cleanup(func() { ep.Close() })
	return s
}

// pair connects two endpoints over TCP on 127.0.0.1.
func pair(t testing.TB, o pairOpts) (client, server *side) {
	cc, cp, sc, sp := connectMPA(t, mpaConfig(o), mpaConfig(o))
	return newSide(t, cc, cp, o), newSide(t, sc, sp, o)
}

// connectMPA opens a TCP connection on 127.0.0.1 and runs the MPA startup
// on it, initiator side with icfg, responder side with rcfg.
func connectMPA(t testing.TB, icfg, rcfg mpa.Config) (cc net.Conn, cp mpa.Params, sc net.Conn, sp mpa.Params) {
	ln := listen(t)
	ctx, end := testwatch.Step(t, "the MPA startup on 127.0.0.1")
	defer end()
	for _, c := range []*mpa.Config{&icfg, &rcfg} {
		if c.Timeout == 0 { // the default is a bound a loaded machine could reach
			c.Timeout = testwatch.Patience()
		}
	}
	type res struct {
		c   net.Conn
		p   mpa.Params
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- res{err: err}
			return
		}
		p, err := mpa.Respond(ctx, c, rcfg)
		ch <- res{c, p, err}
	}()
	cc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	cp, err = mpa.Initiate(ctx, cc, icfg)
	require.NoError(t, err)
	r := <-ch
	require.NoError(t, r.err)
	t.Cleanup(func() { r.c.Close() })
	return cc, cp, r.c, r.p
}

func (s *side) reg(t testing.TB, buf []byte, addr uint64, acc mem.Access) *mem.MR {
	mr, err := s.pd.RegisterMR(buf, addr, acc, 0)
	require.NoError(t, err)
	return mr
}

func wait(t testing.TB, cq *CQ) Completion {
	ctx, end := testwatch.Step(t, "a completion")
	defer end()
	c, err := cq.Wait(ctx)
	require.NoError(t, err)
	return c
}

func waitOK(t testing.TB, cq *CQ, id uint64, op WCOpcode) Completion {
	c := wait(t, cq)
	require.Equal(t, WCSuccess, c.Status, "WR %d: %v", c.ID, c.Status)
	require.Equal(t, id, c.ID)
	require.Equal(t, op, c.Opcode)
	return c
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*7) + seed
	}
}

const all = mem.LocalWrite | mem.RemoteRead | mem.RemoteWrite
