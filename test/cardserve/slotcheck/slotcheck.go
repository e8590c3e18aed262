// Package slotcheck is the traffic that proves a card served in a PCI slot
// (package cardserve): two QPs of one device connected to each other over
// TCP on 127.0.0.1, Sends, RDMA Writes and RDMA Reads of several sizes with
// every byte checked, then a burst of Sends to count operations per second.
// The cardserve unit tests run it over a fake QEMU on the host; test/vfio
// runs it inside a QEMU guest, through VFIO.
package slotcheck

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/host/verbs/verbstest"
)

// Figures is what Loopback measured.
type Figures struct {
	Ops     int           // 64-byte Sends in the burst, each received and completed
	Elapsed time.Duration // for the burst
}

// PerSecond is the burst's operations per second.
func (f Figures) PerSecond() float64 { return float64(f.Ops) / f.Elapsed.Seconds() }

func (f Figures) String() string {
	return fmt.Sprintf("%d Sends of 64 bytes in %v: %.0f ops/s", f.Ops, f.Elapsed.Round(time.Millisecond), f.PerSecond())
}

// Pair makes two QPs of dev, each with its own PD, CQ and a registered
// buffer of bufSize bytes from alloc, and connects them over 127.0.0.1.
func Pair(t testing.TB, ctx context.Context, dev *verbs.Context, alloc func(n int) []byte, bufSize int) (a, b *verbstest.End) {
	t.Helper()
	end := func() *verbstest.End {
		e := &verbstest.End{Ctx: dev}
		var err error
		e.PD, err = dev.AllocPD()
		require.NoError(t, err)
		e.CQ, err = dev.CreateCQ(256)
		require.NoError(t, err)
		e.QP, err = e.PD.CreateQP(verbs.QPInitAttr{SendCQ: e.CQ, RecvCQ: e.CQ})
		require.NoError(t, err)
		e.Buf = alloc(bufSize)
		e.MR, err = e.PD.RegMR(e.Buf, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
		require.NoError(t, err)
		return e
	}
	a, b = end(), end()
	verbstest.Connect(t, ctx, a, b, verbs.ConnParam{}, verbs.ListenConfig{})
	return a, b
}

// Loopback connects two QPs of dev (Pair; the caller decides where the
// buffers come from: the Go heap, or memory the card can reach), and moves a Send, an
// RDMA Write and an RDMA Read of each size (at most bufSize) between them,
// checking every byte that arrives and that nothing lands past it; then it
// times a burst of ops 64-byte Sends, one at a time. seed seeds the
// payloads (printed on failure).
func Loopback(t testing.TB, ctx context.Context, dev *verbs.Context, alloc func(n int) []byte, bufSize int, sizes []int, ops int, seed uint64) Figures {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x510c))
	a, b := Pair(t, ctx, dev, alloc, bufSize)
	fill := func(p []byte) {
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
	}
	same := func(want, got []byte, what string) {
		t.Helper()
		if !bytes.Equal(want, got) {
			i := 0
			for i < len(want) && want[i] == got[i] {
				i++
			}
			t.Fatalf("%s: the %d bytes differ from byte %d on (seed %d)", what, len(want), i, seed)
		}
	}
	untouched := func(p []byte, what string) {
		t.Helper()
		require.Equal(t, -1, bytes.IndexFunc(p, func(r rune) bool { return r != 0 }), "%s: bytes past the data changed (seed %d)", what, seed)
	}
	id := uint64(0)
	send := func(n int) {
		t.Helper()
		id++
		require.NoError(t, b.QP.PostRecv(verbs.RecvWR{ID: id, SGL: []verbs.SGE{b.MR.SGE(0, bufSize)}}))
		require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: id, Opcode: verbs.WRSend, Signaled: true, SGL: []verbs.SGE{a.MR.SGE(0, n)}}))
		verbstest.Expect(t, ctx, a.CQ, id, verbs.WCSuccess)
		wc := verbstest.Expect(t, ctx, b.CQ, id, verbs.WCSuccess)
		require.Equal(t, uint32(n), wc.ByteLen)
	}
	for _, n := range sizes {
		require.LessOrEqual(t, n, bufSize)
		// Send.
		fill(a.Buf[:n])
		clear(b.Buf)
		send(n)
		same(a.Buf[:n], b.Buf[:n], fmt.Sprintf("Send of %d bytes", n))
		untouched(b.Buf[n:], fmt.Sprintf("Send of %d bytes", n))
		// RDMA Write, then a zero-length Send: everything written before
		// it is placed when it arrives.
		fill(a.Buf[:n])
		clear(b.Buf)
		id++
		require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: id, Opcode: verbs.WRRDMAWrite, Signaled: true,
			SGL: []verbs.SGE{a.MR.SGE(0, n)}, RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()}))
		verbstest.Expect(t, ctx, a.CQ, id, verbs.WCSuccess)
		send(0)
		same(a.Buf[:n], b.Buf[:n], fmt.Sprintf("RDMA Write of %d bytes", n))
		untouched(b.Buf[n:], fmt.Sprintf("RDMA Write of %d bytes", n))
		// RDMA Read.
		fill(b.Buf[:n])
		clear(a.Buf)
		id++
		require.NoError(t, a.QP.PostSend(verbs.SendWR{ID: id, Opcode: verbs.WRRDMARead, Signaled: true,
			SGL: []verbs.SGE{a.MR.SGE(0, n)}, RemoteAddr: b.MR.Addr(), RKey: b.MR.RKey()}))
		wc := verbstest.Expect(t, ctx, a.CQ, id, verbs.WCSuccess)
		require.Equal(t, uint32(n), wc.ByteLen)
		same(b.Buf[:n], a.Buf[:n], fmt.Sprintf("RDMA Read of %d bytes", n))
		untouched(a.Buf[n:], fmt.Sprintf("RDMA Read of %d bytes", n))
	}
	fill(a.Buf[:64])
	start := time.Now()
	for range ops {
		send(64)
	}
	f := Figures{Ops: ops, Elapsed: time.Since(start)}
	same(a.Buf[:64], b.Buf[:64], "the last Send of the burst")
	for _, e := range []*verbstest.End{a, b} {
		require.NoError(t, e.QP.Destroy())
		require.NoError(t, e.MR.Dereg())
		require.NoError(t, e.CQ.Destroy())
		require.NoError(t, e.PD.Dealloc())
	}
	return f
}
