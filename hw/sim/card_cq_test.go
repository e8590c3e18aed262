package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// card_cq at 64 and 512 bits writes exactly the CQEs and EQEs (address
// and bytes, in order) that the card model's queue logic writes for the
// same operations in the order the RTL took them, gives the same overrun
// records and lost-event count, and raises interrupts as the model does
// (never more, at least one by each quiet point after the model raised
// one, vector equal, IRQ_MODERATION apart), under random operations,
// arming, AXI backpressure and write-response latency.
func TestCardCQCosim(t *testing.T) {
	for _, w := range gen.CardCQWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			cfg := gen.CardCQDefault(w)
			m, err := gen.CardCQ(cfg)
			require.NoError(t, err)
			seed := seedFor(t.Name())
			drv, err := NewCardCQDriver(LayoutOf(m), cfg.Sources, CardCQRandom, seed)
			require.NoError(t, err)
			cycles := *cosimCycles / 2
			st, err := RunRTL(m, drv, cycles, func() bool { return drv.Err != nil })
			require.NoError(t, err)
			require.NoError(t, drv.Err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			n := cycles / 1000
			assert.Greater(t, drv.Completions, n, "completions")
			assert.Greater(t, drv.Events, n/4, "events")
			assert.Greater(t, drv.Writes, n, "writes compared")
			assert.Greater(t, drv.IRQs, uint64(10), "interrupts")
			assert.Greater(t, drv.Overruns, uint64(0), "CQ overruns")
			assert.Greater(t, drv.Lost, uint64(0), "events lost")
			assert.Greater(t, drv.Quiet, uint64(10), "quiet-point checks")
			assert.Greater(t, drv.Tight, uint64(100), "tight CQs seen")
			assert.Greater(t, drv.TightChecks-drv.Tight, uint64(100), "CQs seen not tight")
			t.Logf("%s: %d cycles, %.2f M cycles/s; %d completions, %d events, %d writes, %d/%d interrupts (RTL/model), %d overruns, %d events lost, %d quiet checks, cq_tight compared %d times (%d set)",
				m.Name, st.Cycles, st.CyclesPerSecond()/1e6, drv.Completions, drv.Events, drv.Writes, drv.IRQs, drv.RefIRQs, drv.Overruns, drv.Lost, drv.Quiet, drv.TightChecks, drv.Tight)
		})
	}
}

// The comparison catches a wrong owner bit.
func TestCardCQDriverCatchesOwnerBit(t *testing.T) {
	cfg := gen.CardCQDefault(64)
	m, err := gen.CardCQ(cfg)
	require.NoError(t, err)
	drv, err := NewCardCQDriver(LayoutOf(m), cfg.Sources, CardCQRandom, 1)
	require.NoError(t, err)
	drv.corrupt = true
	_, err = RunRTL(m, drv, 200000, func() bool { return drv.Err != nil })
	require.NoError(t, err)
	require.ErrorContains(t, drv.Err, "reference", "the comparison sees the flipped owner bit")
}

// CardCQThroughput: completions on both ports every cycle on one CQ
// that the driver keeps consuming, the AXI slave always ready and
// answering after 250 cycles: completions taken per cycle, and the
// cycles from a completion taken to its CQE's burst address taken.
func BenchmarkCardCQThroughput(b *testing.B) {
	for _, w := range gen.CardCQWidths {
		b.Run(fmt.Sprint(w), func(b *testing.B) {
			cfg := gen.CardCQDefault(w)
			m, err := gen.CardCQ(cfg)
			require.NoError(b, err)
			drv, err := NewCardCQDriver(LayoutOf(m), cfg.Sources, CardCQSaturated, 1)
			require.NoError(b, err)
			cycles := uint64(max(b.N, 20000))
			b.ResetTimer()
			st, err := RunRTL(m, drv, cycles, func() bool { return drv.Err != nil })
			require.NoError(b, err)
			require.NoError(b, drv.Err)
			steady := float64(drv.Completions) / float64(st.Cycles-1100) // less reset and the context RAM's clearing
			b.ReportMetric(steady, "cpl/cycle")
			b.ReportMetric(drv.Latency.Mean(), "lat-mean-cycles")
			b.ReportMetric(float64(drv.Latency.Min), "lat-min-cycles")
			b.ReportMetric(st.CyclesPerSecond(), "cycles/s")
		})
	}
}
