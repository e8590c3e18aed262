package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// dma_rd at 64 and 512 bits matches its cycle model on every output of
// every cycle, and end to end every request's bytes come out in order, from
// host memory, with its tag and error flag, while the simulated slave
// answers after up to 250 cycles, reordered and interleaved across IDs.
func TestDMARdCosim(t *testing.T) {
	for _, w := range gen.DMARdWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			cycles := *cosimCycles
			if w != 64 && w != 512 { // the widths between get a fifth
				cycles /= 5
			}
			b, err := DMARdBench(w)
			require.NoError(t, err)
			var drv *dmaRdDriver
			nd := b.NewDriver
			b.NewDriver = func(seed uint64) Driver { drv = nd(seed).(*dmaRdDriver); return drv }
			seed := seedFor(t.Name())
			st, err := b.Run(seed, cycles)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			require.NoError(t, drv.Err, "seed %d", seed)
			require.Equal(t, cycles, st.Cycles)
			n := cycles / 10000
			assert.Greater(t, drv.Requests, n, "requests completed")
			assert.Greater(t, drv.ErrorReqs, uint64(0), "requests with error responses")
			assert.Greater(t, drv.Reorders, 10*n, "beats answered out of issue order")
			t.Logf("%s: %d cycles, %.2f M cycles/s; %d requests, %d bytes, %d with errors, %d beats reordered",
				b.Module.Name, st.Cycles, st.CyclesPerSecond()/1e6, drv.Requests, drv.Bytes, drv.ErrorReqs, drv.Reorders)
		})
	}
}

// The end-to-end check catches a wrong byte: with a model that flips a bit
// of every output beat, the driver reports it.
func TestDMARdDriverCatchesCorruption(t *testing.T) {
	b, err := DMARdBench(64)
	require.NoError(t, err)
	var drv *dmaRdDriver
	nd := b.NewDriver
	b.NewDriver = func(seed uint64) Driver { drv = nd(seed).(*dmaRdDriver); return drv }
	p, err := lookupDMARdPorts(b.Layout)
	require.NoError(t, err)
	good := b.NewModel
	b.NewModel = func() (Model, error) {
		m, err := good()
		return &flipData{Model: m, p: p}, err
	}
	require.NoError(t, runModelOnly(b, 5, 20000))
	require.Error(t, drv.Err, "the end-to-end check sees the corrupted byte")
	assert.Contains(t, drv.Err.Error(), "want")
}

// runModelOnly runs a bench's driver against its model alone (no RTL).
func runModelOnly(b *Bench, seed, cycles uint64) error {
	model, err := b.NewModel()
	if err != nil {
		return err
	}
	drv := b.NewDriver(seed)
	in, out := make([]uint32, b.Layout.InWords), make([]uint32, b.Layout.OutWords)
	for c := uint64(0); c < cycles; c++ {
		drv.Next(in)
		model.Step(in, out)
		drv.Observe(in, out)
	}
	return nil
}

// flipData flips a bit of every output beat the model shows.
type flipData struct {
	Model
	p dmaRdPorts
}

func (f *flipData) Step(in, out []uint32) {
	f.Model.Step(in, out)
	if f.p.oValid.Get(out) != 0 {
		out[f.p.oData.Offset] ^= 1
	}
}

// dma_rd's VHDL under GHDL, on the same stimulus.
func TestDMARdGHDL(t *testing.T) {
	runGHDL(t, DMARdBench, []int{64}, 20000)
}

// BenchmarkDMARdThroughput: 4-64 KiB reads, every burst answered 250
// cycles after its address, output always taken: beats per cycle.
func BenchmarkDMARdThroughput(b *testing.B) {
	for _, w := range []int{64, 512} {
		bench, err := DMARdSaturated(w)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bench.Module.Name, func(b *testing.B) {
			cycles := uint64(max(b.N, 200000))
			st, err := bench.Run(1, cycles)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.Emitted["m_axis_tvalid"])/float64(st.Cycles), "beats/cycle")
		})
	}
}
