//go:build cosim

package simcard_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/openiwarp/openiwarp/host/driver/simcard"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/host/verbs/perf"
)

// BenchmarkSimBW is iwperf bandwidth on the sim card (the Verilated
// iwcard_w64, every DMA write checked): RDMA Writes posted inline, the
// operation its RTL serves today, at sizes a WQE holds. It reports
// simulated operations per second and RTL cycles per operation.
func BenchmarkSimBW(b *testing.B) {
	ln, err := verbs.Listen("127.0.0.1:0", perf.ListenConfig())
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- perf.Serve(ctx, ln, "sim", nil) }()
	defer func() { cancel(); ln.Close(); <-done }()
	for _, n := range []int{64, 256} {
		b.Run(fmt.Sprintf("write/%dB", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			c0 := simcard.ProcessTotals()
			t0 := time.Now()
			c := &perf.Client{Device: "sim"}
			if _, err := c.Run(ctx, ln.Addr().String(), perf.Spec{Test: perf.Write, Mode: perf.BW, Size: n, Iters: max(b.N, 1), TxDepth: 16, Inline: n}); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "ops/s")
			b.ReportMetric(float64(simcard.ProcessTotals().Cycles-c0.Cycles)/float64(b.N), "rtl-cycles/op")
		})
	}
}
