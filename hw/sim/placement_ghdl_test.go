package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// placementGHDLCycles: the reset sweep of the 4096-entry table, a sparse
// table and tens of thousands of cycles of mixed traffic.
const placementGHDLCycles = 40000

// The VHDL of the placement engine at 64 and 512 bits, run by GHDL under
// the generated self-checking test bench, matches the cycle model on every
// output of every cycle of the co-simulation's stimulus (a sparse random
// table so that traffic starts early). The widths between come from the
// same generator code and are co-simulated with Verilator; GHDL runs the
// two ends only, to keep make test short.
func TestPlacementGHDL(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			t.Parallel()
			var drv *plDriver
			b, err := placementBench(w, plMode{sparse: 256}, &drv)
			require.NoError(t, err)
			dir := t.TempDir()
			vec := filepath.Join(dir, "vectors.txt")
			f, err := os.Create(vec)
			require.NoError(t, err)
			seed := seedFor(t.Name())
			require.NoError(t, b.WriteVectors(f, seed, placementGHDLCycles))
			require.NoError(t, f.Close())
			require.Empty(t, drv.Violation)
			require.Greater(t, drv.DMABeats, uint64(1000), "the vectors place data")
			res, err := b.RunGHDL(dir, vec)
			require.NoError(t, err, "seed %d", seed)
			assert.Equal(t, placementGHDLCycles, res.Cycles)
			t.Logf("%s: GHDL checked %d cycles; %s", b.Module.Name, res.Cycles, drv.summary())
		})
	}
}
