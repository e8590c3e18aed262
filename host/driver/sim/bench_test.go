//go:build cosim

package sim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/openiwarp/openiwarp/host/driver/sim"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/host/verbs/perf"
)

// BenchmarkSimBW is iwperf bandwidth on the sim card: every FPDU goes
// through the Verilated MPA blocks and every RDMA Write and Read Response
// segment through the placement RTL, cycle-checked. It reports simulated
// operations per second and the RTL cycles checked per operation.
func BenchmarkSimBW(b *testing.B) {
	ln, err := verbs.Listen("127.0.0.1:0", perf.ListenConfig())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- perf.Serve(ctx, ln, "sim", nil) }()
	defer func() { cancel(); ln.Close(); <-done }()
	for _, test := range []perf.Test{perf.Write, perf.Read, perf.Send} {
		for _, n := range []int{4 << 10, 64 << 10} {
			b.Run(fmt.Sprintf("%s/%dKiB", test, n>>10), func(b *testing.B) {
				b.SetBytes(int64(n))
				c0 := sim.CheckedCycles()
				t0 := time.Now()
				c := &perf.Client{Device: "sim"}
				if _, err := c.Run(ctx, ln.Addr().String(), perf.Spec{Test: test, Mode: perf.BW, Size: n, Iters: max(b.N, 1), TxDepth: 32}); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "ops/s")
				b.ReportMetric(float64(sim.CheckedCycles()-c0)/float64(b.N), "rtl-cycles/op")
			})
		}
	}
}
