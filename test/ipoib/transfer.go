package ipoib

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"
)

// stream is the deterministic pseudo-random byte stream a transfer carries,
// so the receiver checks every byte without holding a copy.
func stream(seed uint64) *rand.ChaCha8 {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return rand.NewChaCha8(s)
}

// Transfer sends size bytes over TCP from a socket in the src namespace to a
// listener at dst:port in the dst namespace, and checks every byte. It
// returns the time from connect to the last byte checked.
func Transfer(src, dst string, to netip.Addr, port int, size int64, seed uint64) (time.Duration, error) {
	var ln net.Listener
	err := In(dst, func() error {
		var err error
		ln, err = net.Listen("tcp", netip.AddrPortFrom(to, uint16(port)).String())
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("listen in %s: %w", dst, err)
	}
	defer ln.Close()
	got := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		got <- verify(c, size, seed)
	}()
	start := time.Now()
	var c net.Conn
	err = In(src, func() error {
		var err error
		c, err = net.DialTimeout("tcp", netip.AddrPortFrom(to, uint16(port)).String(), 10*time.Second)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("dial from %s: %w", src, err)
	}
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	_, werr := io.Copy(c, io.LimitReader(stream(seed), size))
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	rerr := <-got
	c.Close()
	if werr != nil {
		return 0, fmt.Errorf("sending: %w", werr)
	}
	if rerr != nil {
		return 0, rerr
	}
	return time.Since(start), nil
}

// verify reads exactly size bytes and compares them with the stream.
func verify(r io.Reader, size int64, seed uint64) error {
	want := stream(seed)
	buf, exp := make([]byte, 256<<10), make([]byte, 256<<10)
	var off int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if off+int64(n) > size {
				return fmt.Errorf("received more than the %d bytes sent", size)
			}
			_, _ = want.Read(exp[:n])
			if !bytes.Equal(buf[:n], exp[:n]) {
				for i := range n {
					if buf[i] != exp[i] {
						return fmt.Errorf("byte %d differs: got %#02x, want %#02x", off+int64(i), buf[i], exp[i])
					}
				}
			}
			off += int64(n)
		}
		if err == io.EOF {
			if off != size {
				return fmt.Errorf("connection ended after %d of %d bytes", off, size)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("receiving after %d of %d bytes: %w", off, size, err)
		}
	}
}
