package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// command gives QP_CMD op on q to the model and the RTL.
func (b *ctxBench) command(q *ctxQP, op cs.QPOp) {
	b.w32(cs.QPNum, q.cfg.Num)
	b.w32(cs.QPCmd, uint32(op))
	b.rtl.Command(CardTxQP{Op: uint32(op), Num: q.cfg.Num})
}

// postJunk writes 1 to 8 random blocks into q's SQ as one posting: the
// first block's header random (any opcode, BBS 0 to 15, any flags), so
// that a QP in error flushes WQEs the card could not even decode.
func (b *ctxBench) postJunk(q *ctxQP) {
	r := b.rng
	n := 1 + r.IntN(cs.MaxWQEBBs)
	blks := make([]byte, n*cs.BB)
	for i := 0; i < n; i++ {
		blk := blks[i*cs.BB : (i+1)*cs.BB]
		for k := range blk {
			blk[k] = byte(r.Uint32())
		}
		if i == 0 {
			h := cs.WQE(blk)
			h.SetBBS(uint8(r.IntN(16)))
			if r.Chance(128) {
				h.SetOpcode(cs.WQEOpcode(r.IntN(6)))
			}
		}
	}
	b.postBlocks(q, blks)
}

// TestCardTxError co-simulates QP_CMD ERROR and DESTROY with the card
// model: QPs run random traffic (inline Sends and Writes, RDMA Reads
// answered by the peer); then some are put in error while idle, and
// every WQE posted to them afterwards (well formed or random junk, any
// BBS) completes with WR_FLUSH_ERR in posting order, its CQE as the
// model writes it (opcode, WR_ID, length 0), and nothing more reaches
// their stream; the others go on. The QPs in error are then destroyed
// and created again, and run traffic from fresh indices. Every stream
// byte, CQE and final SQ_CI and TXS_PI must be the model's.
func TestCardTxError(t *testing.T) {
	for _, w := range gen.CardTxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newCtxBench(t, w, seed, CardTxTiming{ReadLatency: 1, ReadJitter: 200, Random: true}, 6,
				func(r Rand) uint32 { return uint32(128 + r.IntN(1024)) })
			r := b.rng
			traffic := func(q *ctxQP, junk bool) {
				free := q.sqFree()
				for k := r.IntN(6); k > 0 && free >= cs.MaxWQEBBs; k-- {
					switch {
					case junk && r.Chance(100):
						b.postJunk(q)
					case r.Chance(80):
						b.postRead(q)
					default:
						b.post(q, 200)
					}
					free = q.sqFree()
				}
				b.ring(q)
			}
			round := func(failed map[*ctxQP]bool) {
				for _, q := range b.qps {
					traffic(q, failed[q])
				}
				b.runModel()
				b.runRTL(2_000_000)
			}
			var flushed int
			for cycle := 0; cycle < 3; cycle++ {
				for i := 0; i < 4; i++ {
					round(nil)
				}
				failed := map[*ctxQP]bool{}
				for _, q := range b.qps {
					if r.Chance(128) {
						// One SQ_PI doorbell per round: a flushed WQE with a
						// bad BBS takes every block posted when it is
						// flushed, which must be the same for both.
						failed[q], q.late = true, true
						b.command(q, cs.QPOpError)
					}
				}
				before := len(b.rtl.Records)
				for i := 0; i < 4; i++ {
					round(failed)
				}
				for _, rec := range b.rtl.Records[before:] {
					if rec.Status == uint8(cs.WCStatusWRFlushErr) {
						flushed++
					}
				}
				b.compare()
				for q := range failed {
					b.command(q, cs.QPOpDestroy)
					b.create(q)
				}
			}
			for i := 0; i < 4; i++ {
				round(nil)
			}
			b.compare()
			require.Greater(t, flushed, 20, "seed %d: flushed WQEs", seed)
			t.Logf("seed %d: %d records, %d flushed, %d model events, %d cycles", seed, len(b.rtl.Records), flushed, b.mEQE, b.rtl.Cycles)
		})
	}
}
