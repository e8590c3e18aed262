package pcapio

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"
)

// RecordOptions tune a recording. The zero value takes the addresses from
// the wrapped connections, random initial sequence numbers and the wall
// clock.
type RecordOptions struct {
	// Client and Server override the addresses written in the capture.
	Client, Server netip.AddrPort
	// ISN sets the initial sequence numbers of the client and the server
	// (both zero: random).
	ISN [2]uint32
	// Clock stamps each packet (nil: time.Now). Tests that commit their
	// captures pass a fake clock so that the files are reproducible.
	Clock func() time.Time
}

// recording is the shared state of one TCP connection being recorded.
type recording struct {
	mu    sync.Mutex
	w     *Writer
	clock func() time.Time
	ep    [2]netip.AddrPort // client, server
	next  [2]uint32         // next sequence number of each direction
	fin   [2]bool
	err   error // first capture write error, reported by the next Write/Read/Close
}

// RecordedConn is a net.Conn whose traffic is being recorded into a capture.
type RecordedConn struct {
	net.Conn
	rec         *recording
	dir         int // direction of this end's writes: 0 client→server
	recordReads bool
	closeOnce   sync.Once
}

// Record wraps conn so that everything written through it is captured as
// segments from the local end and everything read as segments from the
// remote end, of one TCP connection whose handshake is written at once.
// dialed says whether the local end opened the connection (sent the SYN).
//
// Each Write becomes one segment (split at MaxSegmentPayload), so a sender
// that writes one FPDU per Write starts a segment with every FPDU. A Read
// becomes one segment of whatever the read returned; reads and writes may
// run in two goroutines at once. Close captures this end's FIN, and a Read
// that meets the end of the stream captures the peer's.
func Record(w *Writer, conn net.Conn, dialed bool, opt *RecordOptions) (*RecordedConn, error) {
	rec, err := newRecording(w, conn, dialed, opt)
	if err != nil {
		return nil, err
	}
	dir := 1
	if dialed {
		dir = 0
	}
	return &RecordedConn{Conn: conn, rec: rec, dir: dir, recordReads: true}, nil
}

// RecordPair wraps both ends of one TCP connection, client being the end
// that dialed. Each end's writes are captured as its own segments and reads
// are not (the other end's writes already are), so segment boundaries are
// Write boundaries in both directions: the capture a dissector that expects
// aligned FPDUs needs.
func RecordPair(w *Writer, client, server net.Conn, opt *RecordOptions) (c, s *RecordedConn, err error) {
	rec, err := newRecording(w, client, true, opt)
	if err != nil {
		return nil, nil, err
	}
	return &RecordedConn{Conn: client, rec: rec, dir: 0}, &RecordedConn{Conn: server, rec: rec, dir: 1}, nil
}

func newRecording(w *Writer, conn net.Conn, dialed bool, opt *RecordOptions) (*recording, error) {
	var o RecordOptions
	if opt != nil {
		o = *opt
	}
	rec := &recording{w: w, clock: o.Clock}
	if rec.clock == nil {
		rec.clock = time.Now
	}
	local, remote := addrPort(conn.LocalAddr()), addrPort(conn.RemoteAddr())
	rec.ep = [2]netip.AddrPort{local, remote}
	if !dialed {
		rec.ep = [2]netip.AddrPort{remote, local}
	}
	if o.Client.IsValid() {
		rec.ep[0] = o.Client
	}
	if o.Server.IsValid() {
		rec.ep[1] = o.Server
	}
	for i, ep := range rec.ep {
		if !ep.IsValid() {
			return nil, fmt.Errorf("pcapio: cannot record %v: no IP address and port for the %s (set RecordOptions)", conn.RemoteAddr(), [2]string{"client", "server"}[i])
		}
	}
	isn := o.ISN
	if isn == [2]uint32{} {
		isn = [2]uint32{rand.Uint32(), rand.Uint32()}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.segment(0, isn[0], 0, FlagSYN, nil)
	rec.segment(1, isn[1], isn[0]+1, FlagSYN|FlagACK, nil)
	rec.next = [2]uint32{isn[0] + 1, isn[1] + 1}
	rec.segment(0, rec.next[0], rec.next[1], FlagACK, nil)
	return rec, rec.err
}

func addrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	if a != nil {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			return ap
		}
	}
	return netip.AddrPort{}
}

// segment writes one segment of direction dir; the caller holds mu.
func (r *recording) segment(dir int, seq, ack uint32, flags TCPFlags, payload []byte) {
	if r.err != nil {
		return
	}
	s := Segment{Src: r.ep[dir], Dst: r.ep[1-dir], Seq: seq, Ack: ack, Flags: flags, Payload: payload}
	if err := r.w.WriteSegment(r.clock(), &s, dir == 0); err != nil {
		r.err = err
	}
}

// data records p as segments of direction dir.
func (r *recording) data(dir int, p []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(p) > 0 {
		n := min(len(p), MaxSegmentPayload)
		r.segment(dir, r.next[dir], r.next[1-dir], FlagACK|FlagPSH, p[:n])
		r.next[dir] += uint32(n)
		p = p[n:]
	}
	return r.err
}

func (r *recording) finish(dir int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.fin[dir] {
		r.fin[dir] = true
		r.segment(dir, r.next[dir], r.next[1-dir], FlagFIN|FlagACK, nil)
		r.next[dir]++
	}
	return r.err
}

// Write records p, then writes it. It is recorded first so that the peer's
// answer can never precede it in the capture; a Write that fails part-way
// has still been recorded whole.
func (c *RecordedConn) Write(p []byte) (int, error) {
	if err := c.rec.data(c.dir, p); err != nil {
		return 0, fmt.Errorf("pcapio: recording write: %w", err)
	}
	return c.Conn.Write(p)
}

// Read reads from the connection and, for a Record connection, records what
// it got as the peer's segment (and the peer's FIN at the end of the stream).
func (c *RecordedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.recordReads {
		if n > 0 {
			if rerr := c.rec.data(1-c.dir, p[:n]); rerr != nil {
				return n, fmt.Errorf("pcapio: recording read: %w", rerr)
			}
		}
		if errors.Is(err, io.EOF) {
			if rerr := c.rec.finish(1 - c.dir); rerr != nil {
				return n, fmt.Errorf("pcapio: recording peer FIN: %w", rerr)
			}
		}
	}
	return n, err
}

// Close records this end's FIN and closes the connection.
func (c *RecordedConn) Close() error {
	var rerr error
	c.closeOnce.Do(func() { rerr = c.rec.finish(c.dir) })
	err := c.Conn.Close()
	if rerr != nil {
		return fmt.Errorf("pcapio: recording FIN: %w", rerr)
	}
	return err
}

// CloseWrite records this end's FIN and shuts down the writing side of the
// connection, when the underlying connection can (a *net.TCPConn can).
func (c *RecordedConn) CloseWrite() error {
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok {
		return fmt.Errorf("pcapio: %T cannot close its writing side alone", c.Conn)
	}
	if err := c.rec.finish(c.dir); err != nil {
		return fmt.Errorf("pcapio: recording FIN: %w", err)
	}
	return cw.CloseWrite()
}
