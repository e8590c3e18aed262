package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/driver/cardmodel"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	pr "github.com/openiwarp/openiwarp/host/driver/regs"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// rxInvSTags is the number of stream-scoped STags per QP that its peer's
// Sends with Invalidate may invalidate.
const rxInvSTags = 6

// rxCpl is a receive completion, as the model writes it (a CQE) and as
// card_rx hands it to card_cq (m_cpl).
type rxCpl struct {
	cq, qpn   uint32
	wrID      uint64
	byteLen   uint32
	op, stat  uint8
	invSTag   uint32
	sol, invd bool
}

// rxWQE is a receive WQE the peer's Sends will land in.
type rxWQE struct {
	wrID uint64
	bbs  uint16
	sgl  [][3]uint64 // addr, length, lkey
	cap  int
}

// rxMsg is a Send message of the peer's stream.
type rxMsg struct {
	wqe   int    // the receive it consumes
	start uint32 // stream offset of its first FPDU
}

// rxSendQP is the untagged side of a co-simulated QP: its RQ, the
// region its receive buffers are in, the STags the peer may invalidate.
type rxSendQP struct {
	rqBase    uint64
	rqLog     uint32
	recv      uint64
	recvSize  uint64
	recvSTag  mem.STag
	inv       []mem.STag
	invUsed   int
	wqes      []rxWQE
	msgs      []rxMsg
	msn       uint32
	posted    int    // WQEs posted (both sides)
	postedBlk uint16 // RQ blocks posted
	doneBlk   uint16 // RQ blocks the RTL completed
	rtlDone   int    // WQEs the RTL completed
	want, got []placed
	cplWant   []rxCpl
	cplGot    []rxCpl
	fpduEnds  []uint32 // stream offset past each FPDU of the Sends
}

func (s *rxSendQP) init(r Rand, i int) {
	s.rqBase = 0x3000_0000 + uint64(i)<<24
	s.rqLog = uint32(2 + r.IntN(5))
	s.recv = 0xC000_0000 + uint64(i)<<20
	s.recvSize = 1 << 16
	s.msn = 1
}

func (s *rxSendQP) inRecv(a uint64) bool { return a >= s.recv && a < s.recv+s.recvSize }

// limit is how far the peer's stream may be written into the ring: up to
// the first Send whose receive is not posted yet (the model takes every
// FPDU at once, so its receive must be there).
func (s *rxSendQP) limit(n uint32) uint32 {
	for _, m := range s.msgs {
		if m.wqe >= s.posted {
			return min(n, m.start)
		}
	}
	return n
}

// registerRecv writes q's receive region (local write, PD-scoped) and its
// invalidatable STags (bound to q's stream) into both STag tables.
func (c *rxCosim) registerRecv(q *rxQP, idx uint32) {
	r := c.rng
	entry := func(idx uint32, qp uint32, base uint64, size uint64, acc mem.Access) mem.STag {
		key := uint8(r.Uint32())
		for _, rw := range [][2]uint32{
			{pr.StagIndex, idx},
			{pr.StagCtrl, uint32(key) | uint32(acc)<<pr.StagCtrlAccessShift | 1<<pr.StagCtrlValidShift},
			{pr.StagPd, q.pd}, {pr.StagQp, qp},
			{pr.StagBaseLo, uint32(base)}, {pr.StagBaseHi, uint32(base >> 32)},
			{pr.StagLenLo, uint32(size)}, {pr.StagLenHi, 0},
			{pr.StagAddrLo, uint32(base)}, {pr.StagAddrHi, uint32(base >> 32)},
			{pr.StagPbl, 0}, {pr.StagCommit, 0},
		} {
			c.regWrite(rw[0], rw[1])
		}
		return mem.MakeSTag(idx, key)
	}
	q.snd.recvSTag = entry(idx, 0, q.snd.recv, q.snd.recvSize, mem.LocalWrite)
	for k := 0; k < rxInvSTags; k++ {
		q.snd.inv = append(q.snd.inv, entry(idx+1+uint32(k), q.n, q.region, 4096, mem.RemoteWrite))
	}
}

// sendMessage appends a receive WQE and a Send message into it (0 B to
// the WQE's capacity, several KiB at most, in segments of at most seg
// payload octets) to q's plan and stream.
func (c *rxCosim) sendMessage(q *rxQP, seg int) { c.sendLonger(q, seg, 0) }

// sendLonger is sendMessage, over bytes longer than its receive WQE's
// buffers when over is not 0 (a Message Too Long).
func (c *rxCosim) sendLonger(q *rxQP, seg, over int) {
	r := c.rng
	s := &q.snd
	nsge := r.IntN(5)
	if r.Chance(16) {
		nsge = r.IntN(cs.MaxSGE + 1)
	}
	w := rxWQE{wrID: r.Uint64()}
	for i := 0; i < nsge; i++ {
		n := r.IntN(2000)
		if r.Chance(32) {
			n = 0
		}
		addr := s.recv + uint64(r.IntN(int(s.recvSize)-n+1))
		w.sgl = append(w.sgl, [3]uint64{addr, uint64(n), uint64(s.recvSTag)})
		w.cap += n
	}
	need := (cs.WQEHdr + nsge*cs.SGESize + cs.BB - 1) / cs.BB
	w.bbs = uint16(need + r.IntN(cs.MaxWQEBBs-need+1))
	if w.bbs > 1<<s.rqLog {
		w.bbs = uint16(need)
	}
	if int(w.bbs) > 1<<s.rqLog {
		// The ring is too small for this SGL: fewer SGEs.
		w.sgl, w.cap, w.bbs = nil, 0, 1
	}
	s.wqes = append(s.wqes, w)
	n := r.IntN(w.cap + 1)
	if r.Chance(64) {
		n = w.cap
	}
	n = min(n, 6000)
	if over > 0 {
		n = w.cap + over
	}
	op := []rdmap.Opcode{rdmap.OpSend, rdmap.OpSendSE, rdmap.OpSendInvalidate, rdmap.OpSendSEInvalidate}[r.IntN(4)]
	var inv uint32
	if op == rdmap.OpSendInvalidate || op == rdmap.OpSendSEInvalidate {
		if s.invUsed == len(s.inv) {
			op = rdmap.OpSend
		} else {
			st := s.inv[s.invUsed]
			s.invUsed++
			inv = uint32(st)
			c.modelInvs = append(c.modelInvs, st.Index())
		}
	}
	s.msgs = append(s.msgs, rxMsg{wqe: len(s.wqes) - 1, start: uint32(len(q.stream))})
	for off := 0; ; {
		k := min(seg, n-off)
		ulp := ddp.UntaggedFields{Last: off+k == n, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, op)),
			RsvdULP1: inv, QN: uint32(rdmap.QNSend), MSN: s.msn, MO: uint32(off)}.Append(nil)
		for i := 0; i < k; i++ {
			ulp = append(ulp, byte(r.Uint32()))
		}
		var err error
		q.stream, err = q.framer.AppendFPDU(q.stream, ulp)
		require.NoError(c.t, err)
		s.fpduEnds = append(s.fpduEnds, uint32(len(q.stream)))
		off += k
		if off == n {
			break
		}
	}
	s.msn++
}

// postRecv posts the planned receive WQEs of q, in both host memories,
// while its RQ has room (blocks the RTL completed are free again).
func (c *rxCosim) postRecv(q *rxQP) {
	s := &q.snd
	size := uint16(1) << s.rqLog
	start := s.posted
	for s.posted < len(s.wqes) {
		w := s.wqes[s.posted]
		if s.postedBlk-s.doneBlk+w.bbs > size {
			break
		}
		b := make([]byte, int(w.bbs)*cs.BB)
		h := cs.WQE(b)
		h.SetOpcode(cs.WQEOpcodeRecv)
		h.SetBBS(uint8(w.bbs))
		h.SetNSGE(uint8(len(w.sgl)))
		h.SetWRID(w.wrID)
		for i, e := range w.sgl {
			g := cs.SGE(b[cs.WQEHdr+i*cs.SGESize:])
			g.SetAddr(e[0])
			g.SetLength(uint32(e[1]))
			g.SetLKey(uint32(e[2]))
		}
		for k := uint16(0); k < w.bbs; k++ {
			a := s.rqBase + uint64((s.postedBlk+k)&(size-1))*cs.BB
			blk := b[int(k)*cs.BB : int(k+1)*cs.BB]
			c.mhost.mem.Write(a, blk)
			c.rtlMem.Write(a, blk)
		}
		s.postedBlk += w.bbs
		s.posted++
	}
	if s.posted == start {
		return
	}
	c.modelW(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBRQPI, uint32(s.postedBlk))
	c.runModel()
	c.qpDoorbellRTL("RQ_PI", q.n, uint32(s.postedBlk))
}

func (c *rxCosim) modelCompletion(dw cardmodel.DMAWrite) {
	e := cs.CQE(dw.Data)
	q := c.byQP(uint32(e.QPN()))
	require.NotNil(c.t, q, "a CQE of QP %d", e.QPN())
	q.snd.cplWant = append(q.snd.cplWant, rxCpl{cq: 1, qpn: uint32(e.QPN()), wrID: e.WRID(), byteLen: e.ByteLen(), op: uint8(e.Opcode()),
		stat: uint8(e.Status()), invSTag: e.InvSTag(), sol: e.Solicited(), invd: e.Invalidated()})
}

func (c *rxCosim) takeCompletion() {
	g := func(n string) uint64 { return c.get("m_cpl_" + n) }
	k := rxCpl{cq: uint32(g("cq")), qpn: uint32(g("qpn")), wrID: g("wr_id"), byteLen: uint32(g("byte_len")), op: uint8(g("opcode")),
		stat: uint8(g("status")), invSTag: uint32(g("inv_stag")), sol: g("solicited") == 1, invd: g("invalidated") == 1}
	require.Zero(c.t, g("term_layer")|g("term_type")|g("term_code"), "a receive completion with Terminate fields")
	require.Zero(c.t, g("silent"), "cycle %d: a record without a CQE (no WQE read faults here)", c.cycle)
	q := c.byQP(k.qpn)
	require.NotNil(c.t, q, "cycle %d: a completion of QP %d", c.cycle, k.qpn)
	s := &q.snd
	require.Less(c.t, s.rtlDone, len(s.wqes), "QP %d: more completions than receives", q.n)
	s.doneBlk += s.wqes[s.rtlDone].bbs
	require.Equal(c.t, s.doneBlk, uint16(g("rq_ci")), "cycle %d QP %d: RQ_CI with the completion of receive %d", c.cycle, q.n, s.rtlDone)
	s.rtlDone++
	s.cplGot = append(s.cplGot, k)
}

func (c *rxCosim) byQP(n uint32) *rxQP {
	for _, q := range c.qps {
		if q.n == n {
			return q
		}
	}
	return nil
}

func comparePlaced(t testing.TB, qp uint32, what string, want, got []placed) {
	require.Equal(t, len(want), len(got), "QP %d: %s bytes placed", qp, what)
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("QP %d: %s byte %d: model %#x=%#x, RTL %#x=%#x", qp, what, i, want[i].addr, want[i].b, got[i].addr, got[i].b)
		}
	}
}

// Untagged Sends land in the receive WQEs exactly as the card model puts
// them: four QPs whose peers send Sends (all four opcodes, with Solicited
// Event and Invalidate) of 0 B to 6 KiB in segments of random size, into
// receive WQEs of 0 to 30 SGEs (empty ones too) posted into RQs of 4 to
// 64 blocks that wrap many times, interleaved with RDMA Writes; ring reads
// and WQE reads answered after 0 to 250 cycles in random order, random
// AXI and completion backpressure. Every placed byte (per QP, in order),
// every receive completion and every invalidated STag is compared.
func TestCardRxSendCosim(t *testing.T) {
	for _, w := range gen.CardRxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			t.Logf("seed %d", seed)
			c := newRxCosim(t, w, seed, 4, nil)
			for _, q := range c.qps {
				seg := 1 + c.rng.IntN(1400)
				for len(q.stream) < 60000 {
					if c.rng.Chance(64) {
						rdmaWrite(c.rng, q, 1+c.rng.IntN(2000), 1+c.rng.IntN(1400))
						continue
					}
					c.sendMessage(q, seg)
				}
			}
			c.drive(400_000)
			n, b := 0, 0
			for _, q := range c.qps {
				n += len(q.snd.cplGot)
				b += len(q.snd.got)
			}
			require.NotZero(t, b)
			t.Logf("%d cycles, %d receive completions, %d Send payload bytes, %d STags invalidated", c.cycle, n, b, len(c.invs))
		})
	}
}

// rxSendBench builds a one-QP co-simulation with every channel ready and
// every read and write answered lat cycles after its address.
func rxSendBench(b *testing.B, w, lat int) (*rxCosim, *rxQP) {
	c := newRxCosim(b, w, 1, 1, func(q *rxQP) { q.markers, q.crc, q.rxsLog = true, true, 20 })
	c.fixed, c.maxLat = true, lat
	q := c.qps[0]
	q.snd.rqLog = 10
	return c, q
}

// oneSGE plans a receive WQE of one SGE of n bytes at the start of q's
// receive region and a Send of n bytes into it, in segments of seg.
func (c *rxCosim) oneSGE(q *rxQP, n, seg int) {
	s := &q.snd
	s.wqes = append(s.wqes, rxWQE{wrID: uint64(len(s.wqes)), bbs: 1, sgl: [][3]uint64{{s.recv, uint64(n), uint64(s.recvSTag)}}, cap: n})
	s.msgs = append(s.msgs, rxMsg{wqe: len(s.wqes) - 1, start: uint32(len(q.stream))})
	for off := 0; ; off += seg {
		k := min(seg, n-off)
		ulp := ddp.UntaggedFields{Last: off+k == n, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpSend)),
			QN: uint32(rdmap.QNSend), MSN: s.msn, MO: uint32(off)}.Append(nil)
		ulp = append(ulp, make([]byte, k)...)
		var err error
		q.stream, err = q.framer.AppendFPDU(q.stream, ulp)
		require.NoError(c.t, err)
		s.fpduEnds = append(s.fpduEnds, uint32(len(q.stream)))
		if off+k == n {
			break
		}
	}
	s.msn++
}

// BenchmarkCardRxSendLatency measures, for single 64-byte Sends (one
// FPDU, markers and CRC on) on an idle engine with a 20-cycle DMA
// latency, the cycles from the ring read beat holding the FPDU's last
// octet to the receive completion record (m_cpl) being taken. The WQE is
// posted long before; its read (one round trip) and the payload write's
// response (one more) are inside the figure.
func BenchmarkCardRxSendLatency(b *testing.B) {
	for _, w := range gen.CardRxWidths {
		b.Run(fmt.Sprintf("w%d", w), func(b *testing.B) {
			c, q := rxSendBench(b, w, 20)
			var sum, worst uint64
			const n = 32
			for i := 0; i < n; i++ {
				c.oneSGE(q, 64, 64)
				c.postRecv(q)
				c.feed(q, 1<<20)
				for start := c.cycle; len(q.snd.cplGot) <= i; c.step() {
					require.Less(b, c.cycle-start, uint64(rxHandshakeLimit), "watchdog: Send %d's completion not taken", i)
				}
				d := c.cycle - 1 - c.lastR
				sum += d
				worst = max(worst, d)
				c.finish(100_000)
			}
			b.ReportMetric(float64(sum)/n, "cycles")
			b.ReportMetric(float64(worst), "max_cycles")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkCardRxSendThroughput measures Sends of 64 KiB in MULPDU-sized
// segments (EMSS 1460: 1422 payload octets) into one-SGE receive WQEs,
// markers and CRC on, every read and write answered 250 cycles after its
// address: Send payload bytes written per cycle, from the first payload
// write on, over 100,000 cycles.
func BenchmarkCardRxSendThroughput(b *testing.B) {
	for _, w := range gen.CardRxWidths {
		b.Run(fmt.Sprintf("w%d", w), func(b *testing.B) {
			c, q := rxSendBench(b, w, 250)
			c.record = false
			for i := 0; i < 64; i++ {
				c.oneSGE(q, 64<<10, 1422)
			}
			b.ResetTimer()
			var start, bytes0 uint64
			const cycles = 100_000
			for start == 0 || c.cycle-start < cycles {
				c.postRecv(q)
				c.feed(q, 1<<20)
				c.step()
				if start == 0 && c.sndBytes > 0 {
					start, bytes0 = c.cycle, c.sndBytes
				}
				require.Less(b, c.cycle, uint64(10*cycles), "watchdog")
			}
			b.ReportMetric(float64(c.sndBytes-bytes0)/cycles, "bytes/cycle")
			b.ReportMetric(float64(c.sndBytes-bytes0)/cycles/float64(w/8), "beats/cycle")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// settle steps until card_rx has consumed every QP's stream as far as the
// model has (up to the last whole FPDU fed, or to the end of the FPDU a
// receive check failed), given every completion the model wrote and has
// no write awaiting its response, then 300 cycles more (nothing else may
// come).
func (c *rxCosim) settle(limit uint64) {
	for start := c.cycle; ; c.step() {
		done := len(c.wr.bq) == 0 && len(c.wr.awq) == 0 && len(c.wr.wq) == 0
		for _, q := range c.qps {
			done = done && q.rtlCI == c.modelCI[q.n] && len(q.snd.cplGot) >= len(q.snd.cplWant)
		}
		if done {
			break
		}
		require.Less(c.t, c.cycle-start, limit, "watchdog: card_rx did not catch up with the model: %s", c.progress())
	}
	for i := 0; i < 300; i++ {
		c.step()
	}
}

// qpErrorRTL gives card_rx QP_CMD ERROR for QP n.
func (c *rxCosim) qpErrorRTL(n uint32) {
	c.set("qp_num_qpn", uint64(n))
	c.set("qp_cmd_op", uint64(cs.QPOpError))
	c.handshake("qp_cmd", fmt.Sprintf("QP %d's ERROR", n))
}

// A QP put in error (QP_CMD ERROR, or STREAM.RX_LOST) flushes its posted
// receive WQEs as the card model does: in order, WR_FLUSH_ERR with length
// 0 and RQ_CI past each, the one a Send had started to fill included, and
// those posted after the error too; a live QP beside them is untouched.
// Four QPs each get one to three Sends and up to two receives more; each
// QP's stream is fed up to a random FPDU (a message may be cut short);
// then QP 0 and 1 get ERROR, QP 2 RX_LOST, QP 3 stays live, and the
// receives not yet posted are posted. QP 4's last Send is longer than
// its receive (a Message Too Long: m_rxterm, and that receive's flush
// completes LOC_LEN_ERR). Every receive completion (all fields, RQ_CI)
// and every placed byte is compared.
func TestCardRxFlush(t *testing.T) {
	for _, w := range gen.CardRxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			t.Logf("seed %d", seed)
			for round := 0; round < 6; round++ {
				c := newRxCosim(t, w, seed+uint64(round), 5, nil)
				c.allowTerm = true
				r := c.rng
				for i, q := range c.qps {
					seg := 1 + r.IntN(1400)
					for k := 1 + r.IntN(3); k > 0; k-- {
						c.sendMessage(q, seg)
					}
					if i == 4 {
						c.sendLonger(q, seg, 1+r.IntN(100))
						q.stop = uint32(len(q.stream))
						continue
					}
					for k := r.IntN(3); k > 0; k-- {
						s := &q.snd
						s.wqes = append(s.wqes, rxWQE{wrID: r.Uint64(), bbs: uint16(1 + r.IntN(min(8, 1<<s.rqLog)))})
					}
					ends := q.snd.fpduEnds
					q.stop = ends[r.IntN(len(ends))]
					if r.Chance(64) {
						q.stop = ends[len(ends)-1]
					}
				}
				for busy := true; busy; {
					busy = false
					for _, q := range c.qps {
						c.postRecv(q)
						busy = c.feed(q, 3000) || busy
						for k := r.IntN(200); k > 0; k-- {
							c.step()
						}
					}
					c.settle(2_000_000)
				}
				for i, q := range c.qps[:3] {
					if i < 2 {
						c.modelW(cs.QPNum, q.n)
						c.modelW(cs.QPCmd, uint32(cs.QPOpError))
						c.model.Run()
						c.qpErrorRTL(q.n)
					} else {
						c.modelW(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBStream, 1<<cs.QPDBStreamRXLostShift)
						c.model.Run()
						c.qpDoorbellRTL("STREAM", q.n, 1<<cs.QPDBStreamRXLostShift)
					}
				}
				c.settle(2_000_000)
				for _, q := range c.qps {
					for q.snd.posted < len(q.snd.wqes) {
						before := q.snd.posted
						c.postRecv(q)
						c.settle(2_000_000)
						if q.snd.posted == before {
							break // the live QP's RQ is full
						}
					}
				}
				flushed, tooLong := 0, 0
				for i, q := range c.qps {
					comparePlaced(t, q.n, "Send", q.snd.want, q.snd.got)
					require.Equal(t, q.snd.cplWant, q.snd.cplGot, "seed %d QP %d: receive completions", seed+uint64(round), q.n)
					for _, k := range q.snd.cplGot {
						switch k.stat {
						case uint8(cs.WCStatusWRFlushErr):
							require.NotEqual(t, 3, i, "seed %d: the live QP %d flushed a receive", seed+uint64(round), q.n)
							flushed++
						case uint8(cs.WCStatusLocLenErr):
							require.Equal(t, 4, i, "seed %d: QP %d: LOC_LEN_ERR", seed+uint64(round), q.n)
							tooLong++
						}
					}
				}
				require.NotZero(t, flushed, "seed %d: nothing was flushed", seed+uint64(round))
				require.Equal(t, 1, tooLong, "seed %d: LOC_LEN_ERR completions", seed+uint64(round))
				require.Equal(t, []uint64{0x1205}, c.terms, "seed %d: m_rxterm causes (DDP Message Too Long)", seed+uint64(round))
				t.Logf("round %d: %d receives flushed, %d cycles", round, flushed, c.cycle)
			}
		})
	}
}

// TestCardRxBadRQDoorbell rings RQ_PI doorbells that the card model's
// ringMoved refuses, at a point where the Send engine has taken the head
// WQE of a message in progress (its first FPDU placed, the rest not yet
// in the ring): one behind those taken blocks, one more than the RQ's
// size past RQ_CI. card_rx reports each on m_baddb and leaves RQ_PI where
// it was, so the QP's flush (the ERROR the top then gives) completes the
// WQE that was taken, as the model does; a good doorbell after them is
// not reported.
func TestCardRxBadRQDoorbell(t *testing.T) {
	for _, w := range gen.CardRxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			t.Logf("seed %d", seed)
			c := newRxCosim(t, w, seed, 1, nil)
			c.allowBadDB = true
			q := c.qps[0]
			c.oneSGE(q, 3000, 1000)
			q.stop = q.snd.fpduEnds[0]
			c.postRecv(q)
			for c.feed(q, 3000) {
				c.settle(2_000_000)
			}
			c.settle(2_000_000)
			require.NotEmpty(t, q.snd.got, "seed %d: the first FPDU was not placed", seed)
			require.Empty(t, q.snd.cplGot, "seed %d: the message completed", seed)
			db := cs.QPDBBase + q.n*cs.QPDBStride + cs.QPDBRQPI
			for _, pi := range []uint32{0, 2 + 1<<q.snd.rqLog, 1} {
				c.modelW(db, pi)
				c.model.Run()
				c.qpDoorbellRTL("RQ_PI", q.n, pi)
				for range 50 {
					c.step()
				}
			}
			require.Equal(t, []uint32{q.n, q.n}, c.badDB, "seed %d: the bad RQ_PI doorbells reported", seed)
			c.modelW(cs.QPNum, q.n)
			c.modelW(cs.QPCmd, uint32(cs.QPOpError))
			c.model.Run()
			c.qpErrorRTL(q.n)
			c.settle(2_000_000)
			require.Equal(t, q.snd.cplWant, q.snd.cplGot, "seed %d: receive completions", seed)
			require.Len(t, q.snd.cplGot, 1, "seed %d: the taken WQE's flush", seed)
			require.Equal(t, uint8(cs.WCStatusWRFlushErr), q.snd.cplGot[0].stat, "seed %d: its status", seed)
		})
	}
}
