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

// TestFrameAroundMatchesAppend: framing around a payload in pieces gives
// exactly AppendFPDU's octets, with CRC on and off, at random offsets and
// splits.
func TestFrameAroundMatchesAppend(t *testing.T) {
	seed := uint64(5044)
	rng := rand.New(rand.NewPCG(seed, 2))
	for i := range 400 {
		n := 1 + rng.IntN(MaxULPDULength)
		if i%4 == 0 {
			n = 1 + rng.IntN(64)
		}
		u := make([]byte, n)
		for j := range u {
			u[j] = byte(rng.Uint32())
		}
		head := rng.IntN(min(n, 28) + 1) // the part written into dst (DDP headers)
		var pieces [][]byte
		for rest := u[head:]; len(rest) > 0; {
			k := 1 + rng.IntN(len(rest))
			pieces, rest = append(pieces, rest[:k]), rest[k:]
		}
		a := Framer{CRC: i%3 != 0, Offset: rng.Uint32()}
		b := a
		want, err := a.AppendFPDU([]byte("prefix"), u)
		require.NoError(t, err)
		dst := append(append([]byte("prefix"), 0xee, 0xee), u[:head]...)
		mid := len(dst)
		dst, err = b.FrameAround(dst, len("prefix"), pieces)
		require.NoError(t, err)
		got := append([]byte(nil), dst[:mid]...)
		for _, p := range pieces {
			got = append(got, p...)
		}
		got = append(got, dst[mid:]...)
		require.True(t, bytes.Equal(want, got), "seed %d, case %d: n=%d head=%d pieces=%d", seed, i, n, head, len(pieces))
		require.Equal(t, a.Offset, b.Offset)
	}
}

func TestFrameAroundErrors(t *testing.T) {
	for _, c := range []struct {
		name    string
		f       Framer
		dst     []byte
		start   int
		payload [][]byte
		want    error
	}{
		{"markers", Framer{Markers: true}, []byte{0, 0}, 0, [][]byte{{1}}, ErrMarkersAround},
		{"empty", Framer{}, []byte{0, 0}, 0, nil, ErrLength},
		{"no-length-slot", Framer{}, []byte{0}, 0, [][]byte{{1}}, ErrLength},
		{"start-past-end", Framer{}, []byte{0, 0}, 3, [][]byte{{1}}, ErrLength},
		{"negative-start", Framer{}, []byte{0, 0}, -1, [][]byte{{1}}, ErrLength},
		{"too-long", Framer{}, []byte{0, 0}, 0, [][]byte{make([]byte, MaxULPDULength+1)}, ErrLength},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.f
			got, err := f.FrameAround(c.dst, c.start, c.payload)
			require.ErrorIs(t, err, c.want)
			require.Equal(t, c.dst, got, "dst unchanged on error")
			require.Equal(t, c.f.Offset, f.Offset)
		})
	}
}

func TestFrameAroundAllocations(t *testing.T) {
	f := Framer{CRC: true}
	buf := make([]byte, 0, 256)
	payload := [][]byte{make([]byte, 4000), make([]byte, 96)}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := f.FrameAround(append(buf[:0], 0, 0, 1, 2), 0, payload); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}
