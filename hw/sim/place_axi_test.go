package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// place_axi at 64 and 512 bits matches its cycle model (golden/cycle's
// PlaceAXI) on every output of every cycle: random blocks, backpressure
// on every channel, responses after random delays with errors now and
// then, resets.
func TestPlaceAXICosim(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := PlaceAXIBench(w)
			require.NoError(t, err)
			var drv *placeAXIDriver
			nd := b.NewDriver
			b.NewDriver = func(seed uint64) Driver { drv = nd(seed).(*placeAXIDriver); return drv }
			seed := seedFor(t.Name())
			cycles := *cosimCycles / 4
			st, err := b.Run(seed, cycles)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			require.Equal(t, cycles, st.Cycles)
			assert.Greater(t, drv.Blocks, cycles/20, "blocks taken")
			assert.Greater(t, drv.Errors, cycles/2000, "error responses reported")
			t.Logf("%s: %d cycles, %.2f M cycles/s; %d blocks, %d error responses", b.Module.Name, st.Cycles, st.CyclesPerSecond()/1e6, drv.Blocks, drv.Errors)
		})
	}
}
