package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const families = `pkg: github.com/openiwarp/openiwarp/golden/iwarp
BenchmarkWrite/4KiB-2            10   1000 ns/op   4096.00 MB/s
BenchmarkWrite/1MiB-2            10   1000 ns/op   1500.00 MB/s
BenchmarkWriteBaseline/4KiB-2    10   1000 ns/op   3000.00 MB/s
BenchmarkWriteBaseline/1MiB-2    10   1000 ns/op   2000.00 MB/s
BenchmarkLatency/64B-2           10   6200 ns/op
BenchmarkLatencyBaseline/64B-2   10   4800 ns/op
BenchmarkReadLatency/64B-2       10   7000 ns/op
pkg: github.com/openiwarp/openiwarp/host/driver/simcard
BenchmarkSimBW/write/4KiB-2      10   1000 ns/op   9.50 MB/s   2400 ops/s
BenchmarkSimBW/write/64KiB-2     10   1000 ns/op   18.00 MB/s  300 ops/s
pkg: github.com/openiwarp/openiwarp/hw/sim
BenchmarkCosim/crc32c_w32-2      10   100 ns/op   1.2e+07 cycles/s
BenchmarkCosim/crc32c_w512-2     10   100 ns/op   7.5e+06 cycles/s
BenchmarkMPARxCosim/mpa_rx_w64-2 10   100 ns/op   2.8e+06 cycles/s
BenchmarkMPARxCosim/mpa_rx_w512-2 10  100 ns/op   6.3e+05 cycles/s
`

func TestCharts(t *testing.T) {
	res, err := parse(strings.NewReader(families))
	require.NoError(t, err)
	dir := t.TempDir()
	files, err := writeCharts(dir, res)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "bandwidth.svg"), filepath.Join(dir, "latency.svg"), filepath.Join(dir, "cosim.svg")}, files)
	for file, want := range map[string][]string{
		"bandwidth.svg": {"engine RDMA Write (golden/iwarp)", "raw TCP (golden/iwarp run)", "sim card RDMA Write (RTL)", "4 KiB", "1 MiB"},
		"latency.svg":   {"engine Read 64 B", "idle responder", "raw TCP ping-pong"},
		"cosim.svg":     {"crc32c", "mpa_rx", "512", "million cycles/s"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(b), generatedMarker), "%s starts with the generated-file marker", file)
		require.Contains(t, string(b), "<svg", file)
		for _, w := range want {
			require.Contains(t, string(b), w, file)
		}
	}
	// A series with no data is left out of its chart's legend.
	b, _ := os.ReadFile(filepath.Join(dir, "bandwidth.svg"))
	require.NotContains(t, string(b), "model card Send (iwperf)")
}

func TestChartsOnlyWithData(t *testing.T) {
	res, err := parse(strings.NewReader(sample)) // golden/mpa framing and a crc32c co-sim figure
	require.NoError(t, err)
	dir := t.TempDir()
	files, err := writeCharts(dir, res)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(dir, "cosim.svg")}, files)
}

// TestFilesLastWins: a benchmark found in two files keeps the last one's
// runs; the others are merged in file order.
func TestFilesLastWins(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.txt")
	b := filepath.Join(dir, "b.txt")
	require.NoError(t, os.WriteFile(a, []byte("pkg: p\nBenchmarkX-2 10 100 ns/op\nBenchmarkY-2 10 50 ns/op\n"), 0o644))
	require.NoError(t, os.WriteFile(b, []byte("pkg: p\nBenchmarkX-2 10 300 ns/op\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "c.txt"), []byte(families), 0o644))
	res, err := parseInputs([]string{a, b}, nil)
	require.NoError(t, err)
	require.Len(t, res, 2)
	require.Equal(t, "BenchmarkX", res[0].Name)
	require.Equal(t, 300.0, res[0].NsPerOp)
	require.Equal(t, 50.0, res[1].NsPerOp)

	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"-quiet", "-svg", filepath.Join(dir, "svg"), a, b}, nil, &out, &errb), errb.String())
	defer func() { chartNote = "" }()
	require.Equal(t, 0, run([]string{"-quiet", "-svg", filepath.Join(dir, "svg2"), "-note", "under load 20", filepath.Join(dir, "c.txt")}, nil, &out, &errb), errb.String())
	svg, err := os.ReadFile(filepath.Join(dir, "svg2", "latency.svg"))
	require.NoError(t, err)
	require.Contains(t, string(svg), "under load 20")
	require.Empty(t, out.String())
	require.Equal(t, 1, run([]string{filepath.Join(dir, "missing.txt")}, nil, &out, &errb))
	require.Contains(t, errb.String(), "missing.txt")
	require.Equal(t, 2, run([]string{"-nonesuch"}, nil, &out, &errb))
}
