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

// TestFaultsSim runs the fault injection of verbstest.RunFaults on the
// sim card, at smaller counts: every fault once, traffic both ways
// through the RTL, a flipped byte caught by mpa_rx's CRC check.
func TestFaultsSim(t *testing.T) {
	before := sim.CheckedCycles()
	verbstest.RunFaults(t, "sim", verbstest.FaultOptions{Seeds: 1, Messages: 6, Reads: 2, MaxSize: 4096})
	t.Logf("%d RTL cycles checked", sim.CheckedCycles()-before)
}
