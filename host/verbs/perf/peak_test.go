package perf

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMergeAndPeak(t *testing.T) {
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// Two runs of 10 operations: one over 0-100 ms, one over 50-150 ms.
	a := []mark{{at(0), 0}, {at(50), 5}, {at(100), 10}}
	b := []mark{{at(50), 0}, {at(100), 5}, {at(150), 10}}
	m := merge([][]mark{a, b})
	var done []int
	for _, x := range m {
		done = append(done, x.done)
	}
	require.Equal(t, []int{0, 5, 5, 10, 15, 20}, done)
	// 1 MB operations: 20 in 150 ms on average; both running (50-100 ms) doubles the rate.
	p := peak(m, 1e6, 20, 150*time.Millisecond)
	require.InDelta(t, 200.0, p, 1e-6) // MB/s: 10 ops of 1 MB in 50 ms
	require.InDelta(t, 20e6/0.15/1e6, peak([]mark{{at(0), 0}, {at(150), 20}}, 1e6, 20, 150*time.Millisecond), 1e-6)
}
