package sim

import (
	"fmt"
	"testing"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// BenchmarkCosim measures co-simulation speed with the per-cycle check of
// every output (one op = one cycle): the cycles/s metric.
func BenchmarkCosim(b *testing.B) {
	var benches []*Bench
	for _, w := range gen.CRC32CWidths {
		bench, err := CRC32CBench(w)
		if err != nil {
			b.Fatal(err)
		}
		benches = append(benches, bench)
	}
	for _, w := range gen.MPATxWidths {
		bench, err := MPATxBench(w)
		if err != nil {
			b.Fatal(err)
		}
		benches = append(benches, bench)
	}
	for _, w := range []int{64, 512} {
		regs, err := CardRegsBench(w)
		if err != nil {
			b.Fatal(err)
		}
		rd, err := DMARdBench(w)
		if err != nil {
			b.Fatal(err)
		}
		wr, err := DMAWrBench(w)
		if err != nil {
			b.Fatal(err)
		}
		benches = append(benches, regs, rd, wr)
	}
	for _, w := range gen.DDPTxWidths {
		bench, err := DDPTxBench(w)
		if err != nil {
			b.Fatal(err)
		}
		benches = append(benches, bench)
	}
	for _, bench := range benches {
		b.Run(bench.Module.Name, func(b *testing.B) {
			st, err := bench.Run(1, uint64(b.N))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(st.CyclesPerSecond(), "cycles/s")
		})
	}
}

// BenchmarkMPATxThroughput measures mpa_tx at full speed: output beats
// per cycle (the FPDU side is the wider one: length, PAD, CRC, markers).
func BenchmarkMPATxThroughput(b *testing.B) { outputRate(b, gen.MPATxWidths, MPATxSaturated) }

// BenchmarkDDPTxThroughput measures ddp_tx at full speed on 4-16 KiB RDMA
// Writes segmented at MULPDU 1432: output beats per cycle (headers make the
// output the busier side).
func BenchmarkDDPTxThroughput(b *testing.B) { outputRate(b, gen.DDPTxWidths, DDPTxSaturated) }

// outputRate reports the output beats per cycle of each saturated bench.
func outputRate(b *testing.B, widths []int, saturated func(int) (*Bench, error)) {
	for _, w := range widths {
		bench, err := saturated(w)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bench.Module.Name, func(b *testing.B) {
			cycles := uint64(max(b.N, 100000))
			st, err := bench.Run(1, cycles)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.Emitted["m_axis_tvalid"])/float64(st.Cycles), "beats/cycle")
		})
	}
}

// BenchmarkThroughput measures each block's steady state at full speed
// (tvalid and m_axis_tready always high): beats accepted per cycle,
// counted from the RTL's own tready.
func BenchmarkThroughput(b *testing.B) {
	for _, w := range gen.CRC32CWidths {
		bench, err := CRC32CSaturated(w)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bench.Module.Name, func(b *testing.B) {
			cycles := uint64(max(b.N, 10000))
			st, err := bench.Run(1, cycles)
			if err != nil {
				b.Fatal(err)
			}
			const resetCycles = 2
			b.ReportMetric(float64(st.Accepted["s_axis_tvalid"])/float64(st.Cycles-resetCycles), "beats/cycle")
		})
	}
}

func ExampleBench_Run() {
	bench, err := CRC32CBench(64)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := bench.Run(42, 100000)
	if err != nil {
		fmt.Println(err) // a *Mismatch: cycle, port, expected, actual, waveform
		return
	}
	fmt.Println(bench.Module.Name, st.Cycles, "cycles match the cycle model")
	// Output: crc32c_w64 100000 cycles match the cycle model
}
