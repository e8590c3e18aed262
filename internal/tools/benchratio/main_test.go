package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const sample = `goos: linux
pkg: github.com/openiwarp/openiwarp/golden/mpa
BenchmarkFraming/4KiB/crc-2          100   400.0 ns/op   10000.00 MB/s   0 B/op   0 allocs/op
BenchmarkFraming/4KiB/crc-2          100   800.0 ns/op    5000.00 MB/s   0 B/op   0 allocs/op
BenchmarkFramingBaseline/4KiB/crc-2  100   200.0 ns/op   20000.00 MB/s
BenchmarkLatency/64B-2               100  1300 ns/op
BenchmarkLatencyBaseline/64B-2       100  1000 ns/op
BenchmarkCosim/crc32c_w512-2         10   1000 ns/op   6.1e+06 cycles/s   1.000 beats/cycle
pkg: github.com/openiwarp/openiwarp/test/ipoib
BenchmarkIPoIBCM/tcp-2               10   1000 ns/op     400.00 MB/s
BenchmarkIPoIBCMBaseline/tcp-2       10   1000 ns/op    1600.00 MB/s
BenchmarkIPoIBCMFloor/tcp-2          10   1000 ns/op     600.00 MB/s
BenchmarkFloor/1MiB-2                10   1000 ns/op     600.00 MB/s
PASS
`

func TestPairing(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	rows := pair(res)
	require.Len(t, rows, 6)
	require.Equal(t, "BenchmarkFraming/4KiB/crc", rows[0].Name)
	require.InDelta(t, 10000, rows[0].MBps, 0.01, "best of the runs")
	require.Equal(t, "speed", rows[0].Kind)
	require.InDelta(t, 0.5, rows[0].Ratio, 1e-9)
	require.Equal(t, "time", rows[1].Kind)
	require.InDelta(t, 1.3, rows[1].Ratio, 1e-9)
	require.Nil(t, rows[2].Baseline)
	require.InDelta(t, 6.1e6, rows[2].Metrics["cycles/s"], 1)
	require.InDelta(t, 0.25, rows[3].Ratio, 1e-9)
	require.Equal(t, "BenchmarkIPoIBCMFloor/tcp", rows[4].Name)
	require.InDelta(t, 0.375, rows[4].Ratio, 1e-9, "a floor shares the baseline of what it is the floor of")
	require.Nil(t, rows[5].Baseline, "BenchmarkFloor has no BenchmarkBaseline to share")
}

func TestBadValue(t *testing.T) {
	_, err := parse(strings.NewReader("BenchmarkX-2 10 abc ns/op\n"))
	require.ErrorContains(t, err, "not a number")
}
