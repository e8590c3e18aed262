//go:build cosim

package sim

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// TestCardCosimLongMessage: a message longer than the transmit ring goes
// out as the card model sends it, the host draining the ring while it is
// written. QP 0 has a 4 KiB transmit ring; it sends gathered Writes and
// Sends of 4 to 40 KiB and answers the peer's RDMA Reads of 4 to 48 KiB,
// each up to ten times the ring. Before 27 Nov the RTL published TXS_PI
// only at a message's end and stopped for good at the first FPDU that
// found the ring full.
func TestCardCosimLongMessage(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, 2, func(i int, q *wcQP) {
				if i == 0 {
					q.txsLog = 12
				}
			})
			for round := 0; round < 2; round++ {
				b.round(round)
			}
			b.compare()
			q := b.qps[0]
			ring := 1 << q.txsLog
			for i := 0; i < 4; i++ {
				before := len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
				if i%2 == 0 {
					b.postWQE(q, b.longSGL(q, 4<<10+b.rng.IntN(36<<10)))
					b.ring(q)
				} else {
					b.peerSend(q, b.peerReadRequest(q, nil, 4<<10+b.rng.IntN(44<<10)))
				}
				b.runModel()
				b.runRTL(20_000_000)
				b.compare()
				sent := len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)) - before
				require.Greater(t, sent, ring, "seed %d: message %d is not longer than the ring", seed, i)
				t.Logf("message %d: %d stream octets through a %d-octet ring", i, sent, ring)
			}
			b.goesOn(b.qps[1])
		})
	}
}

// longSGL is a signaled gathered Write, Send or Send with Invalidate of
// about n bytes (at most 64 KiB) from q's two 16 KiB gather sources.
func (b *wcBench) longSGL(q *wcQP, n int) []byte {
	r := b.rng
	k := (n + wcSrcLen - 1) / wcSrcLen
	k = min(k+r.IntN(3), cs.MaxSGE)
	bbs := max(1, (cs.WQEHdr+k*cs.SGESize+cs.BB-1)/cs.BB)
	wqe := make([]byte, bbs*cs.BB)
	h := cs.WQE(wqe)
	ops := []cs.WQEOpcode{cs.WQEOpcodeSend, cs.WQEOpcodeSendInv, cs.WQEOpcodeRDMAWrite}
	h.SetOpcode(ops[r.IntN(len(ops))])
	h.SetSignaled(true)
	h.SetBBS(uint8(bbs))
	h.SetNSGE(uint8(k))
	h.SetWRID(r.Uint64())
	h.SetRemoteAddr(r.Uint64())
	h.SetRKey(r.Uint32())
	h.SetInvSTag(r.Uint32())
	left := n
	for i := 0; i < k; i++ {
		c := min(left, wcSrcLen)
		if i < k-1 && c > 0 {
			c = min(c, 1+r.IntN(wcSrcLen))
		}
		left -= c
		src := r.IntN(2)
		e := cs.SGE(wqe[cs.WQEHdr+i*cs.SGESize:])
		e.SetAddr(wcSrc + uint64(q.n)<<16 + uint64(src)<<15 + uint64(r.IntN(wcSrcLen-c+1)))
		e.SetLength(uint32(c))
		e.SetLKey(uint32(q.src[src]))
	}
	return wqe
}
