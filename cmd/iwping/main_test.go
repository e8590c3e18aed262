package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/openiwarp/openiwarp/cmd/iwping/rping"
	"github.com/openiwarp/openiwarp/internal/cli"
	"github.com/stretchr/testify/require"
)

// startServer starts an iwping server, parsed from args, on a free
// loopback port, running body in the background; it returns once the
// server listens. wait waits for body and returns its exit status and
// output; cancel ends body's context, as SIGINT does for -P.
func startServer(t *testing.T, args []string, body func(*options, context.Context) error, hooks ...func(*options)) (port int, cancel func(), wait func() (int, string, string)) {
	t.Helper()
	o, err := parseFlags(append([]string{"-s", "-a", "127.0.0.1", "-p", "1"}, args...), &bytes.Buffer{})
	require.NoError(t, err)
	for _, h := range hooks {
		h(o)
	}
	o.port = freePort(t)
	var stdout, stderr bytes.Buffer
	o.stdout, o.stderr = &stdout, &stderr
	ready := make(chan struct{})
	o.listening = func(net.Addr) { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- body(o, ctx) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("server returned before listening: %v", err)
	}
	return o.port, cancel, func() (int, string, string) {
		if err := <-done; err != nil {
			fmt.Fprintln(&stderr, "iwping:", err)
			return 1, stdout.String(), stderr.String()
		}
		return 0, stdout.String(), stderr.String()
	}
}

// serve starts a one-connection iwping server; wait returns its exit
// status and output once it has served.
func serve(t *testing.T, args ...string) (port int, wait func() (int, string, string)) {
	t.Helper()
	port, _, wait = startServer(t, append([]string{"-timeout", "20s"}, args...), func(o *options, ctx context.Context) error {
		_, err := execute(ctx, o)
		return err
	})
	return port, wait
}

// freePort is a loopback TCP port nobody listens on now. Port 0 is not a
// valid rping port, so servers are handed a free one.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func client(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func lines(s, prefix string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			out = append(out, rest)
		}
	}
	return out
}

// An iwping client and server run rping's loop over loopback TCP; both
// print exactly rping's data, and the client verifies every cycle.
func TestPingLoopback(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"default", nil},
		{"crc", []string{"-crc"}},
		{"rev1", []string{"-rev", "1"}},
		{"multi-segment", []string{"-S", "20000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			size := rping.DefaultSize
			for i, a := range tc.args {
				if a == "-S" {
					fmt.Sscan(tc.args[i+1], &size)
				}
			}
			port, wait := serve(t, append([]string{"-v"}, tc.args...)...)
			code, out, errOut := client(append([]string{"-c", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-v", "-V", "-C", "4", "-timeout", "20s"}, tc.args...)...)
			require.Equal(t, 0, code, "client: %s", errOut)
			scode, sout, serr := wait()
			require.Equal(t, 0, scode, "server: %s", serr)
			cl, sl := lines(out, "ping data: "), lines(sout, "server ping data: ")
			require.Len(t, cl, 4)
			require.Len(t, sl, 4)
			for i := range 4 {
				require.Equal(t, rping.ExpectedLine(i, size), cl[i])
				require.Equal(t, rping.ExpectedLine(i, size), sl[i])
			}
		})
	}
}

func TestJSONSummary(t *testing.T) {
	port, wait := serve(t, "-crc")
	code, out, errOut := client("-c", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-C", "2", "-json", "-timeout", "20s")
	require.Equal(t, 0, code, errOut)
	_, _, _ = wait()
	var s Summary
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.Equal(t, "client", s.Role)
	require.Equal(t, "rping", s.Mode)
	require.Equal(t, 2, s.Stats.Cycles)
	require.Equal(t, 4, s.Stats.Sends)
	require.NotNil(t, s.MPA)
	require.Equal(t, 2, s.MPA.Rev)
	require.True(t, s.MPA.CRC, "the server asked for CRC")
	require.Empty(t, s.Error)

	// The keys printed are snake_case and among the pinned ones.
	keys, err := cli.JSONKeys([]byte(out))
	require.NoError(t, err)
	require.Subset(t, iwpingKeys, keys)
	require.Contains(t, keys, "stats.bytes_read")
}

// iwpingKeys pins every key of iwping -json (docs/json.md): the summary of
// one connection, or one line per connection of a -P server ("conn").
var iwpingKeys = []string{"card", "card_detail", "checked_cycles", "conn", "elapsed_ms", "error", "local", "mode",
	"mpa", "mpa.crc", "mpa.peer_ird", "mpa.peer_ord", "mpa.rev", "mpa.rx_markers", "mpa.tx_markers", "peer", "role",
	"stats", "stats.bytes_read", "stats.bytes_written", "stats.cycles", "stats.recvs", "stats.sends"}

func TestJSONKeysPinned(t *testing.T) {
	keys, err := cli.JSONKeysOf(Summary{})
	require.NoError(t, err)
	require.Equal(t, iwpingKeys, keys)
}

// A server whose buffer is smaller than the client's pings refuses the
// advertisement, and the client reports at which cycle and step it stopped.
func TestSizeMismatchIsReported(t *testing.T) {
	port, wait := serve(t, "-S", "64")
	code, _, errOut := client("-c", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-S", "4000", "-C", "1", "-timeout", "20s")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "cycle 0")
	scode, _, serr := wait()
	require.Equal(t, 1, scode)
	require.Contains(t, serr, "exceeds our buffer")
}

func TestNoServer(t *testing.T) {
	port := freePort(t)
	code, _, errOut := client("-c", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-timeout", "5s")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "connect")
}

// A card in a PCI slot that is not there, or named wrongly, fails with an
// error that says which (exit 1: the flags were valid).
func TestPCICardErrors(t *testing.T) {
	for _, tc := range []struct{ card, want string }{
		{"pci:0000:7e:1f.7", "no such PCI device"},
		{"pci:0000:7e:1f.7,bogus=1", `option "bogus=1" unknown`},
		{"pci:", "needs a PCI address"},
	} {
		code, _, errOut := client("-c", "-a", "127.0.0.1", "-p", fmt.Sprint(freePort(t)), "-card", tc.card, "-timeout", "5s")
		require.Equal(t, 1, code, "%s: %s", tc.card, errOut)
		require.Contains(t, errOut, tc.want, tc.card)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "exactly one of -s and -c"},
		{[]string{"-s", "-c"}, "exactly one of -s and -c"},
		{[]string{"-c"}, "needs -a"},
		{[]string{"-s", "-S", "10"}, "invalid size 10"},
		{[]string{"-s", "-S", "65536"}, "invalid size 65536"},
		{[]string{"-s", "-C", "-1"}, "invalid count"},
		{[]string{"-s", "-p", "70000"}, "invalid port"},
		{[]string{"-s", "-rev", "3"}, "invalid MPA revision"},
		{[]string{"-s", "-ird", "0"}, "-ird and -ord"},
		{[]string{"-s", "-card", "fpga"}, "unknown card"},
		{[]string{"-s", "-I", "1.2.3.4"}, "-I applies to the client (-c)"},
		{[]string{"-c", "-a", "127.0.0.1", "-P"}, "-P applies to the server (-s)"},
		{[]string{"-s", "-P", "-timeout", "0s"}, "invalid timeout"},
		{[]string{"-s", "extra"}, "unexpected argument"},
		{[]string{"-s", "-bogus"}, "flag provided but not defined"},
	} {
		code, _, errOut := client(tc.args...)
		require.Equal(t, 2, code, "%v", tc.args)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	code, _, _ := client("-h")
	require.Equal(t, 0, code)
}

// The librdmacm example exchange: one 16-octet Send each way, all zeros.
func TestExampleLoopback(t *testing.T) {
	for range 5 {
		port, wait := serve(t, "-example")
		code, out, errOut := client("-c", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-example", "-json", "-timeout", "20s")
		require.Equal(t, 0, code, errOut)
		scode, _, serr := wait()
		require.Equal(t, 0, scode, serr)
		var s Summary
		require.NoError(t, json.Unmarshal([]byte(out), &s))
		require.Equal(t, "rdma-example", s.Mode)
	}
}
