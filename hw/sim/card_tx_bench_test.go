package sim

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/host/driver/stagtab"
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
		for q.sqFree() >= bbs {
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

// BenchmarkCardTxWriteThroughput measures the gather's data path (one op =
// one cycle): one QP kept full of RDMA Write WQEs of one SGE (size bytes of
// a contiguous region, checked through placement's check port), MULPDU
// 1448, markers and CRC on, every read burst answered 250 cycles after its
// address (1 µs at 250 MHz), every other channel ready, the host handing
// ring bytes back as they land, as a host does: one TXS_CI doorbell for
// what has landed once its last one has been taken, or every 8 KiB. (One
// per W beat, as this benchmark rang before 28 Nov, outruns the card's
// doorbell port, which takes one every two cycles: the card's copy of
// TXS_CI fell behind, the ring looked full, and the figures halved.)
// Reported: W beats per cycle on the TX ring's AXI write channel, and
// payload bytes per cycle in beats (of the messages completed in the
// measured cycles; the rest of the wire is DDP/MPA headers, markers and
// CRC).
func BenchmarkCardTxWriteThroughput(b *testing.B) {
	for _, w := range gen.CardTxGatherWidths {
		for _, size := range []int{4096, 65536, 1 << 20} {
			b.Run(fmt.Sprintf("w%d/%dB", w, size), func(b *testing.B) {
				s, err := NewCardTxSim(w, 1, CardTxTiming{ReadLatency: 250})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(s.Close)
				q := &ctxQP{cfg: CardTxQP{Num: 9, SQBase: ctxSQ + 9<<16, TXSBase: ctxTXS + 9<<20,
					SQLog: 6, TXSLog: 17, MULPDU: 1448, Markers: true, CRC: true, SendCQ: 1, PD: 3}}
				s.Command(q.cfg)
				const src = 0x3000_0000
				e := mem.Entry{Valid: true, Key: 7, PD: 3, Base: 0x10000, Length: 8 * uint64(size), Access: mem.LocalWrite}
				for _, wr := range stagtab.AppendWrites(nil, 1, e, stagtab.Contiguous(src), 0) {
					s.RegWrite(wr.Off, wr.Val)
				}
				lkey := uint32(mem.MakeSTag(1, 7))
				wrID, seen, given, payload := uint64(0), 0, uint64(0), 0
				post := func() {
					wrID++
					blk := oneSGEWrite(true, wrID, 0, 0x1234, e.Base+uint64(wrID%8)*uint64(size), uint32(size), lkey)
					s.Mem.Write(q.cfg.SQBase+uint64(q.pi&(1<<q.cfg.SQLog-1))*cs.BB, blk)
					q.pi++
					q.posted++
					s.Doorbell(CardTxDoorbell{Kind: 1, QPN: q.cfg.Num, Value: uint32(q.pi)})
				}
				step := func() {
					if err := s.Step(); err != nil {
						b.Fatal(err)
					}
					for ; seen < len(s.Records); seen++ {
						q.rtlSQCI = s.Records[seen].SQCI
						payload += int(s.Records[seen].ByteLen)
					}
					if n := s.RingBytes[q.cfg.Num]; n != given && (len(s.dbs) == 0 || n-given >= 8192) {
						given = n
						s.Doorbell(CardTxDoorbell{Kind: 3, QPN: q.cfg.Num, Value: uint32(n)})
					}
				}
				for s.Pending() || seen == 0 {
					if q.posted == 0 && !s.Pending() {
						post()
					}
					step()
				}
				warm, beats, pay := s.Cycles, s.WriteBeats, payload
				for i := 0; i < b.N; i++ {
					for q.sqFree() > 1 && len(s.dbs) < 4 {
						post()
					}
					step()
				}
				cycles := float64(s.Cycles - warm)
				b.ReportMetric(float64(s.WriteBeats-beats)/cycles, "wbeats/cycle")
				b.ReportMetric(float64(payload-pay)/float64(w/8)/cycles, "payload-beats/cycle")
			})
		}
	}
}
