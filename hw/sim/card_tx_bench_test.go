package sim

import (
	"encoding/binary"
	"fmt"
	"testing"

	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// ctxLoad keeps nqp QPs' SQs full of inline WQEs of n bytes on card_tx
// and gives ring space back as records come (no card model: the
// co-simulation test checks the bytes; this measures rate).
type ctxLoad struct {
	s     *CardTxSim
	qps   []*ctxQP
	n     int
	push  bool
	op    cs.WQEOpcode
	wrID  uint64
	byNum map[uint32]*ctxQP
}

func newCtxLoad(b *testing.B, width, nqp, n int, push bool, op cs.WQEOpcode) *ctxLoad {
	s, err := NewCardTxSim(width, 1, CardTxTiming{ReadLatency: 250})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	l := &ctxLoad{s: s, n: n, push: push, op: op, byNum: map[uint32]*ctxQP{}}
	for i := 0; i < nqp; i++ {
		n := uint32(1 + i*7)
		q := &ctxQP{cfg: CardTxQP{Num: n, SQBase: ctxSQ + uint64(n)<<16, TXSBase: ctxTXS + uint64(n)<<20,
			SQLog: 6, TXSLog: 16, MULPDU: 1024, Markers: true, CRC: true, SendCQ: 1}}
		l.qps = append(l.qps, q)
		l.byNum[n] = q
		s.Command(q.cfg)
	}
	return l
}

// fill posts WQEs while the SQs have room.
func (l *ctxLoad) fill() {
	bbs := max(1, (cs.WQEHdr+l.n+cs.BB-1)/cs.BB)
	for _, q := range l.qps {
		for int(uint16(1)<<q.cfg.SQLog)-int(q.pi-q.rtlSQCI) >= bbs {
			l.post(q, bbs)
		}
	}
}

func (l *ctxLoad) post(q *ctxQP, bbs int) {
	wqe := make([]byte, bbs*cs.BB)
	h := cs.WQE(wqe)
	h.SetOpcode(l.op)
	h.SetSignaled(true)
	h.SetInline(true)
	h.SetBBS(uint8(bbs))
	h.SetInlineLen(uint16(l.n))
	if l.op == cs.WQEOpcodeRDMARead { // n bytes into one sink SGE
		h.SetInline(false)
		h.SetInlineLen(0)
		h.SetNSGE(1)
		sge := cs.SGE(wqe[cs.WQEHdr:])
		sge.SetLength(uint32(l.n))
		sge.SetLKey(ctxSinkSTag)
	}
	l.wrID++
	h.SetWRID(l.wrID)
	size := uint16(1) << q.cfg.SQLog
	for i := 0; i < bbs; i++ {
		l.s.Mem.Write(q.cfg.SQBase+uint64((q.pi+uint16(i))&(size-1))*cs.BB, wqe[i*cs.BB:(i+1)*cs.BB])
	}
	q.pi += uint16(bbs)
	q.posted++
	if l.push && bbs == 1 {
		var blk [64]byte
		copy(blk[:], wqe)
		l.s.Doorbell(CardTxDoorbell{Kind: 6, QPN: q.cfg.Num, Value: binary.LittleEndian.Uint32(blk[60:]), Push: &blk})
	} else {
		l.s.Doorbell(CardTxDoorbell{Kind: 1, QPN: q.cfg.Num, Value: uint32(q.pi)})
	}
}

// step runs a cycle and takes the records.
func (l *ctxLoad) step(b *testing.B, seen *int) {
	if err := l.s.Step(); err != nil {
		b.Fatal(err)
	}
	for ; *seen < len(l.s.Records); *seen++ {
		r := l.s.Records[*seen]
		q := l.byNum[r.QPN]
		q.rtlRecs++
		q.rtlSQCI = r.SQCI
		l.s.Doorbell(CardTxDoorbell{Kind: 3, QPN: q.cfg.Num, Value: r.TXSPI})
		if r.Opcode == uint8(cs.WCOpcodeRDMARead) && !r.CQE {
			// The Read Request is on the ring: a peer at no distance
			// answers at once.
			l.s.ReadDone(CardTxReadDone{QPN: r.QPN, STag: ctxSinkSTag})
		}
	}
}

// BenchmarkCardTxThroughput measures card_tx's message rate (one op = one
// cycle): 64 QPs kept full of signaled inline WQEs at a 250-cycle DMA read
// latency; WQEs/cycle and cycles/WQE (WQEs completed). "push" WQEs (32
// bytes, one block) come through the push window; the others are fetched
// by DMA. read1k: RDMA Reads of 1 KiB, each answered (a Read done) as soon
// as its Read Request is on the ring.
func BenchmarkCardTxThroughput(b *testing.B) {
	cases := []struct {
		name string
		n    int
		push bool
		op   cs.WQEOpcode
	}{
		{"send64_fetched", 64, false, cs.WQEOpcodeSend},
		{"write64_fetched", 64, false, cs.WQEOpcodeRDMAWrite},
		{"send32_pushed", 32, true, cs.WQEOpcodeSend},
		{"read1k_fetched", 1024, false, cs.WQEOpcodeRDMARead},
	}
	for _, w := range gen.CardTxWidths {
		for _, c := range cases {
			b.Run(fmt.Sprintf("w%d/%s", w, c.name), func(b *testing.B) {
				l := newCtxLoad(b, w, 64, c.n, c.push, c.op)
				seen := 0
				for l.s.Pending() {
					l.step(b, &seen)
				}
				warm := l.s.Cycles
				start := len(l.s.Records)
				for i := 0; i < b.N; i++ {
					if i%64 == 0 {
						l.fill()
					}
					l.step(b, &seen)
				}
				wqes := 0.0
				for _, r := range l.s.Records[start:] {
					if r.CQE {
						wqes++
					}
				}
				cycles := float64(l.s.Cycles - warm)
				b.ReportMetric(wqes/cycles, "WQEs/cycle")
				if wqes > 0 {
					b.ReportMetric(cycles/wqes, "cycles/WQE")
				}
			})
		}
	}
}

// BenchmarkCardTxLatency measures, on an idle card_tx, the cycles from a
// doorbell taken to the first beat of its FPDU on the TX ring's AXI write
// channel: a pushed 32-byte Send (no DMA read) and a fetched one (one
// 64-byte read at a 250-cycle latency).
func BenchmarkCardTxLatency(b *testing.B) {
	for _, w := range gen.CardTxWidths {
		for _, push := range []bool{true, false} {
			b.Run(fmt.Sprintf("w%d/push=%v", w, push), func(b *testing.B) {
				l := newCtxLoad(b, w, 1, 32, push, cs.WQEOpcodeSend)
				seen := 0
				total := 0.0
				for i := 0; i < b.N; i++ {
					for l.s.Pending() {
						l.step(b, &seen)
					}
					db, beats := len(l.s.DoorbellTaken), len(l.s.FirstBeat)
					l.post(l.qps[0], 1)
					for len(l.s.FirstBeat) == beats || l.s.Pending() || l.qps[0].rtlRecs != l.qps[0].posted {
						l.step(b, &seen)
					}
					total += float64(l.s.FirstBeat[beats] - l.s.DoorbellTaken[db])
				}
				b.ReportMetric(total/float64(b.N), "cycles")
			})
		}
	}
}

// BenchmarkCardTxReadLatency measures, on an idle card_tx, an RDMA Read
// of one pushed block (no DMA read to start it): the cycles from its
// doorbell taken to the first beat of its Read Request on the TX ring's
// AXI write channel ("request"), and from its Read done taken to its
// completion record ("complete": the Read WQE's block is read again from
// the SQ at a 250-cycle DMA read latency).
func BenchmarkCardTxReadLatency(b *testing.B) {
	for _, w := range gen.CardTxWidths {
		b.Run(fmt.Sprintf("w%d", w), func(b *testing.B) {
			l := newCtxLoad(b, w, 1, 64, true, cs.WQEOpcodeRDMARead)
			seen := 0
			var req, cpl float64
			for i := 0; i < b.N; i++ {
				for l.s.Pending() {
					l.step(b, &seen)
				}
				db, beats, dones, recs := len(l.s.DoorbellTaken), len(l.s.FirstBeat), len(l.s.ReadDoneTaken), len(l.s.Records)
				l.post(l.qps[0], 1)
				for len(l.s.Records) < recs+2 || l.s.Pending() {
					l.step(b, &seen)
				}
				req += float64(l.s.FirstBeat[beats] - l.s.DoorbellTaken[db])
				cpl += float64(l.s.Records[recs+1].Cycle - l.s.ReadDoneTaken[dones])
			}
			b.ReportMetric(req/float64(b.N), "request_cycles")
			b.ReportMetric(cpl/float64(b.N), "complete_cycles")
		})
	}
}
