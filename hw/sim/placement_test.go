package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
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
			assert.Greater(t, drv.Dones, uint64(100), "seed %d", seed)
			for _, c := range []rdmap.Cause{rdmap.DDPInvalidSTag, rdmap.DDPBaseBounds, rdmap.DDPSTagNotAssociated, rdmap.DDPTOWrap,
				rdmap.DDPTaggedInvalidVersion, rdmap.DDPUntaggedInvalidVersion, rdmap.DDPInvalidQN,
				rdmap.RDMAPInvalidVersion, rdmap.RDMAPUnexpectedOpcode} {
				assert.NotZero(t, drv.Terms[c], "no Terminate %v in seed %d", c, seed)
			}
		})
	}
}

// The safety property the co-simulation checks can fail: a DMA byte one
// past a region, in an invalid region, or on an unmapped page of a paged
// region is reported.
func TestPlacementPropertyCatchesStrayWrites(t *testing.T) {
	b, err := placementBench(64, plMode{}, nil)
	require.NoError(t, err)
	fresh := func() *plDriver {
		d := newPlDriver(b.Layout, gen.PlacementDefault(64), 1, plMode{})
		d.table[1] = plShadow{PlacementEntry: cycle.PlacementEntry{Entry: mem.Entry{Valid: true, Length: 100, Access: mem.RemoteWrite}, Addr: 0x1000}}
		d.table[2] = plShadow{PlacementEntry: cycle.PlacementEntry{Entry: mem.Entry{Valid: true, Length: 4000, Access: mem.LocalWrite}, Paged: true, Addr: 0xF00},
			pages: []uint64{0x40000, 0x90000}}
		d.pageList[0], d.pageList[1] = 0x40000, 0x90000
		d.table[3] = plShadow{PlacementEntry: cycle.PlacementEntry{Entry: mem.Entry{Valid: false, Length: 100, Access: mem.RemoteWrite}, Addr: 0x8000}}
		d.rebuild()
		return d
	}
	for _, c := range []struct {
		addr, strb uint64
		bad        bool
	}{
		{0x1000, 0xFF, false},
		{0x1060, 0x0F, false},  // bytes 0x1060-0x1063, the last four
		{0x1060, 0x1F, true},   // one byte past the region
		{0x0FF8, 0x80, true},   // one byte before
		{0x8000, 0x01, true},   // an invalid entry's memory
		{0x40F00, 0xFF, false}, // paged: first page from its offset
		{0x40EF8, 0x80, true},  // just before the offset
		{0x90000, 0xFF, false}, // second page
		{0x90000 + 0xF00 + 4000 - 0x1000 - 8, 0xFF, false},
		{0x90000 + 0xF00 + 4000 - 0x1000, 0x01, true}, // one past the end
	} {
		d := fresh()
		d.checkDMA(c.addr, c.strb)
		assert.Equal(t, c.bad, d.Violation != "", "write at %#x strobes %#x: %s", c.addr, c.strb, d.Violation)
	}
}
