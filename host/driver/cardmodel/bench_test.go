package cardmodel

import (
	"testing"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// benchOp moves one message of size bytes per iteration between two
// cards back to back (MULPDU 8960, CRC on): the model's own cost, both
// ends, with the stream copied between the rings.
func benchOp(b *testing.B, op cs.WQEOpcode, size int) {
	o := qpOpts{mulpdu: 8960, crc: true, txsLog: 20, rxsLog: 20, sqLog: 12, rqLog: 12}
	p := newPair(b, o, o)
	p.a.c.cfg.Observe, p.b.c.cfg.Observe = nil, nil
	h := p.h
	src, dst := h.alloc(size, 4096), h.alloc(size, 4096)
	lk := p.a.mr(1, 1, 1, 0, src, uint64(size), mem.LocalWrite)
	rk := p.b.mr(1, 2, 1, 0, dst, uint64(size), mem.LocalWrite|mem.RemoteWrite|mem.RemoteRead)
	h.fill(src, size, 1)
	b.SetBytes(int64(size))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		switch op {
		case cs.WQEOpcodeSend:
			p.qb.recv(1, sge{addr: dst, length: uint32(size), lkey: uint32(rk)})
			p.qa.post(sendWR{op: op, id: 1, signaled: true, sgl: []sge{{addr: src, length: uint32(size), lkey: uint32(lk)}}})
		default:
			p.qa.post(sendWR{op: op, id: 1, signaled: true, raddr: dst, rkey: uint32(rk), sgl: []sge{{addr: src, length: uint32(size), lkey: uint32(lk)}}})
		}
		link(b, [][2]*tqp{{p.qa, p.qb}}, 0)
		if c := p.a.poll(p.qa.scq); len(c) != 1 || c[0].Status() != cs.WCStatusSuccess {
			b.Fatalf("completion %v", c)
		}
		p.b.poll(p.qb.rcq)
	}
}

func BenchmarkWrite64K(b *testing.B) { benchOp(b, cs.WQEOpcodeRDMAWrite, 64<<10) }
func BenchmarkWrite1M(b *testing.B)  { benchOp(b, cs.WQEOpcodeRDMAWrite, 1<<20) }
func BenchmarkSend1M(b *testing.B)   { benchOp(b, cs.WQEOpcodeSend, 1<<20) }
func BenchmarkRead1M(b *testing.B)   { benchOp(b, cs.WQEOpcodeRDMARead, 1<<20) }
func BenchmarkSend64(b *testing.B)   { benchOp(b, cs.WQEOpcodeSend, 64) }
