package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// mpa_tx's RTL matches its cycle model (golden/mpa's Framer for the data) on
// every output of every cycle.
func TestMPATxCosim(t *testing.T) {
	for _, w := range gen.MPATxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := MPATxBench(w)
			require.NoError(t, err)
			seed := seedFor(t.Name())
			st, err := b.Run(seed, *cosimCycles)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			assert.Greater(t, st.Accepted["s_axis_tvalid"], st.Cycles/10, "seed %d", seed)
			t.Logf("%s: %d cycles, %.2f M cycles/s, %d beats accepted", b.Module.Name, st.Cycles,
				st.CyclesPerSecond()/1e6, st.Accepted["s_axis_tvalid"])
		})
	}
}
