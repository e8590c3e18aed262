package mpa

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFrameInPlaceMatchesAppend: in-place framing produces exactly the
// octets of AppendFPDU, at every offset on the marker grid and every size.
func TestFrameInPlaceMatchesAppend(t *testing.T) {
	rng := rand.New(rand.NewPCG(5044, 1))
	sizes := []int{1, 2, 3, 4, 5, 42, 505, 506, 507, 508, 509, 1442, 4096, MaxULPDULength}
	for range 40 {
		sizes = append(sizes, 1+rng.IntN(MaxULPDULength))
	}
	for _, markers := range []bool{false, true} {
		for _, n := range sizes {
			for off := uint32(0); off < 2*MarkerPeriod; off += 4 * uint32(1+rng.IntN(9)) {
				u := make([]byte, n)
				for i := range u {
					u[i] = byte(rng.Uint32())
				}
				a := Framer{Markers: markers, CRC: true, Offset: off - 8}
				b := a
				want, err := a.AppendFPDU([]byte("prefix"), u)
				require.NoError(t, err)
				buf := append([]byte("prefix"), 0xee, 0xee)
				buf = append(buf, u...)
				got, err := b.FrameInPlace(buf, len("prefix"))
				require.NoError(t, err)
				require.True(t, bytes.Equal(want, got), "markers=%v n=%d offset=%d", markers, n, off-8)
				require.Equal(t, a.Offset, b.Offset)
			}
		}
	}
	var f Framer
	_, err := f.FrameInPlace([]byte{0, 0}, 0)
	require.ErrorIs(t, err, ErrLength)
}

func TestFrameInPlaceAllocations(t *testing.T) {
	f := Framer{Markers: true, CRC: true}
	buf := make([]byte, 0, 8192)
	u := make([]byte, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		buf = append(append(buf[:0], 0, 0), u...)
		if _, err := f.FrameInPlace(buf, 0); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}
