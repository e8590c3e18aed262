package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// card_regs at every width matches its cycle model on every output of every
// cycle under random AXI4-Lite traffic to every kind of address, pushes in
// and out of order, backpressure on every channel and resets.
func TestCardRegsCosim(t *testing.T) {
	for _, w := range gen.CardRegsWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := CardRegsBench(w)
			require.NoError(t, err)
			seed := seedFor(t.Name())
			var writes, reads, dbs, pushOK, cmds, win, slverr uint64
			lay := b.Layout
			p, err := lookupCardRegsPorts(lay)
			require.NoError(t, err)
			b.Tap = func(in, got []uint32) {
				if p.awready.Get(got) != 0 {
					writes++
				}
				if p.arready.Get(got) != 0 && p.arvalid.Get(in) != 0 {
					reads++
				}
				if p.dbValid.Get(got) != 0 && p.dbReady.Get(in) != 0 {
					dbs++
					pushOK += p.dbPushOK.Get(got)
				}
				for i := range p.cmdValid {
					if p.cmdValid[i].Get(got) != 0 && p.cmdReady[i].Get(in) != 0 {
						cmds++
					}
				}
				win += p.regWrValid.Get(got)
				if p.bvalid.Get(got) != 0 && p.bready.Get(in) != 0 && p.bresp.Get(got) == 2 {
					slverr++
				}
			}
			st, err := b.Run(seed, *cosimCycles)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			require.Equal(t, *cosimCycles, st.Cycles)
			// Every path was exercised.
			n := *cosimCycles / 1000
			assert.Greater(t, writes, 20*n, "writes")
			assert.Greater(t, reads, 20*n, "reads")
			assert.Greater(t, dbs, 5*n, "doorbells")
			assert.Greater(t, pushOK, n/2, "good pushes")
			assert.Greater(t, cmds, n, "commands")
			assert.Greater(t, win, n, "window writes")
			assert.Greater(t, slverr, n/2, "SLVERR responses")
			t.Logf("%s: %d cycles, %.2f M cycles/s; %d writes, %d reads, %d doorbells (%d pushes whole), %d commands, %d window writes, %d SLVERR",
				b.Module.Name, st.Cycles, st.CyclesPerSecond()/1e6, writes, reads, dbs, pushOK, cmds, win, slverr)
		})
	}
}

// card_regs' VHDL under GHDL, on the same stimulus.
func TestCardRegsGHDL(t *testing.T) {
	runGHDL(t, CardRegsBench, []int{64}, 10000)
}
