package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// card_cq matches its cycle model (golden/cycle's CardCQ) on every output
// of every cycle, at every shipped width: completions and events on both
// engines' ports, CQ commands (refused ones too), CQ doorbells (arming,
// solicited-only arming, CI far behind or past PI), EQ configurations and
// doorbells, small CQs and EQs that wrap, overrun and lose events,
// interrupts under IRQ_MODERATION and irq_ready stalls, overrun records
// held by m_overrun_ready, AXI backpressure, write responses after 0 to
// 250 cycles, error responses on CQEs (fault reports) and EQEs (the card
// stops), stopping events, and resets.
func TestCardCQCycleCosim(t *testing.T) {
	require.Equal(t, gen.CardCQTight, cycle.CardCQTight)
	for _, w := range gen.CardCQWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := CardCQBench(w)
			require.NoError(t, err)
			var drv *cardCQCycleDriver
			nd := b.NewDriver
			b.NewDriver = func(seed uint64) Driver { drv = nd(seed).(*cardCQCycleDriver); return drv }
			seed := seedFor(t.Name())
			st, err := b.Run(seed, *cosimCycles)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			require.Equal(t, *cosimCycles, st.Cycles)
			n := *cosimCycles / 1000
			d := drv
			assert.Greater(t, d.Completions, 50*n, "completions taken")
			assert.Greater(t, d.Events, 10*n, "events taken")
			assert.Greater(t, d.CQDoorbells, 10*n, "CQ doorbells")
			assert.Greater(t, d.NotifyArms, 2*n, "arming doorbells")
			assert.Greater(t, d.Notifies, n, "CQ_NOTIFY EQEs")
			assert.Greater(t, d.OverrunEQEs, n/2, "CQ_OVERRUN EQEs")
			assert.Greater(t, d.Commands, n, "CQ commands")
			assert.Greater(t, d.EQDoorbells, 5*n, "EQ doorbells")
			assert.Greater(t, d.EQConfigs, n/10, "EQ_CFG writes")
			assert.Greater(t, d.CQEs, 20*n, "CQEs written")
			assert.Greater(t, d.EQEs, 5*n, "EQEs written")
			assert.Greater(t, d.Overruns, n, "CQ overruns")
			assert.Greater(t, d.Lost, 2*n, "events lost")
			assert.Greater(t, d.IRQs, n/2, "interrupts")
			assert.Greater(t, d.IRQStalls, n, "interrupts held by irq_ready")
			assert.Greater(t, d.OverrunStalls, n, "overrun records held by m_overrun_ready")
			assert.Greater(t, d.CQEFaults, n/10, "CQs put in error by a faulted CQE write")
			assert.Greater(t, d.DMAOverruns, n/20, "overrun records of a CQ in error")
			if *cosimCycles >= 500_000 { // a few per million cycles
				assert.Greater(t, d.EQEFaults, n/1000, "faulted EQE writes (the card stops)")
				assert.Greater(t, d.Stops, n/1000, "stopping events")
				assert.Greater(t, d.Resets, 2+n/1000, "resets after the first")
			}
			assert.Greater(t, d.AWStalls, n, "AW backpressure")
			assert.Greater(t, d.WStalls, n, "W backpressure")
			assert.Greater(t, d.TightSeen, n, "cycles with a tight CQ")
			assert.Greater(t, d.BusyCycles, n, "cycles with cpl_busy")
			t.Logf("%s: %d cycles, %.2f M cycles/s; %d completions, %d events, %d CQ doorbells (%d arming), %d CQ commands, %d EQ_CFG, %d EQ doorbells; %d CQEs, %d EQEs (%d CQ_NOTIFY, %d CQ_OVERRUN); %d overruns, %d events lost, %d interrupts; faults %d CQE (%d sweeps), %d EQE; %d stopping events, %d reset cycles; stalls AW %d, W %d, irq %d, overrun %d",
				b.Module.Name, st.Cycles, st.CyclesPerSecond()/1e6, d.Completions, d.Events, d.CQDoorbells, d.NotifyArms, d.Commands,
				d.EQConfigs, d.EQDoorbells, d.CQEs, d.EQEs, d.Notifies, d.OverrunEQEs, d.Overruns, d.Lost, d.IRQs, d.CQEFaults, d.DMAOverruns, d.EQEFaults, d.Stops, d.Resets,
				d.AWStalls, d.WStalls, d.IRQStalls, d.OverrunStalls)
		})
	}
}

// TestCardCQCycleIRQWrap is TestCardCQCycleCosim with IRQ_MODERATION of
// 2,000 to 20,000 cycles, EQs of 512 to 4096 entries and no EQ arming
// inside an interrupt's window (as a host driver arms again only once it
// had the interrupt), so that hundreds of EQEs are written while
// moderation holds an interrupt due. Until 28 Nov card_cq then lost it:
// its wait compared EQE counts on 9 bits, and after 256 more EQEs the
// interrupt read as not reached (irq_reached_q now keeps it).
func TestCardCQCycleIRQWrap(t *testing.T) {
	for _, w := range gen.CardCQWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := CardCQBench(w)
			require.NoError(t, err)
			nd := b.NewDriver
			b.NewDriver = func(seed uint64) Driver {
				d := nd(seed).(*cardCQCycleDriver)
				d.longMod = true
				return d
			}
			seed := seedFor(t.Name())
			_, err = b.Run(seed, *cosimCycles)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
		})
	}
}

// card_cq's VHDL (with its dma_wr's) under GHDL, on the cycle model's
// stimulus: its per-CQ tightness decoder is a shift of a one, which the
// Verilog and VHDL emitters must agree on.
func TestCardCQGHDL(t *testing.T) {
	runGHDL(t, CardCQBench, []int{64}, 6000)
}
