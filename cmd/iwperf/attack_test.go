package main

import (
	"bytes"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/internal/mpaattack"
)

// TestServerUnderAttack builds iwperf, starts its server as a process and
// attacks its MPA startup (internal/mpaattack): after each attack the
// server is still running, has reported the attack on stderr with its
// cause and the attacker's address, and serves a good client.
func TestServerUnderAttack(t *testing.T) {
	bin := mpaattack.Build(t, "github.com/openiwarp/openiwarp/cmd/iwperf")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	const limit = 500 * time.Millisecond
	srv := mpaattack.Start(t, bin, "-bind", "127.0.0.1", "-p", port, "-startup-timeout", limit.String())
	srv.WaitLog(t, "iwperf server: card model, waiting for clients on 127.0.0.1:"+port)
	g := &mpaattack.Target{Server: srv, Addr: net.JoinHostPort("127.0.0.1", port), Tool: "iwperf", Limit: limit,
		Good: func(t *testing.T, after string) {
			var out, errb bytes.Buffer
			code := run([]string{"-test", "send", "-mode", "lat", "-s", "64", "-n", "50", "-quiet", "-p", port, "127.0.0.1"}, &out, &errb)
			require.Equal(t, 0, code, "a good client after %s: %s\nserver:\n%s", after, errb.String(), srv.Stderr())
		},
		Accepted: func(t *testing.T, out mpaattack.Outcome) {
			// No perf spec in the private data: refused with a Reply saying why.
			require.True(t, out.Reply.Reject)
			require.Contains(t, string(out.Reply.PrivateData), "not a perf spec")
			srv.WaitLog(t, "rejecting "+out.Local+": ")
		}}
	g.Every(t)
	srv.Stop(t)
	t.Logf("server stderr:\n%s", srv.Stderr())
}
