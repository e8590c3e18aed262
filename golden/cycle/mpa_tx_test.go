package cycle

import (
	"bytes"
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
		got, gotEnds := runTx(m, beats, len(want))
		assert.Equal(t, want, got, "width %d", w)
		assert.Equal(t, ends, gotEnds, "width %d", w)
	}
}

// formBeat's runs give each octet what its definition says: a marker's or
// the header's, PAD's and CRC's place from the template, else the ULPDU
// octet of its body index.
func TestMPATxFormBeatPerOctet(t *testing.T) {
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, 1))
	m, err := NewMPATx(512)
	require.NoError(t, err)
	pool := make([]byte, mpa.MaxULPDULength)
	for i := range pool {
		pool[i] = byte(rng.Uint32())
	}
	for iter := 0; iter < 2000; iter++ {
		ctx := MPATxCtx{Offset: rng.Uint32() &^ 3, Len: 1 + rng.IntN(1600), Markers: rng.IntN(4) > 0}
		switch rng.IntN(4) {
		case 0:
			ctx.Offset = -uint32(4 * (1 + rng.IntN(300))) // wraps inside the FPDU
		case 1:
			ctx.Offset &^= mpa.MarkerPeriod - 1 // a leading marker
		}
		if iter%100 == 0 {
			ctx.Len = mpa.MaxULPDULength - rng.IntN(64)
		}
		u := m.newULPDU(ctx)
		u.data = append(u.data, pool[rng.IntN(len(pool)-ctx.Len+1):][:ctx.Len]...)
		n := len(u.template)
		for k := 0; k < 8; k++ {
			from := rng.IntN(n)
			to := min(n, from+1+rng.IntN(64))
			got, want := make([]byte, to-from), make([]byte, to-from)
			formBeat(got, u, from, to)
			for p := from; p < to; p++ {
				want[p-from] = u.template[p]
				if bb := body(u, p); !isMarker(u, p) && bb >= 2 && bb < ctx.Len+2 {
					want[p-from] = u.data[bb-2]
				}
			}
			if !bytes.Equal(want, got) {
				require.Equal(t, want, got, "seed %d: %+v octets [%d,%d)", seed, ctx, from, to)
			}
		}
		m.free = append(m.free, u)
	}
}

// Once its buffers have grown, a cycle allocates nothing.
func TestMPATxStepAllocatesNothing(t *testing.T) {
	m, err := NewMPATx(512)
	require.NoError(t, err)
	data := make([]byte, 64)
	off, sent := uint32(0x1F0), 0
	step := func() {
		const n = 1000
		in := MPATxIn{Data: data, Valid: true, Last: sent+64 >= n, MReady: true,
			Ctx: MPATxCtx{Offset: off, Len: n, Markers: true, CRC: true}}
		if o := m.Step(in); o.SReady {
			if sent += 64; in.Last {
				off += uint32(mpa.FPDUWireLen(off, true, n))
				sent = 0
			}
		}
	}
	for range 2000 {
		step()
	}
	assert.Zero(t, testing.AllocsPerRun(2000, step))
}

// A context with a length MPA cannot carry (0, negative, above 64768) is
// bad input: the model goes on without a panic, and the FPDUs of the valid
// ULPDUs after it come out as golden/mpa frames them.
func TestMPATxInvalidLengthNoPanic(t *testing.T) {
	for _, w := range []int{64, 512} {
		for _, bad := range []int{0, -1, mpa.MaxULPDULength + 1} {
			m, err := NewMPATx(w)
			require.NoError(t, err)
			lanes := w / 8
			beats := []MPATxIn{{Data: make([]byte, lanes), Valid: true, Last: true, Ctx: MPATxCtx{Len: bad, CRC: true}, MReady: true}}
			var want []byte
			u := []byte("a valid ULPDU after the bad one, longer than one beat at 64 bits")
			ctx := MPATxCtx{Offset: 0x200, Len: len(u), Markers: true, CRC: true}
			f := mpa.Framer{Markers: true, CRC: true, Offset: ctx.Offset}
			want, err = f.AppendFPDU(nil, u)
			require.NoError(t, err)
			for off := 0; off < len(u); off += lanes {
				beat := make([]byte, lanes)
				copy(beat, u[off:])
				beats = append(beats, MPATxIn{Data: beat, Valid: true, Last: off+lanes >= len(u), Ctx: ctx, MReady: true})
			}
			var fpdus [][]byte
			require.NotPanics(t, func() { fpdus, _ = runTx(m, beats, 2) }, "width %d, length %d", w, bad)
			require.Len(t, fpdus, 2, "width %d, length %d", w, bad)
			assert.Equal(t, want, fpdus[1], "width %d: the FPDU after length %d", w, bad)
		}
	}
}

// runTx feeds beats to m, with the output always ready, until n FPDUs have
// come out (or 10,000 cycles), and returns their octets and User fields.
func runTx(m *MPATx, beats []MPATxIn, n int) (fpdus [][]byte, ends []uint32) {
	lanes := m.lanes
	var cur []byte
	for c := 0; c < 10000 && len(fpdus) < n; c++ {
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
				fpdus, ends, cur = append(fpdus, cur), append(ends, o.User), nil
			}
		}
	}
	return fpdus, ends
}
