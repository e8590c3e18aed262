// Package verbstest is the verbs test suite, written once and run on every
// card: host/verbs runs it on the model card, host/driver/simcard on the
// sim card, each over real TCP on 127.0.0.1. Every case asserts what the peer
// really received, byte for byte.
package verbstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// Options size the suite for a card.
type Options struct {
	// MaxSize is the largest message (default 16 MiB).
	MaxSize int
	// QPs is how many connections run at once in the many-QP case (default 16).
	QPs int
	// Seed seeds the payloads (default: from the clock; printed on failure).
	Seed uint64
}

// Sizes are the message sizes the suite moves, up to Options.MaxSize.
var Sizes = []int{0, 1, 3, 4, 511, 4096, 65535, 65536 + 7, 1 << 20, 16 << 20}

// Run runs the whole suite on device.
func Run(t *testing.T, device string, o Options) {
	if o.MaxSize == 0 {
		o.MaxSize = 16 << 20
	}
	if o.QPs == 0 {
		o.QPs = 16
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	t.Logf("verbs suite on %q, seed %d (Options.Seed reproduces it)", device, o.Seed)
	base := runtime.NumGoroutine()
	s := &suite{dev: device, o: o, rng: rand.New(rand.NewPCG(o.Seed, 0x1b873593))}
	for _, c := range []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"Write", s.write}, {"Read", s.read}, {"Send", s.send},
		{"SendWithInvalidate", s.sendInv}, {"SolicitedEvent", s.solicited},
		{"ScatterGather", s.sgl}, {"PostCopiesWR", s.postCopies}, {"Unsignaled", s.unsignaled}, {"Inline", s.inline}, {"ReadFence", s.fence},
		{"MPAOptions", s.mpaOptions}, {"PrivateDataAndReject", s.reject},
		{"ManyQPs", s.manyQPs}, {"RemoteAccessError", s.remoteAccess},
		{"FlushOnDisconnect", s.flush}, {"BadUse", s.badUse}, {"TerminateBeforeFIN", s.terminateBeforeFIN},
		{"MemoryWindows", s.memoryWRs},
	} {
		if !t.Run(c.name, c.fn) {
			t.Logf("seed %d", o.Seed)
		}
	}
	// Every object is closed now: no goroutine may be left behind.
	if !testwatch.Settle(func() bool { return runtime.NumGoroutine() <= base }) {
		n := runtime.NumGoroutine()
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines leaked:\n%s", n-base, buf[:runtime.Stack(buf, true)])
	}
}

type suite struct {
	dev string
	o   Options
	mu  sync.Mutex
	rng *rand.Rand
}

func (s *suite) fill(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i < len(b); i += 8 {
		v := s.rng.Uint64()
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
}

func (s *suite) sizes() []int {
	var out []int
	for _, n := range Sizes {
		if n <= s.o.MaxSize {
			out = append(out, n)
		}
	}
	return out
}

// timeout is the context of a case: a watchdog that fails the case, with
// every goroutine's stack, if it is stuck for testwatch.Patience.
func timeout(t *testing.T) context.Context { return testwatch.Context(t, t.Name()) }

// End is one side of a connection: a device, a PD, one CQ and a QP, and a
// registered buffer.
type End struct {
	Ctx *verbs.Context
	PD  *verbs.PD
	CQ  *verbs.CQ
	QP  *verbs.QP
	Buf []byte
	MR  *verbs.MR
}

// Setup makes the devices, PDs, CQs, QPs and buffers of a pair (not yet connected).
func Setup(t testing.TB, device string, bufSize int, attr verbs.QPInitAttr) (a, b *End) {
	mk := func() *End {
		e := &End{}
		var err error
		e.Ctx, err = verbs.Open(device)
		require.NoError(t, err)
		t.Cleanup(func() { closeBounded(t, e.Ctx) })
		e.PD, err = e.Ctx.AllocPD()
		require.NoError(t, err)
		e.CQ, err = e.Ctx.CreateCQ(1024)
		require.NoError(t, err)
		at := attr
		at.SendCQ, at.RecvCQ = e.CQ, e.CQ
		e.QP, err = e.PD.CreateQP(at)
		require.NoError(t, err)
		e.Buf = make([]byte, bufSize)
		e.MR, err = e.PD.RegMR(e.Buf, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
		require.NoError(t, err)
		return e
	}
	return mk(), mk()
}

// closeBounded closes a device, failing the test instead of hanging if
// the card does not let go.
func closeBounded(t testing.TB, c *verbs.Context) {
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	testwatch.Done(t, done, "closing the "+c.Info().Name+" device")
}

// noPanic runs fn, turning a panic into a test failure that names it.
func noPanic(t testing.TB, what string, fn func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s panicked: %v\n%s", what, r, stack())
		}
	}()
	fn()
}

func stack() []byte {
	buf := make([]byte, 64<<10)
	return buf[:runtime.Stack(buf, false)]
}

// Connect connects a (Initiator) to b (Responder) over 127.0.0.1. A zero
// StartupTimeout in cp or lc becomes testwatch.Patience: the MPA startup's own
// default is a bound a loaded machine could reach.
func Connect(t testing.TB, ctx context.Context, a, b *End, cp verbs.ConnParam, lc verbs.ListenConfig) {
	if cp.StartupTimeout == 0 {
		cp.StartupTimeout = testwatch.Patience()
	}
	if lc.StartupTimeout == 0 {
		lc.StartupTimeout = testwatch.Patience()
	}
	ln, err := verbs.Listen("127.0.0.1:0", lc)
	require.NoError(t, err)
	defer ln.Close()
	errc := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err == nil {
			err = req.Accept(b.QP, nil)
		}
		errc <- err
	}()
	require.NoError(t, verbs.Dial(ctx, ln.Addr().String(), a.QP, cp))
	require.NoError(t, <-errc)
	require.Equal(t, verbs.QPSRTS, a.QP.State())
}

// Pair is Setup then Connect with default options.
func Pair(t testing.TB, ctx context.Context, device string, bufSize int) (a, b *End) {
	a, b = Setup(t, device, bufSize, verbs.QPInitAttr{})
	Connect(t, ctx, a, b, verbs.ConnParam{}, verbs.ListenConfig{})
	return a, b
}

// Expect waits for the next completion and checks its status.
func Expect(t testing.TB, ctx context.Context, cq *verbs.CQ, id uint64, status verbs.WCStatus) verbs.WC {
	t.Helper()
	wc, err := cq.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, status.String(), wc.Status.String(), "completion of WR %d", wc.ID)
	require.Equal(t, id, wc.ID)
	return wc
}

// barrier waits until everything a sent before has been placed at b: a
// zero-length Send delivered to b (RFC 5040 §5.5 rule 10).
func barrier(t testing.TB, ctx context.Context, a, b *End, id uint64) {
	t.Helper()
	require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: id}))
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: id, Opcode: verbs.WRSend}))
	wc := Expect(t, ctx, b.CQ, id, verbs.WCSuccess)
	require.Equal(t, verbs.WCRecv, wc.Opcode)
	require.Zero(t, wc.ByteLen)
}

func equal(t testing.TB, want, got []byte, what string) {
	t.Helper()
	if !bytes.Equal(want, got) {
		i := 0
		for i < len(want) && i < len(got) && want[i] == got[i] {
			i++
		}
		t.Fatalf("%s: %d bytes differ from byte %d on", what, len(want), i)
	}
}

func (s *suite) write(t *testing.T) {
	ctx := timeout(t)
	a, b := Pair(t, ctx, s.dev, s.o.MaxSize+64)
	for i, n := range s.sizes() {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			off := i % 7
			s.fill(a.Buf[:n+off])
			clear(b.Buf)
			require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: uint64(i), Opcode: verbs.WRRDMAWrite, Signaled: true,
				SGL: []verbs.SGE{a.MR.SGE(off, n)}, RemoteAddr: b.MR.Addr() + uint64(off), RKey: b.MR.RKey()}))
			wc := Expect(t, ctx, a.CQ, uint64(i), verbs.WCSuccess)
			require.Equal(t, verbs.WCRDMAWrite, wc.Opcode)
			require.Equal(t, uint32(n), wc.ByteLen)
			barrier(t, ctx, a, b, 1000+uint64(i))
			equal(t, a.Buf[off:off+n], b.Buf[off:off+n], "written bytes")
			require.Zero(t, bytes.Count(b.Buf[off+n:], []byte{0})-len(b.Buf[off+n:]), "bytes past the Write")
		})
	}
}

func (s *suite) read(t *testing.T) {
	ctx := timeout(t)
	a, b := Pair(t, ctx, s.dev, s.o.MaxSize+64)
	for i, n := range s.sizes() {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			off := i % 5
			s.fill(b.Buf[:n+off])
			clear(a.Buf)
			require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: uint64(i), Opcode: verbs.WRRDMARead, Signaled: true,
				SGL: []verbs.SGE{a.MR.SGE(off, n)}, RemoteAddr: b.MR.Addr() + uint64(off), RKey: b.MR.RKey()}))
			wc := Expect(t, ctx, a.CQ, uint64(i), verbs.WCSuccess)
			require.Equal(t, verbs.WCRDMARead, wc.Opcode)
			require.Equal(t, uint32(n), wc.ByteLen)
			equal(t, b.Buf[off:off+n], a.Buf[off:off+n], "read bytes")
			require.Zero(t, bytes.Count(a.Buf[off+n:], []byte{0})-len(a.Buf[off+n:]), "bytes past the Read")
		})
	}
}

func (s *suite) send(t *testing.T) {
	ctx := timeout(t)
	a, b := Pair(t, ctx, s.dev, s.o.MaxSize)
	for i, n := range s.sizes() {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s.fill(a.Buf[:n])
			clear(b.Buf)
			require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{b.MR.SGE(0, len(b.Buf))}}))
			require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: uint64(i), Opcode: verbs.WRSend, Signaled: true,
				SGL: []verbs.SGE{a.MR.SGE(0, n)}}))
			wc := Expect(t, ctx, a.CQ, uint64(i), verbs.WCSuccess)
			require.Equal(t, verbs.WCSend, wc.Opcode)
			wc = Expect(t, ctx, b.CQ, uint64(i), verbs.WCSuccess)
			require.Equal(t, verbs.WCRecv, wc.Opcode)
			require.Equal(t, uint32(n), wc.ByteLen)
			require.Equal(t, a.QP.Num() != 0, true)
			require.Equal(t, b.QP.Num(), wc.QP)
			equal(t, a.Buf[:n], b.Buf[:n], "received bytes")
		})
	}
}

// postCopies checks that a posted WR is consumed at post time
// (ibv_post_send, ibv_post_recv): the caller may reuse its SGL and inline
// slices at once, before and after connecting.
func (s *suite) postCopies(t *testing.T) {
	ctx := timeout(t)
	a, b := Setup(t, s.dev, 4096, verbs.QPInitAttr{})
	s.fill(a.Buf)
	sgl := []verbs.SGE{b.MR.SGE(100, 50), b.MR.SGE(1000, 50)}
	require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: 1, SGL: sgl})) // before connecting
	sgl[0], sgl[1] = b.MR.SGE(0, 50), b.MR.SGE(0, 50)
	Connect(t, ctx, a, b, verbs.ConnParam{}, verbs.ListenConfig{})
	rsgl := []verbs.SGE{b.MR.SGE(2000, 100)}
	require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: 2, SGL: rsgl})) // connected
	rsgl[0] = b.MR.SGE(0, 100)
	ssgl := []verbs.SGE{a.MR.SGE(0, 60), a.MR.SGE(500, 40)}
	inline := []byte("inline payload")
	require.NoError(t, a.QP.PostSend(
		verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: ssgl, Signaled: true},
		verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Inline: inline, Signaled: true}))
	ssgl[0], ssgl[1] = a.MR.SGE(3000, 60), a.MR.SGE(3000, 40)
	copy(inline, "XXXXXXXXXXXXXX")
	Expect(t, ctx, a.CQ, 1, verbs.WCSuccess)
	Expect(t, ctx, a.CQ, 2, verbs.WCSuccess)
	wc := Expect(t, ctx, b.CQ, 1, verbs.WCSuccess)
	require.Equal(t, uint32(100), wc.ByteLen)
	want := append(append([]byte(nil), a.Buf[:60]...), a.Buf[500:540]...)
	equal(t, want[:50], b.Buf[100:150], "first SGE of the receive posted before connecting")
	equal(t, want[50:], b.Buf[1000:1050], "its second SGE")
	wc = Expect(t, ctx, b.CQ, 2, verbs.WCSuccess)
	require.Equal(t, uint32(14), wc.ByteLen)
	equal(t, []byte("inline payload"), b.Buf[2000:2014], "inline Send into the receive posted after connecting")
}

func (s *suite) sendInv(t *testing.T) {
	ctx := timeout(t)
	a, b := Pair(t, ctx, s.dev, 4096)
	// Only a region scoped to the stream can be invalidated remotely.
	shared := b.MR
	target := make([]byte, 256)
	tmr, err := b.QP.RegMR(target, verbs.AccessRemoteWrite|verbs.AccessLocalWrite)
	require.NoError(t, err)
	s.fill(a.Buf[:100])
	require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: 1, SGL: []verbs.SGE{b.MR.SGE(0, 4096)}}))
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 2, Opcode: verbs.WRSendWithInv, InvalidateSTag: tmr.RKey(),
		Solicited: true, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, 100)}}))
	Expect(t, ctx, a.CQ, 2, verbs.WCSuccess)
	wc := Expect(t, ctx, b.CQ, 1, verbs.WCSuccess)
	require.True(t, wc.Invalidated)
	require.Equal(t, tmr.RKey(), wc.InvalidatedSTag)
	require.True(t, wc.Solicited)
	require.Equal(t, uint32(100), wc.ByteLen)
	equal(t, a.Buf[:100], b.Buf[:100], "Send with Invalidate payload")
	// The region is dead now: a Write to it is a remote access error.
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 3, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.MR.SGE(0, 8)},
		RemoteAddr: tmr.Addr(), RKey: tmr.RKey()}, verbs.SendWR{ID: 4, Opcode: verbs.WRRDMARead, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, 8)},
		RemoteAddr: shared.Addr(), RKey: shared.RKey()}))
	wc, err = a.CQ.Wait(ctx)
	require.NoError(t, err)
	require.NotEqual(t, verbs.WCSuccess, wc.Status, "a Read behind a Write to an invalidated STag")
	require.Equal(t, make([]byte, 256), target, "nothing may land in an invalidated region")
	<-a.QP.Done()
	var ie *iwarp.Error
	require.ErrorAs(t, a.QP.Err(), &ie)
	require.True(t, ie.Remote, "a learns from b's Terminate: %v", ie)
}

func (s *suite) solicited(t *testing.T) {
	ctx := timeout(t)
	a, b := Pair(t, ctx, s.dev, 4096)
	require.NoError(t, b.CQ.ReqNotify(true))
	require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: 1, SGL: []verbs.SGE{b.MR.SGE(0, 64)}}, verbs.RecvWR{ID: 2, SGL: []verbs.SGE{b.MR.SGE(64, 64)}}))
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRSend, SGL: []verbs.SGE{a.MR.SGE(0, 10)}}))
	wc := Expect(t, ctx, b.CQ, 1, verbs.WCSuccess)
	require.False(t, wc.Solicited)
	select {
	case <-b.CQ.Notify():
		t.Fatal("an unsolicited Send fired a solicited-only notification")
	default:
	}
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Solicited: true, SGL: []verbs.SGE{a.MR.SGE(0, 10)}}))
	select {
	case <-b.CQ.Notify():
	case <-ctx.Done():
		t.Fatal("no notification for a Send with Solicited Event")
	}
	wc = Expect(t, ctx, b.CQ, 2, verbs.WCSuccess)
	require.True(t, wc.Solicited)
	// Re-armed for any completion, the next one fires it.
	require.NoError(t, a.CQ.ReqNotify(false))
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 3, Opcode: verbs.WRRDMAWrite, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, 10)},
		RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()}))
	select {
	case <-a.CQ.Notify():
	case <-ctx.Done():
		t.Fatal("no notification for a signaled Write")
	}
	Expect(t, ctx, a.CQ, 3, verbs.WCSuccess)
}

func (s *suite) sgl(t *testing.T) {
	ctx := timeout(t)
	a, b := Pair(t, ctx, s.dev, 1<<16)
	extra := make([]byte, 1000)
	s.fill(extra)
	s.fill(a.Buf)
	xmr, err := a.PD.RegMR(extra, 0)
	require.NoError(t, err)
	defer xmr.Dereg()
	// Gather 3 pieces from two regions; scatter into 2 pieces.
	gather := []verbs.SGE{a.MR.SGE(10, 3000), xmr.SGE(1, 999), a.MR.SGE(40000, 5001)}
	var want []byte
	want = append(want, a.Buf[10:3010]...)
	want = append(want, extra[1:1000]...)
	want = append(want, a.Buf[40000:45001]...)
	require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: 1, SGL: []verbs.SGE{b.MR.SGE(100, 4000), b.MR.SGE(20000, 6000)}}))
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRSend, Signaled: true, SGL: gather}))
	wc := Expect(t, ctx, b.CQ, 1, verbs.WCSuccess)
	require.Equal(t, uint32(len(want)), wc.ByteLen)
	got := append(append([]byte(nil), b.Buf[100:4100]...), b.Buf[20000:20000+len(want)-4000]...)
	equal(t, want, got, "scattered bytes")
	// A Write gathers too, and a Read scatters into one SGE.
	clear(b.Buf)
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWrite, SGL: gather, RemoteAddr: b.MR.Addr() + 7, RKey: b.MR.RKey()}))
	barrier(t, ctx, a, b, 3)
	equal(t, want, b.Buf[7:7+len(want)], "gathered Write")
}

func (s *suite) unsignaled(t *testing.T) {
	ctx := timeout(t)
	a, b := Pair(t, ctx, s.dev, 1<<16)
	s.fill(a.Buf)
	for i := range 10 {
		require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: uint64(i), Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.MR.SGE(i*100, 100)},
			RemoteAddr: b.MR.Addr() + uint64(i*100), RKey: b.MR.RKey(), Signaled: i == 9}))
	}
	Expect(t, ctx, a.CQ, 9, verbs.WCSuccess)
	var wc [4]verbs.WC
	n, err := a.CQ.Poll(wc[:])
	require.NoError(t, err)
	require.Zero(t, n, "unsignaled WRs completed: %+v", wc[:n])
	barrier(t, ctx, a, b, 100)
	equal(t, a.Buf[:1000], b.Buf[:1000], "unsignaled Writes")
}

func (s *suite) inline(t *testing.T) {
	ctx := timeout(t)
	a, b := Pair(t, ctx, s.dev, 4096)
	data := []byte("inline payload: copied at post time, no lkey")
	require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: 1, SGL: []verbs.SGE{b.MR.SGE(0, 4096)}}))
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRSend, Inline: data, Signaled: true}))
	copy(data, "XXXXXX") // the card copied it already
	Expect(t, ctx, a.CQ, 1, verbs.WCSuccess)
	wc := Expect(t, ctx, b.CQ, 1, verbs.WCSuccess)
	require.Equal(t, "inline payload: copied at post time, no lkey", string(b.Buf[:wc.ByteLen]))
	require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 2, Opcode: verbs.WRRDMAWrite, Inline: []byte("w"), Signaled: true,
		RemoteAddr: b.MR.Addr() + 100, RKey: b.MR.RKey()}))
	Expect(t, ctx, a.CQ, 2, verbs.WCSuccess)
	barrier(t, ctx, a, b, 3)
	require.Equal(t, byte('w'), b.Buf[100])
}

// fence: a Write fenced behind a Read of the same remote bytes starts only
// once the Read has completed, so the Read returns the old bytes (digest
// §3.4; without the fence RFC 5040 §5.5 rule 12 lets it see the new ones).
func (s *suite) fence(t *testing.T) {
	ctx := timeout(t)
	n := min(s.o.MaxSize, 256<<10)
	a, b := Pair(t, ctx, s.dev, 2*n)
	for round := range 5 {
		s.fill(b.Buf[:n])
		old := append([]byte(nil), b.Buf[:n]...)
		s.fill(a.Buf[n:])
		id := uint64(10 * round)
		require.NoError(t, a.QP.PostSend(
			verbs.SendWR{ID: id + 1, Opcode: verbs.WRRDMARead, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, n)}, RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()},
			verbs.SendWR{ID: id + 2, Opcode: verbs.WRRDMAWrite, Fence: true, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(n, n)}, RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()}))
		Expect(t, ctx, a.CQ, id+1, verbs.WCSuccess)
		Expect(t, ctx, a.CQ, id+2, verbs.WCSuccess)
		barrier(t, ctx, a, b, id+3)
		equal(t, old, a.Buf[:n], "the Read before a fenced Write")
		equal(t, a.Buf[n:], b.Buf[:n], "the fenced Write")
	}
}

func (s *suite) mpaOptions(t *testing.T) {
	for _, c := range []struct {
		name string
		cp   verbs.ConnParam
		lc   verbs.ListenConfig
		want func(p mpa.Params) bool
	}{
		{"rev1-crc", verbs.ConnParam{}, verbs.ListenConfig{}, func(p mpa.Params) bool { return p.Rev == mpa.Rev1 && p.CRC && !p.TxMarkers }},
		{"rev2-markers-both", verbs.ConnParam{Rev: mpa.Rev2, Markers: true}, verbs.ListenConfig{Markers: true},
			func(p mpa.Params) bool { return p.Rev == mpa.Rev2 && p.TxMarkers && p.RxMarkers }},
		{"markers-one-way", verbs.ConnParam{Markers: true}, verbs.ListenConfig{},
			func(p mpa.Params) bool { return !p.TxMarkers && p.RxMarkers }},
		{"no-crc", verbs.ConnParam{NoCRC: true}, verbs.ListenConfig{NoCRC: true}, func(p mpa.Params) bool { return !p.CRC }},
		{"draft01", verbs.ConnParam{Draft01: true}, verbs.ListenConfig{Draft01: true},
			func(p mpa.Params) bool { return p.Rev == mpa.Rev0 && p.CRC && p.TxMarkers }},
		{"rev2-peer-to-peer", verbs.ConnParam{Rev: mpa.Rev2, PeerToPeer: true}, verbs.ListenConfig{PeerToPeer: true},
			func(p mpa.Params) bool { return p.Rev == mpa.Rev2 && p.RTR != 0 }},
		// From another loopback address (127.0.0.0/8 is all loopback on Linux).
		{"source-address", verbs.ConnParam{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}, verbs.ListenConfig{},
			func(p mpa.Params) bool { return p.Rev == mpa.Rev1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := timeout(t)
			n := min(s.o.MaxSize, 100000)
			a, b := Setup(t, s.dev, n, verbs.QPInitAttr{})
			Connect(t, ctx, a, b, c.cp, c.lc)
			require.True(t, c.want(a.QP.Params()), "%+v", a.QP.Params())
			if c.cp.LocalAddr != nil {
				require.Equal(t, c.cp.LocalAddr.IP.String(), a.QP.LocalAddr().(*net.TCPAddr).IP.String())
				require.Equal(t, c.cp.LocalAddr.IP.String(), b.QP.RemoteAddr().(*net.TCPAddr).IP.String())
			}
			s.fill(a.Buf)
			s.fill(b.Buf[:n/2])
			require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.MR.SGE(n/2, n-n/2)},
				RemoteAddr: b.MR.Addr() + uint64(n/2), RKey: b.MR.RKey()}))
			require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, n/2)},
				RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()}))
			Expect(t, ctx, a.CQ, 2, verbs.WCSuccess)
			barrier(t, ctx, a, b, 3)
			// b also sends (the Responder speaks after the first FPDU).
			require.NoError(t, a.QP.PostRecv(verbs.RecvWR{ID: 4, SGL: []verbs.SGE{a.MR.SGE(0, 100)}}))
			require.NoError(t, b.QP.PostSend(verbs.SendWR{ID: 4, Opcode: verbs.WRSend, Inline: []byte("back")}))
			Expect(t, ctx, a.CQ, 4, verbs.WCSuccess)
			require.Equal(t, "back", string(a.Buf[:4]))
			equal(t, a.Buf[n/2:], b.Buf[n/2:], "Write")
		})
	}
}

func (s *suite) reject(t *testing.T) {
	ctx := timeout(t)
	a, b := Setup(t, s.dev, 64, verbs.QPInitAttr{})
	ln, err := verbs.Listen("127.0.0.1:0", verbs.ListenConfig{MaxRev: mpa.Rev2})
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		if req, err := ln.Accept(ctx); err == nil {
			if string(req.PrivateData) == "let me in" {
				req.Accept(b.QP, []byte("welcome"))
			} else {
				req.Reject([]byte("go away: " + string(req.PrivateData)))
			}
		}
	}()
	err = verbs.Dial(ctx, ln.Addr().String(), a.QP, verbs.ConnParam{PrivateData: []byte("hi"), Rev: mpa.Rev2})
	require.ErrorIs(t, err, verbs.ErrRejected)
	require.ErrorIs(t, err, mpa.ErrRejected)
	var re *verbs.RejectError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "go away: hi", string(re.PrivateData))
	require.Equal(t, verbs.QPSInit, a.QP.State())
	// The same QP can still connect.
	go func() {
		if req, err := ln.Accept(ctx); err == nil {
			req.Accept(b.QP, []byte("welcome"))
		}
	}()
	require.NoError(t, verbs.Dial(ctx, ln.Addr().String(), a.QP, verbs.ConnParam{PrivateData: []byte("let me in"), Rev: mpa.Rev2}))
	require.Equal(t, "welcome", string(a.QP.Params().PeerPD))
	require.Equal(t, mpa.Rev2, a.QP.Params().Rev)
}

func (s *suite) manyQPs(t *testing.T) {
	ctx := timeout(t)
	n := min(s.o.MaxSize, 256<<10)
	var wg sync.WaitGroup
	errs := make(chan error, s.o.QPs)
	ends := make([][2]*End, s.o.QPs)
	for i := range ends {
		a, b := Pair(t, ctx, s.dev, n)
		ends[i] = [2]*End{a, b}
	}
	for i, e := range ends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.exchange(ctx, e[0], e[1], n, uint64(i))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// exchange writes, reads and sends n bytes each way on one pair (for use
// from several goroutines: no testing.T).
func (s *suite) exchange(ctx context.Context, a, b *End, n int, id uint64) error {
	wait := func(cq *verbs.CQ, op verbs.WCOpcode) error {
		wc, err := cq.Wait(ctx)
		if err == nil && (wc.Status != verbs.WCSuccess || wc.Opcode != op) {
			err = fmt.Errorf("pair %d: %v completion with status %v", id, wc.Opcode, wc.Status)
		}
		return err
	}
	half := n / 2
	s.fill(a.Buf[:half])
	s.fill(b.Buf[half:])
	steps := []func() error{
		func() error { return b.QP.PostRecv(verbs.RecvWR{ID: 1, SGL: []verbs.SGE{b.MR.SGE(0, 0)}}) },
		func() error {
			return a.QP.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.MR.SGE(0, half)}, RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()},
				verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(half, n-half)}, RemoteAddr: b.MR.Addr() + uint64(half), RKey: b.MR.RKey()},
				verbs.SendWR{ID: 3, Opcode: verbs.WRSend})
		},
		func() error { return wait(a.CQ, verbs.WCRDMARead) },
		func() error { return wait(b.CQ, verbs.WCRecv) },
	}
	for _, st := range steps {
		if err := st(); err != nil {
			return fmt.Errorf("pair %d: %w", id, err)
		}
	}
	if !bytes.Equal(a.Buf, b.Buf) {
		return fmt.Errorf("pair %d: buffers differ after Write+Read", id)
	}
	return nil
}

func (s *suite) remoteAccess(t *testing.T) {
	t.Run("Read-bad-rkey", func(t *testing.T) {
		ctx := timeout(t)
		a, b := Pair(t, ctx, s.dev, 4096)
		require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, 16)},
			RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey() ^ 0x01}))
		Expect(t, ctx, a.CQ, 1, verbs.WCRemAccessErr)
		<-b.QP.Done()
		var ie *iwarp.Error
		require.ErrorAs(t, b.QP.Err(), &ie)
		require.False(t, ie.Remote)
		select { // a's stream ends too, once its teardown has run
		case <-a.QP.Done():
		case <-ctx.Done():
			t.Fatal("the requester's QP did not end after the peer's Terminate")
		}
		require.Equal(t, verbs.QPSError, a.QP.State())
		require.ErrorIs(t, a.QP.PostSend(verbs.SendWR{Opcode: verbs.WRSend}), verbs.ErrQPError)
	})
	t.Run("Read-no-right", func(t *testing.T) {
		ctx := timeout(t)
		a, b := Pair(t, ctx, s.dev, 4096)
		wo, err := b.PD.RegMR(make([]byte, 64), verbs.AccessRemoteWrite)
		require.NoError(t, err)
		require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRRDMARead, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, 16)},
			RemoteAddr: wo.Addr(), RKey: wo.RKey()}))
		Expect(t, ctx, a.CQ, 1, verbs.WCRemAccessErr)
	})
	t.Run("Write-out-of-bounds", func(t *testing.T) {
		ctx := timeout(t)
		a, b := Pair(t, ctx, s.dev, 4096)
		small := make([]byte, 64)
		smr, err := b.PD.RegMR(small, verbs.AccessRemoteWrite)
		require.NoError(t, err)
		s.fill(a.Buf)
		require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: 1, Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.MR.SGE(0, 65)},
			RemoteAddr: smr.Addr(), RKey: smr.RKey()}, verbs.SendWR{ID: 2, Opcode: verbs.WRRDMARead, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, 1)},
			RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()}))
		// The peer's Terminate is reported on the Write it hit or, if that
		// had completed already, on the Read behind it; the rest is flushed.
		sawRemote := false
		for {
			wc, err := a.CQ.Wait(ctx)
			require.NoError(t, err)
			require.NotEqual(t, verbs.WCSuccess, wc.Status, "WR %d", wc.ID)
			sawRemote = sawRemote || wc.Status == verbs.WCRemAccessErr
			if wc.ID == 2 {
				break
			}
		}
		if !sawRemote {
			// The Write had completed (it is unsignaled) and the Read had
			// not started when the peer's Terminate came: both are flushed
			// (the Terminate blames the oldest WR started and not done),
			// and the error reaches the user as the QP's.
			select {
			case <-a.QP.Done():
			case <-ctx.Done():
				t.Fatal("no completion reported the remote access error, and the QP did not end")
			}
			var ie *iwarp.Error
			require.ErrorAs(t, a.QP.Err(), &ie, "no completion reported the remote access error")
			require.True(t, ie.Remote, "the QP's error is the peer's Terminate: %v", ie)
			require.Equal(t, rdmap.TypeDDPTaggedBuffer, ie.Cause.Type(), "the peer's Terminate: %v", ie)
		}
		require.Equal(t, make([]byte, 64), small, "no byte of a failed Write lands")
		ev := waitEvent(t, ctx, b.Ctx)
		require.Equal(t, "QP fatal", ev.Type.String())
	})
}

func waitEvent(t testing.TB, ctx context.Context, c *verbs.Context) (ev struct {
	Type interface{ String() string }
	Err  error
}) {
	select {
	case e := <-c.Events():
		ev.Type, ev.Err = e.Type, e.Err
	case <-ctx.Done():
		t.Fatal("no async event")
	}
	return ev
}

func (s *suite) flush(t *testing.T) {
	ctx := timeout(t)
	a, b := Pair(t, ctx, s.dev, 4096)
	for i := range 4 {
		require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{b.MR.SGE(i*64, 64)}}))
	}
	require.NoError(t, a.QP.Disconnect())
	for i := range 4 {
		wc := Expect(t, ctx, b.CQ, uint64(i), verbs.WCWRFlushErr)
		require.Equal(t, verbs.WCRecv, wc.Opcode)
	}
	<-b.QP.Done()
	require.Equal(t, verbs.QPSError, b.QP.State())
	require.ErrorIs(t, b.QP.Err(), iwarp.ErrClosed)
	err := b.QP.PostSend(verbs.SendWR{Opcode: verbs.WRSend})
	require.ErrorIs(t, err, verbs.ErrQPError)
	err = a.QP.PostRecv(verbs.RecvWR{})
	require.ErrorIs(t, err, verbs.ErrQPError)
	// The peer's device goes away: c's posted receive is flushed.
	c, d := Pair(t, ctx, s.dev, 4096)
	require.NoError(t, c.QP.PostRecv(verbs.RecvWR{ID: 7}))
	require.NoError(t, d.Ctx.Close())
	Expect(t, ctx, c.CQ, 7, verbs.WCWRFlushErr)
	<-c.QP.Done()
	require.Equal(t, verbs.QPSError, c.QP.State())
}

func (s *suite) badUse(t *testing.T) {
	ctx := timeout(t)
	t.Run("post-before-connect", func(t *testing.T) {
		a, _ := Setup(t, s.dev, 64, verbs.QPInitAttr{})
		require.ErrorIs(t, a.QP.PostSend(verbs.SendWR{Opcode: verbs.WRSend}), verbs.ErrNotConnected)
		require.ErrorIs(t, a.QP.Disconnect(), verbs.ErrNotConnected)
		_, err := a.QP.RegMR(make([]byte, 8), 0)
		require.ErrorIs(t, err, verbs.ErrNotConnected)
	})
	t.Run("wrong-lkey", func(t *testing.T) {
		a, _ := Pair(t, ctx, s.dev, 64)
		err := a.QP.PostSend(verbs.SendWR{Opcode: verbs.WRSend, SGL: []verbs.SGE{{Addr: a.MR.Addr(), Length: 8, LKey: a.MR.LKey() + 1}}})
		require.ErrorIs(t, err, iwarp.ErrInvalidWR)
		err = a.QP.PostSend(verbs.SendWR{Opcode: verbs.WRSend, SGL: []verbs.SGE{a.MR.SGE(60, 8)}})
		require.ErrorIs(t, err, iwarp.ErrInvalidWR, "SGE past the region")
		err = a.QP.PostRecv(verbs.RecvWR{SGL: []verbs.SGE{{Addr: 1, Length: 8, LKey: 12345}}})
		require.ErrorIs(t, err, iwarp.ErrInvalidWR)
		require.Equal(t, verbs.QPSRTS, a.QP.State(), "a refused post leaves the QP alone")
		sgl := make([]verbs.SGE, a.Ctx.Info().MaxSGE+1)
		require.ErrorIs(t, a.QP.PostSend(verbs.SendWR{Opcode: verbs.WRSend, SGL: sgl}), verbs.ErrInvalid)
	})
	t.Run("use-after-close", func(t *testing.T) {
		a, b := Pair(t, ctx, s.dev, 64)
		require.NoError(t, a.QP.Destroy())
		require.ErrorIs(t, a.QP.PostSend(verbs.SendWR{Opcode: verbs.WRSend}), verbs.ErrClosed)
		require.ErrorIs(t, a.QP.PostRecv(verbs.RecvWR{}), verbs.ErrClosed)
		require.ErrorIs(t, a.QP.Destroy(), verbs.ErrClosed)
		require.NoError(t, a.MR.Dereg())
		require.ErrorIs(t, a.MR.Dereg(), verbs.ErrClosed)
		require.NoError(t, a.PD.Dealloc())
		_, err := a.PD.RegMR(make([]byte, 8), 0)
		require.ErrorIs(t, err, verbs.ErrClosed)
		require.NoError(t, a.CQ.Destroy())
		_, err = a.CQ.Poll(make([]verbs.WC, 1))
		require.ErrorIs(t, err, verbs.ErrClosed)
		require.NoError(t, b.Ctx.Close())
		_, err = b.Ctx.AllocPD()
		require.ErrorIs(t, err, verbs.ErrClosed)
		require.ErrorIs(t, b.QP.PostSend(verbs.SendWR{}), verbs.ErrClosed)
		_, err = b.CQ.Wait(ctx)
		require.ErrorIs(t, err, verbs.ErrClosed)
	})
	t.Run("cq-overrun", func(t *testing.T) {
		a, b := Setup(t, s.dev, 64, verbs.QPInitAttr{})
		small, err := a.Ctx.CreateCQ(2)
		require.NoError(t, err)
		qp, err := a.PD.CreateQP(verbs.QPInitAttr{SendCQ: small, RecvCQ: small})
		require.NoError(t, err)
		a.QP = qp
		Connect(t, ctx, a, b, verbs.ConnParam{}, verbs.ListenConfig{})
		noPanic(t, "posting more signaled WRs than the CQ holds", func() {
			for i := range 4 {
				// The overrun may end the QP before the last posts.
				a.QP.PostSend(verbs.SendWR{ID: uint64(i), Opcode: verbs.WRRDMAWrite, Signaled: true, Inline: []byte{1},
					RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()})
			}
		})
		// Nothing is taken from the CQ before the overrun: a host that
		// takes each completion as it comes (and gives its entry back)
		// keeps a card that runs beside it, the RTL card in a guest,
		// from ever filling the CQ. The overrun ends the QP.
		select {
		case <-a.QP.Done():
		case <-ctx.Done():
			t.Fatalf("the QP did not end: 4 signaled WRs left unpolled on a CQ of 2 did not overrun it")
		}
		var werr error
		for werr == nil {
			_, werr = small.Wait(ctx)
		}
		require.ErrorIs(t, werr, iwarp.ErrCQOverflow)
		// Poll returns what is left, then the overflow. On a card that
		// runs beside the host (the RTL), what is left may still be
		// arriving: the QP went to error with the overrun, and its
		// flushed WRs complete once the host has freed CQ entries.
		for i := 0; ; i++ {
			require.Less(t, i, 16, "Poll keeps returning completions after the overflow")
			n, err := small.Poll(make([]verbs.WC, 4))
			if err != nil { // Poll returns the overflow only once nothing is left
				require.ErrorIs(t, err, iwarp.ErrCQOverflow)
				require.Zero(t, n)
				break
			}
		}
	})
	t.Run("cancel-mid-wait", func(t *testing.T) {
		a, _ := Setup(t, s.dev, 64, verbs.QPInitAttr{})
		wctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		_, err := a.CQ.Wait(wctx)
		require.ErrorIs(t, err, context.Canceled)
		require.Less(t, time.Since(start), testwatch.Patience(), "the wait ended with its context")
		done := make(chan error, 1)
		go func() { _, err := a.CQ.Wait(ctx); done <- err }()
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, a.CQ.Destroy())
		require.ErrorIs(t, <-done, verbs.ErrClosed, "destroying a CQ wakes its waiters")
	})
	t.Run("bad-connect", func(t *testing.T) {
		a, b := Setup(t, s.dev, 64, verbs.QPInitAttr{})
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := l.Addr().String()
		l.Close()
		require.Error(t, verbs.Dial(ctx, addr, a.QP, verbs.ConnParam{}), "nobody listening")
		// A peer that is no iWARP peer at all.
		l, err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Write([]byte(strings.Repeat("HTTP/1.1 200 OK\r\n", 4)))
				time.Sleep(100 * time.Millisecond)
				c.Close()
			}
		}()
		err = verbs.Dial(ctx, l.Addr().String(), a.QP, verbs.ConnParam{})
		require.ErrorIs(t, err, mpa.ErrStartup)
		Connect(t, ctx, a, b, verbs.ConnParam{}, verbs.ListenConfig{})
		require.ErrorIs(t, verbs.Dial(ctx, addr, a.QP, verbs.ConnParam{}), verbs.ErrNotConnected, "connect twice")
	})
	t.Run("listener-close", func(t *testing.T) {
		ln, err := verbs.Listen("127.0.0.1:0", verbs.ListenConfig{})
		require.NoError(t, err)
		a, _ := Setup(t, s.dev, 64, verbs.QPInitAttr{})
		errc := make(chan error, 1)
		go func() { errc <- verbs.Dial(ctx, ln.Addr().String(), a.QP, verbs.ConnParam{}) }()
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, ln.Close())
		require.Error(t, <-errc, "a request nobody accepted")
		_, err = ln.Accept(ctx)
		require.ErrorIs(t, err, verbs.ErrClosed)
	})
	_ = errors.Is
}
