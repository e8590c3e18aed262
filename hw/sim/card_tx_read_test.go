package sim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	pr "github.com/openiwarp/openiwarp/host/driver/regs"
	"github.com/openiwarp/openiwarp/host/driver/stagtab"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// The Read sink region of the RDMA Read co-simulation: one contiguous MR
// in the model's STag table (the model's receive side places the Read
// Responses there; in the RTL card placement does).
const (
	ctxSinkIndex = 7
	ctxSinkKey   = 0x5a
	ctxSinkSTag  = ctxSinkIndex<<8 | ctxSinkKey
	ctxSinkHost  = 0x6000_0000
	ctxSinkLen   = 1 << 20
	ctxRXSLog    = 16
	ctxMaxRead   = 1024
)

// ctxReads is the peer's side of one QP's RDMA Reads: its view of each
// transmit stream (the model's and the RTL's), and the Read Responses it
// sends back (into the model's receive ring; as Read done records to the
// RTL).
type ctxReads struct {
	mDefr, rDefr *mpa.Deframer
	mFed         int              // model stream bytes fed to mDefr
	rFed         uint32           // RTL stream offset fed to rDefr
	rHeld        []CardTxReadDone // Read dones of requests seen while the peer holds its answers
	rx           mpa.Framer
	rxPI         uint32
	requests     int    // Read Requests seen in the model's stream
	rRequests    int    // Read Requests seen in the RTL's stream
	mute         bool   // the peer answers no more Read Requests
	rrMSN        uint32 // the peer's next Read Request MSN (requests to us)
}

// readSink registers the Read sink region in the model's STag table
// (every staging register written: the gather bench's regions leave
// theirs behind).
func (b *ctxBench) readSink() {
	e := mem.Entry{Valid: true, Key: ctxSinkKey, Access: mem.LocalWrite, PD: 1, Length: ctxSinkLen}
	for _, w := range stagtab.AppendWrites(nil, ctxSinkIndex, e, stagtab.Contiguous(ctxSinkHost), 0) {
		b.w32(cs.PlacementWindow+w.Off, w.Val)
	}
	b.rd = true
	for _, q := range b.qps {
		b.readState(q)
	}
}

// holdReads makes the peer hold every Read Response (the Reads stay
// outstanding) and fences nothing, so that WQEs posted behind a Read start.
func (b *ctxBench) holdReads() {
	b.readSink()
	b.noFence, b.hold = true, true
}

// readState starts the Read peer of q afresh (new streams).
func (b *ctxBench) readState(q *ctxQP) {
	cfg := mpa.DeframerConfig{Markers: q.cfg.Markers, CRC: q.cfg.CRC, Rev: mpa.Rev1}
	if q.cfg.Rev0 {
		cfg.Rev = mpa.Rev0
	}
	q.rd = ctxReads{mDefr: mpa.NewDeframer(cfg), rDefr: mpa.NewDeframer(cfg), rx: mpa.Framer{CRC: q.cfg.CRC}}
}

// postRead writes an RDMA Read WQE into q's SQ (both memories): the sink
// is one SGE in the sink region (or none: a zero-length Read), fence at
// random, sometimes one block more than needed; SQ_PI now or later.
func (b *ctxBench) postRead(q *ctxQP) {
	r := b.rng
	bbs := 1
	if r.Chance(30) {
		bbs++
	}
	wqe := make([]byte, bbs*cs.BB)
	h := cs.WQE(wqe)
	h.SetOpcode(cs.WQEOpcodeRDMARead)
	h.SetSignaled(r.Chance(160))
	h.SetFence(r.Chance(60) && !b.noFence)
	h.SetBBS(uint8(bbs))
	h.SetWRID(r.Uint64())
	h.SetRemoteAddr(r.Uint64())
	h.SetRKey(r.Uint32())
	h.SetInvSTag(r.Uint32())
	if !r.Chance(20) {
		h.SetNSGE(1)
		n := uint32(r.IntN(ctxMaxRead + 1))
		s := cs.SGE(wqe[cs.WQEHdr:])
		s.SetAddr(uint64(r.IntN(ctxSinkLen - ctxMaxRead)))
		s.SetLength(n)
		s.SetLKey(ctxSinkSTag)
	}
	b.postBlocks(q, wqe)
	if r.Chance(150) && !q.late {
		b.ring(q)
	}
}

// readRequests feeds stream bytes to a deframer and calls fn for each
// RDMA Read Request in them.
func (b *ctxBench) readRequests(d *mpa.Deframer, p []byte, fn func(rdmap.ReadRequestFields)) {
	err := d.Feed(p, func(u mpa.ULPDU) error {
		seg, err := ddp.Parse(u.Data)
		if err != nil {
			return err
		}
		if !seg.Control.Tagged() && seg.Untagged().QN() == rdmap.QNReadRequest {
			fn(rdmap.ReadRequest(seg.Payload).Fields())
		}
		return nil
	})
	require.NoError(b.t, err, "seed %d: deframing a transmit stream", b.seed)
}

// answerModel answers the Read Requests the model has written since the
// last call: a Read Response of the requested size into the QP's receive
// ring, and its RXS_PI doorbell. It reports whether it sent any.
func (b *ctxBench) answerModel() bool {
	if b.hold {
		return false
	}
	sent := false
	for _, q := range b.qps {
		st := b.mStat[q.cfg.Num]
		s := b.mRing[q.cfg.Num][q.rd.mFed:]
		q.rd.mFed += len(s)
		b.readRequests(q.rd.mDefr, s, func(rr rdmap.ReadRequestFields) {
			q.rd.requests++
			if q.rd.mute {
				return
			}
			dv, rv := ddp.Version1, rdmap.Version1
			if q.cfg.Rev0 {
				dv, rv = ddp.VersionRDMAC, 0
			}
			u := ddp.TaggedFields{Last: true, Version: dv, RsvdULP: uint8(rdmap.NewControl(rv, rdmap.OpReadResponse)),
				STag: rr.SinkSTag, TO: rr.SinkTO}.Append(nil)
			for i := uint32(0); i < rr.Size; i++ {
				u = append(u, byte(b.rng.Uint32()))
			}
			f, err := q.rd.rx.AppendFPDU(nil, u)
			require.NoError(b.t, err)
			ring := uint32(1) << ctxRXSLog
			require.LessOrEqual(b.t, q.rd.rxPI-cs.QPStat(st).RXSCI()+uint32(len(f)), ring, "seed %d: receive ring full", b.seed)
			base := ctxRXS + uint64(q.cfg.Num)<<16
			for len(f) > 0 {
				pos := q.rd.rxPI & (ring - 1)
				k := min(uint32(len(f)), ring-pos)
				b.mh.mem.Write(base+uint64(pos), f[:k])
				f, q.rd.rxPI = f[k:], q.rd.rxPI+k
			}
			b.w32(cs.QPDBBase+q.cfg.Num*cs.QPDBStride+cs.QPDBRXSPI, q.rd.rxPI)
			sent = true
		})
	}
	return sent
}

// answerRTL reads the RTL's transmit stream of q up to offset pi and
// gives card_tx a Read done for each Read Request in it, as placement
// would once the Read Response is placed. It reads every byte written
// (the host gives ring space back as the writes land, so a gathered
// message may wrap over what is not read yet); while the peer holds its
// answers (hold), the Read dones wait.
func (b *ctxBench) answerRTL(q *ctxQP, pi uint32) {
	ring := uint32(1) << q.cfg.TXSLog
	for q.rd.rFed != pi {
		pos := q.rd.rFed & (ring - 1)
		k := min(pi-q.rd.rFed, ring-pos)
		p := make([]byte, k)
		b.rtl.Mem.Read(q.cfg.TXSBase+uint64(pos), p)
		q.rd.rFed += k
		b.readRequests(q.rd.rDefr, p, func(rr rdmap.ReadRequestFields) {
			q.rd.rRequests++
			q.rd.rHeld = append(q.rd.rHeld, CardTxReadDone{QPN: q.cfg.Num, STag: rr.SinkSTag, TO: rr.SinkTO, Len: uint16(ddp.TaggedHeaderLen + rr.Size)})
		})
	}
	if b.hold {
		return
	}
	if !q.rd.mute {
		for _, d := range q.rd.rHeld {
			b.rtl.ReadDone(d)
		}
	}
	q.rd.rHeld = q.rd.rHeld[:0]
}

// postReads posts up to n WQEs to q while its SQ has room, each an RDMA
// Read with chance reads out of 256, else an inline WQE, and rings SQ_PI.
func (b *ctxBench) postReads(q *ctxQP, n, reads int) {
	for ; n > 0 && q.sqFree() >= cs.MaxWQEBBs; n-- {
		switch {
		case b.rng.Chance(reads):
			b.postRead(q)
		case len(b.mrs) > 0 && b.rng.Chance(128):
			// A gathered WQE (the gather bench's regions): its CQE's
			// length, when a Read's completion walks to it, is its SGL's.
			op := []cs.WQEOpcode{cs.WQEOpcodeSend, cs.WQEOpcodeSendInv, cs.WQEOpcodeRDMAWrite}[b.rng.IntN(3)]
			b.postSGL(q, op, b.randomSGL(3000))
		default:
			b.post(q, 200)
		}
	}
	b.ring(q)
}

// TestCardTxReads co-simulates card_tx's RDMA Read requester with the
// card model: random Reads (one sink SGE or none, 0 to 1 KiB, fenced at
// random) mixed with inline Sends, Sends with Invalidate and RDMA Writes
// on 8 QPs with ORD 1 to 4; the peer answers every Read Request (the
// model gets a Read Response on its receive ring, the RTL a Read done);
// random DMA latency and AXI, doorbell, Read done and record backpressure.
// Every stream byte (the Read Requests included), every CQE in posting
// order and the final SQ_CI and TXS_PI must be the model's.
func TestCardTxReads(t *testing.T) {
	for _, w := range gen.CardTxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newCtxBench(t, w, seed, CardTxTiming{ReadLatency: 1, ReadJitter: 300, Random: true}, 8,
				func(r Rand) uint32 { return uint32(128 + r.IntN(1024)) })
			r := b.rng
			for round := 0; round < 30; round++ {
				for _, q := range b.qps {
					b.postReads(q, r.IntN(6), 110)
				}
				b.runModel()
				b.runRTL(2_000_000)
			}
			b.compare()
			var reads, cqes int
			for _, q := range b.qps {
				reads += q.rd.requests
			}
			for _, rec := range b.rtl.Records {
				if rec.CQE && rec.Opcode == uint8(cs.WCOpcodeRDMARead) {
					cqes++
				}
			}
			require.Greater(t, reads, 100, "seed %d: Read Requests", seed)
			require.Greater(t, cqes, 50, "seed %d: Read completions", seed)
			t.Logf("seed %d: %d Read Requests (%d signaled completions), %d records, %d cycles", seed, reads, cqes, len(b.rtl.Records), b.rtl.Cycles)
		})
	}
}

// peerReadRequest sends q a Read Request of 0 to maxLen bytes from a
// random place of src to a random sink: into the model's receive ring
// (its RXS_PI doorbell; the model checks it as card_rx would) and as
// card_rx's record to the RTL's responder.
func (b *ctxBench) peerReadRequest(q *ctxQP, src ctxMR, maxLen int) {
	r := b.rng
	n := r.IntN(maxLen + 1)
	if r.Chance(30) {
		n = 0
	}
	n = min(n, int(src.length))
	rr := rdmap.ReadRequestFields{SinkSTag: r.Uint32(), SinkTO: r.Uint64(), Size: uint32(n), SrcSTag: uint32(src.stag),
		SrcTO: src.base + uint64(r.IntN(int(src.length)-n+1))}
	b.sendReadRequest(q, rr)
}

// sendReadRequest sends q the peer's Read Request rr: into the model's
// receive ring (its RXS_PI doorbell; the model checks it as card_rx
// would) and as card_rx's record to the RTL's responder (which checks the
// source again before it reads it).
func (b *ctxBench) sendReadRequest(q *ctxQP, rr rdmap.ReadRequestFields) {
	dv, rv := ddp.Version1, rdmap.Version1
	if q.cfg.Rev0 {
		dv, rv = ddp.VersionRDMAC, 0
	}
	if q.rd.rrMSN == 0 {
		q.rd.rrMSN = 1
	}
	u := ddp.UntaggedFields{Last: true, Version: dv, RsvdULP0: uint8(rdmap.NewControl(rv, rdmap.OpReadRequest)),
		QN: rdmap.QNReadRequest, MSN: q.rd.rrMSN}.Append(nil)
	q.rd.rrMSN++
	rec := CardTxReadRequest{QPN: q.cfg.Num, SinkSTag: rr.SinkSTag, SinkTO: rr.SinkTO, Size: rr.Size, SrcSTag: rr.SrcSTag, SrcTO: rr.SrcTO}
	copy(rec.Hdr[:], u)
	f, err := q.rd.rx.AppendFPDU(nil, rr.Append(u))
	require.NoError(b.t, err)
	ring := uint32(1) << ctxRXSLog
	base := ctxRXS + uint64(q.cfg.Num)<<16
	for len(f) > 0 {
		pos := q.rd.rxPI & (ring - 1)
		k := min(uint32(len(f)), ring-pos)
		b.mh.mem.Write(base+uint64(pos), f[:k])
		f, q.rd.rxPI = f[k:], q.rd.rxPI+k
	}
	b.w32(cs.QPDBBase+q.cfg.Num*cs.QPDBStride+cs.QPDBRXSPI, q.rd.rxPI)
	b.rtl.ReadRequest(rec)
	b.rreqs = append(b.rreqs, q.cfg.Num)
}

// TestCardTxReadResponses co-simulates card_tx's responder with the card
// model: on 6 QPs (IRD 4), rounds of 1 to 4 Read Requests from the peer
// (0 to 20 KiB, zero-length ones too, from a contiguous and a paged
// region that allow remote reads; up to 24 waiting, more than the pool's
// 16 slots) alternate with rounds of inline and gathered WQEs and RDMA
// Reads (whose responses the peer sends back); random DMA latency and
// read interleaving, AXI, record and m_rreq_done backpressure. Every
// stream byte (the Read Responses' included), CQE and status value must be
// the model's, and every record must give one m_rreq_done of its QP.
func TestCardTxReadResponses(t *testing.T) {
	for _, w := range gen.CardTxWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newGatherBench(t, w, seed, 6)
			r := b.rng
			srcs := []ctxMR{
				b.register(300, 1<<15, false, mem.Entry{PD: 1, Access: mem.RemoteRead}),
				b.register(301, 3<<13, true, mem.Entry{PD: 1, Access: mem.RemoteRead | mem.LocalWrite}),
			}
			ops := []cs.WQEOpcode{cs.WQEOpcodeSend, cs.WQEOpcodeSendInv, cs.WQEOpcodeRDMAWrite}
			for round := 0; round < 24; round++ {
				for _, q := range b.qps {
					if r.Chance(140) {
						for k := 1 + r.IntN(4); k > 0; k-- {
							maxLen := 1500
							if r.Chance(40) {
								maxLen = 20 << 10
							}
							b.peerReadRequest(q, srcs[r.IntN(len(srcs))], maxLen)
						}
						continue
					}
					free := q.sqFree()
					for k := r.IntN(4); k > 0 && free >= cs.MaxWQEBBs; k-- {
						switch {
						case r.Chance(80):
							b.postRead(q)
						case r.Chance(100) && gen.CardTxGathers(w):
							b.postSGL(q, ops[r.IntN(len(ops))], b.randomSGL(2000))
						default:
							b.post(q, cs.MaxInline)
						}
						free = q.sqFree()
					}
					b.ring(q)
				}
				b.runModel()
				b.runRTL(4_000_000)
			}
			b.compare()
			want, got := slices.Clone(b.rreqs), slices.Clone(b.rtl.RReqDone)
			slices.Sort(want)
			slices.Sort(got)
			require.Equal(t, want, got, "seed %d: one m_rreq_done per Read Request, of its QP", seed)
			halt, hq, _ := b.rtl.Halted()
			require.False(t, halt, "seed %d: QP %d halted", seed, hq)
			require.Greater(t, len(b.rreqs), 50, "seed %d: Read Requests", seed)
			t.Logf("seed %d: %d Read Requests answered, %d records, %d cycles", seed, len(b.rreqs), len(b.rtl.Records), b.rtl.Cycles)
		})
	}
}

// runRTLHeld runs the RTL, its Read Requests unanswered, until its
// stream of every QP is as long as the model's (which, its Reads
// unanswered too, sent every WQE behind them that no fence or ORD holds)
// and it has written every record it can; the watchdog names a QP the
// RTL left behind.
func (b *ctxBench) runRTLHeld(watchdog uint64) {
	t := b.t
	start := b.rtl.Cycles
	for quiet := 0; quiet < 4000; {
		behind := -1
		for _, q := range b.qps {
			if uint64(len(b.mRing[q.cfg.Num])-q.mBase) != b.rtl.RingBytes[q.cfg.Num] {
				behind = int(q.cfg.Num)
			}
		}
		if behind < 0 && !b.rtl.Pending() && !b.rtl.RecordOut() {
			quiet++
		} else {
			quiet = 0
		}
		require.NoError(t, b.rtl.Step(), "seed %d", b.seed)
		for ; b.seen < len(b.rtl.Records); b.seen++ {
			rec := b.rtl.Records[b.seen]
			for _, q := range b.qps {
				if q.cfg.Num == rec.QPN {
					q.rtlRecs++
					q.rtlSQCI = rec.SQCI
					q.rtlCI = rec.TXSPI
				}
			}
		}
		for _, q := range b.qps {
			if n := b.rtl.RingBytes[q.cfg.Num]; n != q.given {
				b.answerRTL(q, uint32(n)) // read before the space is given back
				q.given = n
				b.rtl.Doorbell(CardTxDoorbell{Kind: 3, QPN: q.cfg.Num, Value: uint32(n)})
			}
		}
		if b.rtl.Cycles-start > watchdog {
			t.Fatalf("seed %d: with Reads outstanding, the RTL's stream of QP %d has %d bytes, the model's %d", b.seed, behind,
				b.rtl.RingBytes[uint32(behind)], len(b.mRing[uint32(behind)])-b.qps[slices.IndexFunc(b.qps, func(q *ctxQP) bool { return int(q.cfg.Num) == behind })].mBase)
		}
	}
}

// TestCardTxReadOverlap co-simulates, with the card model, WQEs posted
// behind RDMA Reads whose responses have not come: random Reads (fenced
// or not) mixed with inline Sends, Sends with Invalidate and RDMA Writes
// (fenced or not, pushed or fetched) on 6 QPs with ORD 1 to 4. While the
// peer holds every Read Response, the RTL must send what the model sends
// (every WQE that no fence or ORD holds, RFC 5040 §7) with no completion
// of a WQE behind an outstanding Read; then the peer answers and every
// completion comes in posting order. Every stream byte, CQE (status,
// length) and final SQ_CI and TXS_PI must be the model's. Some rounds
// put a QP in error while WQEs sent behind its Reads wait: they
// complete as the model completes them (SUCCESS: they were sent), the
// Reads and the rest with WR_FLUSH_ERR. The gather variant mixes in
// WQEs gathered from SGLs (card_tx_tb, with placement's STag table).
func TestCardTxReadOverlap(t *testing.T) {
	for _, w := range gen.CardTxWidths {
		for _, kind := range []string{"inline", "gather"} {
			t.Run(fmt.Sprintf("%d/%s", w, kind), func(t *testing.T) {
				seed := seedFor(t.Name())
				readOverlap(t, w, kind == "gather", seed)
			})
		}
	}
}

// readOverlap is TestCardTxReadOverlap at width w, with gathered WQEs
// or not.
func readOverlap(t *testing.T, w int, gather bool, seed uint64) {
	var b *ctxBench
	if gather {
		b = newGatherBench(t, w, seed, 6)
	} else {
		b = newCtxBench(t, w, seed, CardTxTiming{ReadLatency: 1, ReadJitter: 300, Random: true}, 6,
			func(r Rand) uint32 { return uint32(128 + r.IntN(1024)) })
	}
	b.readSink()
	r := b.rng
	errs := 0
	for round := 0; round < 12; round++ {
		b.hold = true
		for _, q := range b.qps {
			b.postReads(q, 1+r.IntN(6), 90)
		}
		b.runModel()
		b.runRTLHeld(3_000_000)
		if round%4 == 2 {
			q := b.qps[r.IntN(len(b.qps))]
			b.command(q, cs.QPOpError)
			// card_rx places nothing on a QP in error, so no Read
			// done comes for the Reads outstanding at the error:
			// the model drops the responses, the RTL gets none.
			q.rd.mute = true
			b.hold = false
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			b.command(q, cs.QPOpDestroy)
			b.create(q)
			errs++
			continue
		}
		b.hold = false
		b.runModel()
		b.runRTL(3_000_000)
	}
	b.compare()
	t.Logf("seed %d: %d records, %d QPs put in error, %d cycles", seed, len(b.rtl.Records), errs, b.rtl.Cycles)
}

// A Read Request whose source fails the remote-read check when the
// response is to be sent (its STag with a wrong key, a region without
// the remote read right, a range past its end, a region invalidated
// after it was registered): card_rx passed it on (here the record goes
// to card_tx directly, as if the source were revoked after card_rx's
// check), the model refuses it as it comes. Both must end the QP the
// same way: the RDMAP remote protection Terminate with the Read
// Request's headers (RFC 5040 §4.8 with nothing sent: the model's
// ReadSourceRevoked), after the QP's earlier FPDUs, no byte of the
// response, the WQEs posted behind flushed, the IRD entry given back.
func TestCardTxRevokedSource(t *testing.T) {
	for _, w := range gen.CardTxWidths {
		for _, bad := range []string{"wrong key", "no remote read", "past the region", "invalidated"} {
			t.Run(fmt.Sprintf("%d/%s", w, bad), func(t *testing.T) {
				seed := seedFor(t.Name())
				b := newGatherBench(t, w, seed, 3)
				b.errOK = true
				q, good := b.qps[0], b.qps[1:]
				b.post(q, cs.MaxInline)
				b.ring(q)
				b.runModel()
				b.runRTL(1_000_000)
				before := b.rtl.RingBytes[q.cfg.Num]
				src := b.register(310, 1<<13, false, mem.Entry{PD: 1, Access: mem.RemoteRead})
				rr := rdmap.ReadRequestFields{SinkSTag: 0x4242_0001, SinkTO: 0x1000, Size: 512, SrcSTag: uint32(src.stag), SrcTO: src.base + 64}
				switch bad {
				case "wrong key":
					rr.SrcSTag ^= 1
				case "no remote read":
					o := b.register(311, 1<<13, false, mem.Entry{PD: 1, Access: mem.LocalWrite})
					rr.SrcSTag, rr.SrcTO = uint32(o.stag), o.base
				case "past the region":
					rr.SrcTO = src.base + src.length - 100
				case "invalidated":
					o := b.register(312, 1<<13, true, mem.Entry{PD: 1, Access: mem.RemoteRead})
					b.w32(cs.PlacementWindow+pr.StagInvalidate, 312)
					b.rtl.RegWrite(pr.StagInvalidate, 312)
					rr.SrcSTag, rr.SrcTO = uint32(o.stag), o.base
				}
				b.sendReadRequest(q, rr)
				// The Read Request first: a WQE posted as it comes may go
				// either side of it (the model takes it first).
				b.runModel()
				b.runRTL(1_000_000)
				for k := 1 + b.rng.IntN(2); k > 0 && q.sqFree() >= cs.MaxWQEBBs; k-- {
					b.post(q, cs.MaxInline) // flushed
				}
				b.ring(q)
				for _, g := range good {
					b.peerReadRequest(g, src, 1500)
					b.post(g, cs.MaxInline)
					b.ring(g)
				}
				b.runModel()
				b.runRTL(1_000_000)
				halt, hq, _ := b.rtl.Halted()
				require.False(t, halt, "seed %d: QP %d halted", seed, hq)
				rtl := b.rtlRing()[q.cfg.Num]
				require.Equal(t, b.mRing[q.cfg.Num], rtl, "seed %d: the stream with the Terminate", seed)
				require.Greater(t, len(rtl), int(before), "seed %d: no Terminate", seed)
				require.Equal(t, sortedCopy(b.rreqs), sortedCopy(b.rtl.RReqDone), "seed %d: one m_rreq_done per Read Request", seed)
				b.compare()
			})
		}
	}
}

func sortedCopy(s []uint32) []uint32 {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
