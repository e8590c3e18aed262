package verbstest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/internal/faultproxy"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// FaultOptions size a fault-injection run (RunFaults).
type FaultOptions struct {
	// Seeds is how many seeds each fault runs with (default 4).
	Seeds int
	// Seed is the first seed (default: $OPENIWARP_SEED, else from the
	// clock; printed, and printed again with any failure).
	Seed uint64
	// Messages is how many Write+Send pairs each side sends (default 16),
	// Reads how many RDMA Reads each side issues (default 4).
	Messages, Reads int
	// MaxSize is the largest Write or Read (default 16 KiB; Split runs
	// with at most 4 KiB, since it may write octets one by one).
	MaxSize int
	// HeapSlack is how much more heap than at the start is tolerated once
	// every device is closed (default 8 MiB).
	HeapSlack uint64
}

// FaultStats is what RunFaults did.
type FaultStats struct {
	Runs       int   // scenarios run (faults x seeds)
	Injected   int   // positional faults that hit the stream
	Completed  int   // work completions checked
	Verified   int   // successful completions whose data was checked at the other end
	Flushed    int   // completions in error (flushed, or hit by a Terminate)
	Terminates int   // Terminates seen on the wire after a flipped byte
	Octets     int64 // octets the proxies forwarded
}

// guard is the size of the guard zones around each side's region: bytes
// that no placement may touch.
const guard = 4096

// the fault-injection side: an End (for the device, PD, CQ and QP) plus a
// region with guard zones on both sides.
type faultSide struct {
	*End
	arena []byte // guard | region | guard
	reg   []byte // the registered middle of arena
	mr    *verbs.MR
	fill  []byte // what arena held before the run
}

// region layout (each slot MaxSize bytes): Write slots the peer writes
// into (m), the sources of this side's Writes (m), Read sources the peer
// reads (r), Read sinks this side reads into (r), then 16-byte receive
// slots (m).
type layout struct{ m, r, s int }

func (l layout) slot(i int) int { return i * l.s }
func (l layout) out(i int) int  { return (l.m + i) * l.s }
func (l layout) src(j int) int  { return (2*l.m + j) * l.s }
func (l layout) sink(j int) int { return (2*l.m + l.r + j) * l.s }
func (l layout) hdr(i int) int  { return (2*l.m+2*l.r)*l.s + 16*i }
func (l layout) size() int      { return (2*l.m+2*l.r)*l.s + 16*l.m }

// hdrFor is the 16-byte Send that follows Write i: its index, length and
// CRC-32 of its payload.
func hdrFor(i, n int, p []byte) []byte {
	h := make([]byte, 16)
	binary.BigEndian.PutUint32(h, uint32(i))
	binary.BigEndian.PutUint32(h[4:], uint32(n))
	binary.BigEndian.PutUint32(h[8:], crc32.ChecksumIEEE(p))
	binary.BigEndian.PutUint32(h[12:], 0x6f697770) // "oiwp"
	return h
}

// plan is what one side sends: Write sizes and payloads, Read sizes.
type plan struct {
	writes [][]byte
	reads  []int
}

func makePlan(rng *rand.Rand, l layout) plan {
	var p plan
	for range l.m {
		b := make([]byte, rng.IntN(l.s+1))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		p.writes = append(p.writes, b)
	}
	for range l.r {
		p.reads = append(p.reads, 1+rng.IntN(l.s))
	}
	return p
}

// RunFaults runs traffic both ways between two QPs on device through a
// faultproxy, once per fault and seed, and checks what the RFCs prescribe:
// lossless faults (delay, stall and resume, split at every boundary,
// coalesce) lose nothing and every WR succeeds; a flipped byte with CRC
// on is an MPA CRC (or framing) error at the receiver, whose Terminate is
// on the wire and reaches the peer; a reset, a half-close or a stall past
// the application's patience ends both QPs with a typed error and
// completes every outstanding WR in error. In every run every WR completes
// exactly once, every successful receive and Read has its data checked
// against what the other side sent, and nothing is written outside the
// registered regions (guard zones) or outside the bytes a Write or Read
// names. After the run, goroutines, file descriptors and heap must be back
// to their starting level (measured and logged).
func RunFaults(t *testing.T, device string, o FaultOptions) FaultStats {
	if o.Seeds == 0 {
		o.Seeds = 4
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
		if v, err := strconv.ParseUint(os.Getenv("OPENIWARP_SEED"), 10, 64); err == nil {
			o.Seed = v
		}
	}
	if o.Messages == 0 {
		o.Messages = 16
	}
	if o.Reads == 0 {
		o.Reads = 4
	}
	if o.MaxSize == 0 {
		o.MaxSize = 16 << 10
	}
	if o.HeapSlack == 0 {
		o.HeapSlack = 8 << 20
	}
	t.Logf("fault injection on %q, seed %d (OPENIWARP_SEED=%[2]d or FaultOptions.Seed reproduces it)", device, o.Seed)
	base := testwatch.Measure()
	var st FaultStats
	for _, f := range faultproxy.Faults {
		for k := range o.Seeds {
			seed := o.Seed + uint64(k)
			noCRC := f == faultproxy.FlipByte && k%4 == 3 // the CRC is what catches a flipped byte
			name := fmt.Sprintf("%v/seed=%d", f, seed)
			if noCRC {
				name += "/no-crc"
			}
			if !t.Run(name, func(t *testing.T) { faultRun(t, device, f, seed, noCRC, o, &st) }) {
				t.Logf("failed: fault %v, seed %d (OPENIWARP_SEED=%d -run 'TestFaults/%v/seed=%[2]d' reruns it)", f, seed, o.Seed, f)
			}
		}
	}
	now, err := testwatch.Back(base, o.HeapSlack)
	t.Logf("%d runs on %q: %d faults injected, %d completions (%d verified at the other end, %d in error), %d Terminates on the wire, %d octets proxied",
		st.Runs, device, st.Injected, st.Completed, st.Verified, st.Flushed, st.Terminates, st.Octets)
	t.Logf("before: %v; after: %v", base, now)
	if err != nil {
		t.Errorf("after the fault runs: %v", err)
	}
	return st
}

func faultRun(t *testing.T, device string, f faultproxy.Fault, seed uint64, noCRC bool, o FaultOptions, st *FaultStats) {
	ctx := timeout(t)
	rng := rand.New(rand.NewPCG(seed, uint64(f)))
	l := layout{m: o.Messages, r: o.Reads, s: o.MaxSize}
	if f == faultproxy.Split {
		l.s = min(l.s, 4096)
	}
	plans := [2]plan{makePlan(rng, l), makePlan(rng, l)}
	mk := func(e *End, p plan) *faultSide {
		s := &faultSide{End: e, arena: make([]byte, guard+l.size()+guard)}
		for i := range s.arena {
			s.arena[i] = byte(rng.Uint32())
		}
		s.reg = s.arena[guard : guard+l.size()]
		for i, w := range p.writes {
			copy(s.reg[l.out(i):], w) // the source of this side's Write i
		}
		s.fill = append([]byte(nil), s.arena...)
		var err error
		s.mr, err = e.PD.RegMR(s.reg, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
		require.NoError(t, err)
		return s
	}
	ea, eb := Setup(t, device, 1, verbs.QPInitAttr{Cap: verbs.QPCap{MaxSendWR: 4 * l.m, MaxRecvWR: l.m}})
	a, b := mk(ea, plans[0]), mk(eb, plans[1])

	// Receives first, on both sides: every Send finds one.
	for _, s := range []*faultSide{a, b} {
		for i := range l.m {
			require.NoError(t, s.QP.PostRecv(verbs.RecvWR{ID: recvID(i), SGL: []verbs.SGE{s.mr.SGE(l.hdr(i), 16)}}))
		}
	}

	ln, err := verbs.Listen("127.0.0.1:0", verbs.ListenConfig{NoCRC: noCRC, StartupTimeout: testwatch.Patience()})
	require.NoError(t, err)
	defer ln.Close()
	// The positional fault falls after the MPA startup (64 octets cover
	// it) and early enough that at least a full FPDU follows it.
	dir := faultproxy.Direction(rng.IntN(2))
	vol := int64(0)
	for _, w := range plans[dir].writes {
		vol += int64(len(w))
	}
	at := 64 + rng.Int64N(max(vol/2, 1))
	cfg := faultproxy.Config{Seed: seed, Fault: f, Dir: dir, At: at, MaxPiece: 1 + rng.IntN(4)*rng.IntN(5),
		StallFor: 300 * time.Millisecond, Record: f == faultproxy.FlipByte}
	if f == faultproxy.Coalesce {
		cfg.MaxPiece = 0
	}
	px, err := faultproxy.New(ln.Addr().String(), cfg)
	require.NoError(t, err)
	defer px.Close()
	t.Logf("fault %v %v at octet %d (of about %d), piece %d, CRC %v", f, dir, at, vol, cfg.MaxPiece, !noCRC)

	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err == nil {
			err = req.Accept(b.QP, nil)
		}
		accepted <- err
	}()
	require.NoError(t, verbs.Dial(ctx, px.Addr(), a.QP, verbs.ConnParam{NoCRC: noCRC, StartupTimeout: testwatch.Patience()}))
	aerr, ok := testwatch.Wait(t, accepted, "the listener's Accept")
	require.True(t, ok)
	require.NoError(t, aerr)

	// Each side posts its Writes, each followed by a Send naming it, with
	// Reads of the peer's sources in between. want is every WR a side
	// posted (its receives included): each must complete exactly once.
	var want [2]map[uint64]bool
	for k, s := range []*faultSide{a, b} {
		want[k] = map[uint64]bool{}
		for i := range l.m {
			want[k][recvID(i)] = true
		}
		peer := []*faultSide{b, a}[k]
		p := plans[k]
		var wrs []verbs.SendWR
		for i, w := range p.writes {
			wrs = append(wrs,
				verbs.SendWR{ID: writeID(i), Opcode: verbs.WRRDMAWrite, Signaled: true, SGL: []verbs.SGE{s.mr.SGE(l.out(i), len(w))},
					RemoteAddr: peer.mr.Addr() + uint64(l.slot(i)), RKey: peer.mr.RKey()},
				verbs.SendWR{ID: sendID(i), Opcode: verbs.WRSend, Signaled: true, Inline: hdrFor(i, len(w), w)})
			if j := i * l.r / l.m; i%max(l.m/max(l.r, 1), 1) == 0 && j < l.r {
				wrs = append(wrs, verbs.SendWR{ID: readID(j), Opcode: verbs.WRRDMARead, Signaled: true,
					SGL: []verbs.SGE{s.mr.SGE(l.sink(j), p.reads[j])}, RemoteAddr: peer.mr.Addr() + uint64(l.src(j)), RKey: peer.mr.RKey()})
			}
		}
		// Post in random runs: the sends of one side race the other's.
		for len(wrs) > 0 {
			n := min(len(wrs), 1+rng.IntN(8))
			if err := s.QP.PostSend(wrs[:n]...); err != nil {
				// Only a fault that already ended the QP may refuse it.
				require.ErrorIs(t, err, verbs.ErrQPError, "posting on %s", []string{"a", "b"}[k])
				require.NotEqual(t, faultproxy.None, f)
				break
			}
			for _, w := range wrs[:n] {
				want[k][w.ID] = true
			}
			wrs = wrs[n:]
		}
	}
	lossless := f == faultproxy.None || f == faultproxy.Delay || f == faultproxy.Stall ||
		f == faultproxy.Split || f == faultproxy.Coalesce
	mayStall := f == faultproxy.Blackhole || noCRC
	got := [2][]verbs.WC{}
	done := make(chan int, 2)
	for k, s := range []*faultSide{a, b} {
		go func() {
			got[k] = collect(ctx, s, len(want[k]), mayStall, a, b)
			done <- k
		}()
	}
	for range 2 {
		if _, ok := testwatch.Wait(t, done, "every WR of both sides to complete"); !ok {
			t.FailNow()
		}
	}

	// Every WR completed exactly once.
	for k := range 2 {
		seen := map[uint64]bool{}
		for _, wc := range got[k] {
			require.True(t, want[k][wc.ID], "side %d: completion of an unknown WR %d", k, wc.ID)
			require.False(t, seen[wc.ID], "side %d: WR %d completed twice", k, wc.ID)
			seen[wc.ID] = true
		}
		require.Len(t, seen, len(want[k]), "side %d: every WR completes", k)
	}

	// Successful completions: their data, at the other end.
	sides := [2]*faultSide{a, b}
	for k := range 2 {
		s, peer, p, pp := sides[k], sides[1-k], plans[k], plans[1-k]
		for _, wc := range got[k] {
			st.Completed++
			if wc.Status != verbs.WCSuccess {
				st.Flushed++
				require.False(t, lossless, "side %d: WR %d: %v under a lossless fault", k, wc.ID, wc.Status)
				continue
			}
			switch kind, i := splitID(wc.ID); kind {
			case recvKind: // the peer's Send i: its header, and its Write i before it
				w := pp.writes[i]
				require.Equal(t, uint32(16), wc.ByteLen)
				if !noCRC {
					require.Equal(t, hdrFor(i, len(w), w), s.reg[l.hdr(i):l.hdr(i)+16], "side %d: header of Send %d", k, i)
					equal(t, w, s.reg[l.slot(i):l.slot(i)+len(w)], fmt.Sprintf("side %d: Write %d placed before its Send", k, i))
				}
				st.Verified++
			case readKind:
				if !noCRC {
					equal(t, peer.reg[l.src(i):l.src(i)+p.reads[i]], s.reg[l.sink(i):l.sink(i)+p.reads[i]], fmt.Sprintf("side %d: Read %d", k, i))
				}
				st.Verified++
			}
		}
	}

	// Nothing outside the regions, nor outside what each WR names: the
	// guard zones, the Read sources, the tails of the Write slots and
	// Read sinks keep their fill.
	for k := range 2 {
		s, pp, p := sides[k], plans[1-k], plans[k]
		unchanged := func(from, to int, what string) {
			if !bytes.Equal(s.fill[from:to], s.arena[from:to]) {
				i := from
				for s.fill[i] == s.arena[i] {
					i++
				}
				t.Fatalf("side %d: %s changed at arena octet %d (region octet %d)", k, what, i, i-guard)
			}
		}
		unchanged(0, guard, "the guard zone before the region")
		unchanged(guard+l.size(), len(s.arena), "the guard zone after the region")
		if noCRC {
			continue // a flipped offset or STag may place within the region: only its bounds hold
		}
		for i, w := range pp.writes {
			unchanged(guard+l.slot(i)+len(w), guard+l.slot(i)+l.s, fmt.Sprintf("Write slot %d past its payload", i))
			unchanged(guard+l.out(i), guard+l.out(i)+l.s, fmt.Sprintf("the source of Write %d", i))
		}
		for j := range l.r {
			unchanged(guard+l.src(j), guard+l.src(j)+l.s, fmt.Sprintf("Read source %d", j))
			unchanged(guard+l.sink(j)+p.reads[j], guard+l.sink(j)+l.s, fmt.Sprintf("Read sink %d past its length", j))
		}
	}

	// The QPs' ends: typed, and what the fault prescribes.
	ps := px.Stats()
	st.Runs++
	st.Injected += ps.Injected
	st.Octets += ps.Octets[0] + ps.Octets[1]
	if f == faultproxy.FlipByte && !noCRC {
		n := terminatesIn(t, px.Record(dir^1), a, dir^1)
		require.Equal(t, 1, n, "one Terminate on the wire from the side that found the flipped byte")
		st.Terminates += n
	}
	for k, s := range sides {
		qerr := s.QP.Err()
		switch {
		case lossless:
			require.NoError(t, qerr, "side %d after a lossless fault", k)
		case f == faultproxy.FlipByte && !noCRC:
			require.Equal(t, 1, ps.Injected)
			var ie *iwarp.Error
			require.ErrorAs(t, qerr, &ie, "side %d after a flipped byte: %v", k, qerr)
			require.Contains(t, []rdmap.Cause{rdmap.MPACRC, rdmap.MPAMarker}, ie.Cause, "side %d: %v", k, qerr)
			// The receiver of the flipped stream found it; the other
			// side learned of it from the Terminate.
			detector := int(dir) ^ 1 // upstream is a's stream, received by b
			require.Equal(t, k != detector, ie.Remote, "side %d: %v", k, qerr)
		default:
			if qerr == nil {
				// The fault spared this run (a blackhole or half-close
				// after the last octet, or a flip the CRC-less stream
				// could not see); the test's disconnect ended nothing.
				require.True(t, mayStall || ps.Injected == 0, "side %d: no error after %v", k, f)
				continue
			}
			require.True(t, errors.Is(qerr, iwarp.ErrConnLost) || errors.Is(qerr, iwarp.ErrClosed) || errors.Is(qerr, iwarp.ErrTerminated),
				"side %d: untyped end %v", k, qerr)
		}
	}
}

// collect waits for n completions on s's CQ. With mayStall, a run of
// silence (nothing completing for a while) is the application's timeout:
// both QPs are disconnected, which must complete everything outstanding
// in error.
func collect(ctx context.Context, s *faultSide, n int, mayStall bool, a, b *faultSide) []verbs.WC {
	var out []verbs.WC
	for len(out) < n {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if mayStall {
			wctx, cancel = context.WithTimeout(ctx, 500*time.Millisecond)
		}
		wc, err := s.CQ.Wait(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return out
			}
			// Nothing for a while: give up on the stream, as an
			// application's timeout would.
			a.QP.Disconnect()
			b.QP.Disconnect()
			continue
		}
		out = append(out, wc)
	}
	return out
}

// terminatesIn counts the Terminates in one direction's recorded stream
// (after its MPA startup frame), as the side receiving it would decode it.
func terminatesIn(t *testing.T, stream []byte, a *faultSide, d faultproxy.Direction) int {
	r := bytes.NewReader(stream)
	_, err := mpa.ReadFrame(r, mpa.MaxPrivateData)
	require.NoError(t, err, "the startup frame in the recorded stream")
	p := a.QP.Params() // a receives downstream, sends upstream
	cfg := mpa.DeframerConfig{Markers: p.RxMarkers, CRC: p.CRC, Rev: p.Rev}
	if d == faultproxy.Upstream {
		cfg.Markers = p.TxMarkers
	}
	df := mpa.NewDeframer(cfg)
	n := 0
	rest := stream[len(stream)-r.Len():]
	_ = df.Feed(rest, func(u mpa.ULPDU) error { // a stream cut by the end may end mid-FPDU
		m, err := rdmap.Parse(append([]byte(nil), u.Data...))
		if err == nil && m.Opcode() == rdmap.OpTerminate {
			n++
		}
		return nil
	})
	return n
}

// Work request IDs: kind in the top bits, index below.
const (
	writeKind = iota + 1
	sendKind
	readKind
	recvKind
)

func writeID(i int) uint64 { return writeKind<<32 | uint64(i) }
func sendID(i int) uint64  { return sendKind<<32 | uint64(i) }
func readID(i int) uint64  { return readKind<<32 | uint64(i) }
func recvID(i int) uint64  { return recvKind<<32 | uint64(i) }
func splitID(id uint64) (kind, i int) {
	return int(id >> 32), int(id & 0xffffffff)
}
