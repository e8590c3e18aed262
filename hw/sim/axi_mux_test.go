package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// axi_rd_mux and axi_wr_mux at 64 and 512 bits: four masters' random
// bursts (random IDs, W offered before its address, random valid gaps)
// reach the slave once each with the master's number above the ID, write
// data in address order and whole, and every response and read beat
// (interleaved across IDs by the slave) comes back to its master in
// order per ID with the data and response its address implies; at the end
// every burst has finished.
func TestAXIMuxCosim(t *testing.T) {
	for _, w := range gen.AXIMuxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			cycles := *cosimCycles / 4
			d, err := RunAXIMux(gen.AXIMuxDefault(w), seed, cycles)
			require.NoError(t, err)
			require.NoError(t, d.Err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			n := cycles / 100
			assert.Greater(t, d.Bursts, n, "bursts finished")
			assert.Greater(t, d.WBeats, n, "W beats")
			assert.Greater(t, d.RBeats, n, "R beats")
			t.Logf("%d cycles: %d bursts, %d W beats, %d R beats", cycles, d.Bursts, d.WBeats, d.RBeats)
		})
	}
}
