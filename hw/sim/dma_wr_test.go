package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// dma_wr at 64 and 512 bits matches its cycle model on every output of
// every cycle, and end to end the slave receives exactly each request's
// bytes at their addresses, each burst's W beats after its address, and
// one completion per request in order with its tag and error.
func TestDMAWrCosim(t *testing.T) {
	for _, w := range gen.DMAWrWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			cycles := *cosimCycles
			if w != 64 && w != 512 { // the widths between get a fifth
				cycles /= 5
			}
			b, err := DMAWrBench(w)
			require.NoError(t, err)
			var drv *dmaWrDriver
			nd := b.NewDriver
			b.NewDriver = func(seed uint64) Driver { drv = nd(seed).(*dmaWrDriver); return drv }
			seed := seedFor(t.Name())
			st, err := b.Run(seed, cycles)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			require.NoError(t, drv.Err, "seed %d", seed)
			require.Equal(t, cycles, st.Cycles)
			n := cycles / 10000
			assert.Greater(t, drv.Requests, n, "requests completed")
			assert.Greater(t, drv.ErrorReqs, uint64(0), "requests with error responses")
			t.Logf("%s: %d cycles, %.2f M cycles/s; %d requests, %d bytes, %d with errors",
				b.Module.Name, st.Cycles, st.CyclesPerSecond()/1e6, drv.Requests, drv.Bytes, drv.ErrorReqs)
		})
	}
}

// The end-to-end check catches a wrong byte on W.
func TestDMAWrDriverCatchesCorruption(t *testing.T) {
	b, err := DMAWrBench(64)
	require.NoError(t, err)
	var drv *dmaWrDriver
	nd := b.NewDriver
	b.NewDriver = func(seed uint64) Driver { drv = nd(seed).(*dmaWrDriver); return drv }
	p, err := lookupDMAWrPorts(b.Layout)
	require.NoError(t, err)
	good := b.NewModel
	b.NewModel = func() (Model, error) {
		m, err := good()
		return &flipW{Model: m, p: p}, err
	}
	require.NoError(t, runModelOnly(b, 5, 20000))
	require.Error(t, drv.Err, "the end-to-end check sees the corrupted byte")
}

// flipW flips every W beat's strobed data.
type flipW struct {
	Model
	p dmaWrPorts
}

func (f *flipW) Step(in, out []uint32) {
	f.Model.Step(in, out)
	if f.p.wValid.Get(out) != 0 {
		out[f.p.wData.Offset] ^= 0xFFFFFFFF
		out[f.p.wData.Offset+1] ^= 0xFFFFFFFF
	}
}

// dma_wr's VHDL under GHDL, on the same stimulus.
func TestDMAWrGHDL(t *testing.T) {
	runGHDL(t, DMAWrBench, []int{64}, 20000)
}

// BenchmarkDMAWrThroughput: 4-64 KiB writes, data always offered, every
// channel ready, responses 250 cycles after each burst: input beats per
// cycle.
func BenchmarkDMAWrThroughput(b *testing.B) {
	for _, w := range []int{64, 512} {
		bench, err := DMAWrSaturated(w)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bench.Module.Name, func(b *testing.B) {
			cycles := uint64(max(b.N, 200000))
			st, err := bench.Run(1, cycles)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.Accepted["s_axis_tvalid"])/float64(st.Cycles), "beats/cycle")
		})
	}
}
