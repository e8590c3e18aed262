package pcapio

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
)

// DefaultMaxBuffered is the default bound on out-of-order data an Assembler
// holds, summed over all its streams.
const DefaultMaxBuffered = 256 << 20

// ErrMemory is matched by a *MemoryError: the out-of-order data held past a
// hole in some stream exceeds the Assembler's bound.
var ErrMemory = errors.New("pcapio: reassembly memory bound exceeded")

// MemoryError names the stream whose out-of-order data broke the bound.
type MemoryError struct {
	Stream   string // "src -> dst"
	Held     int    // octets held over all streams
	Limit    int
	Expected uint32 // relative sequence number the stream is waiting for
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("pcapio: %s: %d octets held out of order past relative sequence %d exceed the reassembly bound of %d octets (lost segments in the capture?)",
		e.Stream, e.Held, e.Expected, e.Limit)
}
func (e *MemoryError) Is(target error) bool { return target == ErrMemory }

// Conn is one TCP connection seen in a capture.
type Conn struct {
	ID             int            // 1-based, in order of first packet
	Client, Server netip.AddrPort // the SYN's sender and receiver (without a SYN: the first packet's)
	SawSYN         bool
	// Streams[0] carries Client→Server, Streams[1] Server→Client.
	Streams [2]*Stream
}

// Stream is one direction of a Conn.
type Stream struct {
	Conn     *Conn
	Dir      int // 0: client to server, 1: server to client
	Src, Dst netip.AddrPort
	// Delivered counts the octets handed to AssemblerConfig.Data.
	Delivered uint64
	// Duplicates counts retransmitted octets dropped.
	Duplicates uint64
	// Gaps counts octets never captured.
	Gaps uint64

	started bool
	isn     uint32 // first sequence number of data (SYN + 1)
	next    uint32 // next sequence number to deliver
	finSet  bool
	fin     uint32
	ended   bool
	pending []pendingSeg // out of order, sorted by seq relative to next
	held    int
}

type pendingSeg struct {
	seq   uint32
	data  []byte
	frame int
}

func (s *Stream) String() string { return s.Src.String() + " -> " + s.Dst.String() }

// RelSeq returns the relative sequence number (0 = first data octet) of the
// next octet to be delivered.
func (s *Stream) RelSeq() uint32 { return s.next - s.isn }

// AssemblerConfig sets the callbacks and bound of an Assembler. Every
// callback is optional.
type AssemblerConfig struct {
	// MaxBuffered bounds the out-of-order octets held over all streams
	// (zero: DefaultMaxBuffered). Past it Add returns a *MemoryError.
	MaxBuffered int
	// NewConn is called when a connection's first packet arrives.
	NewConn func(c *Conn)
	// Data receives each stream's octets in order, exactly once. p is
	// valid only during the call; frame is the packet that completed it.
	Data func(s *Stream, p []byte, frame int)
	// Gap reports n octets that were never captured before the next Data.
	Gap func(s *Stream, n uint32, frame int)
	// End reports that a stream is over: "FIN", "RST" or "end of capture".
	End func(s *Stream, reason string)
}

// Assembler reorders the TCP segments of any number of connections into
// per-direction byte streams.
type Assembler struct {
	cfg   AssemblerConfig
	flows map[[2]netip.AddrPort]*Conn // keyed by (client, server)
	conns []*Conn
	held  int
}

// NewAssembler returns an Assembler with the given configuration.
func NewAssembler(cfg AssemblerConfig) *Assembler {
	if cfg.MaxBuffered <= 0 {
		cfg.MaxBuffered = DefaultMaxBuffered
	}
	return &Assembler{cfg: cfg, flows: map[[2]netip.AddrPort]*Conn{}}
}

// Conns returns the connections seen so far, in order of first packet.
func (a *Assembler) Conns() []*Conn { return a.conns }

// Held returns the out-of-order octets currently held.
func (a *Assembler) Held() int { return a.held }

// Add feeds one segment, captured in packet number frame.
func (a *Assembler) Add(seg *Segment, frame int) error {
	c, dir := a.lookup(seg)
	s := c.Streams[dir]
	if s.ended {
		return nil // late retransmission after FIN or RST
	}
	if seg.Flags&FlagRST != 0 {
		a.endConn(c, "RST", frame)
		return nil
	}
	seq, payload := seg.Seq, seg.Payload
	if seg.Flags&FlagSYN != 0 {
		if !s.started {
			s.started, s.isn, s.next = true, seq+1, seq+1
		}
		seq++ // data (if any) follows the SYN's sequence number
	}
	if !s.started {
		s.started, s.isn, s.next = true, seq, seq
	}
	if seg.Flags&FlagFIN != 0 && !s.finSet {
		s.finSet, s.fin = true, seq+uint32(len(payload))
	}
	if d := int32(seq - s.next); d > 0 {
		if len(payload) > 0 {
			if err := a.hold(s, seq, payload, frame); err != nil {
				return err
			}
		}
	} else {
		a.deliver(s, seq, payload, frame)
		a.drain(s)
	}
	if s.finSet && s.next == s.fin && !s.ended {
		a.end(s, "FIN")
	}
	return nil
}

// lookup finds or creates the connection of seg and the direction it goes.
func (a *Assembler) lookup(seg *Segment) (*Conn, int) {
	synOnly := seg.Flags&(FlagSYN|FlagACK) == FlagSYN
	if c := a.flows[[2]netip.AddrPort{seg.Src, seg.Dst}]; c != nil {
		// A new SYN on a finished or differently numbered connection is
		// the reuse of its port pair.
		if !(synOnly && (c.Streams[0].ended || (c.Streams[0].started && c.Streams[0].isn != seg.Seq+1))) {
			return c, 0
		}
		a.endConn(c, "end of capture", 0)
	} else if c := a.flows[[2]netip.AddrPort{seg.Dst, seg.Src}]; c != nil {
		return c, 1
	}
	client, server := seg.Src, seg.Dst
	if seg.Flags&(FlagSYN|FlagACK) == FlagSYN|FlagACK {
		client, server = seg.Dst, seg.Src
	}
	c := &Conn{ID: len(a.conns) + 1, Client: client, Server: server, SawSYN: seg.Flags&FlagSYN != 0}
	c.Streams[0] = &Stream{Conn: c, Dir: 0, Src: client, Dst: server}
	c.Streams[1] = &Stream{Conn: c, Dir: 1, Src: server, Dst: client}
	a.conns = append(a.conns, c)
	a.flows[[2]netip.AddrPort{client, server}] = c
	if a.cfg.NewConn != nil {
		a.cfg.NewConn(c)
	}
	if client == seg.Src {
		return c, 0
	}
	return c, 1
}

// deliver passes on the part of payload (at seq ≤ next) that is new.
func (a *Assembler) deliver(s *Stream, seq uint32, payload []byte, frame int) {
	skip := int64(s.next - seq)
	if skip >= int64(len(payload)) {
		s.Duplicates += uint64(len(payload))
		return
	}
	s.Duplicates += uint64(skip)
	p := payload[skip:]
	if s.finSet {
		if room := int32(s.fin - s.next); room <= 0 {
			return
		} else if int(room) < len(p) {
			p = p[:room] // octets past the FIN are not part of the stream
		}
	}
	s.next += uint32(len(p))
	s.Delivered += uint64(len(p))
	if a.cfg.Data != nil && len(p) > 0 {
		a.cfg.Data(s, p, frame)
	}
}

func (a *Assembler) hold(s *Stream, seq uint32, payload []byte, frame int) error {
	for i := range s.pending {
		if s.pending[i].seq == seq {
			if len(payload) <= len(s.pending[i].data) {
				s.Duplicates += uint64(len(payload))
				return nil
			}
			a.release(s, i) // keep the longer copy
			break
		}
	}
	if a.held+len(payload) > a.cfg.MaxBuffered {
		return &MemoryError{Stream: s.String(), Held: a.held + len(payload), Limit: a.cfg.MaxBuffered, Expected: s.RelSeq()}
	}
	p := pendingSeg{seq: seq, data: append([]byte(nil), payload...), frame: frame}
	i := sort.Search(len(s.pending), func(i int) bool { return int32(s.pending[i].seq-s.next) > int32(seq-s.next) })
	s.pending = append(s.pending, pendingSeg{})
	copy(s.pending[i+1:], s.pending[i:])
	s.pending[i] = p
	s.held += len(payload)
	a.held += len(payload)
	return nil
}

func (a *Assembler) release(s *Stream, i int) {
	s.held -= len(s.pending[i].data)
	a.held -= len(s.pending[i].data)
	s.pending = append(s.pending[:i], s.pending[i+1:]...)
}

// drain delivers held segments that have become contiguous.
func (a *Assembler) drain(s *Stream) {
	for len(s.pending) > 0 && int32(s.pending[0].seq-s.next) <= 0 {
		p := s.pending[0]
		a.release(s, 0)
		a.deliver(s, p.seq, p.data, p.frame)
	}
}

// skipGap jumps over the hole before the first held segment.
func (a *Assembler) skipGap(s *Stream) {
	p := s.pending[0]
	n := p.seq - s.next
	s.Gaps += uint64(n)
	if a.cfg.Gap != nil {
		a.cfg.Gap(s, n, p.frame)
	}
	s.next = p.seq
	a.drain(s)
}

func (a *Assembler) end(s *Stream, reason string) {
	for len(s.pending) > 0 {
		a.skipGap(s)
	}
	if s.finSet && int32(s.fin-s.next) > 0 { // octets before the FIN never seen
		n := s.fin - s.next
		s.Gaps += uint64(n)
		if a.cfg.Gap != nil {
			a.cfg.Gap(s, n, 0)
		}
		s.next = s.fin
	}
	s.ended = true
	if a.cfg.End != nil {
		a.cfg.End(s, reason)
	}
}

func (a *Assembler) endConn(c *Conn, reason string, _ int) {
	for _, s := range c.Streams {
		if !s.ended {
			a.end(s, reason)
		}
	}
}

// Flush ends every stream still open: held data is delivered past its gaps
// (each reported through Gap) and End is called with "end of capture".
func (a *Assembler) Flush() {
	for _, c := range a.conns {
		a.endConn(c, "end of capture", 0)
	}
}
