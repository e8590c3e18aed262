package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/internal/cli"
)

func TestDemoModel(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"-cards", "model", "-sizes", "0,1,4096,300000", "-n", "3"}, &out, &errb)
	require.Equal(t, 0, code, "%s\n%s", out.String(), errb.String())
	require.Contains(t, out.String(), "RESULT: every byte verified on every card")
	require.Regexp(t, `\n model +RDMA Read +293\.0 KiB +3 +[0-9.]+ [nµm]?s `, out.String())
	require.Regexp(t, `\n model +Send +4 KiB +3 `, out.String())
}

// TestDemoJSON checks the keys printed and the statistics of each row.
func TestDemoJSON(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"-json", "-cards", "model", "-sizes", "5", "-n", "4"}, &out, &errb), errb.String())
	keys, err := cli.JSONKeys(out.Bytes())
	require.NoError(t, err)
	require.Equal(t, iwdemoKeys, keys, "every key is printed")
	var doc struct{ Rows []Row }
	require.NoError(t, json.NewDecoder(&out).Decode(&doc))
	require.Len(t, doc.Rows, 3)
	for _, r := range doc.Rows {
		require.True(t, r.Verified)
		require.Equal(t, 5, r.Size)
		require.Equal(t, 4, r.Iterations)
		require.True(t, 0 < r.MinNs && r.MinNs <= r.MedianNs && r.MedianNs <= r.MaxNs, "%+v", r)
	}
}

func TestDemoBadCardFails(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 1, run([]string{"-cards", "nonesuch", "-sizes", "1"}, &out, &errb))
	require.Contains(t, errb.String(), "unknown card")
	require.Contains(t, out.String(), "RESULT: FAILED")
	require.Equal(t, 2, run([]string{"-sizes", "x"}, &out, &errb))
	errb.Reset()
	require.Equal(t, 2, run([]string{"-n", "0"}, &out, &errb))
	require.Contains(t, errb.String(), "-n 0")
}

// Flags parse wherever they are; iwdemo takes no operands, and refuses one
// even when flags follow it.
func TestDemoArgs(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, run([]string{"stray", "-cards", "model", "-sizes", "1"}, &out, &errb))
	require.Contains(t, errb.String(), `unexpected argument "stray"`)
	errb.Reset()
	require.Equal(t, 0, run([]string{"stray", "-h"}, &out, &errb))
	require.Contains(t, errb.String(), "-sizes")
}

// iwdemoKeys pins every key of iwdemo -json (docs/json.md).
var iwdemoKeys = []string{"rows", "rows[].card", "rows[].iterations", "rows[].max_ns", "rows[].median_mbps", "rows[].median_ns",
	"rows[].min_ns", "rows[].op", "rows[].size_bytes", "rows[].verified",
	"rtl_bytes_checked", "rtl_cycles", "rtl_mismatches", "rtl_writes_checked"}

func TestJSONKeysPinned(t *testing.T) {
	keys, err := cli.JSONKeysOf(output{})
	require.NoError(t, err)
	require.Equal(t, iwdemoKeys, keys)
}

func TestUnits(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{bytesUnit(0), "0 B"}, {bytesUnit(1023), "1023 B"}, {bytesUnit(1024), "1 KiB"}, {bytesUnit(1536), "1.5 KiB"},
		{bytesUnit(300000), "293.0 KiB"}, {bytesUnit(4 << 20), "4 MiB"}, {bytesUnit(3 << 19), "1.5 MiB"},
		{timeUnit(850), "850 ns"}, {timeUnit(9_870), "9.87 µs"}, {timeUnit(21_300), "21.3 µs"}, {timeUnit(317_000), "317 µs"},
		{timeUnit(1_080_000), "1.08 ms"}, {timeUnit(2_500_000_000), "2.50 s"},
		{rateUnit(0.0469), "46.9 kB/s"}, {rateUnit(247), "247 MB/s"}, {rateUnit(1003), "1.00 GB/s"},
	} {
		require.Equal(t, c.want, c.got)
	}
}

func TestSummarize(t *testing.T) {
	runs := []time.Duration{5, 1, 9, 3}
	r := Row{Size: 1000}
	summarize(&r, runs)
	require.InDelta(t, 250000, r.MBps, 1e-6) // 1000 bytes in 4 ns
	r.MBps = 0
	require.Equal(t, Row{Size: 1000, Iterations: 4, MedianNs: 4, MinNs: 1, MaxNs: 9}, r)
	require.Equal(t, []time.Duration{5, 1, 9, 3}, runs, "summarize leaves its input alone")
	summarize(&r, []time.Duration{7, 2, 4})
	require.Equal(t, int64(4), r.MedianNs)
}
