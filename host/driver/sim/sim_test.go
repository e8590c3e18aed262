//go:build cosim

package sim_test

import (
	"testing"

	"github.com/openiwarp/openiwarp/host/driver/sim"
	"github.com/openiwarp/openiwarp/host/verbs/verbstest"
)

// TestSuiteSim runs the verbs suite on the sim card: every FPDU is framed
// by (transmit) and delineated, checked and unframed by (receive) the
// Verilated RTL, and tagged segments are placed by it.
// Same sizes as the model card, 0 to 16 MiB.
func TestSuiteSim(t *testing.T) {
	before := sim.CheckedCycles()
	verbstest.Run(t, "sim", verbstest.Options{QPs: 4})
	n := sim.CheckedCycles() - before
	t.Logf("%d RTL cycles checked against golden/cycle, %d FPDUs through the RTL", n, sim.Frames())
	if n == 0 {
		t.Fatal("no RTL cycle was checked: the sim card ran without its RTL")
	}
}
