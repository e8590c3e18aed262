package main

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/internal/mpaattack"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// TestPersistentServerUnderAttack builds iwping, starts iwping -s -P as a
// process, and attacks its MPA startup (internal/mpaattack): after each
// attack the server is still running, has reported the attack on stderr
// with its cause and the attacker's address, and serves a good client;
// fifty stalled startups at once are each dropped at the startup limit
// while a good client is served.
func TestPersistentServerUnderAttack(t *testing.T) {
	bin := mpaattack.Build(t, "github.com/openiwarp/openiwarp/cmd/iwping")
	port := strconv.Itoa(freePort(t))
	const limit = 500 * time.Millisecond
	srv := mpaattack.Start(t, bin, "-s", "-P", "-d", "-a", "127.0.0.1", "-p", port, "-startup-timeout", limit.String())
	srv.WaitLog(t, "iwping: listening on")
	good := func(t *testing.T, after string) {
		t.Helper()
		code, _, stderr := client("-c", "-a", "127.0.0.1", "-p", port, "-C", "3", "-V")
		require.Equal(t, 0, code, "a good client after %s: %s\nserver:\n%s", after, stderr, srv.Stderr())
	}
	addr := net.JoinHostPort("127.0.0.1", port)
	g := &mpaattack.Target{Server: srv, Addr: addr, Tool: "iwping", Limit: limit, Good: good,
		Accepted: func(t *testing.T, out mpaattack.Outcome) {
			// A connection, then gone before its first message: reported as such.
			srv.WaitLog(t, "iwping: connection ", " from "+out.Local+": ")
		}}
	g.Every(t)
	t.Run("fifty-slow-loris", func(t *testing.T) {
		a := mpaattack.Attacks()[len(mpaattack.Attacks())-1]
		require.True(t, a.Stall)
		var conns []*mpaattack.Conn
		for range 50 {
			c, err := mpaattack.Dial(addr, a)
			require.NoError(t, err)
			conns = append(conns, c)
		}
		good(t, "fifty stalled startups") // served while they stall
		for i, c := range conns {
			out, err := c.Wait(testwatch.Patience())
			require.NoError(t, err)
			require.GreaterOrEqual(t, out.Held, limit, "stalled connection %d dropped before the startup limit", i)
		}
		require.True(t, srv.Alive(), "the server died:\n%s", srv.Stderr())
		good(t, "fifty slow-loris connections")
	})
	srv.Stop(t)
	t.Logf("server stderr:\n%s", srv.Stderr())
}
