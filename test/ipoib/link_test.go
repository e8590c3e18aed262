package ipoib

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two nodes on a veth pair: ping both ways and families, broadcast and
// multicast, and 100 MiB of TCP checked byte for byte.
func TestPingAndTCP(t *testing.T) {
	e := NewEnv(t, 2)
	a, b := e.Nodes[0], e.Nodes[1]
	e.Start(a)
	db := e.Start(b)

	out, err := a.Ping(b.V4.String())
	require.NoError(t, err, out)
	assert.Contains(t, out, "3 received")
	out, err = b.Ping(a.V4.String())
	require.NoError(t, err, out)
	out, err = a.Ping(b.V6.String(), "-6")
	require.NoError(t, err, out)
	assert.Contains(t, out, "3 received")

	// Broadcast and multicast travel over the datagram channel (RFC 4755 §2.1).
	_, err = b.Exec(t.Context(), "sysctl", "-qw", "net.ipv4.icmp_echo_ignore_broadcasts=0")
	require.NoError(t, err)
	out, err = a.Ping("198.19.0.255", "-b")
	require.NoError(t, err, out)
	assert.Contains(t, out, "from "+b.V4.String())
	out, err = a.Ping("ff02::1%ipcm0", "-6")
	require.NoError(t, err, out)
	assert.GreaterOrEqual(t, len(sources(out)), 2, "a multicast echo is answered by a and by b:\n%s", out)

	// Unicast went over one reliable connection, set up by a's first packet.
	assert.True(t, db.WaitLog("up (passive, MTU 65520)", time.Second), db.Log())

	d, err := Transfer(a.NS, b.NS, b.V4, 5001, 100<<20, 1)
	require.NoError(t, err)
	t.Logf("100 MiB a->b over the link in %v (%.0f MB/s)", d, 100*1.048576/d.Seconds())
	d, err = Transfer(b.NS, a.NS, a.V6, 5002, 8<<20, 2)
	require.NoError(t, err)
	t.Logf("8 MiB b->a over IPv6 in %v", d)
	assert.Equal(t, 1, strings.Count(db.Log(), "up (passive"), "one connection per peer pair:\n%s", db.Log())
}

var fromRe = regexp.MustCompile(`bytes from ([^ ]+):`)

// sources lists the distinct addresses that answered a ping.
func sources(out string) map[string]bool {
	m := map[string]bool{}
	for _, x := range fromRe.FindAllStringSubmatch(out, -1) {
		m[x[1]] = true
	}
	return m
}
