package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// BenchmarkCardWQEThroughput measures the whole card's transmit message
// rate (one op = one cycle): 64 QPs on two CQs, each given 16 signaled
// 64-byte inline WQEs (two blocks, fetched by DMA) with one SQ_PI
// doorbell, counted from the first doorbell to the last CQE in host
// memory; the driver then consumes the CQEs and gives the ring space back
// and the next burst starts. Every WQE passes through card_tx, card_stat
// (the QP's status record), card_cq (the CQE) and the AXI masters, so
// the figure is what a driver sees, against card_tx's own
// (BenchmarkCardTxThroughput). QPs 1 to 64, as a driver numbers them, or
// (random_qpn) 64 numbers drawn from all 1,023 (card_tx's WQE read ahead
// once shared its entries by QP number modulo 64). one_qp and 8_qps: one
// or eight QPs given 256 such WQEs each at a time (SQs of 1,024 blocks),
// the rate a few busy connections get. Reads are answered 250 cycles
// after their address (1 µs at 250 MHz); writes 20 or 250 cycles after
// their last beat.
func BenchmarkCardWQEThroughput(b *testing.B) {
	for _, w := range gen.CardTopWidths {
		for _, c := range wqeRateCases {
			b.Run(fmt.Sprintf("%d/%s", w, c.name), func(b *testing.B) {
				r := runWQERate(b, w, c, uint64(b.N), b.ResetTimer)
				b.ReportMetric(float64(r.cycles)/float64(r.wqes), "cycles/WQE")
				b.ReportMetric(float64(r.wqes)/float64(r.cycles), "WQEs/cycle")
				// The bus each WQE takes (WQE reads; ring, status and CQE
				// writes): what bounds the rate at narrow widths.
				b.ReportMetric(float64(r.st.ReadBeats)/float64(r.wqes), "Rbeats/WQE")
				b.ReportMetric(float64(r.st.WriteBeats)/float64(r.wqes), "Wbeats/WQE")
			})
		}
	}
}

// TestCardWQEReadAhead checks card_tx's WQE read ahead on the whole card
// with the benchmark's traffic (two-block WQEs, one doorbell per burst of
// 256 on one or eight QPs): every block is read once, and a QP gets its
// WQEs in reads of at least half an entry (four blocks, two WQEs), not
// one read per WQE (the entries held one WQE until 29 Nov).
func TestCardWQEReadAhead(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		for _, c := range wqeRateCases {
			if c.few == 0 {
				continue
			}
			t.Run(fmt.Sprintf("%d/%s", w, c.name), func(t *testing.T) {
				r := runWQERate(t, w, c, 1, func() {}) // one round of bursts
				blocks := uint64(2 * r.wqes)
				require.Equal(t, blocks*uint64(512/w), r.st.ReadBeats, "R beats: every posted block read once")
				perWQE := float64(r.st.ReadBursts) / float64(r.wqes)
				t.Logf("%d WQEs in %d cycles (%.1f per WQE), %d read bursts (%.3f per WQE)",
					r.wqes, r.cycles, float64(r.cycles)/float64(r.wqes), r.st.ReadBursts, perWQE)
				// A window grows by half an entry (4 blocks, 2 WQEs) or
				// more at a time: 0.5 reads per WQE at most, and dma_rd
				// splits some into two bursts (4 KiB boundaries, and at
				// 64 bits its longest burst); one read per WQE gave 1.0 to
				// 1.5 before.
				require.LessOrEqual(t, perWQE, 0.6, "read bursts per WQE")
			})
		}
	}
}

// TestCardTurnLength guards the engine's turn: 64 QPs rung with bursts
// of 64-byte inline Sends (two blocks, read ahead together), cycles from
// each round's first doorbell to its last CQE. At 512 bits a turn is 8
// cycles: txDecide (the read-ahead block's first beat taken), txHdr (the
// descriptor offered), txFeed 3, txDrain 2 (until the last FPDU's first
// beat enters mpa_tx) and txWB, which takes the next QP's context, read
// the cycle before, and goes to txDecide (hw/README.md, "Shorter
// turns", "The quick turn"); at 64 bits the WQE's and payload's beats
// dominate. The bounds are a cycle above what the RTL does
// (deterministic: the same seed, the same cycles; the round's first
// WQE read and last completion are in it), under the 11.4 / 34.6 of
// the turns with txPop, txCtx and a drain to the last beat.
func TestCardTurnLength(t *testing.T) {
	bound := map[int]float64{64: 31.7, 512: 9.4}
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			r := runWQERate(t, w, wqeRateCases[0], 3*uint64(bound[w])*64*16, func() {})
			per := float64(r.cycles) / float64(r.wqes)
			t.Logf("%d WQEs in %d cycles: %.2f per WQE", r.wqes, r.cycles, per)
			require.LessOrEqual(t, per, bound[w], "cycles per WQE")
		})
	}
}

// wqeRateCases are BenchmarkCardWQEThroughput's traffic.
var wqeRateCases = []wqeRateCase{
	{"send64/wlat20", cs.WQEOpcodeSend, 20, false, 0},
	{"write64/wlat20", cs.WQEOpcodeRDMAWrite, 20, false, 0},
	{"send64/wlat250", cs.WQEOpcodeSend, 250, false, 0},
	{"send64/wlat20/random_qpn", cs.WQEOpcodeSend, 20, true, 0},
	{"send64/wlat20/one_qp", cs.WQEOpcodeSend, 20, false, 1},
	{"send64/wlat20/8_qps", cs.WQEOpcodeSend, 20, false, 8},
}

type wqeRateCase struct {
	name string
	op   cs.WQEOpcode
	wlat int
	rnd  bool // QP numbers drawn at random, not 1 to 64
	few  int  // 0: 64 QPs, 16 WQEs a burst; else this many QPs, 256 WQEs a burst
}

// wqeRate is what runWQERate measured: the cycles from each round's
// first doorbell to its last CQE, the WQEs, and the bus counts of the
// measured rounds.
type wqeRate struct {
	cycles uint64
	wqes   int
	st     CardStats
}

// runWQERate runs rounds of bursts of case c until at least n cycles
// were measured; start is called once the card is set up.
func runWQERate(tb testing.TB, w int, c wqeRateCase, n uint64, start func()) wqeRate {
	const size = 64      // inline bytes
	nqp, burst := 64, 16 // 16 WQEs: 32 of the SQ's 64 blocks
	sqLog, txsLog := uint32(6), uint32(13)
	if c.few > 0 {
		nqp, burst, sqLog, txsLog = c.few, 256, 10, 16 // 512 of 1,024 blocks; 22 of 64 KiB of ring
	}
	cfg := CardConfig{Timing: AXITiming{ReadLatency: 250, WriteLatency: c.wlat}}
	wb := newWCBenchCQ(tb, w, 1, cfg, nqp, 11, func(i int, q *wcQP) {
		if !c.rnd {
			q.n = uint32(1 + i) // as a driver numbers them
		}
		q.sqLog, q.txsLog, q.sendCQ = sqLog, txsLog, uint32(1+i%wcNCQ)
		q.mulpdu, q.markersTX, q.crc = 1024, true, true
	})
	cqes := 0
	perCQ := map[uint32]int{}
	wb.onRTLWrite = func(k wcKey) {
		if k.kind == "cqe" {
			cqes++
			perCQ[k.obj]++
		}
	}
	wqe := inlineWQE(c.op, 0, size, 2)
	var r wqeRate
	st0 := wb.rtl.Stats()
	start()
	for r.cycles < n {
		c0, want := wb.rtl.Cycles(), cqes+nqp*burst
		for _, q := range wb.qps {
			for k := 0; k < burst; k++ {
				for i := 0; i < len(wqe)/cs.BB; i++ {
					wb.put(wcSQ+uint64(q.n)<<16+uint64(q.pi&(1<<q.sqLog-1))*cs.BB, wqe[i*cs.BB:(i+1)*cs.BB])
					q.pi++
				}
			}
			require.NoError(tb, wb.rtl.RegWrite(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBSQPI, uint32(q.pi)))
		}
		require.NoError(tb, wb.rtl.RunUntil(func() bool { return cqes == want }, 10_000_000),
			"the card completed %d of %d WQEs", cqes-(want-nqp*burst), nqp*burst)
		r.cycles += wb.rtl.Cycles() - c0
		r.wqes += nqp * burst
		// The driver's turn, not counted: the CQEs consumed and the
		// transmit rings drained.
		require.NoError(tb, wb.rtl.RunUntil(func() bool { return wb.rtl.Outstanding() == 0 }, 100_000))
		for n := uint32(1); n <= wcNCQ; n++ { // in order: the same cycles every run
			if k, ok := perCQ[n]; ok {
				require.NoError(tb, wb.rtl.RegWrite(cs.CQDBBase+n*cs.CQDBStride+cs.CQDBCI, uint32(k)))
			}
		}
		for _, q := range wb.qps {
			require.NoError(tb, wb.rtl.RegWrite(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBTXSCI, wb.rtlStat(q.n).TXSPI()))
		}
		require.NoError(tb, wb.rtl.Step(50))
	}
	st := wb.rtl.Stats()
	r.st = CardStats{ReadBursts: st.ReadBursts - st0.ReadBursts, ReadBeats: st.ReadBeats - st0.ReadBeats,
		WriteBursts: st.WriteBursts - st0.WriteBursts, WriteBeats: st.WriteBeats - st0.WriteBeats}
	return r
}
