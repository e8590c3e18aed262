package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// The whole card's VHDL (iwcard_w64 and every block in it) under GHDL,
// cycle by cycle against the Verilated card on a few rounds of
// TestCardCosim's traffic (every opcode on four QPs, random host latency,
// reordering and backpressure): the Verilog and VHDL emitters must agree
// on the card, not only on the blocks with a cycle model. The Verilated
// run is checked against the card model first.
func TestCardGHDL(t *testing.T) {
	t.Parallel()
	const w = 64
	seed := seedFor(t.Name())
	vec := newVectorFile(t)
	cfg := wcTiming
	cfg.Vectors = vec.f
	b := newWCBench(t, w, seed, cfg, 4)
	for round := 0; round < 2; round++ {
		b.round(round)
	}
	b.compare()
	require.NoError(t, b.rtl.FlushVectors())
	m, err := gen.CardTop(w)
	require.NoError(t, err)
	n := vec.runGHDL(t, &Bench{Module: m, Layout: LayoutOf(m)}, seed)
	st := b.rtl.Stats()
	require.Equal(t, int(st.Cycles)+8, n, "cycles checked (8 of reset)")
	t.Logf("seed %d: %d cycles under GHDL, %d read / %d write bursts", seed, n, st.ReadBursts, st.WriteBursts)
}
