package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// TestCardTxStreamEnd co-simulates the end of the peer's stream with the
// card model: QPs run Reads (answered) and inline traffic; now and then
// the peer of some QPs stops answering, the QP posts 1 to ORD unfenced
// Reads, and once their Read Requests are on both transmit streams the
// peer's stream ends (the model: a STREAM doorbell with RX_FIN, its
// receive ring consumed; the RTL: card_stat's stream-end record, behind
// the Read dones given before it) or is lost (RX_LOST: the model puts
// the QP in error; the RTL gets the record with lost). An ended QP's
// outstanding Reads complete with WR_FLUSH_ERR in posting order and it
// runs inline traffic afterwards; a lost QP flushes every WQE, the ones
// posted later included. Every stream byte, CQE and final SQ_CI and
// TXS_PI must be the model's.
func TestCardTxStreamEnd(t *testing.T) {
	for _, w := range gen.CardTxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newCtxBench(t, w, seed, CardTxTiming{ReadLatency: 1, ReadJitter: 200, Random: true}, 6,
				func(r Rand) uint32 { return uint32(128 + r.IntN(1024)) })
			b.noFence = true
			r := b.rng
			ended := map[*ctxQP]bool{}
			traffic := func(q *ctxQP) {
				free := q.sqFree()
				for k := r.IntN(6); k > 0 && free >= cs.MaxWQEBBs; k-- {
					if !ended[q] && r.Chance(80) {
						b.postRead(q)
					} else {
						b.post(q, 200)
					}
					free = q.sqFree()
				}
				b.ring(q)
			}
			var flushedReads, ends, losts int
			for cycle := 0; cycle < 8; cycle++ {
				for i := 0; i < 3; i++ {
					for _, q := range b.qps {
						traffic(q)
					}
					b.runModel()
					b.runRTL(2_000_000)
				}
				// Some live QPs' peers stop answering; each posts Reads
				// (within ORD: all go out on both sides) and nothing
				// after them.
				var mute []*ctxQP
				for _, q := range b.qps {
					if ended[q] || !r.Chance(128) {
						continue
					}
					q.rd.mute, q.late = true, true
					mute = append(mute, q)
					for k := 1 + r.IntN(int(max(q.cfg.ORD, 1))); k > 0; k-- {
						if q.sqFree() < cs.MaxWQEBBs {
							break
						}
						b.postRead(q)
					}
					b.ring(q)
				}
				b.runModel()
				b.runRTLUntil(2_000_000, func() bool {
					for _, q := range mute {
						if q.rd.rRequests != q.rd.requests {
							return false
						}
					}
					return true
				})
				before := len(b.rtl.Records)
				for _, q := range mute {
					lost := r.Chance(100) || losts == 0 && ends > 0
					v := uint32(1) << cs.QPDBStreamRXFinShift
					if lost {
						v = 1 << cs.QPDBStreamRXLostShift
						losts++
					} else {
						ends++
					}
					b.w32(cs.QPDBBase+q.cfg.Num*cs.QPDBStride+cs.QPDBStream, v)
					// As in the top: the STREAM doorbell in order with the
					// doorbells after it, the stream-end record later.
					b.rtl.Doorbell(CardTxDoorbell{Kind: uint32(cs.DBKindQPDBStream), QPN: q.cfg.Num, Value: v})
					b.rtl.StreamEnd(CardTxEnd{QPN: q.cfg.Num, Lost: lost})
					ended[q] = true
				}
				// Traffic behind the end: inline WQEs (a lost QP flushes
				// them).
				for _, q := range mute {
					traffic(q)
				}
				b.runModel()
				b.runRTL(2_000_000)
				for _, rec := range b.rtl.Records[before:] {
					if rec.Status == uint8(cs.WCStatusWRFlushErr) && rec.Opcode == uint8(cs.WCOpcodeRDMARead) {
						flushedReads++
					}
				}
				b.compare()
			}
			require.Greater(t, flushedReads, 0, "seed %d: no Read was flushed", seed)
			require.Greater(t, losts, 0, "seed %d: no stream was lost", seed)
			t.Logf("seed %d: %d stream ends, %d lost, %d Reads flushed, %d records, %d model events, %d cycles",
				seed, ends, losts, flushedReads, len(b.rtl.Records), b.mEQE, b.rtl.Cycles)
		})
	}
}
