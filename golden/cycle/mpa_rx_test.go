package cycle

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/mpa"
)

func TestMPARxRejectsWidth(t *testing.T) {
	_, err := NewMPARx(32)
	assert.ErrorIs(t, err, ErrConfig)
}

// rxRun resets m with cfg, streams stream in segments of 1..seg octets
// (the last beat of each partial), then idles until the block is quiet,
// and returns the ULPDUs it delivered and its last outputs.
func rxRun(t *testing.T, m *MPARx, cfg MPARxCfg, stream []byte, seg int, fin bool, rng *rand.Rand) ([][]byte, MPARxOut) {
	t.Helper()
	lanes := m.lanes
	zero := make([]byte, lanes)
	m.Step(MPARxIn{Reset: true, Cfg: cfg, Data: zero, MReady: true})
	var got [][]byte
	var cur []byte
	var o MPARxOut
	segLeft, quiet := 0, 0
	for c := 0; c < 1<<20 && quiet < 2; c++ {
		in := MPARxIn{Data: zero, MReady: true}
		n := 0
		if len(stream) > 0 {
			if segLeft == 0 {
				segLeft = 1 + rng.IntN(seg)
			}
			n = min(lanes, segLeft, len(stream))
			beat := make([]byte, lanes)
			copy(beat, stream[:n])
			in.Data, in.Keep, in.Valid = beat, 1<<n-1, true
			in.Last = fin && n == len(stream)
		}
		o = m.Step(in)
		if in.Valid && o.SReady {
			stream, segLeft = stream[n:], segLeft-n
		}
		if o.Valid {
			k := lanes
			if o.Last {
				k = (int(o.Len)-1)%lanes + 1
			}
			cur = append(cur, o.Data[:k]...)
			if o.Last {
				got, cur = append(got, cur), nil
			}
		}
		if len(stream) == 0 && m.Quiet() {
			quiet++
		} else {
			quiet = 0
		}
	}
	require.Empty(t, stream, "the block took the whole stream")
	return got, m.Step(MPARxIn{Data: zero, MReady: true})
}

// A stream of FPDUs from golden/mpa's Framer, cut into segments of any
// size, comes out as its ULPDUs, in order, markers stripped; a FIN at an
// FPDU boundary is a clean end.
func TestMPARxDeframesLikeGolden(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, w := range []int{64, 512} {
		m, err := NewMPARx(w)
		require.NoError(t, err)
		f := mpa.Framer{Markers: true, CRC: true, Offset: 0x1F0}
		cfg := MPARxCfg{Offset: f.Offset, Markers: true, CRC: true}
		var stream []byte
		var want [][]byte
		for _, n := range []int{1, 505, 498, 16, 1442, 3, 64768, 60} {
			u := make([]byte, n)
			for i := range u {
				u[i] = byte(rng.Uint32())
			}
			want = append(want, u)
			stream, err = f.AppendFPDU(stream, u)
			require.NoError(t, err)
		}
		got, o := rxRun(t, m, cfg, stream, 1500, true, rng)
		assert.Equal(t, want, got, "width %d", w)
		assert.True(t, o.EOS, "width %d: the stream ended at a boundary", w)
		assert.False(t, o.ErrValid, "width %d", w)
	}
}

// Faults come out as golden/mpa classifies them, at the FPDU's offset,
// after the good ULPDUs before it.
func TestMPARxErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	good := []byte("a good ULPDU before the bad one")
	for _, c := range []struct {
		name  string
		spoil func(fpdu []byte) []byte
		fin   bool
		kind  mpa.Kind
		code  mpa.ErrorCode
	}{
		{"crc", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, false, mpa.KindCRC, mpa.CodeCRC},
		{"length-zero", func(b []byte) []byte { b[0], b[1] = 0, 0; return b }, false, mpa.KindLength, mpa.CodeMarker},
		{"truncated", func(b []byte) []byte { return b[:len(b)-5] }, true, mpa.KindClosed, mpa.CodeLLPClosed},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := NewMPARx(128)
			require.NoError(t, err)
			f := mpa.Framer{CRC: true, Offset: 0x100}
			cfg := MPARxCfg{Offset: f.Offset, CRC: true}
			stream, err := f.AppendFPDU(nil, good)
			require.NoError(t, err)
			badAt := f.Offset
			bad, err := f.AppendFPDU(nil, make([]byte, 300))
			require.NoError(t, err)
			stream = append(stream, c.spoil(bad)...)
			got, o := rxRun(t, m, cfg, stream, 100, c.fin, rng)
			assert.Equal(t, [][]byte{good}, got)
			require.True(t, o.ErrValid)
			assert.Equal(t, uint8(c.kind), o.ErrKind)
			assert.Equal(t, uint8(c.code), o.ErrCode)
			assert.Equal(t, badAt, o.ErrOffset)
		})
	}
}
