package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/fpga/selftest"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// The UART transmitter of the self-test matches its cycle model on every
// output of every cycle under random bytes, gaps and resets (mid-frame too).
func TestUARTTxCosim(t *testing.T) {
	div, err := gen.UARTTxDivisor(gen.SelftestHX8K.ClockHz, gen.SelftestHX8K.Baud)
	require.NoError(t, err)
	b, err := UARTTxBench(div)
	require.NoError(t, err)
	seed := seedFor(t.Name())
	st, err := b.Run(seed, *cosimCycles)
	require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
	assert.Greater(t, st.Accepted["s_axis_tvalid"], st.Cycles/2000, "seed %d: bytes sent", seed)
}

// The board self-test, Verilated from hw/rtl, prints on its UART exactly
// the lines the Go model (fpga/selftest, golden/mpa underneath) predicts,
// shows the LEDs it predicts, and starts again from the first line when the
// rx line is pulled low.
func TestSelftestUARTReport(t *testing.T) {
	for _, cfg := range []gen.SelftestConfig{gen.SelftestTxHX8K, gen.SelftestHX8K} {
		t.Run(cfg.Name, func(t *testing.T) {
			const lines = 2
			want, err := selftest.New(cfg).Lines(lines)
			require.NoError(t, err)
			got, err := RunSelftest(cfg, lines+1, lines, 64<<20)
			require.NoError(t, err)
			assert.Equal(t, append(want, want[0]), got.Lines, "report lines, the last after a restart")
			first := selftest.New(cfg)
			_, err = first.Lines(1)
			require.NoError(t, err)
			assert.Equal(t, selftest.LEDs(1, first.Counters()), got.LED, "LEDs after the restart's first line")
			t.Logf("%d cycles (%.0f ms at %d MHz): %q", got.Cycles, float64(got.Cycles)/float64(cfg.ClockHz)*1e3, cfg.ClockHz/1_000_000, got.Lines)
		})
	}
}
