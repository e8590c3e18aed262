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
// every burst has finished. Every output of every cycle of both muxes also
// matches their cycle models (golden/cycle's AXIRdMux and AXIWrMux).
func TestAXIMuxCosim(t *testing.T) {
	for _, w := range gen.AXIMuxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			axiBench(t, func(seed, cycles uint64) (*AXIMuxDriver, error) { return RunAXIMux(gen.AXIMuxDefault(w), seed, cycles) }, 100)
		})
	}
}

// axi_rd_remap and axi_wr_remap (the U250 wrapper's, 8-bit IDs onto 4):
// one master's random bursts, half of them on two slave IDs so that their
// queues fill, reach the slave with the low bits of their ID and come
// back whole, with their data and response, in order per ID, whatever
// order the slave answers different slave IDs in; every output of every
// cycle matches their cycle model (golden/cycle's AXIRemap).
func TestAXIRemapCosim(t *testing.T) {
	for _, w := range gen.AXIRemapWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			d := axiBench(t, func(seed, cycles uint64) (*AXIMuxDriver, error) {
				return RunAXIRemap(gen.AXIRemapBoard(w), seed, cycles)
			}, 200)
			assert.NotZero(t, d.Held, "addresses held back by a full queue")
		})
	}
}

// axiBench runs one of the AXI benches for a quarter of the co-simulation
// cycles and checks that at least one burst, W beat and R beat finished
// every per cycles.
func axiBench(t *testing.T, run func(seed, cycles uint64) (*AXIMuxDriver, error), per uint64) *AXIMuxDriver {
	seed := seedFor(t.Name())
	cycles := *cosimCycles / 4
	d, err := run(seed, cycles)
	require.NoError(t, err)
	require.NoError(t, d.Err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
	n := cycles / per
	assert.Greater(t, d.Bursts, n, "bursts finished")
	assert.Greater(t, d.WBeats, n, "W beats")
	assert.Greater(t, d.RBeats, n, "R beats")
	assert.Equal(t, cycles, d.Compared, "every cycle compared with the cycle models")
	t.Logf("%d cycles: %d bursts, %d W beats, %d R beats, %d address cycles held back", cycles, d.Bursts, d.WBeats, d.RBeats, d.Held)
	return d
}
