// Package selftest is the Go model of the board self-test
// (hw/gen.SelftestModules, hw/rtl/selftest_hx8k.v): what its UART must
// print and its LEDs must show, computed from the test's definition with
// golden/mpa doing the framing, the corruption's effect and the checking,
// never from the RTL or the generator's IR.
//
// The self-test runs episodes. Each one frames ULPDUs from an xorshift64
// generator into FPDUs at an episode offset, corrupts one FPDU in two
// episodes out of four (a CRC octet, or a marker's FPDUPTR with the CRC
// off), deframes the stream and checks that every ULPDU before the
// corruption comes back intact and that the error is the one injected,
// at the FPDU it was injected into. After every EpisodesPerLine episodes
// the board prints one line of counters.
package selftest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// Counters are the values of one report line.
type Counters struct {
	Episodes uint32 // episodes run
	OK       uint32 // ULPDUs delivered intact
	CRC      uint32 // CRC-error episodes whose error came out as expected
	Marker   uint32 // marker-error episodes likewise
	Bad      uint32 // episodes that went wrong in any way
}

// Line is the report line the board prints for c (with CR LF).
func (c Counters) Line() string {
	return gen.SelftestLine([]uint32{c.Episodes, c.OK, c.CRC, c.Marker, c.Bad})
}

// Model runs the self-test's episodes in Go.
type Model struct {
	cfg  gen.SelftestConfig
	seed uint64
	c    Counters
}

// New starts the model of a self-test build, as after reset.
func New(cfg gen.SelftestConfig) *Model { return &Model{cfg: cfg, seed: gen.SelftestSeed} }

func xorshift64(x uint64) uint64 {
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}

// ulpduLen is the generator's ULPDU length from its state at the ULPDU's
// first beat: 1 + x[5:0] + x[11:8].
func ulpduLen(x uint64) int { return 1 + int(x&63) + int(x>>8&15) }

// Episode is what one episode did.
type Episode struct {
	Kind      int    // gen.SelftestClean, ...
	Offset    uint32 // stream offset of its first FPDU
	Delivered int    // ULPDUs delivered intact (FPDUs that checked out, transmit-only)
	Err       *mpa.Error
	Good      bool
}

// ErrModel is wrapped by errors of the model itself (a ULPDU the framer
// refused, which the generator's lengths never make).
var ErrModel = errors.New("selftest: model")

// Step runs the next episode and updates the counters.
func (m *Model) Step() (Episode, error) {
	e, err := m.episode(m.c.Episodes, m.seed)
	if err != nil {
		return e, err
	}
	m.c.Episodes++
	m.c.OK += uint32(e.Delivered)
	switch {
	case !e.Good:
		m.c.Bad++
	case e.Kind == gen.SelftestCRCError:
		m.c.CRC++
	case e.Kind == gen.SelftestMarkerError:
		m.c.Marker++
	}
	m.seed = xorshift64(m.seed)
	return e, nil
}

// Counters returns the counters so far.
func (m *Model) Counters() Counters { return m.c }

// Lines runs the episodes of n report lines and returns the lines, as the
// board prints them.
func (m *Model) Lines(n int) ([]string, error) {
	var out []string
	for len(out) < n {
		if _, err := m.Step(); err != nil {
			return out, err
		}
		if m.c.Episodes%uint32(m.cfg.EpisodesPerLine) == 0 {
			out = append(out, m.c.Line())
		}
	}
	return out, nil
}

// LEDs is what the board's eight LEDs show after lines report lines with
// the counters c: the line count in led[6:0], led[7] once an episode was bad.
func LEDs(lines int, c Counters) uint8 {
	v := uint8(lines & 0x7f)
	if c.Bad != 0 {
		v |= 0x80
	}
	return v
}

func (m *Model) episode(ep uint32, seed uint64) (Episode, error) {
	e := Episode{Kind: int(ep & 3), Offset: 1<<30 | uint32(seed>>36)<<2}
	fr := mpa.Framer{Markers: e.Kind != gen.SelftestNoMarkers, CRC: m.cfg.TxOnly || e.Kind != gen.SelftestMarkerError, Offset: e.Offset}
	n := gen.SelftestULPDUs
	if e.Kind == gen.SelftestMarkerError {
		n = gen.SelftestMarkerULPDUs
	}
	// Generate and frame: the generator's state is the data of each beat,
	// lane 0 in its low octet, one step per beat.
	x := seed
	var ulpdus [][]byte
	var starts []uint32
	var stream []byte
	for i := 0; i < n; i++ {
		l := ulpduLen(x)
		var u []byte
		for len(u) < l {
			u = binary.LittleEndian.AppendUint64(u, x)
			x = xorshift64(x)
		}
		u = u[:l]
		starts = append(starts, fr.Offset)
		var err error
		if stream, err = fr.AppendFPDU(stream, u); err != nil {
			return e, fmt.Errorf("%w: episode %d ULPDU %d: %v", ErrModel, ep, i, err)
		}
		ulpdus = append(ulpdus, u)
	}
	// Corrupt.
	want := -1 // FPDU that must fail
	switch e.Kind {
	case gen.SelftestCRCError:
		want = gen.SelftestCRCFPDU
		end := len(stream)
		if want+1 < n {
			end = int(starts[want+1] - e.Offset)
		}
		stream[end-1] ^= 1
	case gen.SelftestMarkerError:
		// The first marker: the first multiple of 512 at or after the offset.
		mk := (e.Offset + 511) &^ 511
		pos := int(mk - e.Offset)
		if pos+3 >= len(stream) {
			return e, fmt.Errorf("%w: episode %d: no marker in %d octets", ErrModel, ep, len(stream))
		}
		stream[pos+3] ^= 4
		for want = 0; want+1 < n && starts[want+1] <= mk; want++ {
		}
	}
	if m.cfg.TxOnly {
		return txOnlyVerdict(e, stream, starts, want), nil
	}
	// Deframe and check.
	d := mpa.NewDeframer(mpa.DeframerConfig{Markers: fr.Markers, CRC: fr.CRC, StartOffset: e.Offset})
	var got [][]byte
	err := d.Feed(stream, func(u mpa.ULPDU) error {
		got = append(got, bytes.Clone(u.Data))
		return nil
	})
	intact := true
	for i, u := range got {
		if i < len(ulpdus) && bytes.Equal(u, ulpdus[i]) {
			e.Delivered++
		} else {
			intact = false
		}
	}
	if err != nil && !errors.As(err, &e.Err) {
		return e, fmt.Errorf("%w: episode %d: deframer: %v", ErrModel, ep, err)
	}
	switch {
	case !intact:
	case want < 0:
		e.Good = e.Err == nil && e.Delivered == n
	case e.Err != nil:
		k, code := mpa.KindCRC, mpa.ErrorCode(2)
		if e.Kind == gen.SelftestMarkerError {
			k, code = mpa.KindMarker, 3
		}
		e.Good = e.Err.Kind == k && e.Err.Code == code && e.Err.Offset == uint64(starts[want]) && e.Delivered == want
	}
	return e, nil
}

// txOnlyVerdict checks each FPDU's CRC by residue, as the transmit-only
// self-test does: exactly the corrupted FPDU must fail. A marker episode
// ends with its corrupted FPDU (the generator stops there).
func txOnlyVerdict(e Episode, stream []byte, starts []uint32, want int) Episode {
	n := len(starts)
	if e.Kind == gen.SelftestMarkerError {
		n = want + 1
	}
	e.Good = true
	for i := 0; i < n; i++ {
		end := len(stream)
		if i+1 < len(starts) {
			end = int(starts[i+1] - e.Offset)
		}
		pass := mpa.CRC32c(stream[starts[i]-e.Offset:end]) == mpa.CRCResidue
		switch {
		case pass && i != want:
			e.Delivered++
		case pass == (i == want):
			e.Good = false
		}
	}
	return e
}
