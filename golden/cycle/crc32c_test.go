package cycle

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCRC32CRejectsWidth(t *testing.T) {
	_, err := NewCRC32C(48)
	assert.ErrorIs(t, err, ErrConfig)
}

// A frame streamed at full speed gives its CRC exactly Latency cycles after
// its last beat, then the result holds until taken.
func TestCRC32CLatencyAndHold(t *testing.T) {
	for _, w := range []int{32, 64, 128, 256, 512} {
		m, err := NewCRC32C(w)
		require.NoError(t, err)
		lanes := w / 8
		frame := []byte("123456789")
		// one beat (all widths >= 9 bytes need 1 or 3 beats at 32 bits)

		for off := 0; off < len(frame); off += lanes {
			beat := make([]byte, lanes)
			n := copy(beat, frame[off:])
			m.Step(CRC32CIn{Data: beat, Keep: 1<<n - 1, Valid: true, Last: off+lanes >= len(frame), MReady: false})
		}

		for c := 1; c <= m.Latency()+3; c++ {
			o := m.Step(CRC32CIn{Data: make([]byte, lanes), MReady: false})
			if c < m.Latency() {
				assert.False(t, o.MValid, "width %d cycle %d", w, c)
				continue
			}
			require.True(t, o.MValid, "width %d: result after %d cycles", w, c)
			assert.Equal(t, uint32(0xE3069283), o.CRC)
			assert.False(t, o.ResidueOK)
			assert.False(t, o.SReady, "a held result stalls the input")
		}
		o := m.Step(CRC32CIn{Data: make([]byte, lanes), MReady: true})
		assert.True(t, o.MValid && o.SReady, "taken this cycle, input may move")
		o = m.Step(CRC32CIn{Data: make([]byte, lanes), MReady: true})
		assert.False(t, o.MValid)
		assert.Equal(t, uint32(0xE3069283), o.CRC, "data holds after the result is taken")
	}
}

func TestCRC32CResidue(t *testing.T) {
	m, err := NewCRC32C(64)
	require.NoError(t, err)
	frame := []byte("0123456789abcdef")
	frame = binary.LittleEndian.AppendUint32(frame, crc32.Checksum(frame, castagnoli))
	for off := 0; off < len(frame); off += 8 {
		beat := make([]byte, 8)
		n := copy(beat, frame[off:])
		m.Step(CRC32CIn{Data: beat, Keep: 1<<n - 1, Valid: true, Last: off+8 >= len(frame), MReady: true})
	}
	var o CRC32COut
	for i := 0; i < m.Latency(); i++ {
		o = m.Step(CRC32CIn{Data: make([]byte, 8), MReady: true})
	}
	require.True(t, o.MValid)
	assert.True(t, o.ResidueOK)
	assert.Equal(t, uint32(CRC32CResidue), o.CRC)
}

func TestCRC32CReset(t *testing.T) {
	m, err := NewCRC32C(32)
	require.NoError(t, err)
	m.Step(CRC32CIn{Data: []byte{1, 2, 3, 4}, Keep: 0xF, Valid: true, Last: true})
	m.Step(CRC32CIn{Data: make([]byte, 4), Reset: true})
	for i := 0; i < 4; i++ {
		o := m.Step(CRC32CIn{Data: make([]byte, 4), MReady: true})
		assert.Equal(t, CRC32COut{SReady: true}, o)
	}
}

func TestBodyCountsNonMarkerOctets(t *testing.T) {
	for _, off := range []uint32{0, 4, 8, 500, 508, 1020, 0xFFFFFFFC} {
		u := &txULPDU{ctx: MPATxCtx{Offset: off, Markers: true}}
		n := 0
		for p := 0; p < 3000; p++ {
			require.Equal(t, n, body(u, p), "offset %d octet %d", off, p)
			if !isMarker(u, p) {
				n++
			}
		}
	}
}
