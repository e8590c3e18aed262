package cycle

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/mpa"
)

func TestMPATxRejectsWidth(t *testing.T) {
	_, err := NewMPATx(32)
	assert.ErrorIs(t, err, ErrConfig)
}

// Streamed ULPDUs come out as golden/mpa's FPDUs, one packet each, with the
// offset past each FPDU on its last beat.
func TestMPATxFramesLikeGolden(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, w := range []int{64, 512} {
		m, err := NewMPATx(w)
		require.NoError(t, err)
		lanes := w / 8
		var want [][]byte
		var ends []uint32
		var beats []MPATxIn
		f := mpa.Framer{Markers: true, CRC: true, Offset: 0x1F0}
		for _, n := range []int{1, 505, 498, 16, 1442, 3} {
			u := make([]byte, n)
			for i := range u {
				u[i] = byte(rng.Uint32())
			}
			ctx := MPATxCtx{Offset: f.Offset, Len: n, Markers: true, CRC: true}
			fp, err := f.AppendFPDU(nil, u)
			require.NoError(t, err)
			want = append(want, fp)
			ends = append(ends, f.Offset)
			for off := 0; off < n; off += lanes {
				beat := make([]byte, lanes)
				copy(beat, u[off:])
				beats = append(beats, MPATxIn{Data: beat, Valid: true, Last: off+lanes >= n, Ctx: ctx, MReady: true})
			}
		}
		var got [][]byte
		var gotEnds []uint32
		var cur []byte
		for c := 0; c < 10000 && len(got) < len(want); c++ {
			in := MPATxIn{Data: make([]byte, lanes), MReady: true}
			if len(beats) > 0 {
				in = beats[0]
			}
			o := m.Step(in)
			if in.Valid && o.SReady {
				beats = beats[1:]
			}
			if o.Valid {
				for i := 0; i < lanes; i++ {
					if o.Keep>>i&1 == 1 {
						cur = append(cur, o.Data[i])
					}
				}
				if o.Last {
					got, gotEnds, cur = append(got, cur), append(gotEnds, o.User), nil
				}
			}
		}
		assert.Equal(t, want, got, "width %d", w)
		assert.Equal(t, ends, gotEnds, "width %d", w)
	}
}
