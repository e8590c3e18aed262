package sim

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// mpa_rx's RTL matches its cycle model (golden/mpa's Deframer for the
// ULPDUs and the errors) on every output of every cycle.
func TestMPARxCosim(t *testing.T) {
	for _, w := range gen.MPARxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := MPARxBench(w)
			require.NoError(t, err)
			seed := seedFor(t.Name())
			st, err := b.Run(seed, *cosimCycles)
			require.NoError(t, err, "seed %d (rerun with -cosim.seed=%d)", seed, seed)
			assert.Greater(t, st.Accepted["s_axis_tvalid"], st.Cycles/10, "seed %d", seed)
			assert.Greater(t, st.Emitted["m_axis_tvalid"], st.Cycles/20, "seed %d", seed)
			t.Logf("%s: %d cycles, %.2f M cycles/s, %d beats in, %d beats out", b.Module.Name, st.Cycles,
				st.CyclesPerSecond()/1e6, st.Accepted["s_axis_tvalid"], st.Emitted["m_axis_tvalid"])
		})
	}
}

// rxErrors counts, from the RTL's outputs, the errors each episode ended
// with, by golden/mpa Kind.
type rxErrors struct {
	p     rxPorts
	seen  bool
	kinds map[mpa.Kind]int
}

func (r *rxErrors) tap(in, got []uint32) {
	if r.p.rst.Get(in) != 0 {
		r.seen = false
		return
	}
	if r.p.errValid.Get(got) != 0 && !r.seen {
		r.seen = true
		r.kinds[mpa.Kind(r.p.errKind.Get(got))]++
	}
}

// Every fault the driver injects (a corrupted CRC, a bad FPDUPTR, a bad
// ULPDU_Length, a stream cut inside an FPDU, a flipped bit) gives, cycle
// for cycle, the error golden/mpa gives, with the same kind, code and
// FPDU offset; each class shows up.
func TestMPARxFaults(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, err := MPARxBench(w)
			require.NoError(t, err)
			b.NewDriver = func(seed uint64) Driver { return NewRxDriver(b.Layout, seed, RxFaults) }
			p, err := lookupRxPorts(b.Layout)
			require.NoError(t, err)
			errs := &rxErrors{p: p, kinds: map[mpa.Kind]int{}}
			b.Tap = errs.tap
			seed := seedFor(t.Name())
			_, err = b.Run(seed, 300000)
			require.NoError(t, err, "seed %d", seed)
			for _, k := range []mpa.Kind{mpa.KindCRC, mpa.KindMarker, mpa.KindLength, mpa.KindClosed} {
				assert.Positive(t, errs.kinds[k], "no %v error in the run (seed %d): %v", k, seed, errs.kinds)
			}
			t.Logf("errors reported: %v", errs.kinds)
		})
	}
}

// Loop test: the FPDUs mpa_tx's RTL framed for each connection, streamed
// into mpa_rx's RTL in random segments, give back exactly the ULPDUs that
// went into mpa_tx, in order.
func TestMPATxIntoMPARx(t *testing.T) {
	for _, w := range []int{64, 512} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			// 1. mpa_tx: record each connection's ULPDUs and the RTL's FPDUs.
			tb, err := MPATxBench(w)
			require.NoError(t, err)
			var drv *txDriver
			tb.NewDriver = func(s uint64) Driver {
				drv = newTxDriver(tb.Layout, s, false).(*txDriver)
				drv.noReset, drv.record = true, true
				return drv
			}
			tp, err := lookupTxPorts(tb.Layout)
			require.NoError(t, err)
			lanes := w / 8
			streams := map[int][]byte{}
			sink := newPacketSink(tp.mData, tp.mKeep, tp.mValid, tp.mLast, tp.mReady)
			next := 0
			tb.Tap = func(in, got []uint32) {
				if pkt, ok := sink.take(in, got); ok {
					c := drv.sent[next].conn
					streams[c] = append(streams[c], pkt...)
					next++
				}
			}
			_, err = tb.Run(seed, 200000)
			require.NoError(t, err, "seed %d", seed)
			sent := drv.sent[:next]
			require.NotEmpty(t, streams, "mpa_tx framed nothing to loop back")

			// 2. mpa_rx: each connection's stream in turn, one episode each.
			for conn, stream := range streams {
				var want [][]byte
				var ctx cycle.MPATxCtx
				for _, s := range sent {
					if s.conn == conn {
						if want == nil {
							ctx = s.ctx
						}
						want = append(want, s.data)
					}
				}
				rb, err := MPARxBench(w)
				require.NoError(t, err)
				rp, err := lookupRxPorts(rb.Layout)
				require.NoError(t, err)
				rest := stream
				var rd *RxDriver
				rb.NewDriver = func(s uint64) Driver {
					rd = NewRxDriver(rb.Layout, s, RxRandom)
					rd.Episode = func(cfg *cycle.MPARxCfg) {
						*cfg = cycle.MPARxCfg{Offset: ctx.Offset, Markers: ctx.Markers, CRC: ctx.CRC}
					}
					rd.Stream = func() []byte {
						n := min(len(rest), 4096)
						b := rest[:n]
						rest = rest[n:]
						return b
					}
					rd.Endless = true
					return rd
				}
				var got [][]byte
				rsink := newPacketSink(rp.mData, rp.mKeep, rp.mValid, rp.mLast, rp.mReady)
				rb.Tap = func(in, o []uint32) {
					if pkt, ok := rsink.take(in, o); ok {
						got = append(got, pkt)
					}
				}
				cycles := uint64(len(stream)/lanes*4 + 20000)
				_, err = rb.Run(seed, cycles)
				require.NoError(t, err, "seed %d connection %d", seed, conn)
				require.Equal(t, len(want), len(got), "connection %d: ULPDUs out of mpa_rx", conn)
				for i := range want {
					require.True(t, bytes.Equal(want[i], got[i]), "connection %d ULPDU %d (%d octets) differs", conn, i, len(want[i]))
				}
				t.Logf("connection %d: %d ULPDUs (%d stream octets) through mpa_tx and back out of mpa_rx", conn, len(got), len(stream))
			}
		})
	}
}

// mpa_rx's VHDL at two widths against the same vectors.
func TestMPARxGHDL(t *testing.T) {
	runGHDL(t, MPARxBench, []int{64, 128}, 20000)
}

// BenchmarkMPARxThroughput measures mpa_rx at full speed on a good stream
// offered in whole beats, output always taken: input beats per cycle, and
// output beats per cycle, for FPDUs of 1 to 1500 octets (small ones make
// the output, one packet per ULPDU, the busier side) and of 1448 to 9000.
func BenchmarkMPARxThroughput(b *testing.B) {
	for _, w := range gen.MPARxWidths {
		for _, mode := range []struct {
			name string
			mode RxMode
		}{{"1-1500", RxSaturated}, {"1448-9000", RxSaturatedLarge}} {
			bench, err := MPARxBench(w)
			if err != nil {
				b.Fatal(err)
			}
			bench.NewDriver = func(seed uint64) Driver { return NewRxDriver(bench.Layout, seed, mode.mode) }
			benchRxThroughput(b, bench, bench.Module.Name+"/"+mode.name)
		}
	}
}

func benchRxThroughput(b *testing.B, bench *Bench, name string) {
	b.Run(name, func(b *testing.B) {
		cycles := uint64(max(b.N, 100000))
		st, err := bench.Run(1, cycles)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Accepted["s_axis_tvalid"])/float64(st.Cycles), "in-beats/cycle")
		b.ReportMetric(float64(st.Emitted["m_axis_tvalid"])/float64(st.Cycles), "out-beats/cycle")
	})
}

// BenchmarkMPARxCosim measures the co-simulation speed of mpa_rx, every
// output checked every cycle.
func BenchmarkMPARxCosim(b *testing.B) {
	for _, w := range gen.MPARxWidths {
		bench, err := MPARxBench(w)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bench.Module.Name, func(b *testing.B) {
			st, err := bench.Run(1, uint64(b.N))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(st.CyclesPerSecond(), "cycles/s")
		})
	}
}

// packetSink gathers the packets a block emits on an AXI-Stream output.
type packetSink struct {
	data, keep, valid, last, ready Port
	beat, pkt                      []byte
}

func newPacketSink(data, keep, valid, last, ready Port) *packetSink {
	return &packetSink{data: data, keep: keep, valid: valid, last: last, ready: ready, beat: make([]byte, data.Width/8)}
}

// take adds the beat taken this cycle, if any, and returns the packet it
// completes.
func (s *packetSink) take(in, out []uint32) ([]byte, bool) {
	if s.valid.Get(out) == 0 || s.ready.Get(in) == 0 {
		return nil, false
	}
	s.data.Bytes(out, s.beat)
	keep := s.keep.Get(out)
	for i := range s.beat {
		if keep>>i&1 == 1 {
			s.pkt = append(s.pkt, s.beat[i])
		}
	}
	if s.last.Get(out) == 0 {
		return nil, false
	}
	p := s.pkt
	s.pkt = nil
	return p, true
}
