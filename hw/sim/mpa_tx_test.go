package sim

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// mpa_tx's RTL matches its cycle model (golden/mpa's Framer for the data) on
// every output of every cycle.
func TestMPATxCosim(t *testing.T) {
	for _, w := range gen.MPATxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := MPATxBench(w)
			require.NoError(t, err)
			seed := seedFor(t.Name())
			st, err := b.Run(seed, *cosimCycles)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			assert.Greater(t, st.Accepted["s_axis_tvalid"], st.Cycles/10, "seed %d", seed)
			t.Logf("%s: %d cycles, %.2f M cycles/s, %d beats accepted", b.Module.Name, st.Cycles,
				st.CyclesPerSecond()/1e6, st.Accepted["s_axis_tvalid"])
		})
	}
}

// Loop test against the golden receiver: the RTL's FPDUs, fed per
// connection into golden/mpa's Deframer (markers and CRC checked), give back
// exactly the ULPDUs that went in, in order.
func TestMPATxIntoGoldenDeframer(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := MPATxBench(w)
			require.NoError(t, err)
			var drv *txDriver
			b.NewDriver = func(seed uint64) Driver {
				drv = newTxDriver(b.Layout, seed, false).(*txDriver)
				drv.noReset, drv.record = true, true
				return drv
			}
			p, err := lookupTxPorts(b.Layout)
			require.NoError(t, err)
			lanes := w / 8
			deframers := map[int]*mpa.Deframer{}
			var pkt []byte
			beat := make([]byte, lanes)
			delivered, next := 0, 0
			var failure error
			b.Tap = func(in, got []uint32) {
				if failure != nil || p.mValid.Get(got) == 0 || p.mReady.Get(in) == 0 {
					return
				}
				p.mData.Bytes(got, beat)
				keep := p.mKeep.Get(got)
				for i := 0; i < lanes; i++ {
					if keep>>i&1 == 1 {
						pkt = append(pkt, beat[i])
					}
				}
				if p.mLast.Get(got) == 0 {
					return
				}
				want := drv.sent[next]
				next++
				d := deframers[want.conn]
				if d == nil {
					d = mpa.NewDeframer(mpa.DeframerConfig{Markers: want.ctx.Markers, CRC: want.ctx.CRC, StartOffset: want.ctx.Offset})
					deframers[want.conn] = d
				}
				n := 0
				err := d.Feed(pkt, func(u mpa.ULPDU) error {
					n++
					if !bytes.Equal(u.Data, want.data) {
						return fmt.Errorf("FPDU %d (connection %d, offset %d): ULPDU differs", next-1, want.conn, want.ctx.Offset)
					}
					return nil
				})
				switch {
				case err != nil:
					failure = err
				case n != 1:
					failure = fmt.Errorf("FPDU %d gave %d ULPDUs", next-1, n)
				}
				delivered += n
				pkt = pkt[:0]
			}
			seed := seedFor(t.Name())
			_, err = b.Run(seed, 300000)
			require.NoError(t, err, "seed %d", seed)
			require.NoError(t, failure, "seed %d", seed)
			assert.Greater(t, delivered, 100)
			t.Logf("%d FPDUs from the RTL deframed by golden/mpa", delivered)
		})
	}
}

// BenchmarkMPATxGoSide measures the Go half of one co-simulated mpa_tx
// cycle (one op): the driver's stimulus, the cycle model through the port
// vectors and the driver's observation, without the Verilated RTL, whose
// batches run alongside on another core.
func BenchmarkMPATxGoSide(b *testing.B) {
	for _, w := range gen.MPATxWidths {
		bench, err := MPATxBench(w)
		require.NoError(b, err)
		b.Run(bench.Module.Name, func(b *testing.B) {
			model, err := bench.NewModel()
			require.NoError(b, err)
			drv := bench.NewDriver(1)
			in, out := make([]uint32, bench.Layout.InWords), make([]uint32, bench.Layout.OutWords)
			b.ReportAllocs()
			for b.Loop() {
				drv.Next(in)
				model.Step(in, out)
				drv.Observe(in, out)
			}
		})
	}
}
