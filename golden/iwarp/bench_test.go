package iwarp

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
)

// Benchmarks between two endpoints over TCP on 127.0.0.1, each paired with
// a Baseline over plain TCP loopback with the same sizes (make bench
// prints the ratios). CRC is on and markers off, the common configuration.

var benchSizes = []int{4 << 10, 64 << 10, 1 << 20}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

const benchWindow = 32 // WRs in flight

func BenchmarkWrite(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			a, s := pair(b, pairOpts{})
			src := make([]byte, n)
			amr := a.reg(b, src, 0, all)
			dst := make([]byte, n)
			smr := s.reg(b, dst, 0, all)
			rb := s.reg(b, make([]byte, 1), 0, mem.LocalWrite)
			if err := s.ep.PostRecv(RecvWR{ID: 1, SGL: []SGE{{Addr: 0, Length: 1, LKey: rb.STag}}}); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.SetBytes(int64(n))
			b.ResetTimer()
			inflight := 0
			for i := 0; i < b.N; i++ {
				if inflight == benchWindow {
					if _, err := a.scq.Wait(ctx); err != nil {
						b.Fatal(err)
					}
					inflight--
				}
				if err := a.ep.PostSend(SendWR{ID: uint64(i), Opcode: WRWrite, SGL: []SGE{{Addr: 0, Length: uint32(n), LKey: amr.STag}}, RKey: smr.STag, Signaled: true}); err != nil {
					b.Fatal(err)
				}
				inflight++
			}
			// A Send after the Writes: when it is delivered, every Write is placed.
			if err := a.ep.PostSend(SendWR{ID: 1 << 62, Opcode: WRSend}); err != nil {
				b.Fatal(err)
			}
			if c, err := s.rcq.Wait(ctx); err != nil || c.Status != WCSuccess {
				b.Fatal(err, c.Status)
			}
			b.StopTimer()
		})
	}
}

func BenchmarkSend(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			a, s := pair(b, pairOpts{})
			src := make([]byte, n)
			amr := a.reg(b, src, 0, all)
			// Receive buffers: at most 4 MiB in all, so that they stay in
			// cache as the baseline's read buffer does.
			slots := min(128, (4<<20)/n)
			dst := make([]byte, n*slots)
			smr := s.reg(b, dst, 0, mem.LocalWrite)
			for i := 0; i < slots; i++ {
				if err := s.ep.PostRecv(RecvWR{ID: uint64(i), SGL: []SGE{{Addr: uint64(i * n), Length: uint32(n), LKey: smr.STag}}}); err != nil {
					b.Fatal(err)
				}
			}
			// Credit-based flow control, the ULP's job: a Send goes only
			// against a posted receive.
			credits := make(chan struct{}, slots)
			for i := 0; i < slots; i++ {
				credits <- struct{}{}
			}
			done := make(chan error, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.SetBytes(int64(n))
			b.ResetTimer()
			go func() {
				// The receiver reposts each buffer as soon as its Send is delivered.
				for i := 0; i < b.N; i++ {
					c, err := s.rcq.Wait(ctx)
					if err == nil && c.Status != WCSuccess {
						err = fmt.Errorf("receive %d: %v", i, c.Status)
					}
					if err == nil {
						err = s.ep.PostRecv(RecvWR{ID: c.ID, SGL: []SGE{{Addr: c.ID * uint64(n), Length: uint32(n), LKey: smr.STag}}})
					}
					if err != nil {
						done <- err
						return
					}
					credits <- struct{}{}
				}
				done <- nil
			}()
			inflight := 0
			for i := 0; i < b.N; i++ {
				<-credits
				if inflight == benchWindow {
					if _, err := a.scq.Wait(ctx); err != nil {
						b.Fatal(err)
					}
					inflight--
				}
				if err := a.ep.PostSend(SendWR{ID: uint64(i), Opcode: WRSend, SGL: []SGE{{Addr: 0, Length: uint32(n), LKey: amr.STag}}, Signaled: true}); err != nil {
					b.Fatal(err)
				}
				inflight++
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
		})
	}
}

// tcpPair returns two ends of a plain TCP connection on 127.0.0.1.
func tcpPair(b *testing.B) (net.Conn, net.Conn) {
	ln := listen(b)
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	s := <-ch
	b.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// tcpBandwidth sends b.N messages of n bytes over plain TCP, read by the
// peer as the engine reads its socket. With floor, each end also does the
// least that a software endpoint keeping RFC 5044 §6 must: the sender
// computes the CRC32c of every FPDU's worth of payload, the receiver
// checks it and only then copies the octets to their buffer (a ULPDU
// reaches DDP once its FPDU is verified), with no framing, headers or
// completions. What raw TCP loses to that work bounds what any such
// endpoint can reach.
func tcpBandwidth(b *testing.B, n int, floor bool) {
	c, s := tcpPair(b)
	buf := make([]byte, n)
	fpdu := ddp.MaxPayload(mpa.MULPDU(emss(c), false), ddp.TaggedHeaderLen)
	done := make(chan error, 1)
	b.SetBytes(int64(n))
	b.ResetTimer()
	go func() {
		rb := make([]byte, rxBufSize) // the engine's receive buffer
		dst := make([]byte, n)
		at, crc := 0, uint32(0)
		left := int64(n) * int64(b.N)
		for left > 0 {
			k, err := s.Read(rb[:min(int64(len(rb)), left)])
			if err != nil {
				done <- err
				return
			}
			for p := rb[:k]; floor && len(p) > 0; {
				m := min(len(p), fpdu, n-at)
				crc ^= crc32.Checksum(p[:m], castagnoli)
				copy(dst[at:], p[:m])
				p, at = p[m:], (at+m)%n
			}
			left -= int64(k)
		}
		floorCRC ^= crc // before done: the sender's goes in after
		done <- nil
	}()
	crc := uint32(0)
	for i := 0; i < b.N; i++ {
		for o := 0; floor && o < n; o += fpdu {
			crc ^= crc32.Checksum(buf[o:min(o+fpdu, n)], castagnoli)
		}
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	floorCRC ^= crc
}

// floorCRC keeps the floor's CRCs from being optimised away.
var floorCRC uint32

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// tcpBandwidths runs tcpBandwidth at every benchmark size.
func tcpBandwidths(b *testing.B, floor bool) {
	for _, n := range benchSizes {
		b.Run(sizeName(n), func(b *testing.B) { tcpBandwidth(b, n, floor) })
	}
}

func BenchmarkWriteBaseline(b *testing.B) { tcpBandwidths(b, false) }
func BenchmarkSendBaseline(b *testing.B)  { tcpBandwidths(b, false) }

// BenchmarkFloor is the software floor of tcpBandwidth, paired with its
// own raw TCP baseline: its ratio is the most that the Write and Send
// benchmarks could reach on this machine.
func BenchmarkFloor(b *testing.B)         { tcpBandwidths(b, true) }
func BenchmarkFloorBaseline(b *testing.B) { tcpBandwidths(b, false) }

// BenchmarkLatency is a 64-byte Send ping-pong: one op is one round trip.
func BenchmarkLatency(b *testing.B) {
	b.Run("64B", func(b *testing.B) {
		a, s := pair(b, pairOpts{})
		ctx := context.Background()
		msg := make([]byte, 64)
		am := a.reg(b, make([]byte, 64), 0, mem.LocalWrite)
		sm := s.reg(b, make([]byte, 64), 0, mem.LocalWrite)
		post := func(sd *side, mr *mem.MR) {
			if err := sd.ep.PostRecv(RecvWR{SGL: []SGE{{Addr: 0, Length: 64, LKey: mr.STag}}}); err != nil {
				b.Fatal(err)
			}
		}
		post(a, am)
		post(s, sm)
		done := make(chan error, 1)
		go func() {
			for i := 0; i < b.N; i++ {
				if _, err := s.rcq.Wait(ctx); err != nil {
					done <- err
					return
				}
				post(s, sm)
				if err := s.ep.PostSend(SendWR{Opcode: WRSend, Inline: msg}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := a.ep.PostSend(SendWR{Opcode: WRSend, Inline: msg}); err != nil {
				b.Fatal(err)
			}
			if _, err := a.rcq.Wait(ctx); err != nil {
				b.Fatal(err)
			}
			post(a, am)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
	})
}

func BenchmarkLatencyBaseline(b *testing.B) {
	b.Run("64B", func(b *testing.B) {
		c, s := tcpPair(b)
		go func() {
			buf := make([]byte, 64)
			for {
				if _, err := io.ReadFull(s, buf); err != nil {
					return
				}
				if _, err := s.Write(buf); err != nil {
					return
				}
			}
		}()
		buf := make([]byte, 64)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadLatency is a 64-byte RDMA Read round trip to a responder
// whose application is idle: before each Read its application has taken a
// Send off its CQ (so its CQ waiter has been reading the socket) and then
// stopped waiting, as make demo's responder does between rows. One op is
// the Read alone (posted to completed); the Send that precedes it is not
// timed. Its baseline is the 64-byte Send round trip of BenchmarkLatency
// from the same run: on an RNIC the responder's CPU plays no part in a
// Read, so the goal is a ratio of at most 1.5.
func BenchmarkReadLatency(b *testing.B) {
	b.Run("64B", func(b *testing.B) {
		a, s := pair(b, pairOpts{})
		ctx := context.Background()
		src := s.reg(b, make([]byte, 64), 0, all)
		sink := a.reg(b, make([]byte, 64), 0, all)
		sm := s.reg(b, make([]byte, 1), 0, mem.LocalWrite)
		msg := []byte{1}
		post := func() error { return s.ep.PostRecv(RecvWR{SGL: []SGE{{Addr: 0, Length: 1, LKey: sm.STag}}}) }
		if err := post(); err != nil {
			b.Fatal(err)
		}
		wait, idle := make(chan struct{}), make(chan error)
		go func() {
			for range wait {
				_, err := s.rcq.Wait(ctx)
				if err == nil {
					err = post()
				}
				idle <- err // the application is idle until the next Send
			}
		}()
		defer close(wait)
		var took time.Duration
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			wait <- struct{}{}
			if err := a.ep.PostSend(SendWR{Opcode: WRSend, Inline: msg}); err != nil {
				b.Fatal(err)
			}
			if err := <-idle; err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if err := a.ep.PostSend(SendWR{ID: uint64(i), Opcode: WRRead, SGL: []SGE{{Addr: 0, Length: 64, LKey: sink.STag}}, RKey: src.STag, Signaled: true}); err != nil {
				b.Fatal(err)
			}
			if c, err := a.scq.Wait(ctx); err != nil || c.Status != WCSuccess {
				b.Fatal(err, c.Status)
			}
			took += time.Since(start)
		}
		b.StopTimer()
		b.ReportMetric(float64(took.Nanoseconds())/float64(b.N), "ns/op")
	})
}

// BenchmarkReadLatencyBaseline is BenchmarkLatency's Send round trip.
func BenchmarkReadLatencyBaseline(b *testing.B) { BenchmarkLatency(b) }
