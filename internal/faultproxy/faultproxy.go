// Package faultproxy is a TCP proxy for tests that injects faults between
// two endpoints under a seed: it delays, stalls and resumes, splits the
// stream into pieces of every size down to single octets, coalesces it,
// resets the connection at a chosen point, half-closes it, or flips a byte.
// The same seed gives the same faults at the same stream offsets, so a
// failure is reproduced by its seed.
//
//	p, _ := faultproxy.New("127.0.0.1:4791", faultproxy.Config{
//		Seed: 7, Fault: faultproxy.FlipByte, Dir: faultproxy.Upstream, At: 4096})
//	defer p.Close()
//	verbs.Dial(ctx, p.Addr(), qp, verbs.ConnParam{}) // through the proxy
//
// Upstream is what the connecting side (the Initiator) sends, Downstream
// what the listening side answers. Each direction is forwarded by its own
// goroutine; Close stops them all and returns once they have exited. The
// proxy records what it forwarded in each direction (Record), so a test
// can check what really went over the wire after a fault, a Terminate
// for instance.
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Fault is what the proxy does to the stream.
type Fault uint8

// The faults.
const (
	// None forwards every octet as it comes.
	None Fault = iota
	// Delay holds every piece for a random time up to MaxDelay, in order.
	Delay
	// Stall stops forwarding Dir at offset At for StallFor, then resumes;
	// nothing is lost.
	Stall
	// Blackhole stops forwarding Dir at offset At for good (a stall past
	// any timeout): what follows is read and dropped, nothing is closed.
	Blackhole
	// Split writes the stream in pieces of 1 to MaxPiece octets (1: every
	// octet on its own, so every boundary of every frame is a segment
	// boundary), each pushed to TCP separately. The cuts fall at seeded
	// offsets, and also wherever a read from the source ended.
	Split
	// Coalesce gathers what arrives for up to MaxDelay or MaxPiece octets
	// and writes it at once.
	Coalesce
	// Reset aborts both TCP connections with RST once Dir reaches At.
	Reset
	// HalfClose shuts Dir's write side (FIN) once it reaches At; what
	// follows in Dir is dropped, the other direction goes on.
	HalfClose
	// FlipByte inverts the bits of the octet at offset At of Dir.
	FlipByte
)

var faultNames = [...]string{None: "none", Delay: "delay", Stall: "stall", Blackhole: "blackhole",
	Split: "split", Coalesce: "coalesce", Reset: "reset", HalfClose: "half-close", FlipByte: "flip-byte"}

func (f Fault) String() string {
	if int(f) < len(faultNames) {
		return faultNames[f]
	}
	return fmt.Sprintf("fault(%d)", uint8(f))
}

// Faults lists every fault, None first.
var Faults = []Fault{None, Delay, Stall, Blackhole, Split, Coalesce, Reset, HalfClose, FlipByte}

// Direction is a direction of a proxied connection.
type Direction uint8

// The directions.
const (
	Upstream   Direction = iota // from the connecting side to the target
	Downstream                  // from the target back to the connecting side
)

func (d Direction) String() string {
	if d == Upstream {
		return "upstream"
	}
	return "downstream"
}

// Config says which fault to inject. The zero value forwards everything.
type Config struct {
	Seed  uint64    // seeds piece sizes and delays
	Fault Fault     // what to do
	Dir   Direction // the direction a positional fault (Stall, Blackhole, Reset, HalfClose, FlipByte) hits
	At    int64     // the stream offset in Dir where it hits
	// StallFor is how long Stall holds the stream (0: 200 ms).
	StallFor time.Duration
	// MaxDelay bounds Delay's hold and Coalesce's gathering (0: 2 ms).
	MaxDelay time.Duration
	// MaxPiece bounds Split's pieces and Coalesce's writes (0: 1 for
	// Split, 64 KiB for Coalesce).
	MaxPiece int
	// Conns is how many connections the fault applies to, in the order
	// they are accepted (0: every one); later ones are forwarded as they
	// come.
	Conns int
	// Record keeps what is forwarded in each direction for Record.
	Record bool
}

// Stats counts what a proxy did.
type Stats struct {
	Conns    int      // connections accepted
	Octets   [2]int64 // octets forwarded upstream and downstream
	Pieces   [2]int64 // writes made upstream and downstream
	Injected int      // positional faults that hit (a stream shorter than At escapes)
}

// Proxy is a running fault proxy on 127.0.0.1.
type Proxy struct {
	cfg    Config
	target string
	ln     net.Listener

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	stats  Stats
	record [2][]byte
	closed bool
	wg     sync.WaitGroup
}

// New starts a proxy that forwards connections made to Addr to target.
func New(target string, cfg Config) (*Proxy, error) {
	if cfg.Fault >= Fault(len(faultNames)) {
		return nil, fmt.Errorf("faultproxy: unknown fault %d", cfg.Fault)
	}
	if cfg.At < 0 {
		return nil, fmt.Errorf("faultproxy: negative offset %d", cfg.At)
	}
	if cfg.MaxPiece < 0 || cfg.StallFor < 0 || cfg.MaxDelay < 0 {
		return nil, errors.New("faultproxy: negative MaxPiece, StallFor or MaxDelay")
	}
	if cfg.StallFor == 0 {
		cfg.StallFor = 200 * time.Millisecond
	}
	if cfg.MaxDelay == 0 {
		cfg.MaxDelay = 2 * time.Millisecond
	}
	if cfg.MaxPiece == 0 {
		cfg.MaxPiece = 1
		if cfg.Fault == Coalesce {
			cfg.MaxPiece = 64 << 10
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{cfg: cfg, target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address to connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Stats returns what the proxy has done so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Record returns a copy of the octets forwarded in d (with Config.Record) (after the fault:
// with the flipped octet, without what a half-close or blackhole
// dropped), over every connection in the order written.
func (p *Proxy) Record(d Direction) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]byte(nil), p.record[d]...)
}

// Close stops the proxy: the listener and every proxied connection are
// closed, and Close returns once every goroutine of the proxy has exited.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for n := 0; ; n++ {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(in) {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil || !p.track(out) {
			in.Close()
			if out != nil {
				out.Close()
			}
			continue
		}
		cfg := p.cfg
		if cfg.Conns > 0 && n >= cfg.Conns {
			cfg.Record = false
			cfg.Fault = None
		}
		p.mu.Lock()
		p.stats.Conns++
		p.mu.Unlock()
		c := &conn{p: p, cfg: cfg, ends: [2]*net.TCPConn{in.(*net.TCPConn), out.(*net.TCPConn)}}
		p.wg.Add(2)
		go c.pump(Upstream, uint64(n))
		go c.pump(Downstream, uint64(n))
	}
}

// conn is one proxied connection: ends[0] is the connecting side's
// socket, ends[1] the target's.
type conn struct {
	p    *Proxy
	cfg  Config
	ends [2]*net.TCPConn
	once sync.Once
	over int // directions ended (under p.mu)
}

// ended is called as each direction ends; the second closes both sockets.
func (c *conn) ended() {
	c.p.mu.Lock()
	c.over++
	last := c.over == 2
	if last {
		delete(c.p.conns, c.ends[0])
		delete(c.p.conns, c.ends[1])
	}
	c.p.mu.Unlock()
	if last {
		c.ends[0].Close()
		c.ends[1].Close()
	}
}

// abort resets both connections (SO_LINGER 0: RST instead of FIN).
func (c *conn) abort() {
	c.once.Do(func() {
		for _, e := range c.ends {
			e.SetLinger(0)
			e.Close()
		}
	})
}

func (c *conn) count(d Direction, b []byte, pieces int64) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	c.p.stats.Octets[d] += int64(len(b))
	c.p.stats.Pieces[d] += pieces
	if c.cfg.Record {
		c.p.record[d] = append(c.p.record[d], b...)
	}
}

func (c *conn) injected() {
	c.p.mu.Lock()
	c.p.stats.Injected++
	c.p.mu.Unlock()
}

// pump forwards direction d until its source ends, applying the fault.
func (c *conn) pump(d Direction, connNum uint64) {
	defer c.p.wg.Done()
	src, dst := c.ends[0], c.ends[1]
	if d == Downstream {
		src, dst = dst, src
	}
	rng := rand.New(rand.NewPCG(c.cfg.Seed, connNum<<1|uint64(d)))
	f := c.cfg.Fault
	positional := f == Stall || f == Blackhole || f == Reset || f == HalfClose || f == FlipByte
	if positional && c.cfg.Dir != d {
		f = None
	}
	var (
		off      int64 // stream offset of buf[0]
		dropping bool  // Blackhole or HalfClose hit: read and drop
		piece    int   // Split: octets left in the current piece
		buf      = make([]byte, 64<<10)
	)
	write := func(b []byte) bool {
		if len(b) == 0 {
			return true
		}
		if _, err := dst.Write(b); err != nil {
			return false
		}
		c.count(d, b, 1)
		return true
	}
	defer func() {
		// The source ended: pass its end on (a blackhole passes nothing,
		// not even that); once both directions are over, let go of both.
		if !(f == Blackhole && dropping) {
			dst.CloseWrite()
		}
		c.ended()
	}()
	var pending []byte // Coalesce: gathered, not yet written
	var pendingSince time.Time
	for {
		if f == Coalesce && len(pending) > 0 {
			wait := c.cfg.MaxDelay - time.Since(pendingSince)
			if wait <= 0 || len(pending) >= c.cfg.MaxPiece {
				if !write(pending) {
					c.abort()
					return
				}
				pending = pending[:0]
				continue
			}
			src.SetReadDeadline(time.Now().Add(wait))
		} else if f == Coalesce {
			src.SetReadDeadline(time.Time{})
		}
		n, err := src.Read(buf)
		chunk := buf[:n]
		if n > 0 {
			if dropping {
				off += int64(n)
				continue
			}
			at := c.cfg.At - off // where the positional fault falls in chunk
			hit := positional && f != None && at >= 0 && at < int64(n)
			switch {
			case f == Delay:
				time.Sleep(time.Duration(rng.Int64N(int64(c.cfg.MaxDelay) + 1)))
				if !write(chunk) {
					c.abort()
					return
				}
			case f == Split:
				for len(chunk) > 0 {
					if piece == 0 {
						piece = 1 + rng.IntN(c.cfg.MaxPiece)
					}
					k := min(piece, len(chunk))
					if !write(chunk[:k]) {
						c.abort()
						return
					}
					chunk, piece = chunk[k:], piece-k
				}
			case f == Coalesce:
				if len(pending) == 0 {
					pendingSince = time.Now()
				}
				pending = append(pending, chunk...)
			case hit:
				c.injected()
				if !write(chunk[:at]) {
					c.abort()
					return
				}
				rest := chunk[at:]
				switch f {
				case Stall:
					time.Sleep(c.cfg.StallFor)
				case Blackhole:
					dropping = true
					off += int64(n)
					continue
				case Reset:
					c.abort()
					return
				case HalfClose:
					dropping = true
					dst.CloseWrite()
					off += int64(n)
					continue
				case FlipByte:
					rest[0] ^= 0xFF
				}
				if !write(rest) {
					c.abort()
					return
				}
			default:
				if !write(chunk) {
					c.abort()
					return
				}
			}
			off += int64(n)
		}
		if err != nil {
			var ne net.Error
			if f == Coalesce && errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if f == Coalesce && len(pending) > 0 {
				write(pending)
			}
			if !errors.Is(err, io.EOF) {
				// A reset or a Close: reset the other side too, as TCP
				// end to end would.
				c.abort()
				return
			}
			return
		}
	}
}
