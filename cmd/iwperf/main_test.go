package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/host/verbs/perf"
	"github.com/openiwarp/openiwarp/internal/cli"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

func startServer(t *testing.T) string {
	lc := perf.ListenConfig()
	lc.StartupTimeout = testwatch.Patience() // a loaded machine can take seconds to answer
	ln, err := verbs.Listen("127.0.0.1:0", lc)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { perf.Serve(ctx, ln, "model", nil); close(done) }()
	t.Cleanup(func() { cancel(); ln.Close(); <-done })
	return ln.Addr().String()
}

// runPatient runs the client with an MPA startup bound of the tests'
// patience instead of the tool's few seconds, which a loaded machine can
// exceed: the tests are about the tool, not the bound.
func runPatient(args []string, out, errb io.Writer) int {
	return run(append([]string{"-startup-timeout", testwatch.Patience().String()}, args...), out, errb)
}

func TestClientTable(t *testing.T) {
	addr := startServer(t)
	var out, errb bytes.Buffer
	code := runPatient([]string{"-test", "read", "-s", "4K", "-n", "200", addr}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	s := out.String()
	require.Contains(t, s, "RDMA_Read BW Test")
	require.Contains(t, s, "#bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]")
	fields := strings.Fields(strings.Split(s, "MsgRate[Mpps]\n")[1])
	require.Equal(t, "4096", fields[0])
	require.Equal(t, "200", fields[1])
}

func TestClientManyQPs(t *testing.T) {
	addr := startServer(t)
	var out, errb bytes.Buffer
	code := runPatient([]string{"-json", "-qp", "8", "-test", "write", "-s", "64K", "-n", "100", addr}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	var doc struct{ Results []perf.Result }
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	r := doc.Results[0]
	require.Equal(t, 8, r.QPs)
	require.InDelta(t, 8*100*65536/r.Elapsed.Seconds()/1e6, r.AvgMBps, 1e-6)
}

func TestClientJSONLatency(t *testing.T) {
	addr := startServer(t)
	host, port, _ := net.SplitHostPort(addr)
	var out, errb bytes.Buffer
	code := runPatient([]string{"-json", "-test", "send", "-mode", "lat", "-s", "64", "-n", "100", "-p", port, host}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	var doc struct{ Results []perf.Result }
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Len(t, doc.Results, 1)
	r := doc.Results[0]
	require.Equal(t, perf.Send, r.Test)
	require.Equal(t, 64, r.Size)
	require.NotNil(t, r.Lat)
	require.Positive(t, r.Lat.Min)
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-s", "lots", "127.0.0.1"}, {"-test", "fly", "127.0.0.1"}, {"-mode", "x", "127.0.0.1"},
		{"-depth", "0", "127.0.0.1"}, {"a", "b"}, {"-nosuchflag"}, {"-qp", "2", "-mode", "lat", "127.0.0.1"}, {"-qp", "0", "127.0.0.1"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 2, run(args, &out, &errb), "%v", args)
		require.NotEmpty(t, errb.String())
	}
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"-h"}, &out, &errb))
}

func TestRunFailureExitsOne(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var out, errb bytes.Buffer
	require.Equal(t, 1, run([]string{"-p", strconv.Itoa(port), "127.0.0.1"}, &out, &errb))
	require.Contains(t, errb.String(), "connection refused")
}

// Flags may follow the server's address: "iwperf HOST -json -test send"
// runs what "iwperf -json -test send HOST" runs.
func TestFlagsAfterAddress(t *testing.T) {
	addr := startServer(t)
	host, port, _ := net.SplitHostPort(addr)
	var out, errb bytes.Buffer
	code := runPatient([]string{host, "-json", "-test", "send", "-mode", "lat", "-s", "64", "-n", "50", "-p", port}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	var doc struct{ Results []perf.Result }
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Len(t, doc.Results, 1)
	require.Equal(t, perf.Send, doc.Results[0].Test)
	require.Equal(t, perf.Lat, doc.Results[0].Mode)
	require.Equal(t, 50, doc.Results[0].Iters)
	keys, err := cli.JSONKeys(out.Bytes())
	require.NoError(t, err)
	require.Subset(t, iwperfKeys, keys)
	require.Contains(t, keys, "results[].latency.p999_us")

	out.Reset()
	errb.Reset()
	require.Equal(t, 2, run([]string{host, "-s"}, &out, &errb))
	require.Contains(t, errb.String(), "flag needs an argument: -s")
	require.Equal(t, 2, run([]string{host, "-p", port, "other"}, &out, &errb))
	require.Contains(t, errb.String(), "one server address at most")
}

// iwperfKeys pins every key of iwperf -json (docs/json.md).
var iwperfKeys = []string{"results", "results[].addr", "results[].bw_avg_mbps", "results[].bw_peak_mbps",
	"results[].depth", "results[].device", "results[].elapsed_ns", "results[].inline", "results[].iters",
	"results[].latency", "results[].latency.avg_us", "results[].latency.max_us", "results[].latency.min_us",
	"results[].latency.p999_us", "results[].latency.p99_us", "results[].latency.stdev_us",
	"results[].latency.typical_us", "results[].local", "results[].mode", "results[].mpa", "results[].msg_rate_mpps",
	"results[].mulpdu", "results[].qps", "results[].remote", "results[].rkey", "results[].size", "results[].test"}

func TestJSONKeysPinned(t *testing.T) {
	keys, err := cli.JSONKeysOf(output{})
	require.NoError(t, err)
	require.Equal(t, iwperfKeys, keys)

	// A bandwidth run prints the bandwidth keys, pinned and snake_case.
	addr := startServer(t)
	var out, errb bytes.Buffer
	require.Equal(t, 0, runPatient([]string{addr, "-json", "-s", "4K", "-n", "50"}, &out, &errb), errb.String())
	keys, err = cli.JSONKeys(out.Bytes())
	require.NoError(t, err)
	require.Subset(t, iwperfKeys, keys)
	require.Contains(t, keys, "results[].bw_avg_mbps")
}
