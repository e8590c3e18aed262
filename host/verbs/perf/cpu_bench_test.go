package perf_test

import (
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/modelcard"
	"github.com/openiwarp/openiwarp/host/driver/rnic"
	"github.com/openiwarp/openiwarp/host/verbs/perf"
)

// What the offload saves the host (issue 16, "Measured"): the host CPU
// time per MiB of RDMA Write and Send through the driver and its stream
// bridge, with the card model's own CPU time taken out, against raw TCP
// moving the same bytes in the same run. Both ends run in this process,
// so each figure is the CPU of a sender and a receiver.
//
// The cards are "model-cpu": the model card with every step of the model
// on the model's own thread (no steps inline in a register write), whose
// CPU time (Phys.ModelCPU) is subtracted: what is left is what a host
// pays beside a hardware card (the driver, the bridge's system calls, the
// verbs layer, iwperf and the register accesses). Goal: at most 1.15
// times raw TCP's CPU per MiB at 64 KiB and 1 MiB.

var (
	cpuMu    sync.Mutex
	cpuPhys  []*modelcard.Phys // every model-cpu card opened
	cpuSizes = []int{64 << 10, 1 << 20}
)

func init() {
	driver.Register("model-cpu", func(name, arg string) (driver.Card, error) {
		c, err := modelcard.OpenWith(name, modelcard.Config{InlineSteps: -1}, rnic.Options{})
		if err != nil {
			return nil, err
		}
		cpuMu.Lock()
		cpuPhys = append(cpuPhys, c.Phys)
		cpuMu.Unlock()
		return c, nil
	})
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// modelCPU is the CPU time every model-cpu card's model thread has used.
func modelCPU() time.Duration {
	cpuMu.Lock()
	defer cpuMu.Unlock()
	var d time.Duration
	for _, p := range cpuPhys {
		d += p.ModelCPU()
	}
	return d
}

// reportCPU reports the host CPU time per message as ns/op (so that
// benchratio's time ratio is the CPU ratio against the Baseline), host
// CPU ms per MiB moved, and the model's apart.
func reportCPU(b *testing.B, host, model time.Duration, bytes int64) {
	mib := float64(bytes) / (1 << 20)
	b.ReportMetric(float64(host)/float64(max(b.N, 1)), "ns/op")
	b.ReportMetric(float64(host)/1e6/mib, "host-cpu-ms/MiB")
	if model > 0 {
		b.ReportMetric(float64(model)/1e6/mib, "model-cpu-ms/MiB")
	}
}

func BenchmarkHostCPUWrite(b *testing.B) { hostCPU(b, perf.Write) }
func BenchmarkHostCPUSend(b *testing.B)  { hostCPU(b, perf.Send) }

func hostCPU(b *testing.B, test perf.Test) {
	addr := startServer(b, "model-cpu")
	for _, n := range cpuSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			c := &perf.Client{Device: "model-cpu"}
			spec := perf.Spec{Test: test, Mode: perf.BW, Size: n, TxDepth: 128, Iters: max(b.N, 1)}
			// Let the model threads publish their CPU time: it is read
			// when a thread goes idle.
			time.Sleep(20 * time.Millisecond)
			cpu0, m0 := processCPU(b), modelCPU()
			if _, err := c.Run(b.Context(), addr, spec); err != nil {
				b.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			cpu1, m1 := processCPU(b), modelCPU()
			reportCPU(b, cpu1-cpu0-(m1-m0), m1-m0, int64(n)*int64(spec.Iters))
		})
	}
}

// The Baselines: the same bytes in messages of the same size over a plain
// TCP connection on loopback, written by one goroutine and read by another
// 256 KiB at a time.
func BenchmarkHostCPUWriteBaseline(b *testing.B) { tcpCPUBaseline(b) }
func BenchmarkHostCPUSendBaseline(b *testing.B)  { tcpCPUBaseline(b) }

func tcpCPUBaseline(b *testing.B) {
	for _, n := range cpuSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			var cpu0 time.Duration
			tcpMove(b, n, func() { cpu0 = processCPU(b) })
			reportCPU(b, processCPU(b)-cpu0, 0, int64(n)*int64(b.N))
		})
	}
}
