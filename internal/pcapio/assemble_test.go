package pcapio

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collector records what an Assembler delivers.
type collector struct {
	conns []*Conn
	data  map[*Stream]*bytes.Buffer
	gaps  map[*Stream][]uint32
	ends  map[*Stream]string
}

func newCollector() (*collector, AssemblerConfig) {
	c := &collector{data: map[*Stream]*bytes.Buffer{}, gaps: map[*Stream][]uint32{}, ends: map[*Stream]string{}}
	return c, AssemblerConfig{
		NewConn: func(k *Conn) { c.conns = append(c.conns, k) },
		Data: func(s *Stream, p []byte, _ int) {
			if c.data[s] == nil {
				c.data[s] = &bytes.Buffer{}
			}
			c.data[s].Write(p)
		},
		Gap: func(s *Stream, n uint32, _ int) { c.gaps[s] = append(c.gaps[s], n) },
		End: func(s *Stream, why string) { c.ends[s] = why },
	}
}

func (c *collector) stream(conn, dir int) []byte {
	if b := c.data[c.conns[conn].Streams[dir]]; b != nil {
		return b.Bytes()
	}
	return nil
}

// segments cuts a stream starting at sequence number isn into random pieces.
func segments(rng *rand.Rand, src, dst netip.AddrPort, isn uint32, data []byte, maxLen int) []Segment {
	var out []Segment
	for off := 0; off < len(data); {
		n := min(1+rng.IntN(maxLen), len(data)-off)
		out = append(out, Segment{Src: src, Dst: dst, Seq: isn + uint32(off), Flags: FlagACK, Payload: data[off : off+n]})
		off += n
	}
	return out
}

// TestAssemblerRandom shuffles, duplicates and overlaps the segments of two
// directions around a sequence-number wrap and checks both streams come out
// whole and in order.
func TestAssemblerRandom(t *testing.T) {
	seed := uint64(rand.Uint32())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	for round := range 50 {
		a2b, b2a := make([]byte, 1+rng.IntN(20000)), make([]byte, rng.IntN(5000))
		for i := range a2b {
			a2b[i] = byte(rng.Uint32())
		}
		for i := range b2a {
			b2a[i] = byte(rng.Uint32())
		}
		isnA, isnB := uint32(0xffffffff-rng.IntN(3000)), rng.Uint32()
		segs := append(segments(rng, cli4, srv4, isnA+1, a2b, 1500), segments(rng, srv4, cli4, isnB+1, b2a, 700)...)
		// Retransmissions: whole copies and overlapping re-cuts.
		for range len(segs) / 3 {
			s := segs[rng.IntN(len(segs))]
			if k := len(s.Payload); k > 2 && rng.IntN(2) == 0 {
				cut := 1 + rng.IntN(k-1)
				s.Seq += uint32(cut)
				s.Payload = s.Payload[cut:]
			}
			segs = append(segs, s)
		}
		rng.Shuffle(len(segs), func(i, j int) { segs[i], segs[j] = segs[j], segs[i] })
		hs := []Segment{
			{Src: cli4, Dst: srv4, Seq: isnA, Flags: FlagSYN},
			{Src: srv4, Dst: cli4, Seq: isnB, Ack: isnA + 1, Flags: FlagSYN | FlagACK},
		}
		segs = append(hs, segs...)
		segs = append(segs, Segment{Src: cli4, Dst: srv4, Seq: isnA + 1 + uint32(len(a2b)), Flags: FlagFIN | FlagACK})
		col, cfg := newCollector()
		a := NewAssembler(cfg)
		for i := range segs {
			require.NoError(t, a.Add(&segs[i], i+1))
		}
		a.Flush()
		require.Len(t, col.conns, 1, "round %d", round)
		c := col.conns[0]
		assert.Equal(t, cli4, c.Client)
		assert.True(t, c.SawSYN)
		require.True(t, bytes.Equal(a2b, col.stream(0, 0)), "round %d (seed %d): client stream differs", round, seed)
		require.True(t, bytes.Equal(b2a, col.stream(0, 1)), "round %d (seed %d): server stream differs", round, seed)
		assert.Equal(t, "FIN", col.ends[c.Streams[0]])
		assert.Equal(t, "end of capture", col.ends[c.Streams[1]])
		assert.Empty(t, col.gaps[c.Streams[0]])
		assert.Zero(t, a.Held())
	}
}

func TestAssemblerGapAndMemoryBound(t *testing.T) {
	col, cfg := newCollector()
	cfg.MaxBuffered = 100
	a := NewAssembler(cfg)
	seg := func(seq uint32, p string) *Segment {
		return &Segment{Src: cli4, Dst: srv4, Seq: seq, Flags: FlagACK, Payload: []byte(p)}
	}
	require.NoError(t, a.Add(seg(1000, "abc"), 1)) // no SYN: the first segment starts the stream
	require.NoError(t, a.Add(seg(1010, "klm"), 2)) // 7 octets lost
	require.NoError(t, a.Add(seg(1010, "kl"), 3))  // shorter duplicate of a held segment
	assert.Equal(t, 3, a.Held())
	assert.Equal(t, "abc", string(col.stream(0, 0)))
	a.Flush()
	s := col.conns[0].Streams[0]
	assert.Equal(t, "abcklm", string(col.stream(0, 0)))
	assert.Equal(t, []uint32{7}, col.gaps[s])
	assert.Equal(t, uint64(7), s.Gaps)
	assert.Equal(t, uint64(2), s.Duplicates)

	// Past the bound Add fails with a clear error.
	_, cfg = newCollector()
	cfg.MaxBuffered = 100
	a = NewAssembler(cfg)
	require.NoError(t, a.Add(seg(1, "x"), 1))
	require.NoError(t, a.Add(seg(100, string(make([]byte, 60))), 2))
	err := a.Add(seg(200, string(make([]byte, 60))), 3)
	require.ErrorIs(t, err, ErrMemory)
	assert.Contains(t, err.Error(), "198.18.0.1:40000 -> 198.18.0.2:5001")
	assert.Contains(t, err.Error(), "exceed the reassembly bound of 100 octets")
}

func TestAssemblerEndsAndReuse(t *testing.T) {
	col, cfg := newCollector()
	a := NewAssembler(cfg)
	add := func(s Segment) { require.NoError(t, a.Add(&s, 0)) }
	// Connection 1: data, then RST.
	add(Segment{Src: cli4, Dst: srv4, Seq: 10, Flags: FlagSYN})
	add(Segment{Src: srv4, Dst: cli4, Seq: 50, Flags: FlagSYN | FlagACK})
	add(Segment{Src: cli4, Dst: srv4, Seq: 11, Flags: FlagACK, Payload: []byte("one")})
	add(Segment{Src: srv4, Dst: cli4, Seq: 51, Flags: FlagRST})
	add(Segment{Src: cli4, Dst: srv4, Seq: 14, Flags: FlagACK, Payload: []byte("late")}) // after RST: ignored
	// Connection 2 reuses the port pair with a new ISN; FIN carries data
	// and octets after the FIN are not part of the stream.
	add(Segment{Src: cli4, Dst: srv4, Seq: 9000, Flags: FlagSYN})
	add(Segment{Src: cli4, Dst: srv4, Seq: 9001, Flags: FlagACK | FlagFIN, Payload: []byte("two")})
	add(Segment{Src: cli4, Dst: srv4, Seq: 9004, Flags: FlagACK, Payload: []byte("junk")})
	// Connection 3 is first seen at its SYN-ACK: the receiver is the client.
	other := netip.MustParseAddrPort("198.18.0.3:7")
	add(Segment{Src: other, Dst: cli4, Seq: 1, Flags: FlagSYN | FlagACK})
	a.Flush()
	require.Len(t, col.conns, 3)
	assert.Equal(t, "one", string(col.stream(0, 0)))
	assert.Equal(t, "RST", col.ends[col.conns[0].Streams[0]])
	assert.Equal(t, "RST", col.ends[col.conns[0].Streams[1]])
	assert.Equal(t, "two", string(col.stream(1, 0)))
	assert.Equal(t, "FIN", col.ends[col.conns[1].Streams[0]])
	assert.Equal(t, 2, col.conns[1].ID)
	assert.Equal(t, cli4, col.conns[2].Client)
	assert.Equal(t, other, col.conns[2].Server)
	assert.Equal(t, fmt.Sprint(col.conns[2].Streams[1]), "198.18.0.3:7 -> 198.18.0.1:40000")
}

func TestAssemblerFINBeforeMissingData(t *testing.T) {
	col, cfg := newCollector()
	a := NewAssembler(cfg)
	require.NoError(t, a.Add(&Segment{Src: cli4, Dst: srv4, Seq: 0, Flags: FlagSYN}, 1))
	require.NoError(t, a.Add(&Segment{Src: cli4, Dst: srv4, Seq: 1, Flags: FlagACK, Payload: []byte("ab")}, 2))
	require.NoError(t, a.Add(&Segment{Src: cli4, Dst: srv4, Seq: 9, Flags: FlagFIN | FlagACK}, 3))
	a.Flush()
	s := col.conns[0].Streams[0]
	assert.Equal(t, []uint32{6}, col.gaps[s])
	assert.Equal(t, "end of capture", col.ends[s])
}
