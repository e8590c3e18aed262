package perf_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/host/verbs/perf"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// startServer runs a perf server on the model card for the test's duration.
func startServer(tb testing.TB, device string) string {
	ln, err := verbs.Listen("127.0.0.1:0", perf.ListenConfig())
	require.NoError(tb, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- perf.Serve(ctx, ln, device, nil) }()
	tb.Cleanup(func() {
		cancel()
		ln.Close()
		require.NoError(tb, <-done)
	})
	return ln.Addr().String()
}

func TestEveryTestAndMode(t *testing.T) {
	addr := startServer(t, "model")
	ctx := testwatch.Context(t, "every test and mode")
	for _, test := range []perf.Test{perf.Write, perf.Read, perf.Send} {
		for _, mode := range []perf.Mode{perf.BW, perf.Lat} {
			for _, size := range []int{0, 1, 4096, 100000} {
				t.Run(fmt.Sprintf("%s-%s-%d", test, mode, size), func(t *testing.T) {
					progressed := 0
					c := &perf.Client{Device: "model", Progress: func(done, total int) { progressed++ }}
					r, err := c.Run(ctx, addr, perf.Spec{Test: test, Mode: mode, Size: size, Iters: 300, TxDepth: 16, Inline: 64})
					require.NoError(t, err)
					require.Equal(t, 300, r.Iters)
					require.Positive(t, r.Elapsed)
					if mode == perf.BW {
						require.GreaterOrEqual(t, r.PeakMBps, r.AvgMBps)
						require.InDelta(t, float64(size)*300/r.Elapsed.Seconds()/1e6, r.AvgMBps, 1e-6)
					} else {
						require.NotNil(t, r.Lat)
						l := r.Lat
						require.True(t, l.Min <= l.Typical && l.Typical <= l.Max && l.P99 <= l.P999 && l.P999 <= l.Max, "%+v", l)
					}
					require.Contains(t, r.MPA, "Rev 1")
				})
			}
		}
	}
}

func TestBadSpecRejected(t *testing.T) {
	addr := startServer(t, "model")
	c := &perf.Client{Device: "model"}
	_, err := c.Run(context.Background(), addr, perf.Spec{Test: "fly", Mode: perf.BW, Size: 1, Iters: 1, TxDepth: 1})
	require.ErrorIs(t, err, perf.ErrSpec)
	// A client that is not perf gets a rejection that says why.
	ctx, err := verbs.Open("model")
	require.NoError(t, err)
	defer ctx.Close()
	pd, _ := ctx.AllocPD()
	cq, _ := ctx.CreateCQ(4)
	qp, _ := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq})
	err = verbs.Dial(context.Background(), addr, qp, verbs.ConnParam{PrivateData: []byte("hello")})
	var re *verbs.RejectError
	require.ErrorAs(t, err, &re)
	require.Contains(t, string(re.PrivateData), "not a perf spec")
}

var bwSizes = []int{4 << 10, 64 << 10, 1 << 20}
var latSizes = []int{64, 4 << 10}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	if n >= 1<<10 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

// benchRun runs spec for b.N iterations over a fresh connection and
// reports the measured phase alone: connecting and disconnecting are not
// part of ns/op or MB/s (bandwidth specs), as they are not for perftest.
func benchRun(b *testing.B, addr string, spec perf.Spec) { benchRunOn(b, "model", addr, spec) }

// benchRunOn is benchRun with the client on device.
func benchRunOn(b *testing.B, device, addr string, spec perf.Spec) {
	spec.Iters = max(b.N, 1)
	c := &perf.Client{Device: device}
	r, err := c.Run(context.Background(), addr, spec)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(r.Elapsed.Nanoseconds())/float64(spec.Iters), "ns/op")
	if spec.Mode == perf.BW {
		b.ReportMetric(r.AvgMBps, "MB/s")
	}
}

// Bandwidth benchmarks: iwperf -test write|send on the model card, in MB/s
// to compare with their Baselines, the same messages written to a plain
// TCP connection on loopback and read by the peer 256 KiB at a time, as
// the engine reads its socket.

func BenchmarkWriteBW(b *testing.B) { bwBench(b, perf.Write) }
func BenchmarkSendBW(b *testing.B)  { bwBench(b, perf.Send) }

func bwBench(b *testing.B, test perf.Test) {
	addr := startServer(b, "model")
	for _, n := range bwSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			benchRun(b, addr, perf.Spec{Test: test, Mode: perf.BW, Size: n, TxDepth: 128})
		})
	}
}

func BenchmarkWriteBWBaseline(b *testing.B) { tcpBWBaseline(b) }
func BenchmarkSendBWBaseline(b *testing.B)  { tcpBWBaseline(b) }

func tcpBWBaseline(b *testing.B) {
	for _, n := range bwSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			tcpMove(b, n, b.ResetTimer)
			b.StopTimer()
		})
	}
}

// tcpMove writes b.N messages of n bytes to a plain TCP connection on
// loopback, read by another goroutine 256 KiB at a time, and returns once
// every byte is read; start is called when the connection is up, just
// before the first write.
func tcpMove(b *testing.B, n int, start func()) {
	a, c := tcpPair(b)
	done := make(chan error, 1)
	buf := make([]byte, n)
	start()
	go func() {
		buf := make([]byte, 256<<10)
		for left := int64(n) * int64(b.N); left > 0; {
			k, err := c.Read(buf[:min(int64(len(buf)), left)])
			if err != nil {
				done <- err
				return
			}
			left -= int64(k)
		}
		done <- nil
	}()
	for range b.N {
		if _, err := a.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSendLat is iwperf -test send -mode lat: one round trip of a
// Send and its echo per op, to compare with BenchmarkSendLatBaseline.
func BenchmarkSendLat(b *testing.B) {
	addr := startServer(b, "model")
	for _, n := range latSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			benchRun(b, addr, perf.Spec{Test: perf.Send, Mode: perf.Lat, Size: n, TxDepth: 1, Inline: perf.DefaultLatInline})
		})
	}
}

// BenchmarkSendLatBaseline is the same ping-pong over plain TCP.
func BenchmarkSendLatBaseline(b *testing.B) {
	for _, n := range latSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			a, c := tcpPair(b)
			go func() {
				buf := make([]byte, n)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			}()
			buf := make([]byte, n)
			b.ResetTimer()
			for range b.N {
				if _, err := a.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(a, buf); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			a.Close()
		})
	}
}

func tcpPair(tb testing.TB) (net.Conn, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); ch <- c }()
	a, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(tb, err)
	c := <-ch
	require.NotNil(tb, c)
	tb.Cleanup(func() { a.Close(); c.Close() })
	return a, c
}
