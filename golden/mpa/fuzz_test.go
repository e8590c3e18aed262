package mpa

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"
)

// FuzzDeframer feeds arbitrary octets, in two pieces, to a deframer in each
// configuration. It must never panic, never hold more than one FPDU, and
// account for every octet it delivers.
func FuzzDeframer(f *testing.F) {
	good, _ := frameAll(f, true, true, 0, [][]byte{ddpSend(0x4143, 1), make([]byte, 700), []byte("x")})
	f.Add(good, uint8(3), uint16(10))
	plain, _ := frameAll(f, false, false, 0, [][]byte{[]byte("hello")})
	f.Add(plain, uint8(0), uint16(3))
	f.Add([]byte{0xff, 0xff, 0, 0}, uint8(1), uint16(1))
	f.Fuzz(func(t *testing.T, stream []byte, flags uint8, split uint16) {
		cfg := DeframerConfig{Markers: flags&1 != 0, CRC: flags&2 != 0, Rev: Revision(flags >> 2 & 1), StartOffset: uint32(flags>>3) * 4}
		d := NewDeframer(cfg)
		var wire uint64
		check := func(u ULPDU) error {
			if len(u.Data) == 0 || len(u.Data) > MaxULPDULength {
				t.Fatalf("delivered a ULPDU of %d octets", len(u.Data))
			}
			if u.WireLen != FPDUWireLen(u.Offset, cfg.Markers, len(u.Data)) {
				t.Fatalf("wire length %d disagrees with FPDUWireLen", u.WireLen)
			}
			wire += uint64(u.WireLen)
			return nil
		}
		cut := min(int(split), len(stream))
		err := d.Feed(stream[:cut], check)
		if err == nil {
			err = d.Feed(stream[cut:], check)
		}
		if d.Buffered() > MaxFPDUWireLen {
			t.Fatalf("holding %d octets", d.Buffered())
		}
		if err == nil && wire+uint64(d.Buffered()) != uint64(len(stream)) {
			t.Fatalf("delivered %d + buffered %d != fed %d", wire, d.Buffered(), len(stream))
		}
	})
}

// FuzzParseFrame checks that any frame ParseFrame accepts encodes back to
// the same octets (reserved bits aside).
func FuzzParseFrame(f *testing.F) {
	for _, fr := range []Frame{
		{CRC: true, Rev: Rev1},
		{Reply: true, CRC: true, Reject: true, Rev: Rev1, PrivateData: []byte("no")},
		{Rev: Rev2, Enhanced: true, PrivateData: []byte{0, 1, 0, 1}},
		{Markers: true, CRC: true, Rev: Rev0, PrivateData: make([]byte, 600)},
	} {
		b, _ := fr.Append(nil)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, n, err := ParseFrame(b, 0xffff)
		if err != nil {
			return
		}
		if fr.Enhanced {
			_, _ = ParseEnhancedPD(fr.PrivateData)
		}
		if fr.Rev != Rev0 && len(fr.PrivateData) > MaxPrivateData {
			return // parsed under a larger limit than Rev 1 may send
		}
		out, err := fr.Append(nil)
		if err != nil {
			t.Fatalf("re-encoding a parsed frame: %v", err)
		}
		in := bytes.Clone(b[:n])
		in[16] &^= flagReserved
		if !bytes.Equal(out, in) {
			t.Fatalf("re-encoded %x, parsed %x", out, in)
		}
	})
}

// FuzzRespond runs a Responder against arbitrary peer octets: it returns
// within its timeout and never panics, whatever arrives.
func FuzzRespond(f *testing.F) {
	b, _ := (&Frame{CRC: true, Rev: Rev2, Enhanced: true, PrivateData: []byte{0x80, 1, 0x40, 1}}).Append(nil)
	f.Add(b)
	b, _ = (&Frame{Rev: Rev0, PrivateData: []byte("x")}).Append(nil)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		us, them := net.Pipe()
		defer us.Close()
		go func() {
			_, _ = them.Write(b)
			_, _ = ReadFrame(them, 0xffff) // take the Reply, if any
			them.Close()
		}()
		_, _ = Respond(context.Background(), us, Config{Timeout: 100 * time.Millisecond, PeerToPeer: true})
	})
}
