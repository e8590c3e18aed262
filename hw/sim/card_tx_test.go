package sim

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// modelHost is the card model's host memory.
type modelHost struct{ mem HostMem }

func (h modelHost) ReadMem(a uint64, p []byte) error  { h.mem.Read(a, p); return nil }
func (h modelHost) WriteMem(a uint64, p []byte) error { h.mem.Write(a, p); return nil }
func (h modelHost) Interrupt(int)                     {}

// ctxBench drives the card model and card_tx's RTL with the same QPs,
// WQEs and doorbells and collects what each writes.
type ctxBench struct {
	t     *testing.T
	rng   Rand
	card  *cardmodel.Card
	mh    modelHost
	rtl   *CardTxSim
	qps   []*ctxQP
	seed  uint64
	mStat map[uint32][]byte // last status record per QP (model)
	mRing map[uint32][]byte // stream bytes per QP, in write order (model)
	mCQE  map[uint32][]cs.CQE
	seen  int  // RTL records taken by runRTL
	mEQE  int  // events the model wrote
	rd    bool // the Read sink is registered: QPs get a Read peer
	// noFence: postRead posts no fenced Reads.
	noFence bool
	// errOK: the model may write events and Terminates (error tests).
	errOK bool
	mrs   []ctxMR  // regions registered in both STag tables
	slot  uint32   // next page-list slot
	rreqs []uint32 // QP of each Read Request the peer sent, in order
	// hold: the peer answers no Read Request (they stay outstanding).
	hold bool
	// tight: postSGL never pads a WQE with a block it does not need.
	tight bool
}

type ctxQP struct {
	cfg     CardTxQP
	pi      uint16 // blocks posted
	posted  int    // WQEs posted
	pending bool   // an SQ_PI doorbell is due
	mCI     uint32 // TXS_CI given to the model
	rtlCI   uint32
	given   uint64 // stream bytes handed back to the RTL (TXS_CI)
	rtlRecs int
	rtlSQCI uint16
	mBase   int      // model stream bytes of the QP's earlier lives (before its CREATE)
	rd      ctxReads // the peer's side of RDMA Reads
	late    bool     // ring SQ_PI only in ring(), never in post (no push)
}

const (
	ctxEQ, ctxStat, ctxCQ = 0x10_0000, 0x20_0000, 0x40_0000
	ctxSQ                 = 0x100_0000  // + qpn * 0x1_0000
	ctxTXS                = 0x800_0000  // + qpn * 0x10_0000
	ctxRXS                = 0x5000_0000 // + qpn * 0x1_0000 (64 KiB rings)
	ctxCQLog              = 14
)

func (b *ctxBench) w32(off, v uint32) {
	b.t.Helper()
	require.NoError(b.t, b.card.Write32(off, v), "model register write %#x", off)
}

func newCtxBench(t *testing.T, width int, seed uint64, timing CardTxTiming, nqp int, mulpdu func(Rand) uint32) *ctxBench {
	b := &ctxBench{t: t, rng: NewRand(seed), seed: seed, mh: modelHost{HostMem{}},
		mStat: map[uint32][]byte{}, mRing: map[uint32][]byte{}, mCQE: map[uint32][]cs.CQE{}}
	card, err := cardmodel.New(cardmodel.Config{Width: width, Host: b.mh, Observe: func(w cardmodel.DMAWrite) {
		switch w.Kind {
		case cardmodel.WriteStream:
			b.mRing[w.QPN] = append(b.mRing[w.QPN], w.Data...)
		case cardmodel.WriteStatus:
			b.mStat[w.QPN] = append([]byte(nil), w.Data...)
		case cardmodel.WriteCQE:
			b.mCQE[w.QPN] = append(b.mCQE[w.QPN], cs.CQE(append([]byte(nil), w.Data...)))
		case cardmodel.WriteEQE:
			b.mEQE++ // QP_ERROR events: card_tx writes no events (card_cq's job)
		case cardmodel.WritePayload:
			// Read Response payload placed by the model's receive side
			// (placement's job in the RTL card, not card_tx's).
		default:
			if !b.errOK {
				t.Errorf("seed %d: model wrote %v at %#x: this bench sends only work that succeeds", seed, w.Kind, w.Addr)
			}
		}
	}})
	require.NoError(t, err)
	b.card = card
	b.rtl, err = NewCardTxSim(width, seed, timing)
	require.NoError(t, err)
	t.Cleanup(b.rtl.Close)
	b.w32(cs.EQBaseLo, ctxEQ)
	b.w32(cs.EQCfg, 8|1<<cs.EQCfgEnableShift)
	b.w32(cs.QpstatBaseLo, ctxStat)
	for n := uint32(1); n <= 2; n++ {
		b.w32(cs.CQNum, n)
		b.w32(cs.CQBaseLo, ctxCQ+n<<20)
		b.w32(cs.CQCfg, ctxCQLog)
		b.w32(cs.CQCmd, uint32(cs.CQOpCreate))
	}
	r := b.rng
	for i := 0; i < nqp; i++ {
		n := uint32(1 + r.IntN(cs.MaxQP-1))
		for _, q := range b.qps {
			if q.cfg.Num == n {
				n = 0
			}
		}
		if n == 0 {
			i--
			continue
		}
		q := CardTxQP{Num: n, SQBase: ctxSQ + uint64(n)<<16, TXSBase: ctxTXS + uint64(n)<<20,
			SQLog: uint32(3 + r.IntN(4)), TXSLog: uint32(12 + r.IntN(2)), MULPDU: mulpdu(r),
			Markers: r.Chance(128), CRC: r.Chance(180), Rev0: r.Chance(40), SendCQ: uint32(1 + r.IntN(2)),
			ORD: uint32(1 + r.IntN(4)), PD: 1}
		b.qps = append(b.qps, &ctxQP{cfg: q})
		b.create(b.qps[len(b.qps)-1])
	}
	b.readSink()
	b.w32(cs.Ctrl, 1)
	b.card.Run()
	return b
}

// create creates q in the model and queues its CREATE for the RTL; the
// bench's view of q starts afresh (indices and streams from zero).
func (b *ctxBench) create(cq *ctxQP) {
	q, n := cq.cfg, cq.cfg.Num
	*cq = ctxQP{cfg: q, mBase: len(b.mRing[q.Num])}
	mpaReg := q.MULPDU
	if q.Markers {
		mpaReg |= 1 << cs.QPMPAMarkersTXShift
	}
	if q.CRC {
		mpaReg |= 1 << cs.QPMPACRCShift
	}
	if q.Rev0 {
		mpaReg |= 1 << cs.QPMPARev0Shift
	}
	b.w32(cs.QPNum, n)
	b.w32(cs.QPPD, q.PD)
	b.w32(cs.QPSQBaseLo, uint32(q.SQBase))
	b.w32(cs.QPSQBaseHi, uint32(q.SQBase>>32))
	b.w32(cs.QPRQBaseLo, 0x7000_0000)
	b.w32(cs.QPTXSBaseLo, uint32(q.TXSBase))
	b.w32(cs.QPTXSBaseHi, uint32(q.TXSBase>>32))
	b.w32(cs.QPRXSBaseLo, uint32(ctxRXS+uint64(n)<<16))
	b.w32(cs.QPSizes, q.SQLog|4<<8|q.TXSLog<<16|ctxRXSLog<<24)
	b.w32(cs.QPCqs, q.SendCQ|q.SendCQ<<16)
	b.w32(cs.QPMPA, mpaReg)
	b.w32(cs.QPRD, q.ORD|4<<8)
	b.w32(cs.QPCmd, uint32(cs.QPOpCreate))
	b.rtl.Command(q)
	if b.rd {
		b.readState(cq)
		cq.rd.mFed = len(b.mRing[n]) // the model's earlier streams of n
	}
}

// sqFree is how many blocks q's SQ has free (past those the RTL has not
// taken).
func (q *ctxQP) sqFree() int { return int(uint16(1)<<q.cfg.SQLog) - int(q.pi-q.rtlSQCI) }

// postBlocks writes wqe's blocks into q's SQ from SQ_PI on and posts them
// (SQ_PI is rung later).
func (b *ctxBench) postBlocks(q *ctxQP, wqe []byte) {
	b.putSQ(q, wqe)
	q.pi += uint16(len(wqe) / cs.BB)
	q.posted++
	q.pending = true
}

// putSQ writes wqe's blocks into q's SQ from SQ_PI on, in both memories
// (SQ_PI is not moved).
func (b *ctxBench) putSQ(q *ctxQP, wqe []byte) {
	size := uint16(1) << q.cfg.SQLog
	// A test that posts past the free blocks overwrites WQEs the card has
	// not read yet: say so rather than let the card read a torn ring.
	require.LessOrEqual(b.t, int(q.pi-q.rtlSQCI)+len(wqe)/cs.BB, int(size),
		"seed %d: QP %d's SQ has no room for a %d-block WQE (the test posted too much)", b.seed, q.cfg.Num, len(wqe)/cs.BB)
	for i := 0; i < len(wqe)/cs.BB; i++ {
		a := q.cfg.SQBase + uint64((q.pi+uint16(i))&(size-1))*cs.BB
		blk := wqe[i*cs.BB : (i+1)*cs.BB]
		b.mh.mem.Write(a, blk)
		b.rtl.Mem.Write(a, blk)
	}
}

// post writes a random WQE into q's SQ (both memories) and rings the
// doorbells as a driver would: SQ_PI now or later, or a push.
func (b *ctxBench) post(q *ctxQP, maxLen int, opts ...cs.WQEOpcode) {
	r := b.rng
	wqe := randomInlineWQE(r, wqeMix{maxLen: maxLen, signaled: 160, fence: 30, ops: opts})
	bbs := len(wqe) / cs.BB
	b.putSQ(q, wqe)
	db := cs.QPDBBase + q.cfg.Num*cs.QPDBStride
	if bbs == 1 && r.Chance(100) && !q.late {
		b.ring(q)
		var blk [64]byte
		copy(blk[:], wqe)
		for i := 0; i < 16; i++ {
			b.w32(db+cs.QPDBPush+uint32(4*i), binary.LittleEndian.Uint32(blk[4*i:]))
		}
		d := CardTxDoorbell{Kind: 6, QPN: q.cfg.Num, Value: binary.LittleEndian.Uint32(blk[60:]), Push: &blk}
		if r.Chance(30) {
			d.Push = nil // a broken push: the card reads the SQ
		}
		b.rtl.Doorbell(d)
		q.pi++
	} else {
		q.pi += uint16(bbs)
		q.pending = true
		if r.Chance(150) && !q.late {
			b.ring(q)
		}
	}
	q.posted++
}

// wqeMix is how randomInlineWQE draws a WQE: up to maxLen inline bytes
// (64 or fewer in 100 of 256), signaled and fenced with those chances out
// of 256 (fence 0: the fence bit is not drawn), the opcode from ops
// (none: Send, Send with Invalidate or RDMA Write).
type wqeMix struct {
	maxLen, signaled, fence int
	ops                     []cs.WQEOpcode
}

// randomInlineWQE is a random inline WQE of whole basic blocks (one more
// than the payload needs in 30 of 256), its header fields random.
func randomInlineWQE(r Rand, m wqeMix) []byte {
	n := r.IntN(m.maxLen + 1)
	if r.Chance(100) {
		n = r.IntN(min(m.maxLen, 64) + 1)
	}
	bbs := max(1, (cs.WQEHdr+n+cs.BB-1)/cs.BB)
	if bbs < cs.MaxWQEBBs && r.Chance(30) {
		bbs++
	}
	wqe := make([]byte, bbs*cs.BB)
	h := cs.WQE(wqe)
	ops := m.ops
	if len(ops) == 0 {
		ops = []cs.WQEOpcode{cs.WQEOpcodeSend, cs.WQEOpcodeSendInv, cs.WQEOpcodeRDMAWrite}
	}
	h.SetOpcode(ops[r.IntN(len(ops))])
	h.SetSignaled(r.Chance(m.signaled))
	h.SetSolicited(r.Chance(80))
	if m.fence > 0 {
		h.SetFence(r.Chance(m.fence))
	}
	h.SetInline(true)
	h.SetBBS(uint8(bbs))
	h.SetInlineLen(uint16(n))
	h.SetWRID(r.Uint64())
	h.SetRemoteAddr(r.Uint64())
	h.SetRKey(r.Uint32())
	h.SetInvSTag(r.Uint32())
	for i := cs.WQEHdr; i < cs.WQEHdr+n; i++ {
		wqe[i] = byte(r.Uint32())
	}
	return wqe
}

func (b *ctxBench) ring(q *ctxQP) {
	if !q.pending {
		return
	}
	q.pending = false
	b.w32(cs.QPDBBase+q.cfg.Num*cs.QPDBStride+cs.QPDBSQPI, uint32(q.pi))
	b.rtl.Doorbell(CardTxDoorbell{Kind: 1, QPN: q.cfg.Num, Value: uint32(q.pi)})
}

// runModel runs the model to idle, the host handing every TX ring byte to
// TCP as soon as it is there and the peer answering every Read Request.
func (b *ctxBench) runModel() {
	for {
		b.card.Run()
		moved := b.answerModel()
		for _, q := range b.qps {
			st := b.mStat[q.cfg.Num]
			if st == nil {
				continue
			}
			if pi := cs.QPStat(st).TXSPI(); pi != q.mCI {
				q.mCI = pi
				b.w32(cs.QPDBBase+q.cfg.Num*cs.QPDBStride+cs.QPDBTXSCI, pi)
				moved = true
			}
		}
		if !moved {
			return
		}
	}
}

// runRTL runs the RTL until every posted WQE has its record; the host
// hands ring bytes to TCP as their records come.
func (b *ctxBench) runRTL(watchdog uint64) { b.runRTLUntil(watchdog, nil) }

// runRTLCaughtUp runs the RTL as runRTL does, and on until every QP's
// stream is as long as the model's: a QP put in error by its WQE owes
// its Terminate after its last WQE is taken, at its next turn, which
// may come after runRTL's conditions hold.
func (b *ctxBench) runRTLCaughtUp(watchdog uint64) {
	b.runRTL(watchdog)
	b.runRTLUntil(watchdog, func() bool {
		for _, q := range b.qps {
			n := b.rtl.RingBytes[q.cfg.Num]
			if n < uint64(len(b.mRing[q.cfg.Num])-q.mBase) || uint64(q.rtlCI) != n {
				return false
			}
		}
		return !b.rtl.Pending() && !b.rtl.RecordOut()
	})
}

// runRTLUntil runs the RTL as runRTL does, until done (if not nil) holds
// instead.
func (b *ctxBench) runRTLUntil(watchdog uint64, until func() bool) {
	t := b.t
	byNum := map[uint32]*ctxQP{}
	for _, q := range b.qps {
		byNum[q.cfg.Num] = q
	}
	start := b.rtl.Cycles
	for {
		done := !b.rtl.Pending() && len(b.rtl.RReqDone) == len(b.rreqs) && !b.rtl.RecordOut()
		for _, q := range b.qps {
			// Every WQE taken, and every ring byte written reported by a
			// record (a Terminate's record follows its write's response).
			if q.rtlSQCI != q.pi || uint64(q.rtlCI) != b.rtl.RingBytes[q.cfg.Num] {
				done = false
			}
		}
		if until != nil {
			done = until()
		}
		if done {
			return
		}
		require.NoError(t, b.rtl.Step(), "seed %d", b.seed)
		for ; b.seen < len(b.rtl.Records); b.seen++ {
			rec := b.rtl.Records[b.seen]
			q := byNum[rec.QPN]
			require.NotNil(t, q, "seed %d: a record of QP %d, which has no work", b.seed, rec.QPN)
			q.rtlRecs++
			q.rtlSQCI = rec.SQCI
			q.rtlCI = rec.TXSPI
		}
		// The host hands ring bytes to the peer (which answers Read
		// Requests) and gives them back (TXS_CI) as their writes land:
		// a gathered message may be longer than the ring.
		for _, q := range b.qps {
			n := b.rtl.RingBytes[q.cfg.Num]
			if b.rd {
				b.answerRTL(q, uint32(n))
			}
			if n != q.given && (n-q.given > 512 || b.rng.Chance(16)) {
				q.given = n
				b.rtl.Doorbell(CardTxDoorbell{Kind: 3, QPN: q.cfg.Num, Value: uint32(n)})
			}
		}
		if b.rtl.Cycles-start > watchdog {
			halt, hq, dmaErr := b.rtl.Halted()
			var st []string
			for _, q := range b.qps {
				st = append(st, fmt.Sprintf("QP %d: %d records for %d WQEs, SQ_CI %d of %d blocks, stream %d written, %d published, %d by the model", q.cfg.Num, q.rtlRecs, q.posted, q.rtlSQCI, q.pi, b.rtl.RingBytes[q.cfg.Num], q.rtlCI, len(b.mRing[q.cfg.Num])-q.mBase))
			}
			t.Fatalf("seed %d: card_tx stuck for %d cycles (halt %v QP %d, dma error %v): %v", b.seed, watchdog, halt, hq, dmaErr, st)
		}
	}
}

// rtlRing is the RTL's stream bytes per QP, in write order.
func (b *ctxBench) rtlRing() map[uint32][]byte {
	rtlRing := map[uint32][]byte{}
	for _, w := range b.rtl.Writes {
		for _, q := range b.qps {
			if w.Addr >= q.cfg.TXSBase && w.Addr < q.cfg.TXSBase+1<<q.cfg.TXSLog {
				require.LessOrEqual(b.t, w.Addr+uint64(len(w.Data)), q.cfg.TXSBase+1<<q.cfg.TXSLog, "seed %d: a write past QP %d's ring", b.seed, q.cfg.Num)
				rtlRing[q.cfg.Num] = append(rtlRing[q.cfg.Num], w.Data...)
			}
		}
	}
	return rtlRing
}

// compare checks, per QP, the stream bytes, the CQEs and the status
// record of the model against the RTL's writes and records.
func (b *ctxBench) compare() {
	t := b.t
	rtlRing := b.rtlRing()
	rtlCQE := map[uint32][]CardTxRecord{}
	for _, r := range b.rtl.Records {
		if r.CQE {
			rtlCQE[r.QPN] = append(rtlCQE[r.QPN], r)
		}
	}
	for _, q := range b.qps {
		n := q.cfg.Num
		want, got := b.mRing[n], rtlRing[n]
		for i := range min(len(want), len(got)) {
			if want[i] != got[i] {
				lo, hi := max(0, i-24), min(len(want), len(got), i+40)
				t.Fatalf("seed %d QP %d (markers %v CRC %v rev0 %v MULPDU %d): stream byte %d is %#02x, the model's %#02x\nRTL   % x\nmodel % x",
					b.seed, n, q.cfg.Markers, q.cfg.CRC, q.cfg.Rev0, q.cfg.MULPDU, i, got[i], want[i], got[lo:hi], want[lo:hi])
			}
		}
		require.Equal(t, len(want), len(got), "seed %d QP %d: stream bytes written", b.seed, n)
		// Where the ring writes went: the model's stream is written at
		// TXS_PI modulo the ring, so the ring's final contents agree too.
		mc, rc := b.mCQE[n], rtlCQE[n]
		require.Equal(t, len(mc), len(rc), "seed %d QP %d: CQEs", b.seed, n)
		for i := range mc {
			m, r := mc[i], rc[i]
			require.Equal(t, m.WRID(), r.WRID, "seed %d QP %d CQE %d: WR_ID", b.seed, n, i)
			require.Equal(t, uint8(m.Opcode()), r.Opcode, "seed %d QP %d CQE %d: opcode", b.seed, n, i)
			require.Equal(t, uint8(m.Status()), r.Status, "seed %d QP %d CQE %d: status", b.seed, n, i)
			require.Equal(t, m.ByteLen(), r.ByteLen, "seed %d QP %d CQE %d: byte length", b.seed, n, i)
			require.Equal(t, uint32(m.QPN()), r.QPN, "seed %d QP %d CQE %d: QPN", b.seed, n, i)
			require.Equal(t, q.cfg.SendCQ, r.CQ, "seed %d QP %d CQE %d: CQ", b.seed, n, i)
		}
		st := cs.QPStat(b.mStat[n])
		require.Equal(t, st.SQCI(), q.rtlSQCI, "seed %d QP %d: SQ_CI", b.seed, n)
		require.Equal(t, st.TXSPI(), q.rtlCI, "seed %d QP %d: TXS_PI", b.seed, n)
		ring := uint64(1) << q.cfg.TXSLog
		mr, rr := make([]byte, ring), make([]byte, ring)
		b.mh.mem.Read(q.cfg.TXSBase, mr)
		b.rtl.Mem.Read(q.cfg.TXSBase, rr)
		require.Equal(t, mr, rr, "seed %d QP %d: TX ring contents", b.seed, n)
	}
}

// TestCardTxRecordsHeld holds the record port (m_cpl_ready low) while
// card_tx's completion queue fills with WQEs whose ring writes all get
// their responses, then lets it go: every record must go out, and every
// stream byte, CQE and status be the model's. (card_tx counted such
// records in four bits: with its queue of 16 full of them the count
// wrapped to 0, and the head record waited for ever.)
func TestCardTxRecordsHeld(t *testing.T) {
	for _, w := range gen.CardTxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newCtxBench(t, w, seed, CardTxTiming{ReadLatency: 1, ReadJitter: 50}, 8,
				func(r Rand) uint32 { return uint32(128 + r.IntN(1024)) })
			posted := 0
			for _, q := range b.qps {
				for k := 0; k < 4 && q.sqFree() >= 2; k++ {
					b.post(q, 16)
					posted++
				}
				b.ring(q)
			}
			require.Greater(t, posted, gen.CardTxCplDepth, "seed %d: fewer WQEs than the queue holds", seed)
			b.runModel()
			b.rtl.HoldRecords = true
			until := b.rtl.Cycles + 20_000
			b.runRTLUntil(40_000, func() bool { return b.rtl.Cycles >= until })
			require.Empty(t, b.rtl.Records, "seed %d: records went out while held", seed)
			b.rtl.HoldRecords = false
			b.runRTLCaughtUp(1_000_000)
			b.compare()
		})
	}
}

// TestCardTx co-simulates card_tx with the card model over random inline
// Sends, Sends with Invalidate and RDMA Writes on many QPs (pushed or
// fetched, one to eight blocks, every MULPDU, markers, CRC, revision 0),
// random DMA latency and read interleaving, random AXI and record
// backpressure; every stream byte, CQE and status value must be the
// model's.
func TestCardTx(t *testing.T) {
	for _, w := range gen.CardTxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newCtxBench(t, w, seed, CardTxTiming{ReadLatency: 1, ReadJitter: 300, Random: true}, 8,
				func(r Rand) uint32 { return uint32(128 + r.IntN(1024)) })
			r := b.rng
			for round := 0; round < 40; round++ {
				for _, q := range b.qps {
					free := q.sqFree()
					for k := r.IntN(6); k > 0 && free >= cs.MaxWQEBBs; k-- {
						b.post(q, cs.MaxInline)
						free = q.sqFree()
					}
					b.ring(q)
				}
				b.runModel()
				b.runRTL(2_000_000)
			}
			b.compare()
			var cqes, bytes int
			for _, r := range b.rtl.Records {
				if r.CQE {
					cqes++
				}
			}
			for _, w := range b.rtl.Writes {
				bytes += len(w.Data)
			}
			require.Greater(t, cqes, 100, "seed %d", seed)
			t.Logf("seed %d: %d WQEs (%d signaled), %d stream bytes, %d cycles", seed, len(b.rtl.Records), cqes, bytes, b.rtl.Cycles)
		})
	}
}

// Malformed WQEs, one per QP after a good Send (an opcode the SQ does not
// take, RECV on the SQ, an inline length its blocks cannot hold, more
// SGEs than the card takes, an RDMA Read with two SGEs, BBS 0, a BBS past
// what was posted): each completes with LOC_QP_OP_ERR as the model's
// does, signaled or not, no byte of it reaches the ring, its QP goes to
// error with a Local Catastrophic Terminate after the bytes before it,
// and what is posted behind it is flushed (a bad BBS takes every block
// posted with it); every stream, CQE and SQ_CI must be the model's.
// Behind an RDMA Read whose response never comes, each completes so
// after the Read's WR_FLUSH_ERR.
func TestCardTxMalformed(t *testing.T) {
	rows := []struct {
		name string
		set  func(h cs.WQE)
		bbs  int  // blocks posted
		last bool // nothing posted behind it: its blocks would make its BBS good
	}{
		{"reserved opcode", func(h cs.WQE) { h.SetOpcode(7); h.SetBBS(1) }, 1, false},
		{"RECV on the SQ", func(h cs.WQE) { h.SetOpcode(cs.WQEOpcodeRecv); h.SetBBS(1) }, 1, false},
		{"inline past its blocks", func(h cs.WQE) { h.SetOpcode(cs.WQEOpcodeSend); h.SetInline(true); h.SetInlineLen(33); h.SetBBS(1) }, 1, false},
		{"31 SGEs", func(h cs.WQE) { h.SetOpcode(cs.WQEOpcodeSend); h.SetNSGE(31); h.SetBBS(8) }, 8, false},
		{"Read with two SGEs", func(h cs.WQE) { h.SetOpcode(cs.WQEOpcodeRDMARead); h.SetNSGE(2); h.SetBBS(1) }, 1, false},
		{"BBS 0", func(h cs.WQE) { h.SetOpcode(cs.WQEOpcodeSend); h.SetBBS(0) }, 2, false},
		{"BBS past what was posted", func(h cs.WQE) { h.SetOpcode(cs.WQEOpcodeSend); h.SetBBS(3) }, 2, true},
	}
	for _, w := range gen.CardTxWidths {
		for _, behind := range []bool{false, true} {
			name := fmt.Sprint(w)
			if behind {
				name += "/behind a Read"
			}
			t.Run(name, func(t *testing.T) {
				seed := seedFor(t.Name())
				b := newGatherBench(t, w, seed, len(rows)+1)
				b.errOK = true
				good := b.qps[len(rows)]
				for _, q := range b.qps {
					b.post(q, 200)
					b.ring(q)
				}
				b.runModel()
				b.runRTL(1_000_000)
				if behind {
					b.holdReads()
				}
				for i, row := range rows {
					q := b.qps[i]
					// (The Read takes up to 2 blocks, where the SQ has room.)
					if behind && q.sqFree() >= row.bbs+2 {
						b.postRead(q)
					}
					wqe := make([]byte, row.bbs*cs.BB)
					h := cs.WQE(wqe)
					row.set(h)
					h.SetWRID(0xbad0 + uint64(i))
					h.SetSignaled(b.rng.Chance(128))
					b.postBlocks(q, wqe)
					// Work posted behind it is flushed.
					if !row.last && b.rng.Chance(128) && q.sqFree() >= cs.MaxWQEBBs {
						b.post(q, 100)
					}
					b.ring(q)
				}
				b.post(good, 300)
				b.ring(good)
				b.runModel()
				b.runRTLCaughtUp(1_000_000)
				halt, hq, _ := b.rtl.Halted()
				require.False(t, halt, "seed %d: QP %d halted", seed, hq)
				for i, row := range rows {
					q := b.qps[i]
					var got *CardTxRecord
					for k := range b.rtl.Records {
						if r := &b.rtl.Records[k]; r.QPN == q.cfg.Num && r.CQE && r.WRID == 0xbad0+uint64(i) {
							got = r
						}
					}
					require.NotNil(t, got, "seed %d QP %d (%s): no CQE", seed, q.cfg.Num, row.name)
					require.EqualValues(t, cs.WCStatusLocQPOpErr, got.Status, "seed %d QP %d (%s): status", seed, q.cfg.Num, row.name)
				}
				b.compare()
			})
		}
	}
}

// card_tx's VHDL (with placement's, as card_tx_tb wires them) under GHDL,
// cycle by cycle against the Verilated card_tx_tb on TestCardTx's traffic
// (Sends, Writes and Reads, inline and gathered, on eight QPs, random
// read latency and readiness): the two emitters must agree on the
// engine, its read ahead and its queues, not only on the blocks with a
// cycle model. The Verilated run is checked against the card model
// first.
func TestCardTxGHDL(t *testing.T) {
	t.Parallel()
	const w = 64
	seed := seedFor(t.Name())
	vec := newVectorFile(t)
	b := newCtxBench(t, w, seed, CardTxTiming{ReadLatency: 1, ReadJitter: 300, Random: true, Vectors: vec.f}, 8,
		func(r Rand) uint32 { return uint32(128 + r.IntN(1024)) })
	r := b.rng
	for round := 0; round < 3; round++ {
		for _, q := range b.qps {
			for k := 1 + r.IntN(3); k > 0 && q.sqFree() >= cs.MaxWQEBBs; k-- {
				b.post(q, cs.MaxInline)
			}
			b.ring(q)
		}
		b.runModel()
		b.runRTL(2_000_000)
	}
	b.compare()
	require.NoError(t, b.rtl.FlushVectors())
	m, err := gen.CardTxBench(w)
	require.NoError(t, err)
	n := vec.runGHDL(t, &Bench{Module: m, Layout: LayoutOf(m)}, seed)
	require.Equal(t, int(b.rtl.Cycles)+4, n, "cycles checked (4 of reset)")
	t.Logf("seed %d: %d WQEs, %d cycles under GHDL", seed, len(b.rtl.Records), n)
}
