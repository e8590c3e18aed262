package ipoib

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The floor relay carries TCP both ways, byte for byte, so that what
// BenchmarkIPoIBCMFloor measures is a working link.
func TestFloorRelay(t *testing.T) {
	e := NewEnv(t, 2)
	a, b := e.Nodes[0], e.Nodes[1]
	e.StartFloor(benchMTU)
	d, err := Transfer(a.NS, b.NS, b.V4, 5001, 32<<20, 3)
	require.NoError(t, err)
	t.Logf("32 MiB a->b across the floor relay in %v", d)
	_, err = Transfer(b.NS, a.NS, a.V4, 5002, 8<<20, 4)
	require.NoError(t, err)
}

func TestFloorRelayBadSpec(t *testing.T) {
	for _, spec := range []string{"", "listen", "connect 198.18.0.1:1 198.19.0.1/24 1500",
		"listen 198.18.0.1:1 198.19.0.1/24 big", "dial 198.18.0.1:1 198.19.0.1/24 65536"} {
		require.Equal(t, 2, runRelay(spec), "spec %q", spec)
	}
}
