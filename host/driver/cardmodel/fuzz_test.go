package cardmodel

import (
	"testing"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// FuzzRXStream feeds arbitrary bytes to a card QP as its receive stream,
// in pieces, then ends the stream. Whatever the bytes, the card finishes
// (Run returns within a bound), never places a byte outside its
// registered buffers, never makes a DMA the host refuses, and ends with
// the stream consumed, at an FPDU boundary, or in error with exactly one
// reason.
func FuzzRXStream(f *testing.F) {
	fr := mpa.Framer{CRC: true}
	good, _ := fr.AppendFPDU(nil, hWrite(mem.MakeSTag(1, 1), 0x1000, true, []byte("hello")))
	good, _ = fr.AppendFPDU(good, hUntagged(rdmap.OpSend, 0, 1, 0, true, 0, []byte("send")))
	f.Add(good, uint8(0), uint16(7))
	fr = mpa.Framer{CRC: true, Markers: true}
	m, _ := fr.AppendFPDU(nil, hWrite(mem.MakeSTag(1, 1), 0x1000, true, make([]byte, 1500)))
	f.Add(m, uint8(3), uint16(100))
	f.Add([]byte{0, 0, 1, 2}, uint8(0), uint16(1))
	f.Fuzz(fuzzRX)
}

func fuzzRX(t *testing.T, data []byte, flags uint8, chunk uint16) {
	markers, crc := flags&1 != 0, flags&2 != 0
	h := newTestHost()
	d := newDev(t, h)
	c := d.cq(1, 4)
	q := d.qp(1, c, c, qpOpts{markersRX: markers, crc: crc, rxsLog: 17, txsLog: 12, mulpdu: 256})
	buf := h.alloc(0x2000, 4096)
	rbuf := h.alloc(64, 64)
	d.mrAt(1, 1, 1, 0, 0x1000, buf, 0x2000, mem.RemoteWrite|mem.RemoteRead)
	rk := d.mr(2, 2, 1, 0, rbuf, 64, mem.LocalWrite)
	q.recv(1, sge{addr: rbuf, length: 64, lkey: uint32(rk)})
	q.recv(2, sge{addr: rbuf, length: 32, lkey: uint32(rk)})
	if len(data) > 1<<16 {
		data = data[:1<<16]
	}
	step := max(int(chunk), 1)
	steps := 0
	run := func() {
		for d.c.Step() {
			if steps++; steps > 1_000_000 {
				t.Fatal("the card is still working after a million steps")
			}
		}
	}
	for len(data) > 0 {
		n := min(len(data), step)
		q.feed(data[:n])
		data = data[n:]
		run()
		q.txBytes() // the host's TCP takes what the card sends
		run()
	}
	q.db(cs.QPDBStream, 1<<cs.QPDBStreamRXFinShift)
	run()
	for _, w := range h.writes {
		if w.Kind != WritePayload {
			continue
		}
		in := func(a uint64, n int) bool { return w.Addr >= a && w.Addr+uint64(len(w.Data)) <= a+uint64(n) }
		if !in(buf, 0x2000) && !in(rbuf, 64) {
			t.Fatalf("payload written at %#x+%d, outside the registered buffers", w.Addr, len(w.Data))
		}
	}
	ends := 0
	for _, e := range d.events() {
		switch e.Type() {
		case cs.EQETypeDMAFault:
			t.Fatalf("a DMA the host refused (at %#x)", e.Info())
		case cs.EQETypeTermSent, cs.EQETypeTermRecv, cs.EQETypeQPError, cs.EQETypeStreamEnd:
			ends++
		}
	}
	if ends != 1 {
		t.Fatalf("%d stream endings reported, want 1", ends)
	}
}

// TestFuzzExtremes runs the fuzz target on 64 KiB streams of one byte
// value, fed one byte at a time and all at once.
func TestFuzzExtremes(t *testing.T) {
	for _, fill := range []byte{0, 0xff, 0x41} {
		data := make([]byte, 1<<16)
		for i := range data {
			data[i] = fill
		}
		for _, chunk := range []uint16{1, 65535} {
			fuzzRX(t, data, 3, chunk)
		}
	}
}
