package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// target is a TCP server for the proxy to forward to: each connection
// is handed to the test.
func target(t *testing.T) (addr string, conns <-chan net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	ch := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			ch <- c
		}
	}()
	return ln.Addr().String(), ch
}

// through connects to the target via a proxy with cfg and returns both
// ends: c is the connecting side, s the target's.
func through(t *testing.T, cfg Config) (p *Proxy, c, s net.Conn) {
	addr, conns := target(t)
	p, err := New(addr, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	c, err = net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	s, ok := testwatch.Wait(t, conns, "the proxied connection to reach the target")
	require.True(t, ok)
	return p, c, s
}

func payload(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// send writes b from w in random-sized writes, then closes w's write side.
func send(w net.Conn, b []byte, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 2))
	for len(b) > 0 {
		k := min(len(b), 1+r.IntN(9000))
		if _, err := w.Write(b[:k]); err != nil {
			return err
		}
		b = b[k:]
	}
	return w.(*net.TCPConn).CloseWrite()
}

// both moves n octets each way through the proxy and returns what each
// side read, with the read errors.
func both(t *testing.T, c, s net.Conn, up, down []byte) (gotUp, gotDown []byte, errUp, errDown error) {
	type res struct {
		b   []byte
		err error
	}
	ru, rd := make(chan res, 1), make(chan res, 1)
	go func() { b, err := io.ReadAll(s); ru <- res{b, err} }()
	go func() { b, err := io.ReadAll(c); rd <- res{b, err} }()
	go send(c, up, 1)
	go send(s, down, 2)
	u, ok := testwatch.Wait(t, ru, "the upstream octets")
	require.True(t, ok)
	d, ok := testwatch.Wait(t, rd, "the downstream octets")
	require.True(t, ok)
	return u.b, d.b, u.err, d.err
}

// Faults that lose nothing: every octet arrives, in order, both ways.
func TestLossless(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"none", Config{}},
		{"delay", Config{Fault: Delay}},
		{"split-every-octet", Config{Fault: Split, MaxPiece: 1}},
		{"split-up-to-7", Config{Fault: Split, MaxPiece: 7}},
		{"coalesce", Config{Fault: Coalesce}},
		{"stall-up", Config{Fault: Stall, Dir: Upstream, At: 3000, StallFor: 50 * time.Millisecond}},
		{"stall-down", Config{Fault: Stall, Dir: Downstream, At: 0, StallFor: 50 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			tc.cfg.Seed = seed
			p, c, s := through(t, tc.cfg)
			n := 100000
			if tc.cfg.Fault == Split && tc.cfg.MaxPiece == 1 {
				n = 5000
			}
			up, down := payload(seed, n), payload(seed+1, n/2+1)
			start := time.Now()
			gu, gd, eu, ed := both(t, c, s, up, down)
			require.NoError(t, eu)
			require.NoError(t, ed)
			require.True(t, bytes.Equal(up, gu), "upstream intact")
			require.True(t, bytes.Equal(down, gd), "downstream intact")
			st := p.Stats()
			require.Equal(t, [2]int64{int64(len(up)), int64(len(down))}, st.Octets)
			switch tc.cfg.Fault {
			case Split:
				if tc.cfg.MaxPiece == 1 {
					require.Equal(t, st.Octets, st.Pieces, "every octet written alone")
				} else {
					require.GreaterOrEqual(t, st.Pieces[0], st.Octets[0]/7)
				}
			case Stall:
				require.Equal(t, 1, st.Injected)
				require.GreaterOrEqual(t, time.Since(start), tc.cfg.StallFor)
			}
		})
	}
}

func TestFlipByte(t *testing.T) {
	for _, dir := range []Direction{Upstream, Downstream} {
		t.Run(dir.String(), func(t *testing.T) {
			const at = 12345
			p, c, s := through(t, Config{Fault: FlipByte, Dir: dir, At: at, Record: true})
			up, down := payload(3, 20000), payload(4, 20000)
			gu, gd, eu, ed := both(t, c, s, up, down)
			require.NoError(t, eu)
			require.NoError(t, ed)
			want, got, other, otherGot := up, gu, down, gd
			if dir == Downstream {
				want, got, other, otherGot = down, gd, up, gu
			}
			require.Equal(t, other, otherGot, "the other direction untouched")
			require.Len(t, got, len(want))
			for i := range want {
				if i == at {
					require.Equal(t, ^want[i], got[i], "octet %d inverted", i)
				} else if want[i] != got[i] {
					t.Fatalf("octet %d changed too", i)
				}
			}
			require.Equal(t, got, p.Record(dir))
			require.Equal(t, 1, p.Stats().Injected)
		})
	}
}

// Reset: both ends see the connection reset (not an orderly end) after at
// most At octets went through. A socket reports a reset once, to the first
// call that looks: on the connecting side that may be its writer (still
// sending when the RST came) or its reader, so either counts.
func TestReset(t *testing.T) {
	const at = 7000
	p, c, s := through(t, Config{Fault: Reset, Dir: Upstream, At: at})
	type res struct {
		b   []byte
		err error
	}
	ru, rd, sent := make(chan res, 1), make(chan res, 1), make(chan error, 1)
	go func() { b, err := io.ReadAll(s); ru <- res{b, err} }()
	go func() { b, err := io.ReadAll(c); rd <- res{b, err} }()
	go func() { sent <- send(c, payload(5, 50000), 1) }()
	u, ok := testwatch.Wait(t, ru, "the target side's read")
	require.True(t, ok)
	require.LessOrEqual(t, len(u.b), at)
	require.Equal(t, payload(5, 50000)[:len(u.b)], u.b)
	require.True(t, isReset(u.err), "target side: %v", u.err)
	d, ok := testwatch.Wait(t, rd, "the connecting side's read")
	require.True(t, ok)
	serr, ok := testwatch.Wait(t, sent, "the connecting side's writes")
	require.True(t, ok)
	require.Empty(t, d.b, "nothing came downstream")
	require.True(t, isReset(d.err) || isReset(serr), "connecting side: read %v, write %v", d.err, serr)
	require.Equal(t, 1, p.Stats().Injected)
}

func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// HalfClose: the target reads exactly At octets and then EOF; the other
// direction keeps flowing to its end.
func TestHalfClose(t *testing.T) {
	const at = 4321
	_, c, s := through(t, Config{Fault: HalfClose, Dir: Upstream, At: at})
	up, down := payload(7, 30000), payload(8, 30000)
	gu, gd, eu, ed := both(t, c, s, up, down)
	require.NoError(t, eu)
	require.Equal(t, up[:at], gu)
	require.NoError(t, ed)
	require.Equal(t, down, gd)
}

// Blackhole: At octets go through, then nothing, and nothing is closed.
func TestBlackhole(t *testing.T) {
	const at = 2500
	p, c, s := through(t, Config{Fault: Blackhole, Dir: Downstream, At: at})
	go send(s, payload(9, 10000), 3)
	got := make([]byte, at)
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, payload(9, 10000)[:at], got)
	testwatch.Until(t, "the rest to be swallowed", func() bool { return p.Stats().Octets[Downstream] == at && p.Stats().Injected == 1 })
	// Nothing more comes, not even the end of the stream.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
	_, err = c.Read(got)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	// The other direction still works.
	_, err = c.Write([]byte("still here"))
	require.NoError(t, err)
	b := make([]byte, 10)
	_, err = io.ReadFull(s, b)
	require.NoError(t, err)
	require.Equal(t, "still here", string(b))
}

// A fault hits only the first Conns connections.
func TestConnsLimit(t *testing.T) {
	addr, conns := target(t)
	p, err := New(addr, Config{Fault: FlipByte, At: 0, Conns: 1})
	require.NoError(t, err)
	defer p.Close()
	for i, want := range []byte{^byte('x'), 'x'} {
		c, err := net.Dial("tcp", p.Addr())
		require.NoError(t, err)
		_, err = c.Write([]byte("x"))
		require.NoError(t, err)
		s, ok := testwatch.Wait(t, conns, "a connection")
		require.True(t, ok)
		b := make([]byte, 1)
		_, err = io.ReadFull(s, b)
		require.NoError(t, err)
		require.Equal(t, want, b[0], "connection %d", i)
		c.Close()
	}
}

// Close ends every connection and goroutine of the proxy; connections
// that ended by themselves are let go of before.
func TestCloseLetsGo(t *testing.T) {
	addr, conns := target(t)
	p, err := New(addr, Config{})
	require.NoError(t, err)
	for range 5 {
		c, err := net.Dial("tcp", p.Addr())
		require.NoError(t, err)
		s, ok := testwatch.Wait(t, conns, "a connection")
		require.True(t, ok)
		c.Close()
		s.Close()
	}
	testwatch.Until(t, "ended connections to be let go of", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.conns) == 0
	})
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	_, ok := testwatch.Wait(t, conns, "a connection")
	require.True(t, ok)
	require.NoError(t, p.Close())
	_, err = c.Read(make([]byte, 1))
	require.Error(t, err, "Close ended the open connection")
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []Config{{Fault: 99}, {At: -1}, {MaxPiece: -1}, {StallFor: -1}} {
		_, err := New("127.0.0.1:1", cfg)
		require.Error(t, err, "%+v", cfg)
	}
	require.Equal(t, "flip-byte", FlipByte.String())
	require.Equal(t, "fault(99)", Fault(99).String())
}
