//go:build cosim

package sim

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// writes counts the DMA writes a card made (payload writes by byte).
func writes(ws map[wcKey][][]byte) int {
	n := 0
	for _, l := range ws {
		n += len(l)
	}
	return n
}

// TestCardCosimFatal: a status record or an EQE that the host refuses to
// take stops the card as it stops the card model. After some traffic the
// status table (or the EQ) is unmapped, and a signaled Send (or a CQ
// doorbell that arms a CQ holding an unconsumed completion, whose
// CQ_NOTIFY is the EQE) runs into it: both cards must
// write the same things before the fault (for a status record: its
// DMA_FAULT event, OBJ 0, and not the Send's CQE), read STATUS.FATAL,
// and name the same write in DMA_FAULT_ADDR and DMA_FAULT_INFO. Then the
// stopped RTL card must start no DMA whatever it is given (a Send on the
// other QP, a CQ doorbell) but still decide commands (CMD_STATUS).
func TestCardCosimFatal(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		for _, what := range []string{"status", "eqe"} {
			t.Run(fmt.Sprintf("%d/%s", w, what), func(t *testing.T) {
				seed := seedFor(t.Name())
				b := newWCBench(t, w, seed, wcTiming, 2)
				for round := 0; round < 3; round++ {
					b.round(round)
				}
				b.compare()
				q := b.qps[0]
				var wantAddr uint64
				switch what {
				case "status":
					b.refuse(wcStat)
					wantAddr = wcStat + uint64(q.n)*cs.QPStatSize
					b.postWQE(q, inlineSend(0xfa, 24))
					b.ring(q)
				case "eqe":
					// Arming a CQ with a completion past its CI writes
					// CQ_NOTIFY at once: the one EQE of this step.
					// A signaled Send first, so that the CQ holds a
					// completion whatever the rounds did.
					b.postWQE(q, inlineSend(0xfc, 8))
					b.ring(q)
					b.runModel()
					b.runRTL(3_000_000)
					n := q.sendCQ
					cqes := len(b.mWrite[wcKey{"cqe", n}])
					require.NotZero(t, cqes, "seed %d: no completion on CQ %d", seed, n)
					b.refuse(wcEQ)
					wantAddr = wcEQ + uint64(len(b.mWrite[wcKey{"eqe", 0}])%(1<<wcEQLog))*cs.EQESize
					b.w32(cs.CQDBBase+n*cs.CQDBStride+cs.CQDBCI, uint32(cqes-1)|1<<cs.CQDBCIArmShift)
				}
				b.runModel()
				ms := faultRegs(t, b.model.Read32)
				require.NotZero(t, ms[0]>>cs.StatusFatalShift&1, "seed %d: the model did not stop", seed)
				require.Equal(t, wantAddr, uint64(ms[2])<<32|uint64(ms[1]), "seed %d: the model's DMA_FAULT_ADDR", seed)
				b.runRTL(3_000_000)
				require.NoError(t, b.rtl.RunUntil(func() bool {
					s, err := b.rtl.RegRead(cs.Status)
					require.NoError(t, err)
					return s>>cs.StatusFatalShift&1 != 0
				}, 100_000), "seed %d: the RTL did not stop", seed)
				require.NoError(t, b.rtl.RunUntil(func() bool { return b.rtl.Outstanding() == 0 }, 100_000), "seed %d: DMA still outstanding", seed)
				rs := faultRegs(t, b.rtl.RegRead)
				require.Equal(t, ms, rs, "seed %d: STATUS, DMA_FAULT_ADDR_LO/HI, DMA_FAULT_INFO (RTL, model)", seed)
				require.NotEmpty(t, b.faults, "seed %d: no write was refused", seed)
				b.compare()
				if what == "status" {
					eqes := b.rWrite[wcKey{"eqe", 0}]
					require.NotEmpty(t, eqes, "seed %d", seed)
					e := cs.EQE(eqes[len(eqes)-1])
					require.Equal(t, cs.EQETypeDMAFault, e.Type(), "seed %d: the last event", seed)
					require.Zero(t, e.Obj(), "seed %d: DMA_FAULT's OBJ", seed)
					require.Equal(t, uint32(wantAddr), e.Info(), "seed %d: DMA_FAULT's INFO", seed)
				}

				// Stopped: no DMA for new work, but commands are decided.
				nw, nf, st := writes(b.rWrite), len(b.faults), b.rtl.Stats()
				o := b.qps[1]
				b.postWQE(o, inlineSend(0xfb, 8))
				b.ring(o)
				b.w32(cs.CQDBBase+o.sendCQ*cs.CQDBStride+cs.CQDBCI, uint32(len(b.mWrite[wcKey{"cqe", o.sendCQ}]))|1<<cs.CQDBCIArmShift)
				require.NoError(t, b.rtl.Step(20_000))
				require.Equal(t, nw, writes(b.rWrite), "seed %d: the stopped card wrote", seed)
				require.Equal(t, nf, len(b.faults), "seed %d: the stopped card tried to write", seed)
				require.Equal(t, st.ReadBursts, b.rtl.Stats().ReadBursts, "seed %d: the stopped card read", seed)
				b.w32(cs.QPNum, o.n)
				b.command("ERROR after the stop", cs.QPCmd, uint32(cs.QPOpError), cs.CmdWhyOk)
				t.Logf("seed %d: stopped at %#x (%d refused writes), then %d cycles without DMA", seed, wantAddr, len(b.faults), 20_000)
			})
		}
	}
}

// TestCardCosimWQEFault: a send queue the host refuses to let the card
// read fails its QP as it fails the card model's: after some traffic one
// QP's SQ is unmapped and two WQEs are posted there (rung, not pushed, so
// the card must read them). Both cards must raise DMA_FAULT (OBJ the QP,
// INFO the first WQE's address) then QP_ERROR DMA, send a Local
// Catastrophic Terminate, move SQ_CI past both WQEs without a completion,
// and name the read in DMA_FAULT_*; the other QP goes on as before.
func TestCardCosimWQEFault(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, 2)
			for round := 0; round < 3; round++ {
				b.round(round)
			}
			b.compare()
			q, o := b.qps[0], b.qps[1]
			first := b.postToRefusedSQ(q)
			b.readFaulted(q, first, 1)
			require.Equal(t, q.pi, b.rtlStat(q.n).SQCI(), "seed %d: SQ_CI past the dropped WQEs", seed)
			b.goesOn(o)
		})
	}
}

// postToRefusedSQ makes both hosts refuse QP q's SQ, posts two inline
// Sends there and rings SQ_PI; both cards run, and agree. It returns the
// first WQE's address.
func (b *wcBench) postToRefusedSQ(q *wcQP) uint64 {
	sq := wcSQ + uint64(q.n)<<16
	b.refuse(sq)
	size := uint16(1) << q.sqLog
	first := sq + uint64(q.pi&(size-1))*cs.BB
	for i := 0; i < 2; i++ {
		b.put(sq+uint64(q.pi&(size-1))*cs.BB, inlineSend(0xf0+uint64(i), 16))
		q.pi++
		q.posted++
	}
	b.w32(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBSQPI, uint32(q.pi))
	b.runModel()
	b.runRTL(3_000_000)
	b.compare()
	return first
}

// faultNamed checks, after both cards ran into a refused read of QP q's
// at addr, that they agree on STATUS and DMA_FAULT_*: the read named,
// the n-th fault since the reset, the card not stopped.
func (b *wcBench) faultNamed(q *wcQP, addr uint64, n uint32, write bool) {
	t, seed := b.t, b.seed
	ms, rs := faultRegs(t, b.model.Read32), faultRegs(t, b.rtl.RegRead)
	require.Equal(t, ms, rs, "seed %d: STATUS, DMA_FAULT_ADDR_LO/HI, DMA_FAULT_INFO (RTL, model)", seed)
	require.Equal(t, addr, uint64(rs[2])<<32|uint64(rs[1]), "seed %d: DMA_FAULT_ADDR", seed)
	info := q.n | 2<<cs.DMAFaultInfoRespShift | n<<cs.DMAFaultInfoCountShift
	if write {
		info |= 1 << cs.DMAFaultInfoWriteShift
	}
	require.Equal(t, info, rs[3], "seed %d: DMA_FAULT_INFO: the QP, SLVERR, a read or a write, the count", seed)
	require.Zero(t, rs[0]>>cs.StatusFatalShift&1, "seed %d: the card stopped", seed)
}

// readFaulted checks, after both cards ran into a refused read of QP q's
// at addr (the n-th fault), that the read is named (faultNamed), that q
// is in ERROR, and that its events include DMA_FAULT (INFO addr) before
// QP_ERROR; it returns q's events.
func (b *wcBench) readFaulted(q *wcQP, addr uint64, n uint32) []cs.EQEType {
	return b.faulted(q, addr, n, false)
}

// faulted is readFaulted or writeFaulted.
func (b *wcBench) faulted(q *wcQP, addr uint64, n uint32, write bool) []cs.EQEType {
	t, seed := b.t, b.seed
	b.faultNamed(q, addr, n, write)
	require.Equal(t, cs.QPStateError, b.rtlStat(q.n).State(), "seed %d: QP %d", seed, q.n)
	var evs []cs.EQEType
	for _, e := range b.rWrite[wcKey{"eqe", 0}] {
		if cs.EQE(e).Obj() == q.n {
			evs = append(evs, cs.EQE(e).Type())
			if cs.EQE(e).Type() == cs.EQETypeDMAFault {
				require.Equal(t, uint32(addr), cs.EQE(e).Info(), "seed %d: DMA_FAULT's INFO", seed)
			}
		}
	}
	require.Subset(t, evs, []cs.EQEType{cs.EQETypeDMAFault, cs.EQETypeQPError}, "seed %d: QP %d's events", seed, q.n)
	require.Less(t, indexOf(evs, cs.EQETypeDMAFault), indexOf(evs, cs.EQETypeQPError), "seed %d: DMA_FAULT before QP_ERROR: %v", seed, evs)
	return evs
}

// goesOn checks that QP o, untouched by another QP's fault, still sends.
func (b *wcBench) goesOn(o *wcQP) {
	b.postWQE(o, inlineSend(0xfe, 24))
	b.ring(o)
	b.runModel()
	b.runRTL(3_000_000)
	b.compare()
	require.Equal(b.t, cs.QPStateRts, b.rtlStat(o.n).State(), "seed %d: QP %d", b.seed, o.n)
}

func indexOf[T comparable](s []T, v T) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return len(s)
}

// TestCardCosimRQFault: a receive queue the host refuses to let the card
// read fails its QP as it fails the card model's: one QP posts two
// receive WQEs in an RQ the host does not map, and the peer sends it a
// Send. Both cards must raise DMA_FAULT (OBJ the QP, INFO the WQE's
// address) then QP_ERROR DMA, send a Local Catastrophic Terminate, move
// RQ_CI past both WQEs without a completion, and name the read in
// DMA_FAULT_*; the other QP goes on as before.
func TestCardCosimRQFault(t *testing.T) {
	const rq = 0x7000_0000 // the bench's RQs, never mapped
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, 2)
			for round := 0; round < 3; round++ {
				b.round(round)
			}
			b.compare()
			q, o := b.qps[0], b.qps[1]
			b.refused = append(b.refused, [2]uint64{rq, rq + 16*cs.BB})
			tx := len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
			b.w32(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBRQPI, 2)
			ulp := ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpSend)),
				QN: rdmap.QNSend, MSN: 1}.Append(nil)
			stream, err := q.peer.AppendFPDU(nil, append(ulp, "a Send with nowhere to go"...))
			require.NoError(t, err)
			b.peerSend(q, stream)
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			evs := b.readFaulted(q, rq, 1)
			require.EqualValues(t, 2, b.rtlStat(q.n).RQCI(), "seed %d: RQ_CI past the dropped WQEs", seed)
			require.Greater(t, len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)), tx, "seed %d: no Terminate was sent", seed)
			require.NotContains(t, evs, cs.EQETypeTermSent, "seed %d: %v", seed, evs)
			b.goesOn(o)
		})
	}
}

// TestCardCosimRingFault: a receive stream ring the host refuses to let
// the card read fails its QP as it fails the card model's. The peer sends
// RDMA Writes into a ring that is refused whole ("ring": the first FPDU's
// header cannot be read), or whose next page is refused ("page": the
// FPDUs before that page are placed, the one that runs into it is not).
// Both cards must place the same bytes, raise DMA_FAULT (OBJ the QP,
// INFO the address the model's read of the FPDU names) then QP_ERROR DMA,
// send a Local Catastrophic Terminate, leave RXS_CI at the faulted FPDU
// and name the read in DMA_FAULT_*; the other QP goes on.
func TestCardCosimRingFault(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		for _, what := range []string{"ring", "page"} {
			t.Run(fmt.Sprintf("%d/%s", w, what), func(t *testing.T) {
				seed := seedFor(t.Name())
				b := newWCBench(t, w, seed, wcTiming, 2, func(i int, q *wcQP) {
					if i == 0 {
						q.rxsLog = 13 // two pages
					}
				})
				for round := 0; round < 3; round++ {
					b.round(round)
				}
				b.compare()
				q, o := b.qps[0], b.qps[1]
				ring := uint32(1) << q.rxsLog
				base := wcRXS + uint64(q.n)<<16
				at := q.rxWritten & (ring - 1)
				var stream []byte
				lo, hi := base, base+uint64(ring) // the refused range
				if what == "ring" {
					b.refuse(base)
					n := 1 + b.rng.IntN(600)
					stream = b.peerWriteMsg(q, n, 1+b.rng.IntN(n))
				} else {
					page := (at/4096 + 1) * 4096 & (ring - 1)
					lo, hi = base+uint64(page), base+uint64(page)+4096
					b.refusePage(lo)
					before := (page - at) & (ring - 1) // stream octets before the refused page
					for uint32(len(stream)) <= before+64 {
						n := 1 + b.rng.IntN(600)
						stream = append(stream, b.peerWriteMsg(q, n, 1+b.rng.IntN(n))...)
					}
				}
				tx := len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
				ci := b.rtlStat(q.n).RXSCI()
				b.peerSend(q, stream)
				b.runModel()
				b.runRTL(3_000_000)
				b.compare()
				ms := faultRegs(t, b.model.Read32)
				addr := uint64(ms[2])<<32 | uint64(ms[1])
				require.True(t, addr >= lo && addr < hi, "seed %d: the model's fault at %#x, outside the refused %#x..%#x", seed, addr, lo, hi)
				if what == "ring" {
					require.Equal(t, base+uint64(at), addr, "seed %d: the first FPDU's header is read first", seed)
				}
				b.readFaulted(q, addr, 1)
				st := b.rtlStat(q.n)
				require.Less(t, st.RXSCI()-ci, uint32(len(stream)), "seed %d: RXS_CI past the faulted FPDU", seed)
				t.Logf("%d of %d stream octets consumed before the fault at %#x (refused %#x..%#x)", st.RXSCI()-ci, len(stream), addr, lo, hi)
				require.Greater(t, len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)), tx, "seed %d: no Terminate was sent", seed)
				b.goesOn(o)
			})
		}
	}
}

// refusePage makes both hosts refuse DMA to the 4 KiB page at iova from
// now on: the RTL's window that holds it is mapped again around it.
func (b *wcBench) refusePage(iova uint64) {
	b.t.Helper()
	for base, m := range b.win {
		if iova < base || iova+4096 > base+uint64(len(m)) {
			continue
		}
		require.NoError(b.t, b.ws.Unmap(base))
		off := iova - base
		if off > 0 {
			require.NoError(b.t, b.ws.Map(base, m[:off]))
		}
		if end := off + 4096; end < uint64(len(m)) {
			require.NoError(b.t, b.ws.Map(iova+4096, m[end:]))
		}
		b.refused = append(b.refused, [2]uint64{iova, iova + 4096})
		return
	}
	b.t.Fatalf("seed %d: no window holds the page at %#x", b.seed, iova)
}

// TestCardCosimFlushFault: a send queue the host stops letting the card
// read once its QP is in error. The WQEs posted then are flushed as the
// card model flushes them: both cards raise DMA_FAULT (OBJ the QP, INFO
// the first block's address) at the first read, write no completion for
// them, move SQ_CI to SQ_PI and name the read in DMA_FAULT_*; the card
// does not stop and the other QP goes on. Before 27 Nov the RTL stopped
// the QP at that WQE until its next doorbell.
func TestCardCosimFlushFault(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, 2)
			for round := 0; round < 3; round++ {
				b.round(round)
			}
			b.compare()
			q, o := b.qps[0], b.qps[1]
			b.qpCmd(q, cs.QPOpError, cs.QPStateError)
			b.compare()
			before := writes(b.rWrite)
			first := b.postToRefusedSQ(q)
			b.faultNamed(q, first, 1, false)
			require.Equal(t, q.pi, b.rtlStat(q.n).SQCI(), "seed %d: SQ_CI past the dropped WQEs", seed)
			var flt []uint32
			for _, e := range b.rWrite[wcKey{"eqe", 0}] {
				if cs.EQE(e).Obj() == q.n && cs.EQE(e).Type() == cs.EQETypeDMAFault {
					flt = append(flt, cs.EQE(e).Info())
				}
			}
			require.Equal(t, []uint32{uint32(first)}, flt, "seed %d: QP %d's DMA_FAULT events", seed, q.n)
			// The DMA_FAULT event and the status record: no CQE.
			require.Len(t, b.rWrite[wcKey{"cqe", q.sendCQ}], len(b.mWrite[wcKey{"cqe", q.sendCQ}]), "seed %d", seed)
			t.Logf("%d writes after the doorbell (the event, status records)", writes(b.rWrite)-before)
			b.goesOn(o)
		})
	}
}

// TestCardRereadFault: a QP whose SQ the host stops letting the card read
// while an RDMA Read is outstanding. When the Read Response comes, the RTL
// reads the Read WQE again to complete it, and that read faults. (The
// card model keeps the WQE and completes the Read, so the two are not
// compared after the fault: this checks the RTL alone.) The RTL must fail
// the QP as for a new WQE's faulted read: DMA_FAULT (OBJ the QP, INFO the
// WQE's address) then QP_ERROR DMA, a Local Catastrophic Terminate on the
// ring, SQ_CI at SQ_PI with no completion for the Read, DMA_FAULT_*
// naming the read; the card does not stop. Before 27 Nov the QP stopped
// at the WQE until its next doorbell.
func TestCardRereadFault(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, 2)
			for round := 0; round < 3; round++ {
				b.round(round)
			}
			b.compare()
			q := b.qps[0]
			size := uint16(1) << q.sqLog
			addr := wcSQ + uint64(q.n)<<16 + uint64(q.pi&(size-1))*cs.BB
			b.postRead(q)
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			b.refuse(wcSQ + uint64(q.n)<<16)
			evs0, cqes0 := len(b.rWrite[wcKey{"eqe", 0}]), len(b.rWrite[wcKey{"cqe", q.sendCQ}])
			tx := len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
			ulp := ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpReadResponse)),
				STag: uint32(q.stag), TO: wcRegion + uint64(q.n)<<16 + 128}.Append(nil)
			stream, err := q.peer.AppendFPDU(nil, append(ulp, make([]byte, 64)...))
			require.NoError(t, err)
			b.peerSend(q, stream)
			require.NoError(t, b.rtl.RunUntil(func() bool {
				st := b.rtlStat(q.n)
				return st.State() == cs.QPStateError && st.TXClosed() && st.SQCI() == q.pi && b.rtl.Outstanding() == 0
			}, 3_000_000), "seed %d: QP %d: status %x", seed, q.n, []byte(b.rtlStat(q.n)))
			require.NoError(t, b.rtl.Step(5000)) // events and the ring's last writes
			rs := faultRegs(t, b.rtl.RegRead)
			require.Equal(t, addr, uint64(rs[2])<<32|uint64(rs[1]), "seed %d: DMA_FAULT_ADDR", seed)
			require.Equal(t, q.n|2<<cs.DMAFaultInfoRespShift|1<<cs.DMAFaultInfoCountShift, rs[3], "seed %d: DMA_FAULT_INFO: the QP, SLVERR, a read, one fault", seed)
			require.Zero(t, rs[0]>>cs.StatusFatalShift&1, "seed %d: the card stopped", seed)
			var evs []cs.EQE
			for _, e := range b.rWrite[wcKey{"eqe", 0}][evs0:] {
				if cs.EQE(e).Obj() == q.n {
					evs = append(evs, cs.EQE(e))
				}
			}
			require.Len(t, evs, 2, "seed %d: QP %d's events after the fault", seed, q.n)
			require.Equal(t, cs.EQETypeDMAFault, evs[0].Type(), "seed %d", seed)
			require.Equal(t, uint32(addr), evs[0].Info(), "seed %d: DMA_FAULT's INFO", seed)
			require.Equal(t, cs.EQETypeQPError, evs[1].Type(), "seed %d", seed)
			require.EqualValues(t, cs.QPErrDMA, evs[1].Info(), "seed %d: QP_ERROR's INFO", seed)
			for _, e := range b.rWrite[wcKey{"cqe", q.sendCQ}][cqes0:] {
				require.NotEqual(t, cs.WCOpcodeRDMARead, cs.CQE(e).Opcode(), "seed %d: the Read completed", seed)
			}
			require.Greater(t, len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)), tx, "seed %d: no Terminate was sent", seed)
			require.Equal(t, cs.QPStateRts, b.rtlStat(b.qps[1].n).State(), "seed %d: the other QP", seed)
		})
	}
}

// TestCardCosimPayloadFault: a payload page the host refuses to let the
// card read fails its QP as it fails the card model's, and the peer never
// gets a byte the card could not read. After some traffic, three QPs in
// turn each get one page of their data unmapped, and either send a
// gathered message (Send, Send with Invalidate or RDMA Write, signaled,
// up to 28 KiB, two SGEs: a readable source, then one running from the
// page before the refused one into it) or answer the peer's RDMA Read
// Request (up to 20 KiB) whose source crosses that page; an inline Send
// is posted behind it. The card model reads a segment's pieces before
// framing it, so it sends the segments before the one holding the
// refused page, then DMA_FAULT (OBJ the QP, INFO the page), QP_ERROR DMA
// and a Local Catastrophic Terminate, and the WQEs complete with
// WR_FLUSH_ERR. The RTL streams: it has framed FPDUs of the message past
// the cut, and may have written some, by the time the read's error
// response comes back; it must write the Terminate at the cut, publish
// nothing past it, and agree with the model on every event, completion,
// status record, DMA_FAULT_* and the stream itself (compared with the
// rewind: b.cut). A fourth QP goes on. Before 28 Nov the RTL sent zeros
// for the refused bytes and the QP went on.
func TestCardCosimPayloadFault(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		if !gen.CardTxGathers(w) {
			continue
		}
		for _, what := range []string{"gather", "response"} {
			t.Run(fmt.Sprintf("%d/%s", w, what), func(t *testing.T) {
				seed := seedFor(t.Name())
				b := newWCBench(t, w, seed, wcTiming, 4)
				for round := 0; round < 2; round++ {
					b.round(round)
				}
				b.compare()
				b.cut = map[uint32]bool{}
				for i, q := range b.qps[:3] {
					page, flushes := b.payloadFault(q, what)
					// TX_DATA and RX_SPACE depend on when the host armed them.
					evs := slices.DeleteFunc(b.readFaulted(q, page, uint32(i+1)), func(e cs.EQEType) bool {
						return e == cs.EQETypeTXData || e == cs.EQETypeRXSpace
					})
					require.GreaterOrEqual(t, len(evs), 2, "seed %d: QP %d's events", seed, q.n)
					require.Equal(t, []cs.EQEType{cs.EQETypeDMAFault, cs.EQETypeQPError}, evs[len(evs)-2:], "seed %d: QP %d's last events", seed, q.n)
					var flushed int
					for _, c := range b.rWrite[wcKey{"cqe", q.sendCQ}] {
						if e := cs.CQE(c); e.QPN() == uint16(q.n) && e.Status() == cs.WCStatusWRFlushErr {
							flushed++
						}
					}
					require.Equal(t, flushes, flushed, "seed %d: QP %d's WQEs completed with WR_FLUSH_ERR", seed, q.n)
					t.Logf("seed %d: QP %d: refused page %#x; %d stream octets in all, %d rewinds", seed, q.n, page,
						len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)), b.rewinds[1][q.n])
				}
				b.goesOn(b.qps[3])
			})
		}
	}
}

// payloadFault refuses a page of q's data and has q read it: a gathered
// message through it ("gather") or a Read Response across it
// ("response"), an inline Send posted behind; both cards run, and agree.
// It returns the page and how many WQEs must complete with WR_FLUSH_ERR.
func (b *wcBench) payloadFault(q *wcQP, what string) (uint64, int) {
	r := b.rng
	b.cut[q.n] = true
	switch what {
	case "gather":
		page := wcSrc + uint64(q.n)<<16 + 2*4096 // source 0's third page
		b.refusePage(page)
		wqe := make([]byte, 2*cs.BB)
		h := cs.WQE(wqe)
		ops := []cs.WQEOpcode{cs.WQEOpcodeSend, cs.WQEOpcodeSendInv, cs.WQEOpcodeRDMAWrite}
		h.SetOpcode(ops[r.IntN(len(ops))])
		h.SetSignaled(true)
		h.SetBBS(2)
		h.SetNSGE(2)
		h.SetWRID(r.Uint64())
		h.SetRemoteAddr(r.Uint64())
		h.SetRKey(r.Uint32())
		h.SetInvSTag(r.Uint32())
		n0 := 1 + r.IntN(wcSrcLen-1)
		e := cs.SGE(wqe[cs.WQEHdr:])
		e.SetAddr(wcSrc + uint64(q.n)<<16 + 1<<15 + uint64(r.IntN(wcSrcLen-n0+1)))
		e.SetLength(uint32(n0))
		e.SetLKey(uint32(q.src[1]))
		start := 4096 + r.IntN(4096)
		end := 2*4096 + 1 + r.IntN(wcSrcLen-2*4096)
		e = cs.SGE(wqe[cs.WQEHdr+cs.SGESize:])
		e.SetAddr(wcSrc + uint64(q.n)<<16 + uint64(start))
		e.SetLength(uint32(end - start))
		e.SetLKey(uint32(q.src[0]))
		b.postWQE(q, wqe)
		b.postWQE(q, inlineSend(0xf5, 40))
		b.ring(q)
		b.runModel()
		b.runRTL(20_000_000)
		b.compare()
		return page, 2
	default:
		page := wcRegion + uint64(q.n)<<16 + uint64(4+r.IntN(8))*4096
		b.refusePage(page)
		src := page - 1 - uint64(r.IntN(12000))
		n := int(page-src) + 1 + r.IntN(8000)
		b.peerSend(q, b.peerReadRequestAt(q, nil, src, n))
		// Both cards fail the QP before the Send is posted: the model
		// would otherwise be free to send it first.
		b.runModel()
		b.runRTL(20_000_000)
		b.postWQE(q, inlineSend(0xf6, 40))
		b.ring(q)
		b.runModel()
		b.runRTL(20_000_000)
		b.compare()
		return page, 1
	}
}

// TestCardCosimPlaceFault: a payload write the host refuses fails its QP
// as it fails the card model's. A page of QP 0's region is refused, and
// the peer sends into it: an RDMA Write across it ("write"), the Read
// Response of a Read whose sink crosses it ("response"), or a Send into
// a receive WQE whose buffer crosses it ("send"). Both cards must place
// what lies before the refused page (the RTL may place more behind it,
// since it hears of the refusal a write response later: compare allows
// that), raise DMA_FAULT (OBJ the QP, INFO the first refused byte) then
// QP_ERROR DMA, send a Local Catastrophic Terminate, complete the Read
// or the receive WQE WR_FLUSH_ERR, and name the write in DMA_FAULT_*;
// the other QP goes on. Before 28 Nov the RTL wrote nothing of the
// fault and completed the Read or the Send with success.
func TestCardCosimPlaceFault(t *testing.T) {
	const rq = 0x7000_0000 // every QP's RQ base in the bench
	for _, w := range gen.CardTopWidths {
		for _, what := range []string{"write", "response", "send"} {
			t.Run(fmt.Sprintf("%d/%s", w, what), func(t *testing.T) {
				seed := seedFor(t.Name())
				// Slow write responses: the RTL places segments behind
				// the refused write before it hears of it.
				timing := wcTiming
				timing.Timing.WriteLatency, timing.Timing.WriteJitter = 250, 250
				b := newWCBench(t, w, seed, timing, 2, func(i int, q *wcQP) {
					if i == 0 {
						q.rxsLog = 14 // the message's FPDUs fit the ring
					}
				})
				for round := 0; round < 2; round++ {
					b.round(round)
				}
				b.compare()
				q, o := b.qps[0], b.qps[1]
				r := b.rng
				page := wcRegion + uint64(q.n)<<16 + uint64(4+r.IntN(8))*4096
				to := page - 1 - uint64(r.IntN(3000))
				n := int(page-to) + 1 + r.IntN(5000)
				seg := 200 + r.IntN(1000)
				tx := len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
				var wrid uint64
				switch what {
				case "write":
					b.refusePage(page)
					b.wf = map[uint32]bool{q.n: true}
					b.peerSend(q, b.peerTaggedMsg(q, rdmap.OpWrite, to, n, seg))
				case "response":
					h := b.readWQE(true, false)
					setReadSink(h, to, n, q.stag)
					wrid = h.WRID()
					b.postWQE(q, h)
					b.ring(q)
					b.runModel()
					b.runRTL(3_000_000)
					b.compare()
					b.refusePage(page)
					b.wf = map[uint32]bool{q.n: true}
					b.peerSend(q, b.peerTaggedMsg(q, rdmap.OpReadResponse, to, n, seg))
				default:
					b.alloc(rq, 4096)
					h := cs.WQE(make([]byte, cs.BB))
					h.SetOpcode(cs.WQEOpcodeRecv)
					h.SetBBS(1)
					wrid = r.Uint64()
					h.SetWRID(wrid)
					setReadSink(h, to, n, q.stag)
					b.put(rq, h)
					b.w32(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBRQPI, 1)
					b.refusePage(page)
					b.wf = map[uint32]bool{q.n: true}
					var stream []byte
					for off := 0; off < n; off += seg {
						c := min(seg, n-off)
						ulp := ddp.UntaggedFields{Last: off+c == n, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpSend)),
							QN: rdmap.QNSend, MSN: 1, MO: uint32(off)}.Append(nil)
						for i := 0; i < c; i++ {
							ulp = append(ulp, byte(r.Uint32()))
						}
						var err error
						stream, err = q.peer.AppendFPDU(stream, ulp)
						require.NoError(t, err)
					}
					b.peerSend(q, stream)
				}
				b.runModel()
				b.runRTL(5_000_000)
				b.compare()
				first := max(to, page)
				ms := faultRegs(t, b.model.Read32)
				require.Equal(t, first, uint64(ms[2])<<32|uint64(ms[1]), "seed %d: the model's fault is the refused page's first byte written", seed)
				b.writeFaulted(q, first, 1)
				require.Greater(t, len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)), tx, "seed %d: no Terminate was sent", seed)
				if what != "write" {
					var st []cs.WCStatus
					for _, c := range b.rWrite[wcKey{"cqe", q.sendCQ}] {
						if e := cs.CQE(c); e.QPN() == uint16(q.n) && e.WRID() == wrid {
							st = append(st, e.Status())
						}
					}
					require.Equal(t, []cs.WCStatus{cs.WCStatusWRFlushErr}, st, "seed %d: the %s's completion", seed, what)
				}
				t.Logf("seed %d: %d bytes at %#x in segments of %d, page %#x refused; RTL placed %d bytes, model %d",
					seed, n, to, seg, page, len(b.rPlace[q.n]), len(b.mPlace[q.n]))
				b.goesOn(o)
			})
		}
	}
}

// writeFaulted is readFaulted for a refused write (DMA_FAULT_INFO.WRITE).
func (b *wcBench) writeFaulted(q *wcQP, addr uint64, n uint32) []cs.EQEType {
	return b.faulted(q, addr, n, true)
}

// ringFaultBench is the bench of the transmit ring fault tests: two QPs,
// the first with two pages of ring, write responses 250 to 500 cycles
// late, after two rounds of traffic.
func ringFaultBench(t *testing.T, w int) (*wcBench, uint64) {
	seed := seedFor(t.Name())
	timing := wcTiming
	timing.Timing.WriteLatency, timing.Timing.WriteJitter = 250, 250
	b := newWCBench(t, w, seed, timing, 2, func(i int, q *wcQP) {
		if i == 0 {
			q.sqLog, q.txsLog = 6, 13 // two pages of ring
		}
	})
	for round := 0; round < 2; round++ {
		b.round(round)
	}
	b.compare()
	return b, seed
}

// TestCardCosimTxRingFault: a page of a transmit stream ring the host
// refuses to let the card write fails its QP as it fails the card
// model's: DMA_FAULT (OBJ the QP, INFO the first refused byte, a write)
// then QP_ERROR DMA, no Terminate (the ring cannot carry it), TXS_PI left
// at the refused FPDU's start with TX_CLOSED, and every WQE not done
// completed WR_FLUSH_ERR, signaled or not. Write responses come 250 to
// 500 cycles late, so the RTL has written FPDUs past the refused one, and
// written back WQEs behind it, before it hears of the refusal: those
// FPDUs are never published, those WQEs complete WR_FLUSH_ERR. The other
// QP goes on.
func TestCardCosimTxRingFault(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, seed := ringFaultBench(t, w)
			q, o := b.qps[0], b.qps[1]
			r := b.rng
			ring := uint32(1) << q.txsLog
			base := wcTXS + uint64(q.n)<<16
			st := b.rtlStat(q.n)
			pi := st.TXSPI()
			// The page TXS_PI is in (the next FPDU runs into it at once)
			// or the next one.
			page := ((pi&(ring-1))/4096 + uint32(r.IntN(2))) * 4096 & (ring - 1)
			b.refusePage(base + uint64(page))
			b.rf = map[uint32]bool{q.n: true}
			dist := int(uint32(page)-pi) & int(ring-1) // stream octets before the refused page
			if uint32(page) == pi&(ring-1)&^4095 {
				dist = 0
			}
			posted := q.posted
			for sent := 0; sent < dist+6000; {
				n := 500 + r.IntN(1000)
				// The arguments draw from r in the order they are written.
				b.postWQE(q, oneSGEWrite(r.Chance(2), r.Uint64(), r.Uint64(), r.Uint32(),
					wcSrc+uint64(q.n)<<16+uint64(r.IntN(wcSrcLen-n+1)), uint32(n), uint32(q.src[0])))
				sent += n
			}
			b.ring(q)
			b.runModel()
			b.runRTL(5_000_000)
			b.compare()
			ms := faultRegs(t, b.model.Read32)
			addr := uint64(ms[2])<<32 | uint64(ms[1])
			require.True(t, addr >= base+uint64(page) && addr < base+uint64(page)+4096, "seed %d: the model's fault at %#x, outside the refused page %#x", seed, addr, base+uint64(page))
			evs := b.writeFaulted(q, addr, 1)
			require.NotContains(t, evs, cs.EQETypeTermSent, "seed %d: a Terminate on a ring that cannot carry it", seed)
			st = b.rtlStat(q.n)
			require.True(t, st.TXClosed(), "seed %d: TX_CLOSED", seed)
			require.LessOrEqual(t, int(st.TXSPI()-pi), dist, "seed %d: TXS_PI past the refused page's start", seed)
			var flushed int
			for _, c := range b.rWrite[wcKey{"cqe", q.sendCQ}] {
				if e := cs.CQE(c); e.QPN() == uint16(q.n) && e.Status() == cs.WCStatusWRFlushErr {
					flushed++
				}
			}
			require.Positive(t, flushed, "seed %d: no WQE completed WR_FLUSH_ERR", seed)
			k := wcKey{"txs", q.n}
			past := len(bytes.Join(b.rWrite[k], nil)) - len(bytes.Join(b.mWrite[k], nil))
			t.Logf("seed %d: refused page %#x (%d octets past TXS_PI %d); %d WQEs posted, %d flushed; TXS_PI %d; the RTL wrote %d octets past the refused page",
				seed, base+uint64(page), dist, pi, q.posted-posted, flushed, st.TXSPI(), past)
			b.goesOn(o)
		})
	}
}

// TestCardCosimTermRingFault: a QP already in error whose Terminate the
// host refuses to let the card write to its transmit stream ring (the
// page TXS_PI is in) fails as the card model's drain does: DMA_FAULT
// (OBJ the QP, INFO the Terminate's first byte, a write) after the
// TERM_SENT, no second QP_ERROR, TXS_PI left at the Terminate's start
// with TX_CLOSED, and the WQEs posted later flushed. The QP went to
// error for a peer's segment that failed its STag check ("peer") or for
// its own WQE's failed lkey check ("lkey"). Write responses come 250 to
// 500 cycles late. The other QP goes on.
func TestCardCosimTermRingFault(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		for _, why := range []string{"peer", "lkey"} {
			t.Run(fmt.Sprint(w, "/", why), func(t *testing.T) {
				b, seed := ringFaultBench(t, w)
				q, o := b.qps[0], b.qps[1]
				ring := uint32(1) << q.txsLog
				base := wcTXS + uint64(q.n)<<16
				pi := b.rtlStat(q.n).TXSPI()
				b.refusePage(base + uint64(pi&(ring-1)&^4095))
				b.rf = map[uint32]bool{q.n: true}
				evs0 := len(b.rWrite[wcKey{"eqe", 0}])
				want := cs.WCStatusSuccess
				if why == "peer" {
					b.peerBad(q, 4) // a tagged Write to an STag of another key
				} else {
					b.postWQE(q, oneSGEWrite(true, 0xbad_1eef, 0, 0, wcSrc+uint64(q.n)<<16, 100, uint32(q.src[0])^0x5a))
					b.ring(q)
					want = cs.WCStatusLocProtErr
				}
				b.runModel()
				b.runRTL(5_000_000)
				b.compare()
				at := base + uint64(pi&(ring-1))
				b.faultNamed(q, at, 1, true)
				var evs []string
				for _, e := range b.rWrite[wcKey{"eqe", 0}][evs0:] {
					if ev := cs.EQE(e); ev.Obj() == q.n {
						evs = append(evs, fmt.Sprintf("%v %#x", ev.Type(), ev.Info()))
					}
				}
				require.Equal(t, []string{"TERM_SENT 0x0", fmt.Sprintf("DMA_FAULT %#x", uint32(at))}, evs, "seed %d: QP %d's events", seed, q.n)
				st := b.rtlStat(q.n)
				require.Equal(t, cs.QPStateError, st.State(), "seed %d: QP %d", seed, q.n)
				require.True(t, st.TXClosed(), "seed %d: TX_CLOSED", seed)
				require.Equal(t, pi, st.TXSPI(), "seed %d: TXS_PI moved past the refused Terminate", seed)
				if want != cs.WCStatusSuccess {
					var got []cs.WCStatus
					for _, c := range b.rWrite[wcKey{"cqe", q.sendCQ}] {
						if e := cs.CQE(c); e.QPN() == uint16(q.n) && e.WRID() == 0xbad_1eef {
							got = append(got, e.Status())
						}
					}
					require.Equal(t, []cs.WCStatus{want}, got, "seed %d: the failed WQE's completion", seed)
				}
				for k := 0; k < 2; k++ {
					b.post(q) // flushed
				}
				b.ring(q)
				b.runModel()
				b.runRTL(3_000_000)
				b.compare()
				b.goesOn(o)
			})
		}
	}
}

// TestCardCosimLostThenPost: WQEs posted right after their QP's
// STREAM.RX_LOST are flushed, never sent, as in the card model, which
// puts the QP in error at the STREAM write. The RX_LOST reaches card_tx
// twice: as the STREAM doorbell, in BAR0 order before the SQ_PI written
// after it, which stops the QP's new work, and later as card_stat's
// stream-end record, released after its status write's response (250 to
// 500 cycles late here), which puts the QP in error. The other QP goes on.
func TestCardCosimLostThenPost(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			b, seed := ringFaultBench(t, w)
			q, o := b.qps[0], b.qps[1]
			tx := len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
			b.w32(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBStream, 1<<cs.QPDBStreamRXLostShift)
			var ids []uint64
			for i := 0; i < 3; i++ {
				wqe := inlineSend(0x10057+uint64(i), cs.PushInline) // well formed: one block holds it
				ids = append(ids, cs.WQE(wqe).WRID())
				b.postWQE(q, wqe)
			}
			b.ring(q)
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			require.Equal(t, cs.QPStateError, b.rtlStat(q.n).State(), "seed %d: QP %d", seed, q.n)
			got := map[uint64]cs.WCStatus{}
			for _, c := range b.rWrite[wcKey{"cqe", q.sendCQ}] {
				if e := cs.CQE(c); e.QPN() == uint16(q.n) {
					got[e.WRID()] = e.Status()
				}
			}
			for _, id := range ids {
				require.Equal(t, cs.WCStatusWRFlushErr, got[id], "seed %d: WQE %#x", seed, id)
			}
			require.Equal(t, tx, len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)), "seed %d: stream bytes after RX_LOST", seed)
			b.goesOn(o)
		})
	}
}

// TestCardCosimCQEFault: a page of a CQ the host refuses to let the card
// write puts that CQ in error as it does the card model's: CQ_ERROR (OBJ
// the CQ, INFO the CQE's address), the CQE named in DMA_FAULT_* (its QP,
// a write), every QP on the CQ in error with QP_ERROR DMA and a Local
// Catastrophic Terminate, no DMA_FAULT event, and no CQE on that CQ again
// (the flushes of later WQEs are lost with it) although later pages are
// mapped; the QP on the other CQ goes on. Write responses come 250 to 500
// cycles late; the WQE is posted alone, so the RTL hears of the fault
// before anything else could complete.
func TestCardCosimCQEFault(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			timing := wcTiming
			timing.Timing.WriteLatency, timing.Timing.WriteJitter = 250, 250
			b := newWCBench(t, w, seed, timing, 2, func(i int, q *wcQP) { q.sendCQ = uint32(1 + i) })
			for round := 0; round < 2; round++ {
				b.round(round)
			}
			b.compare()
			q, o := b.qps[0], b.qps[1]
			k := wcKey{"cqe", q.sendCQ}
			cqBase := wcCQ + uint64(q.sendCQ)<<16
			slot := cqBase + uint64(len(b.rAddr[k])%(1<<wcCQLog))*cs.CQESize
			b.refusePage(slot &^ 4095)
			cqes, evs0 := len(b.rWrite[k]), len(b.rWrite[wcKey{"eqe", 0}])
			tx := len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
			b.postWQE(q, inlineSend(0xc0, 24))
			b.ring(q)
			b.runModel()
			b.runRTL(5_000_000)
			b.compare()
			b.faultNamed(q, slot, 1, true)
			require.Equal(t, cs.QPStateError, b.rtlStat(q.n).State(), "seed %d: QP %d on the CQ in error", seed, q.n)
			var evs []string
			for _, e := range b.rWrite[wcKey{"eqe", 0}][evs0:] {
				ev := cs.EQE(e)
				switch ev.Type() {
				case cs.EQETypeCQNotify, cs.EQETypeTXData, cs.EQETypeRXSpace:
					continue // armed notifications (the faulted CQE's too), alike on both cards (compare)
				}
				evs = append(evs, fmt.Sprintf("%v %d %#x", ev.Type(), ev.Obj(), ev.Info()))
			}
			require.Equal(t, []string{fmt.Sprintf("CQ_ERROR %d %#x", q.sendCQ, uint32(slot)), fmt.Sprintf("QP_ERROR %d %#x", q.n, uint32(cs.QPErrDMA))}, evs, "seed %d: events", seed)
			// compare found the ring equal to the model's, which ends with
			// its Local Catastrophic Terminate.
			require.Greater(t, len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)), tx+24, "seed %d: no Terminate after the Send", seed)

			// The CQ takes nothing more: these WQEs' flushes are lost.
			for i := 0; i < 3; i++ {
				b.postWQE(q, inlineSend(0xc1+uint64(i), 8))
			}
			b.ring(q)
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			require.Len(t, b.rWrite[k], cqes, "seed %d: CQEs written to a CQ in error", seed)
			b.goesOn(o)
		})
	}
}
