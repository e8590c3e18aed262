package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	pr "github.com/openiwarp/openiwarp/host/driver/regs"
	"github.com/openiwarp/openiwarp/host/driver/stagtab"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// ctxMR is a memory region registered in both STag tables (the model's and
// placement's in card_tx_tb), its bytes the same in both host memories.
type ctxMR struct {
	stag   mem.STag
	base   uint64 // tagged offset of its first byte
	length uint64
}

// ctxMRHost is where the regions' host memory starts (+ index * 0x10_0000):
// above 4 GiB, clear of every QP's TX ring (ctxTXS + qpn * 0x10_0000 runs to
// 0x47F0_0000). Below it, QP 384+idx's own ring writes overwrote region
// idx's bytes at different times in the RTL's memory and the model's, and
// the gather read them back different (seed 1037970586484981571 at 512 bits:
// QP 579 and region 195).
const ctxMRHost = 0x1_0000_0000

// register adds a region at index idx: contiguous, or paged (its pages
// scattered, in reverse order) when paged; its bytes random.
func (b *ctxBench) register(idx uint32, length uint64, paged bool, e mem.Entry) ctxMR {
	r := b.rng
	host := ctxMRHost + uint64(idx)<<20
	e.Valid, e.Length = true, length
	if e.Key == 0 {
		e.Key = uint8(1 + r.IntN(255))
	}
	if e.Base == 0 {
		e.Base = uint64(r.Uint32()) << 8
	}
	var tr stagtab.Translation
	if paged {
		off := uint64(r.IntN(4096))
		n := stagtab.PagesFor(off, length)
		pages := make([]uint64, n)
		for k := range pages {
			pages[k] = host + (n-1-uint64(k))<<12
		}
		tr = stagtab.Paged(off, pages)
		for k, pg := range pages {
			lo, hi := uint64(0), uint64(4096)
			if k == 0 {
				lo = off
			}
			if end := off + length - uint64(k)<<12; end < hi {
				hi = end
			}
			b.fill(pg+lo, int(hi-lo))
		}
	} else {
		tr = stagtab.Contiguous(host + uint64(r.IntN(64)))
		b.fill(tr.Addr, int(length))
	}
	for _, w := range stagtab.AppendWrites(nil, idx, e, tr, b.slot) {
		b.w32(cs.PlacementWindow+w.Off, w.Val)
		b.rtl.RegWrite(w.Off, w.Val)
	}
	b.slot += uint32(len(tr.Pages))
	mr := ctxMR{stag: mem.MakeSTag(idx, e.Key), base: e.Base, length: length}
	return mr
}

// fill writes the same random bytes to both host memories.
func (b *ctxBench) fill(addr uint64, n int) {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(b.rng.Uint32())
	}
	b.mh.mem.Write(addr, p)
	b.rtl.Mem.Write(addr, p)
}

// sgeIn is an SGE of length n (0 allowed) inside a random region.
func (b *ctxBench) sgeIn(n uint32) [3]uint64 {
	mr := b.mrs[b.rng.IntN(len(b.mrs))]
	n = uint32(min(uint64(n), mr.length))
	off := uint64(b.rng.IntN(int(mr.length-uint64(n)) + 1))
	return [3]uint64{mr.base + off, uint64(n), uint64(mr.stag)}
}

// postSGL writes a WQE with the given SGEs (addr, length, lkey) into q's
// SQ and rings SQ_PI. It returns the WQE's WR_ID.
func (b *ctxBench) postSGL(q *ctxQP, op cs.WQEOpcode, sgl [][3]uint64) uint64 {
	r := b.rng
	bbs := max(1, (cs.WQEHdr+len(sgl)*cs.SGESize+cs.BB-1)/cs.BB)
	if bbs < cs.MaxWQEBBs && !b.tight && r.Chance(30) {
		bbs++
	}
	wqe := make([]byte, bbs*cs.BB)
	h := cs.WQE(wqe)
	h.SetOpcode(op)
	h.SetSignaled(r.Chance(160))
	h.SetSolicited(r.Chance(80))
	h.SetBBS(uint8(bbs))
	h.SetNSGE(uint8(len(sgl)))
	id := r.Uint64()
	h.SetWRID(id)
	h.SetRemoteAddr(r.Uint64())
	h.SetRKey(r.Uint32())
	h.SetInvSTag(r.Uint32())
	for i, s := range sgl {
		e := cs.SGE(wqe[cs.WQEHdr+i*cs.SGESize:])
		e.SetAddr(s[0])
		e.SetLength(uint32(s[1]))
		e.SetLKey(uint32(s[2]))
	}
	b.postBlocks(q, wqe)
	return id
}

// postLocalInv writes a Local Invalidate WQE of stag into q's SQ. It
// returns the WQE's WR_ID.
func (b *ctxBench) postLocalInv(q *ctxQP, stag mem.STag) uint64 {
	wqe := make([]byte, cs.BB)
	h := cs.WQE(wqe)
	h.SetOpcode(cs.WQEOpcodeLocalInv)
	h.SetSignaled(b.rng.Chance(128))
	h.SetBBS(1)
	id := b.rng.Uint64()
	h.SetWRID(id)
	h.SetInvSTag(uint32(stag))
	b.postBlocks(q, wqe)
	return id
}

// randomSGL is 1 to 4 SGEs (sometimes up to 30, sometimes empty ones) of
// up to maxLen bytes in all.
func (b *ctxBench) randomSGL(maxLen int) [][3]uint64 {
	r := b.rng
	n := 1 + r.IntN(4)
	if r.Chance(20) {
		n = 1 + r.IntN(cs.MaxSGE)
	}
	sgl := make([][3]uint64, n)
	for i := range sgl {
		k := r.IntN(maxLen/n + 1)
		if r.Chance(100) {
			k = r.IntN(65)
		}
		if r.Chance(20) {
			k = 0
		}
		sgl[i] = b.sgeIn(uint32(k))
	}
	return sgl
}

func newGatherBench(t *testing.T, w int, seed uint64, nqp int) *ctxBench {
	b := newCtxBench(t, w, seed, CardTxTiming{ReadLatency: 1, ReadJitter: 300, Random: true}, nqp,
		func(r Rand) uint32 { return uint32(128 + r.IntN(1024)) })
	for i := uint32(0); i < 6; i++ {
		b.mrs = append(b.mrs, b.register(1+i*97, uint64(4096+b.rng.IntN(60000)), i%2 == 1, mem.Entry{PD: 1, Access: mem.LocalWrite}))
	}
	return b
}

// TestCardTxGather co-simulates card_tx (with placement's STag table
// behind its lkey check port) and the card model over Sends, Sends with
// Invalidate and RDMA Writes whose payload is gathered from SGLs (1 to 30
// SGEs, empty ones, contiguous and paged regions, up to 64 KiB per
// message, so messages span many FPDUs and more than the TX ring), mixed
// with inline WQEs, on many QPs, with random DMA latency, read
// interleaving and AXI backpressure: every stream byte, CQE and status
// value must be the model's.
func TestCardTxGather(t *testing.T) {
	for _, w := range gen.CardTxGatherWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newGatherBench(t, w, seed, 6)
			r := b.rng
			ops := []cs.WQEOpcode{cs.WQEOpcodeSend, cs.WQEOpcodeSendInv, cs.WQEOpcodeRDMAWrite}
			gathered := 0
			for round := 0; round < 16; round++ {
				for _, q := range b.qps {
					free := q.sqFree()
					for k := r.IntN(5); k > 0 && free >= cs.MaxWQEBBs; k-- {
						if r.Chance(60) {
							b.post(q, cs.MaxInline)
						} else {
							maxLen := 3000
							if r.Chance(20) {
								maxLen = 1 << 16
							}
							b.postSGL(q, ops[r.IntN(len(ops))], b.randomSGL(maxLen))
							gathered++
						}
						free = q.sqFree()
					}
					b.ring(q)
				}
				b.runModel()
				b.runRTL(4_000_000)
			}
			b.compare()
			bytes := 0
			for _, w := range b.rtl.Writes {
				bytes += len(w.Data)
			}
			halt, hq, _ := b.rtl.Halted()
			require.False(t, halt, "seed %d: QP %d halted", seed, hq)
			t.Logf("seed %d: %d WQEs (%d gathered), %d stream bytes, %d cycles", seed, len(b.rtl.Records), gathered, bytes, b.rtl.Cycles)
		})
	}
}

// An SGE that fails its lkey check (another PD, past its region, a wrong
// key, an invalidated region), after one that passes: the WQE completes
// with LOC_PROT_ERR as the model's does, no byte of it reaches the ring,
// the QP goes to error with a Local Catastrophic Terminate on its ring
// (the model's localError), and the WQEs posted after it complete with
// WR_FLUSH_ERR as the model's do; the other QPs' streams and completions
// stay the model's. A Local Invalidate of another PD's region fails the
// same way (the mop port refuses it). Behind an RDMA Read whose response never comes, the
// failed WQE is sent at once (no fence) and its completion waits for the
// Read's: the Read is flushed, and the failed WQE still completes with
// its own status, after it, as in the model.
func TestCardTxLocalProtection(t *testing.T) {
	for _, w := range gen.CardTxGatherWidths {
		for _, bad := range []string{"another PD", "past the region", "wrong key", "invalidated", "invalidate another PD's",
			"wrong key behind a Read", "past the region behind a Read", "invalidate another PD's behind a Read"} {
			t.Run(fmt.Sprintf("%d/%s", w, bad), func(t *testing.T) {
				seed := seedFor(t.Name())
				b := newGatherBench(t, w, seed, 3)
				b.errOK = true
				q, good := b.qps[0], b.qps[1:]
				// One good gathered WQE first, so the QP has stream bytes.
				b.postSGL(q, cs.WQEOpcodeSend, [][3]uint64{b.sgeIn(100)})
				b.ring(q)
				b.runModel()
				b.runRTL(1_000_000)
				before := b.rtl.RingBytes[q.cfg.Num]
				if behind, ok := strings.CutSuffix(bad, " behind a Read"); ok {
					bad = behind
					b.holdReads()
					b.postRead(q)
				}
				mr := b.mrs[0]
				var sge [3]uint64
				var inv mem.STag
				switch bad {
				case "another PD":
					o := b.register(900, 8192, false, mem.Entry{PD: 2, Access: mem.LocalWrite})
					sge = [3]uint64{o.base, 64, uint64(o.stag)}
				case "past the region":
					sge = [3]uint64{mr.base + mr.length - 10, 11, uint64(mr.stag)}
				case "wrong key":
					sge = [3]uint64{mr.base, 64, uint64(mr.stag ^ 1)}
				case "invalidated":
					o := b.register(901, 8192, true, mem.Entry{PD: 1, Access: mem.LocalWrite})
					b.w32(cs.PlacementWindow+pr.StagInvalidate, 901)
					b.rtl.RegWrite(pr.StagInvalidate, 901)
					sge = [3]uint64{o.base, 64, uint64(o.stag)}
				case "invalidate another PD's":
					inv = b.register(902, 8192, false, mem.Entry{PD: 2, Access: mem.LocalWrite}).stag
				}
				var id uint64
				if inv != 0 {
					id = b.postLocalInv(q, inv)
				} else {
					id = b.postSGL(q, cs.WQEOpcodeRDMAWrite, [][3]uint64{b.sgeIn(2000), sge})
				}
				// Work posted after it, as far as the SQ has room (the
				// ring may be as small as 8 blocks): flushed.
				for k := b.rng.IntN(3); k > 0 && q.sqFree() >= cs.MaxWQEBBs; k-- {
					if b.rng.Chance(128) {
						b.postSGL(q, cs.WQEOpcodeSend, b.randomSGL(3000))
					} else {
						b.post(q, cs.MaxInline)
					}
				}
				b.ring(q)
				for _, g := range good {
					for k := 0; k < 3 && g.sqFree() >= cs.MaxWQEBBs; k++ {
						b.postSGL(g, cs.WQEOpcodeSend, b.randomSGL(5000))
					}
					b.ring(g)
				}
				b.runModel()
				b.runRTL(1_000_000)
				halt, hq, _ := b.rtl.Halted()
				require.False(t, halt, "seed %d: QP %d halted", seed, hq)
				var recs []CardTxRecord
				for _, r := range b.rtl.Records {
					if r.QPN == q.cfg.Num && r.CQE {
						recs = append(recs, r)
					}
				}
				mc := b.mCQE[q.cfg.Num]
				require.Equal(t, len(mc), len(recs), "seed %d: CQEs of the failed QP", seed)
				failed := -1
				for i, m := range mc {
					r := recs[i]
					require.Equal(t, m.WRID(), r.WRID, "seed %d CQE %d: WR_ID", seed, i)
					require.Equal(t, uint8(m.Status()), r.Status, "seed %d CQE %d: status", seed, i)
					require.Equal(t, m.ByteLen(), r.ByteLen, "seed %d CQE %d: byte length", seed, i)
					require.Equal(t, uint8(m.Opcode()), r.Opcode, "seed %d CQE %d: opcode", seed, i)
					if m.WRID() == id {
						failed = i
					}
				}
				require.GreaterOrEqual(t, failed, 0, "seed %d: no CQE of the failed WQE", seed)
				require.Equal(t, cs.WCStatusLocProtErr, mc[failed].Status(), "seed %d: the model's status", seed)
				for _, m := range mc[failed+1:] {
					require.Equal(t, cs.WCStatusWRFlushErr, m.Status(), "seed %d: the model's status after the error", seed)
				}
				st := cs.QPStat(b.mStat[q.cfg.Num])
				require.Equal(t, st.SQCI(), q.rtlSQCI, "seed %d: SQ_CI", seed)
				// No byte of the failed WQE reaches the ring: the Local
				// Catastrophic Terminate (28 octets without markers) follows
				// the bytes before it, as in the model's stream.
				rtl := b.rtlRing()[q.cfg.Num]
				require.Equal(t, b.mRing[q.cfg.Num], rtl, "seed %d: stream with the Terminate", seed)
				require.GreaterOrEqual(t, len(rtl)-int(before), 28, "seed %d: no Terminate after the failed WQE", seed)
				b.qps = good
				b.compare()
			})
		}
	}
}

// TestCardTxReadAheadInvalidated: a one-SGE RDMA Write whose block is read
// ahead while a long Send is fed has its lkey looked up then, and at 512
// bits that lookup's verdict stands for the WQE's check when it starts, as
// long as placement's table is not written in between. Here the table is
// written in between: the region is invalidated through the register port
// while the Send is fed, or by a Local Invalidate WQE between the two
// (placement's mop port). The model checks the Write when it starts, so it
// fails with LOC_PROT_ERR, its QP goes to error and the WQEs behind it are
// flushed; card_tx must do the same, not send it on the stale verdict.
// A second Write of a region left valid, read ahead the same way, goes out.
func TestCardTxReadAheadInvalidated(t *testing.T) {
	for _, w := range gen.CardTxGatherWidths {
		for _, how := range []string{"register", "Local Invalidate", "left valid"} {
			t.Run(fmt.Sprintf("%d/%s", w, how), func(t *testing.T) {
				seed := seedFor(t.Name())
				b := newGatherBench(t, w, seed, 1)
				b.errOK = true
				b.tight = true
				q := b.qps[0]
				const sendLen = 60000
				big := b.register(700, sendLen, false, mem.Entry{PD: 1, Access: mem.LocalWrite})
				o := b.register(701, 8192, true, mem.Entry{PD: 1, Access: mem.LocalWrite})
				b.postSGL(q, cs.WQEOpcodeSend, [][3]uint64{{big.base, sendLen, uint64(big.stag)}})
				b.ring(q)
				b.runModel()
				// The model checks each WQE as it starts: it sees the table
				// write before the Write. The RTL gets both WQEs at once
				// (their blocks read ahead together) and the write while it
				// feeds the Send.
				if how == "register" {
					b.w32(cs.PlacementWindow+pr.StagInvalidate, 701)
				}
				if how == "Local Invalidate" {
					b.postLocalInv(q, o.stag)
				}
				id := b.postSGL(q, cs.WQEOpcodeRDMAWrite, [][3]uint64{{o.base + 100, 4000, uint64(o.stag)}})
				b.post(q, 16)
				b.ring(q)
				b.runModel()
				if how == "register" {
					b.runRTLUntil(2_000_000, func() bool { return b.rtl.RingBytes[q.cfg.Num] > sendLen/2 })
					require.Less(t, int(q.rtlSQCI), 1, "seed %d: the Send was done before the table write", seed)
					b.rtl.RegWrite(pr.StagInvalidate, 701)
				}
				b.runRTLCaughtUp(2_000_000)
				var st cs.WCStatus = 0xff
				for _, c := range b.mCQE[q.cfg.Num] {
					if c.WRID() == id {
						st = c.Status()
					}
				}
				if how == "left valid" {
					require.NotEqual(t, cs.WCStatusLocProtErr, st, "seed %d: the model's status of the Write", seed)
				} else {
					require.Equal(t, cs.WCStatusLocProtErr, st, "seed %d: the model's status of the Write", seed)
				}
				b.compare()
			})
		}
	}
}
