package qp_test

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/iwarp/qp"
	"github.com/openiwarp/openiwarp/golden/mpa"
)

var seedFlag = flag.Uint64("qp.seed", 0, "seed of TestBackToBack (0: from the clock)")

// peer is one side of the back-to-back property test: a node with a
// source region (what it sends and what the peer reads) and a sink region
// (where the peer's Writes and Sends land, and its Reads' responses).
type peer struct {
	*node
	src, sink     []byte
	srcMR, sinkMR *mem.MR
	want          []uint64 // the signaled WR IDs, in posting order
	recvs         []uint64 // the receive IDs, in posting order
	expect        []expectation
}

// expectation is a message whose bytes must end where it was aimed.
type expectation struct {
	dst  []byte // the peer's (or for a Read, our own) memory
	data []byte // what must be there once it completed
}

const regionLen = 1 << 16

// TestBackToBack runs random verb sequences on two QPs wired back to back
// in memory: posts, transmitter steps, hand-overs and deliveries
// interleave at random. Every WR must complete with success, in posting
// order, every byte must land where it was aimed, and neither side may
// fail. The seed is printed; -qp.seed replays one.
func TestBackToBack(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -qp.seed=%d)", seed, seed)
	rounds := 200
	if testing.Short() {
		rounds = 30
	}
	for r := 0; r < rounds; r++ {
		backToBack(t, rand.New(rand.NewPCG(seed, uint64(r))), seed, r)
		if t.Failed() {
			return
		}
	}
}

func newPeer(t *testing.T, rng *rand.Rand, mulpdu int) *peer {
	p := &peer{node: newNode(t, func(c *qp.Config) {
		c.MULPDU, c.ORD, c.IRD = mulpdu, 1+rng.IntN(4), 16
		c.SQDepth, c.RQDepth = 1024, 1024
	})}
	p.src, p.sink = make([]byte, regionLen), make([]byte, regionLen)
	for i := range p.src {
		p.src[i] = byte(rng.Uint32())
	}
	p.srcMR = p.reg(t, p.src, 0x10000, all)
	p.sinkMR = p.reg(t, p.sink, 0x40000, all)
	return p
}

func backToBack(t *testing.T, rng *rand.Rand, seed uint64, round int) {
	mulpdu := mpa.MinMULPDU + rng.IntN(4096)
	a, b := newPeer(t, rng, mulpdu), newPeer(t, rng, mulpdu)
	// The sink is cut into disjoint slots, one per message, so that every
	// message's bytes can be checked at the end.
	next := map[*peer]uint64{}
	slot := func(p *peer, n uint64) (uint64, bool) {
		at := next[p]
		if at+n > regionLen {
			return 0, false
		}
		next[p] = at + n
		return at, true
	}
	id := uint64(0)
	post := func(from, to *peer) {
		n := uint64(rng.IntN(3 * mulpdu))
		if rng.IntN(8) == 0 {
			n = 0
		}
		off := uint64(rng.IntN(regionLen - int(n) + 1))
		id++
		wr := qp.SendWR{ID: id, Signaled: rng.IntN(4) != 0, Fence: rng.IntN(8) == 0}
		op := []qp.WROpcode{qp.WRSend, qp.WRWrite, qp.WRRead}[rng.IntN(3)]
		// The bytes go from src's source to dst's sink: the peer's for a
		// Send or Write, ours for a Read of the peer's source.
		src, dst := from, to
		if op == qp.WRRead {
			src, dst = to, from
		}
		at, ok := slot(dst, n)
		if !ok {
			return
		}
		dst.expect = append(dst.expect, expectation{dst.sink[at : at+n], src.src[off : off+n]})
		srcSGE := qp.SGE{Addr: 0x10000 + off, Length: uint32(n), LKey: src.srcMR.STag}
		sinkSGE := qp.SGE{Addr: 0x40000 + at, Length: uint32(n), LKey: dst.sinkMR.STag}
		wr.Opcode = op
		switch op {
		case qp.WRSend: // into a receive the peer posts now
			wr.SGL, wr.Solicited = []qp.SGE{srcSGE}, rng.IntN(2) == 0
			if n <= 64 && rng.IntN(2) == 0 {
				wr.SGL, wr.Inline = nil, from.src[off:off+n]
			}
			id++
			require.NoError(t, to.q.PostRecv(qp.RecvWR{ID: id, SGL: []qp.SGE{sinkSGE}}))
			to.recvs = append(to.recvs, id)
		case qp.WRWrite:
			wr.SGL, wr.RemoteAddr, wr.RKey = []qp.SGE{srcSGE}, sinkSGE.Addr, sinkSGE.LKey
		default:
			wr.SGL, wr.RemoteAddr, wr.RKey = []qp.SGE{sinkSGE}, srcSGE.Addr, srcSGE.LKey
		}
		require.NoError(t, from.q.PostSend(wr))
		if wr.Signaled {
			from.want = append(from.want, wr.ID)
		}
	}
	const posts = 40
	posted := 0
	for steps := 0; ; steps++ {
		require.Less(t, steps, 100000, "seed %d round %d: no progress", seed, round)
		switch k := rng.IntN(10); {
		case k < 2 && posted < posts:
			if rng.IntN(2) == 0 {
				post(a, b)
			} else {
				post(b, a)
			}
			posted++
		case k < 5:
			a.step()
		case k < 8:
			b.step()
		case k == 8:
			deliver(a.node, b.node, 1+rng.IntN(4))
		default:
			deliver(b.node, a.node, 1+rng.IntN(4))
		}
		idle := posted == posts && len(a.wire)+len(b.wire)+len(a.pending)+len(b.pending) == 0 &&
			a.q.Peek().Kind == qp.JobWait && b.q.Peek().Kind == qp.JobWait
		if idle {
			break
		}
	}
	for _, p := range []*peer{a, b} {
		require.NoError(t, p.q.Err(), "seed %d round %d", seed, round)
		require.Zero(t, p.q.SQLen(), "seed %d round %d: WRs left", seed, round)
		var got []uint64
		for _, c := range p.cq.send {
			require.Equal(t, qp.WCSuccess, c.Status, "seed %d round %d", seed, round)
			got = append(got, c.ID)
		}
		require.Equal(t, p.want, got, "seed %d round %d: send completions in posting order", seed, round)
		got = nil
		for _, c := range p.cq.recv {
			require.Equal(t, qp.WCSuccess, c.Status, "seed %d round %d", seed, round)
			got = append(got, c.ID)
		}
		require.Equal(t, p.recvs, got, "seed %d round %d: receive completions in order", seed, round)
		for i, e := range p.expect {
			require.True(t, bytes.Equal(e.dst, e.data), "seed %d round %d: message %d's bytes", seed, round, i)
		}
	}
}
