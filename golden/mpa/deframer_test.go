package mpa

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// sent is one ULPDU as the framer placed it.
type sent struct {
	data           []byte
	off, hdr, wire uint32
}

// frameAll frames ulpdus from offset start and records where each went.
func frameAll(t testing.TB, markers, crc bool, start uint32, ulpdus [][]byte) ([]byte, []sent) {
	f := Framer{Markers: markers, CRC: crc, Offset: start}
	var out []byte
	var log []sent
	for _, u := range ulpdus {
		off := f.Offset
		var err error
		n := len(out)
		out, err = f.AppendFPDU(out, u)
		require.NoError(t, err)
		hdr := off
		if markers && off%MarkerPeriod == 0 {
			hdr += MarkerLen
		}
		log = append(log, sent{u, off, hdr, uint32(len(out) - n)})
		require.Equal(t, FPDUWireLen(off, markers, len(u)), len(out)-n, "FPDUWireLen at offset %d, %d octets", off, len(u))
	}
	return out, log
}

// feedPieces feeds stream to d in pieces chosen by rng and collects what
// comes out.
func feedPieces(d *Deframer, stream []byte, rng *rand.Rand, maxPiece int) ([]sent, error) {
	var got []sent
	collect := func(u ULPDU) error {
		got = append(got, sent{bytes.Clone(u.Data), u.Offset, u.HeaderOffset, uint32(u.WireLen)})
		return nil
	}
	for len(stream) > 0 {
		n := min(len(stream), 1+rng.IntN(maxPiece))
		if err := d.Feed(stream[:n], collect); err != nil {
			return got, err
		}
		stream = stream[n:]
	}
	return got, d.End()
}

func randomULPDUs(rng *rand.Rand, count int) [][]byte {
	us := make([][]byte, count)
	for i := range us {
		var n int
		switch rng.IntN(10) {
		case 0:
			n = 1 + rng.IntN(MaxULPDULength)
		case 1, 2:
			n = 1 + rng.IntN(4)
		default:
			n = 1 + rng.IntN(2000)
		}
		us[i] = make([]byte, n)
		for j := range us[i] {
			us[i][j] = byte(rng.Uint32())
		}
	}
	return us
}

// TestRoundTripProperty encodes random ULPDU sequences and decodes them
// back exactly under random segmentation, from 1-octet pieces to 1 MiB,
// with markers and CRC on and off, from random stream offsets including
// ones that wrap 2^32 (R18, R19, R21, R24, R25, R43, R45, R48).
func TestRoundTripProperty(t *testing.T) {
	seed := uint64(20261122)
	for iter := range 48 {
		rng := rand.New(rand.NewPCG(seed, uint64(iter)))
		markers, crc := iter&1 != 0, iter&2 != 0
		// An FPDU boundary at an offset ≡ 0 (mod 4), sometimes near the wrap.
		start := uint32(rng.IntN(1<<20)) &^ 3
		if iter%3 == 0 {
			start = ^uint32(0) - uint32(rng.IntN(4096)) + 1
			start &^= 3
		}
		us := randomULPDUs(rng, 5+rng.IntN(60))
		stream, want := frameAll(t, markers, crc, start, us)
		maxPiece := []int{1, 7, 1500, 1 << 20}[iter%4]
		d := NewDeframer(DeframerConfig{Markers: markers, CRC: crc, StartOffset: start})
		got, err := feedPieces(d, stream, rng, maxPiece)
		require.NoError(t, err, "seed %d iter %d", seed, iter)
		require.Equal(t, want, got, "seed %d iter %d markers=%v crc=%v start=%d", seed, iter, markers, crc, start)
		require.Equal(t, start+uint32(len(stream)), d.Offset())
		require.Zero(t, d.Buffered())
	}
}

// TestEveryBitFlipDetected flips each bit of FPDUs in turn: with CRC on,
// none is delivered corrupted (R35, R46, R88).
func TestEveryBitFlipDetected(t *testing.T) {
	for _, markers := range []bool{false, true} {
		for _, n := range []int{1, 42, 505, 1442} {
			u := make([]byte, n)
			for i := range u {
				u[i] = byte(i * 7)
			}
			// Start 8 octets before the grid so that a marker falls inside.
			stream, _ := frameAll(t, markers, true, 504, [][]byte{u})
			for bit := range len(stream) * 8 {
				bad := bytes.Clone(stream)
				bad[bit/8] ^= 1 << (bit % 8)
				d := NewDeframer(DeframerConfig{Markers: markers, CRC: true, StartOffset: 504})
				delivered := 0
				err := d.Feed(bad, func(ULPDU) error { delivered++; return nil })
				if err == nil {
					err = d.End()
				}
				require.Error(t, err, "markers=%v n=%d bit %d", markers, n, bit)
				require.Zero(t, delivered, "markers=%v n=%d bit %d delivered a corrupted ULPDU", markers, n, bit)
			}
		}
	}
}

func TestDeframerErrors(t *testing.T) {
	good, _ := frameAll(t, true, true, 0, [][]byte{[]byte("hello, iWARP"), make([]byte, 600)})
	corrupt := func(i int, v byte) []byte { b := bytes.Clone(good); b[i] = v; return b }
	for _, tc := range []struct {
		name     string
		cfg      DeframerConfig
		stream   []byte
		kind     Kind
		code     ErrorCode
		offset   uint64
		ulpdus   int
		sentinel error
	}{
		{"crc mismatch (R35, code 2)", DeframerConfig{Markers: true, CRC: true}, corrupt(8, 'H'), KindCRC, CodeCRC, 0, 0, ErrCRC},
		{"crc off ignores the field (R13, R56)", DeframerConfig{Markers: true}, corrupt(len(good)-1, 0x5a), 0, 0, 0, 2, nil},
		{"crc off but marker pointer wrong (code 3)", DeframerConfig{Markers: true}, corrupt(512+3, 0x10), KindMarker, CodeMarker, 24, 1, ErrMarker},
		{"leading marker not zero (R20, code 3)", DeframerConfig{Markers: true}, corrupt(3, 4), KindMarker, CodeMarker, 0, 0, ErrMarker},
		{"zero ULPDU_Length", DeframerConfig{CRC: true}, []byte{0, 0, 0, 0, 0, 0}, KindLength, CodeMarker, 0, 0, ErrLength},
		{"ULPDU_Length over the limit", DeframerConfig{CRC: true, MaxULPDU: 100}, []byte{0, 101}, KindLength, CodeMarker, 0, 0, ErrLength},
		{"stream ends inside an FPDU (code 1)", DeframerConfig{Markers: true, CRC: true}, good[:30], KindClosed, CodeLLPClosed, 24, 1, ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDeframer(tc.cfg)
			n := 0
			err := d.Feed(tc.stream, func(ULPDU) error { n++; return nil })
			if err == nil {
				err = d.End()
			}
			require.Equal(t, tc.ulpdus, n, "ULPDUs delivered before the error")
			if tc.kind == 0 {
				require.NoError(t, err)
				return
			}
			var me *Error
			require.ErrorAs(t, err, &me)
			require.Equal(t, tc.kind, me.Kind)
			require.Equal(t, tc.code, me.Code)
			require.Equal(t, tc.offset, me.Offset)
			require.ErrorIs(t, err, tc.sentinel)
			require.False(t, me.CloseTCP(), "codes 1-3 leave TCP to the ULP (R89)")
			// Sticky: nothing more is delivered on this half connection (R88).
			more, _ := frameAll(t, tc.cfg.Markers, tc.cfg.CRC, d.Offset(), [][]byte{[]byte("x")})
			require.Equal(t, err, d.Feed(more, func(ULPDU) error { t.Fatal("delivered after an error"); return nil }))
		})
	}
}

// TestRev0PointerTolerance accepts draft-01's "from the beginning of the
// FPDU" pointers from a Rev 0 peer only (digest §6.2 D4, §6.3 step 5).
func TestRev0PointerTolerance(t *testing.T) {
	stream, _ := frameAll(t, true, false, 0, [][]byte{make([]byte, 600)})
	// RFC pointer of the marker at 512 is 508; draft-01 reading gives 512.
	stream[512+2], stream[512+3] = 0x02, 0x00
	for _, rev := range []Revision{Rev0, Rev1} {
		d := NewDeframer(DeframerConfig{Markers: true, Rev: rev})
		err := d.Feed(stream, func(ULPDU) error { return nil })
		if rev == Rev0 {
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, ErrMarker)
		}
	}
}

// TestMarkerLowBitsIgnored: receivers treat FPDUPTR's two low bits as 0 (R16).
func TestMarkerLowBitsIgnored(t *testing.T) {
	stream, _ := frameAll(t, true, false, 0, [][]byte{make([]byte, 600)})
	stream[512+3] |= 3
	stream[1] = 0x5a // reserved bits of the leading marker are ignored too (R15)
	d := NewDeframer(DeframerConfig{Markers: true})
	require.NoError(t, d.Feed(stream, func(ULPDU) error { return nil }))
}

func TestCallbackErrorStopsDelivery(t *testing.T) {
	stream, _ := frameAll(t, false, true, 0, [][]byte{[]byte("a"), []byte("b")})
	stop := errors.New("ULP says stop")
	d := NewDeframer(DeframerConfig{CRC: true})
	n := 0
	require.ErrorIs(t, d.Feed(stream, func(ULPDU) error { n++; return stop }), stop)
	require.Equal(t, 1, n)
	require.ErrorIs(t, d.Feed(nil, nil), stop)
}

// TestDeframerMemoryBounded: a peer that announces the largest FPDU and
// trickles it in never makes the deframer hold more than one FPDU.
func TestDeframerMemoryBounded(t *testing.T) {
	u := make([]byte, MaxULPDULength)
	stream, _ := frameAll(t, true, true, 0, [][]byte{u, u})
	d := NewDeframer(DeframerConfig{Markers: true, CRC: true})
	peak := 0
	for i := 0; i < len(stream); i += 999 {
		require.NoError(t, d.Feed(stream[i:min(i+999, len(stream))], func(ULPDU) error { return nil }))
		peak = max(peak, d.Buffered())
	}
	require.LessOrEqual(t, peak, MaxFPDUWireLen)
	require.LessOrEqual(t, cap(d.raw), 2*MaxFPDUWireLen)
}

func TestFramerRejectsBadLength(t *testing.T) {
	var f Framer
	_, err := f.AppendFPDU(nil, nil)
	require.ErrorIs(t, err, ErrLength)
	_, err = f.AppendFPDU(nil, make([]byte, MaxULPDULength+1))
	require.ErrorIs(t, err, ErrLength)
	require.Zero(t, f.Offset)
}

func TestFramerAllocations(t *testing.T) {
	f := Framer{Markers: true, CRC: true}
	u := make([]byte, 4096)
	buf := make([]byte, 0, 8192)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		buf, err = f.AppendFPDU(buf[:0], u)
		if err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

// TestMULPDU checks the §4.5 formulas against the digest's worked values
// and the clamps (R06, R36, R37, R39).
func TestMULPDU(t *testing.T) {
	for _, tc := range []struct{ emss, with, without int }{
		{536, 522, 530}, {1448, 1430, 1442}, {1460, 1442, 1454},
		{8948, 8870, 8942}, {8960, 8882, 8954},
		{65415, 64768, 64768}, {100000, 64768, 64768},
		{100, 128, 128}, {0, 128, 128}, {-5, 128, 128},
	} {
		require.Equal(t, tc.with, MULPDU(tc.emss, true), "EMSS %d with markers", tc.emss)
		require.Equal(t, tc.without, MULPDU(tc.emss, false), "EMSS %d without markers", tc.emss)
	}
	// A MULPDU-sized FPDU fits its segment from any start on the grid.
	for emss := 128; emss <= 9000; emss += 7 {
		m := MULPDU(emss, true)
		if emss < 200 {
			continue // below this the 128 floor exceeds the room (§4.5)
		}
		for off := uint32(0); off < MarkerPeriod; off += 4 {
			require.LessOrEqual(t, FPDUWireLen(off, true, m), emss, "EMSS %d offset %d", emss, off)
		}
	}
}
