package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/openiwarp/openiwarp/cmd/iwping/rping"
	"github.com/stretchr/testify/require"
)

// serve starts an iwping server on a free loopback port and returns the
// port and a func that waits for its exit status and output.
func serve(t *testing.T, args ...string) (int, func() (int, string, string)) {
	t.Helper()
	o, err := parseFlags(append([]string{"-s", "-a", "127.0.0.1", "-p", "1", "-timeout", "20s"}, args...), &bytes.Buffer{})
	require.NoError(t, err)
	// Port 0 is not a valid rping port; pick a free one and hand it over.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	o.port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var stdout, stderr bytes.Buffer
	o.stdout, o.stderr = &stdout, &stderr
	ready := make(chan struct{})
	o.listening = func(net.Addr) { close(ready) }
	var wg sync.WaitGroup
	var code int
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := execute(o)
		if err != nil {
			fmt.Fprintln(&stderr, "iwping:", err)
			code = 1
		}
	}()
	<-ready
	return o.port, func() (int, string, string) { wg.Wait(); return code, stdout.String(), stderr.String() }
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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	code, _, errOut := client("-c", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-timeout", "5s")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "connect")
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
		{[]string{"-s", "-I", "1.2.3.4"}, "flag provided but not defined"},
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
