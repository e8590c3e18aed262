package cardmodel

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// TestPropertyTraffic: random verbs traffic (Sends with random SGLs,
// RDMA Writes, RDMA Reads, inline and pushed WQEs, unsignaled ones) over
// random QP parameters, with the stream moved in random pieces, always
// ends with every byte where it belongs and every signaled WQE complete
// in posting order.
func TestPropertyTraffic(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	for i := 0; i < 12; i++ {
		s := seed + uint64(i)
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("seed %d", s)
				}
			}()
			propertyTraffic(t, s)
		})
	}
}

func propertyTraffic(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	markers, crc := rng.IntN(2) == 0, rng.IntN(2) == 0
	txsLog := uint32(12 + rng.IntN(6))
	o := qpOpts{mulpdu: min(128+rng.IntN(9000), 1<<txsLog/2), markersTX: markers, markersRX: markers, crc: crc,
		txsLog: txsLog, rxsLog: 17 + uint32(rng.IntN(2)), ord: 1 + rng.IntN(cs.MaxRd), ird: cs.MaxRd, sqLog: 10, rqLog: 10}
	p := newPair(t, o, o)
	h := p.h
	const size = 1 << 20
	src, dst, back := h.alloc(size, 4096), h.alloc(size, 4096), h.alloc(size, 4096)
	lk := p.a.mr(1, 1, 1, 0, src, size, mem.LocalWrite)
	bk := p.a.mr(2, 2, 1, 0, back, size, mem.LocalWrite)
	rk := p.b.mr(1, 3, 1, 0, dst, size, mem.LocalWrite|mem.RemoteWrite|mem.RemoteRead)
	h.fill(src, size, byte(seed))
	want := make([]byte, size) // what dst must hold
	wantBack := make([]byte, size)
	region := 0 // next free byte of dst
	var ids []uint64
	nops := 5 + rng.IntN(40)
	for i := 0; i < nops && region < size-70000; i++ {
		n := rng.IntN(65536)
		if rng.IntN(8) == 0 {
			n = rng.IntN(100)
		}
		id := uint64(i + 1)
		signaled := rng.IntN(4) != 0
		if signaled {
			ids = append(ids, id)
		}
		off := uint64(region)
		switch k := rng.IntN(5); {
		case k == 0 && n <= cs.MaxInline: // inline Write (pushed if it fits a block)
			payload := h.mem(src+off, n)
			p.qa.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: id, signaled: signaled, inline: payload, raddr: dst + off, rkey: uint32(rk), push: n <= cs.PushInline})
			copy(want[off:], payload)
		case k <= 1: // Write with a random SGL
			sgl := randomSGL(rng, src+off, n, uint32(lk))
			p.qa.post(sendWR{op: cs.WQEOpcodeRDMAWrite, id: id, signaled: signaled, sgl: sgl, raddr: dst + off, rkey: uint32(rk)})
			copy(want[off:], h.mem(src+off, n))
		case k <= 3: // Send into a receive with a random SGL
			p.qb.recv(id, randomSGL(rng, dst+off, n+rng.IntN(100), uint32(rk))...)
			p.qa.post(sendWR{op: cs.WQEOpcodeSend, id: id, signaled: signaled, solicited: rng.IntN(2) == 0, sgl: randomSGL(rng, src+off, n, uint32(lk))})
			copy(want[off:], h.mem(src+off, n))
		default: // Read back what an earlier Write put in dst
			from := uint64(rng.IntN(max(region, 1)))
			n = min(n, region-int(from))
			p.qa.post(sendWR{op: cs.WQEOpcodeRDMARead, id: id, signaled: signaled, fence: rng.IntN(3) == 0, raddr: dst + from, rkey: uint32(rk),
				sgl: []sge{{addr: back + off, length: uint32(n), lkey: uint32(bk)}}})
			copy(wantBack[off:], want[from:from+uint64(n)])
		}
		region += n + 64
	}
	pairs := [][2]*tqp{{p.qa, p.qb}}
	for round := 0; ; round++ {
		if round > 10_000_000 {
			t.Fatal("traffic did not settle")
		}
		work := p.a.c.Run() + p.b.c.Run()
		for _, pr := range pairs {
			work += pipe(pr[0], pr[1], 1+rng.IntN(5000)) + pipe(pr[1], pr[0], 1+rng.IntN(5000))
		}
		if work == 0 {
			break
		}
	}
	c := p.a.poll(p.qa.scq)
	if len(c) != len(ids) {
		t.Fatalf("%d completions, want %d", len(c), len(ids))
	}
	for i, e := range c {
		if e.WRID() != ids[i] || e.Status() != cs.WCStatusSuccess {
			t.Fatalf("completion %d: wr %d %v, want wr %d success", i, e.WRID(), e.Status(), ids[i])
		}
	}
	equalMem(t, "the peer's memory", h.mem(dst, size), want)
	equalMem(t, "what the Reads brought", h.mem(back, size), wantBack)
	if ev := p.a.events(); len(ev) != 0 {
		t.Fatalf("events %v", evTypes(ev))
	}
}

// randomSGL splits n bytes at addr into up to 30 SGEs, some empty.
func randomSGL(rng *rand.Rand, addr uint64, n int, lkey uint32) []sge {
	k := 1 + rng.IntN(cs.MaxSGE)
	var out []sge
	for i := 0; i < k; i++ {
		m := n
		if i < k-1 {
			m = rng.IntN(n + 1)
		}
		out = append(out, sge{addr: addr, length: uint32(m), lkey: lkey})
		addr += uint64(m)
		n -= m
	}
	return out
}

// TestPropertyRXSegmentation: a stream of FPDUs (RDMA Writes of random
// sizes, markers and CRC random) reaches the card in random pieces; the
// card takes only whole FPDUs, whatever the pieces, and places exactly
// what was sent.
func TestPropertyRXSegmentation(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	for i := 0; i < 20; i++ {
		s := seed + uint64(i)
		rng := rand.New(rand.NewPCG(s, 7))
		markers, crc := rng.IntN(2) == 0, rng.IntN(2) == 0
		sg := newSingle(t, qpOpts{markersRX: markers, crc: crc, rxsLog: 17})
		f := mpa.Framer{Markers: markers, CRC: crc}
		want := make([]byte, 1<<16)
		var stream []byte
		for k := 0; k < 50; k++ {
			off := rng.IntN(1 << 15)
			n := rng.IntN(1 << 14)
			p := make([]byte, n)
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
			copy(want[off:], p)
			stream, _ = f.AppendFPDU(stream, hWrite(sg.lk, sg.buf+uint64(off), true, p))
		}
		for len(stream) > 0 {
			space := int(uint32(1)<<sg.q.rxsLog - (sg.q.rxsPI - sg.q.stat().RXSCI()))
			n := min(len(stream), 1+rng.IntN(3000), space)
			sg.q.feed(stream[:n])
			stream = stream[n:]
			sg.d.c.Run()
			if r := sg.q.rxsPI - sg.q.stat().RXSCI(); int(r) > mpa.MaxFPDUWireLen {
				t.Fatalf("seed %d: %d bytes left in the ring, more than one FPDU", s, r)
			}
		}
		if sg.q.stat().RXSCI() != sg.q.rxsPI {
			t.Fatalf("seed %d: RXS_CI %d, PI %d: a whole stream not consumed", s, sg.q.stat().RXSCI(), sg.q.rxsPI)
		}
		if ev := sg.d.events(); len(ev) != 0 {
			t.Fatalf("seed %d: events %v", s, evTypes(ev))
		}
		if string(sg.h.mem(sg.buf, 1<<16)) != string(want) {
			t.Fatalf("seed %d: placed memory differs", s)
		}
	}
}
