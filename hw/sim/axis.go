package sim

import (
	"fmt"
	"math/rand/v2"
)

// Rand is the harness's random source: fast, seeded, reproducible.
type Rand struct{ *rand.Rand }

// NewRand seeds a generator.
func NewRand(seed uint64) Rand { return Rand{rand.New(rand.NewPCG(seed, 0x1f1a9d7ebe1b0bd5))} }

// Chance is true with probability p/256.
func (r Rand) Chance(p int) bool { return int(r.Uint32()&0xFF) < p }

// Pool is a block of random bytes that stimulus slices frames from, so that
// making stimulus costs a copy rather than a random draw per byte.
type Pool []byte

// NewPool fills n random bytes.
func NewPool(r Rand, n int) Pool {
	p := make(Pool, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for k := 0; k < 8; k++ {
			p[i+k] = byte(v >> (8 * k))
		}
	}
	return p
}

// Slice returns n random bytes (aliasing the pool; n <= len(p)/2).
func (p Pool) Slice(r Rand, n int) []byte {
	off := r.IntN(len(p) - n + 1)
	return p[off : off+n]
}

// AXISPorts names one AXI-Stream port set of a block, e.g. prefix "s_axis".
type AXISPorts struct {
	Data, Keep, Valid, Last Port // driven towards the block (for a source)
	Ready                   Port // from the block
	Lanes                   int
}

// StreamPorts looks up prefix_tdata/tkeep/tvalid/tlast among the inputs and
// prefix_tready among the outputs. tkeep is optional (a block that learns
// lengths from a header has none): Keep is then the zero Port.
func StreamPorts(l Layout, prefix string) (AXISPorts, error) {
	var p AXISPorts
	var err error
	get := func(dst *Port, name string, in bool) { l.lookup(dst, prefix+"_"+name, in, &err) }
	get(&p.Data, "tdata", true)
	if _, kerr := l.In(prefix + "_tkeep"); kerr == nil {
		get(&p.Keep, "tkeep", true)
	}
	get(&p.Valid, "tvalid", true)
	get(&p.Last, "tlast", true)
	get(&p.Ready, "tready", false)
	if err != nil {
		return p, fmt.Errorf("stream %s: %w", prefix, err)
	}
	p.Lanes = p.Data.Width / 8
	return p, nil
}

// AXISSource feeds frames into an AXI-Stream input under the protocol's
// rules: a presented beat stays, unchanged, until accepted; gaps (tvalid
// low) come only between beats, with probability 1-ValidP/256 per cycle;
// every beat but a frame's last carries all lanes. While tvalid is low the
// data, keep and last lines carry garbage, which the block must ignore.
type AXISSource struct {
	P      AXISPorts
	ValidP int           // chance/256 of presenting a pending beat
	Frame  func() []byte // the next frame (at least one byte)
	Pool   Pool          // garbage for idle cycles

	rng     Rand
	frame   []byte
	off     int
	holding bool
	frames  uint64
}

// NewAXISSource starts a source.
func NewAXISSource(p AXISPorts, rng Rand, pool Pool, frame func() []byte) *AXISSource {
	return &AXISSource{P: p, ValidP: 256, Frame: frame, Pool: pool, rng: rng}
}

// Drive sets this cycle's tdata/tkeep/tvalid/tlast.
func (s *AXISSource) Drive(in []uint32) {
	if !s.holding && s.rng.Chance(s.ValidP) {
		if s.frame == nil {
			s.frame, s.off = s.Frame(), 0
		}
		s.holding = true
	}
	if !s.holding {
		r := s.rng.Uint64()
		off := int(r>>32) % (len(s.Pool) - 4*s.P.Data.Words)
		s.P.Data.SetBytes(in, s.Pool[off:off+4*s.P.Data.Words])
		if s.P.Keep.Words > 0 {
			s.P.Keep.Set(in, r&(1<<s.P.Lanes-1))
		}
		s.P.Valid.Set(in, 0)
		s.P.Last.Set(in, r>>31&1)
		return
	}
	beat := s.frame[s.off:]
	n := min(len(beat), s.P.Lanes)
	s.P.Data.SetBytes(in, beat[:n])
	if s.P.Keep.Words > 0 {
		s.P.Keep.Set(in, 1<<n-1)
	}
	s.P.Valid.Set(in, 1)
	last := uint64(0)
	if s.off+n == len(s.frame) {
		last = 1
	}
	s.P.Last.Set(in, last)
}

// Observe advances past an accepted beat.
func (s *AXISSource) Observe(in, out []uint32) {
	if !s.holding || s.P.Ready.Get(out) == 0 {
		return
	}
	s.holding = false
	s.off += s.P.Lanes
	if s.off >= len(s.frame) {
		s.frame = nil
		s.frames++
	}
}

// AtStart reports whether the beat driven this cycle opens a frame.
func (s *AXISSource) AtStart() bool { return s.holding && s.off == 0 }

// Abort drops the frame in flight (the block was reset).
func (s *AXISSource) Abort() { s.frame, s.holding = nil, false }

// Frames counts the frames fully accepted.
func (s *AXISSource) Frames() uint64 { return s.frames }

// Pressure is one traffic profile: how often the source offers a beat and
// the sink takes one (chance/256).
type Pressure struct{ Valid, Ready int }

// Pressures mixes full speed, light traffic, heavy backpressure and both.
var Pressures = []Pressure{{256, 256}, {256, 256}, {128, 256}, {256, 128}, {200, 40}, {40, 200}, {128, 128}, {256, 16}}
