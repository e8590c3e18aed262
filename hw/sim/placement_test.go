package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// The RTL of the placement engine matches its cycle model on every output
// of every cycle, at 64 and 512 bits, under random STag tables (programmed
// and changed through the register interface) and random ULPDUs, good and
// hostile, with random gaps and backpressure; and no DMA write ever lands
// outside a valid region of the table.
func TestPlacementCosim(t *testing.T) {
	for _, w := range gen.PlacementWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			var drv *plDriver
			b, err := placementBench(w, plMode{}, &drv)
			require.NoError(t, err)
			seed := seedFor(t.Name())
			st, err := b.Run(seed, *cosimCycles)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			require.Equal(t, *cosimCycles, st.Cycles)
			t.Logf("%s: %d cycles, %.2f M cycles/s; %s", b.Module.Name, st.Cycles, st.CyclesPerSecond()/1e6, drv.summary())
			assert.Empty(t, drv.Violation, "seed %d", seed)
			// The stimulus reached every outcome.
			assert.Greater(t, drv.DMABeats, st.Cycles/50, "seed %d", seed)
			assert.Greater(t, drv.HostBeats, st.Cycles/100, "seed %d", seed)
			for _, c := range []rdmap.Cause{rdmap.DDPInvalidSTag, rdmap.DDPBaseBounds, rdmap.DDPSTagNotAssociated, rdmap.DDPTOWrap,
				rdmap.DDPTaggedInvalidVersion, rdmap.DDPUntaggedInvalidVersion, rdmap.DDPInvalidQN,
				rdmap.RDMAPInvalidVersion, rdmap.RDMAPUnexpectedOpcode} {
				assert.NotZero(t, drv.Terms[c], "no Terminate %v in seed %d", c, seed)
			}
		})
	}
}
