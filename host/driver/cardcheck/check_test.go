package cardcheck

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	"github.com/openiwarp/openiwarp/host/driver/simhost"
)

// The RTL may cut the model's stream and payload writes differently (AXI
// bursts, other page pieces) and issue them in another order: every byte
// is matched once, against the earliest model write at its address.
func TestCheckerDataPieces(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	mem := simhost.New()
	buf := make([]byte, 3*4096)
	m, err := mem.Map(buf)
	require.NoError(t, err)
	c := newChecker(func(a uint64, n int) error { _, err := mem.Lookup(a, n); return err })
	var reported []error
	c.fail = func(_ uint32, err error) { reported = append(reported, err) }
	want := make([]byte, len(buf))
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	// The model: page pieces, then a second write over the first page
	// (a later message to the same place).
	for off := 0; off < len(want); off += 4096 {
		c.expect(cardmodel.DMAWrite{Kind: cardmodel.WritePayload, QPN: 3, Addr: m.IOVA + uint64(off), Data: want[off : off+4096]})
	}
	second := make([]byte, 4096)
	for i := range second {
		second[i] = byte(rng.Uint32())
	}
	c.expect(cardmodel.DMAWrite{Kind: cardmodel.WritePayload, QPN: 3, Addr: m.IOVA, Data: second})
	// The RTL: 64-byte beats in random order, one straddling pages 1 and 2.
	type piece struct{ off, n int }
	var ps []piece
	for off := 0; off < 4096; off += 64 {
		ps = append(ps, piece{off, 64})
	}
	ps = append(ps, piece{4096, 4096 - 32}, piece{8192 - 32, 64}, piece{8192 + 32, 4096 - 32})
	rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	for _, p := range ps {
		require.NotNil(t, c.data(m.IOVA+uint64(p.off), want[p.off:p.off+p.n]), "seed %d: piece at %d", seed, p.off)
	}
	require.Empty(t, reported, "seed %d", seed)
	require.False(t, c.quiet(), "the second write to page 0 is still pending")
	require.NotNil(t, c.data(m.IOVA+100, second[100:200]))
	require.Nil(t, c.data(m.IOVA+100, second[100:200]), "a byte written twice")
	require.Len(t, reported, 1)
	require.ErrorIs(t, reported[0], ErrMismatch)
	c.idle()
	require.True(t, c.quiet())
}
