package sim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// wcBadSegments are the receive errors TestCardCosimTerminate has the
// peer send, one per QP: each is refused by card_rx's checks and answered
// with a Terminate (RFC 5040 §5.4, the headers its cause asks for); the
// tagged ones by placement's; rows 6-8 are MPA errors of mpa_rx
// (card_rx's m_err: Layer LLP, no header copied, RXS_CI past the FPDU).
var wcBadSegments = []struct {
	name  string
	cause rdmap.Cause
}{
	{"Send with Invalidate and no receive posted", rdmap.DDPNoBuffer},
	{"Read Request out of MSN range", rdmap.DDPInvalidMSNRange},
	{"Read Request of a source with a wrong key", 0}, // the STag table's verdict (R: its RDMAP header is copied)
	{"Read Request with MO 4", rdmap.DDPInvalidMO},
	{"RDMA Write to an STag with a wrong key", 0},                          // placement's verdict: a DDP tagged buffer error
	{"RDMA Write past its region's end", 0},                                // placement's: base and bounds
	{"Send with a bad CRC", rdmap.MPACRC},                                  // its QP checks CRCs (wcMPAShape)
	{"RDMA Write with a bad marker", rdmap.MPAMarker},                      // its QP has markers
	{"FPDU with ULPDU_Length 0", rdmap.MPAMarker},                          // a length error: code 3 too
	{"Read Response with no Read outstanding", rdmap.DDPLocalCatastrophic}, // placement's Read count
}

// wcMPAShape gives the MPA error rows' QPs what their error needs: CRCs
// checked for the CRC row, markers for the marker row.
func wcMPAShape(i int, q *wcQP) {
	switch i {
	case 6:
		q.crc = true
	case 7:
		q.markersRX = true
	}
}

// peerBad has the peer send QP q the bad segment of kind k.
func (b *wcBench) peerBad(q *wcQP, k int) {
	if q.peerRRMSN == 0 {
		q.peerRRMSN = 1
	}
	var ulp []byte
	switch k {
	case 0:
		ulp = ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpSendInvalidate)),
			RsvdULP1: uint32(q.stag), QN: rdmap.QNSend, MSN: 1}.Append(nil)
		ulp = append(ulp, "a Send no one waits for"...)
	case 6, 7, 8:
		b.peerSend(q, b.badFPDU(q, k))
		return
	case 9:
		ulp = ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpReadResponse)),
			STag: uint32(q.stag), TO: wcRegion + uint64(q.n)<<16}.Append(nil)
		ulp = append(ulp, "nobody asked..."...)
	case 4, 5:
		stag, to := uint32(q.stag)^0x5a00, wcRegion+uint64(q.n)<<16
		if k == 5 {
			stag, to = uint32(q.stag), to+wcRegLen-8
		}
		ulp = ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpWrite)),
			STag: stag, TO: to}.Append(nil)
		ulp = append(ulp, "sixteen bytes..."...)
	default:
		msn, stag, mo := q.peerRRMSN, uint32(q.stag), uint32(0)
		switch k {
		case 1:
			msn += 3
		case 2:
			stag ^= 0x5a // the key
		case 3:
			mo = 4
		}
		ulp = ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpReadRequest)),
			QN: rdmap.QNReadRequest, MSN: msn, MO: mo}.Append(nil)
		ulp = rdmap.ReadRequestFields{SinkSTag: 0x1234_5678, SinkTO: 0x9abc_def0_1234, Size: 64, SrcSTag: stag,
			SrcTO: wcRegion + uint64(q.n)<<16}.Append(ulp)
	}
	stream, err := q.peer.AppendFPDU(nil, ulp)
	require.NoError(b.t, err)
	b.peerSend(q, stream)
}

// postAfterError posts one to three WQEs on every QP (each in error by
// now: they are flushed), runs both cards and compares every stream.
func (b *wcBench) postAfterError() {
	for _, q := range b.qps {
		for k := 1 + b.rng.IntN(3); k > 0; k-- {
			if int(uint16(1)<<q.sqLog)-int(q.pi-b.rtlStat(q.n).SQCI()) < cs.MaxWQEBBs {
				break // the SQ has no room for the largest WQE
			}
			b.post(q)
		}
		b.ring(q)
	}
	b.runModel()
	b.runRTL(3_000_000)
	b.compare()
}

// termEvents is the cause of each TERM_SENT or TERM_RECV (typ) event the
// RTL wrote, by QP.
func (b *wcBench) termEvents(typ cs.EQEType) map[uint32]rdmap.Cause {
	terms := map[uint32]rdmap.Cause{}
	for _, e := range b.rWrite[wcKey{"eqe", 0}] {
		if ev := cs.EQE(e); ev.Type() == typ {
			terms[ev.Obj()] = rdmap.NewCause(rdmap.Layer(ev.TermLayer()), ev.TermType(), ev.TermCode())
		}
	}
	return terms
}

// badFPDU frames the peer's MPA error of row k (6 CRC, 7 marker, 8
// ULPDU_Length 0) on q's receive stream.
func (b *wcBench) badFPDU(q *wcQP, k int) []byte {
	off := q.peer.Offset
	var ulp []byte
	switch k {
	case 7: // long enough to hold a marker
		ulp = ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpWrite)),
			STag: uint32(q.stag), TO: wcRegion + uint64(q.n)<<16}.Append(nil)
		ulp = append(ulp, make([]byte, 1000)...)
	default:
		ulp = ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpSend)),
			QN: rdmap.QNSend, MSN: 1}.Append(nil)
		ulp = append(ulp, "a Send the MPA layer refuses"...)
	}
	fp, err := q.peer.AppendFPDU(nil, ulp)
	require.NoError(b.t, err)
	switch k {
	case 6:
		fp[len(fp)-1] ^= 0x10
	case 7:
		// The FPDUPTR of the first marker inside the FPDU, the CRC
		// recomputed so that only the framing disagrees.
		at := (off/mpa.MarkerPeriod+1)*mpa.MarkerPeriod - off
		fp[at+3] ^= 0x04
		if q.crc {
			binary.LittleEndian.PutUint32(fp[len(fp)-4:], mpa.CRC32c(fp[:len(fp)-4]))
		}
	case 8:
		at := 0
		if q.markersRX && off%mpa.MarkerPeriod == 0 {
			at = mpa.MarkerLen // behind the leading marker
		}
		fp[at], fp[at+1] = 0, 0
	}
	return fp
}

// TestCardCosimTerminate runs the whole-card workload, then has the peer
// send each QP a segment the receive checks refuse (wcBadSegments): the
// RTL card must answer as the card model does, with TERM_SENT (its
// cause), the Terminate's FPDU on the transmit ring after the FPDUs
// before it, the QP in ERROR with TX_CLOSED, and every WQE posted after
// it flushed with WR_FLUSH_ERR.
func TestCardCosimTerminate(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, len(wcBadSegments), wcMPAShape)
			for round := 0; round < 8; round++ {
				b.round(round)
			}
			tx := map[uint32]int{}
			for i, q := range b.qps {
				tx[q.n] = len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
				b.peerBad(q, i)
			}
			b.runModel()
			b.runRTL(3_000_000)
			b.postAfterError()
			// What compare cannot tell from equality alone: each QP did
			// send a Terminate with the expected cause and is in error.
			terms := b.termEvents(cs.EQETypeTermSent)
			for i, q := range b.qps {
				st := b.rtlStat(q.n)
				require.Equal(t, cs.QPStateError, st.State(), "seed %d QP %d (%s): state", seed, q.n, wcBadSegments[i].name)
				require.True(t, st.TXClosed(), "seed %d QP %d: TX_CLOSED", seed, q.n)
				c, ok := terms[q.n]
				require.True(t, ok, "seed %d QP %d (%s): no TERM_SENT", seed, q.n, wcBadSegments[i].name)
				if want := wcBadSegments[i].cause; want != 0 {
					require.Equal(t, want, c, "seed %d QP %d (%s): TERM_SENT cause", seed, q.n, wcBadSegments[i].name)
				} else if i >= 4 {
					require.Equal(t, rdmap.TypeDDPTaggedBuffer, c.Type(), "seed %d QP %d (%s): TERM_SENT cause %v", seed, q.n, wcBadSegments[i].name, c)
				} else {
					require.Equal(t, rdmap.TypeRDMAPRemoteProtection, c.Type(), "seed %d QP %d (%s): TERM_SENT cause %v", seed, q.n, wcBadSegments[i].name, c)
				}
				n := len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)) - tx[q.n]
				require.Greater(t, n, 0, "seed %d QP %d: no Terminate on the transmit ring", seed, q.n)
				t.Logf("QP %d: %s: TERM_SENT %v, %d ring bytes", q.n, wcBadSegments[i].name, c, n)
			}
		})
	}
}

// wcPeerTerminates are the Terminates TestCardCosimTermRecv has the peer
// send, one per QP: the card reads each one's cause as the card model
// does (golden/rdmap.ParseTerminate: RFC 5040's layout or siw's, or
// RDMAP Operation Unspecified when it cannot be read) and, with an RDMA
// Read outstanding (read), completes that Read with the cause's status.
var wcPeerTerminates = []struct {
	name   string
	read   bool
	cause  rdmap.Cause
	status cs.WCStatus // of the Read, if read
	body   func(q *wcQP) []byte
}{
	{"RFC layout, a Read Request's headers copied", true, rdmap.RDMAPInvalidSTag, cs.WCStatusRemAccessErr, func(q *wcQP) []byte {
		rr := ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpReadRequest)),
			QN: rdmap.QNReadRequest, MSN: 1}.Append(nil)
		t := rdmap.Terminate{Cause: rdmap.RDMAPInvalidSTag, M: true, D: true, R: true, SegLen: 46, DDPHeader: rr,
			RDMAHeader: rdmap.ReadRequestFields{SinkSTag: 1, Size: 64, SrcSTag: 2}.Append(nil)}
		return t.Append(nil)
	}},
	{"siw layout, a tagged header copied", true, rdmap.DDPBaseBounds, cs.WCStatusRemAccessErr, func(q *wcQP) []byte {
		w := ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpWrite)), STag: 7, TO: 9}.Append(nil)
		b := []byte{0x11, 0x01, 0x03, 0, 0, 30} // siw: EType<<4|Layer, code; D and M in the low bits
		return append(b, w...)
	}},
	{"siw layout told by its cause alone", true, rdmap.DDPNoBuffer, cs.WCStatusRemOpErr, func(q *wcQP) []byte {
		return []byte{0x21, 0x02, 0, 0} // 0x2102 is no cause; 0x1202 is
	}},
	{"RFC layout, no headers, nothing outstanding", false, rdmap.RDMAPCatastrophicStream, 0, func(q *wcQP) []byte {
		return (&rdmap.Terminate{Cause: rdmap.RDMAPCatastrophicStream}).Append(nil)
	}},
	{"shorter than its D flag says", true, rdmap.RDMAPOperationUnspecified, cs.WCStatusRemOpErr, func(q *wcQP) []byte {
		return []byte{0x11, 0x00, 0x40, 0, 0, 20, 0x41}
	}},
	{"MSN 2", true, rdmap.RDMAPOperationUnspecified, cs.WCStatusRemOpErr, nil},
}

// postRead posts a signaled 64-byte RDMA Read into q's region (its STag
// allows local writes) and rings its doorbell; the peer never answers.
func (b *wcBench) postRead(q *wcQP) uint64 {
	h := b.readWQE(true, false)
	setReadSink(h, wcRegion+uint64(q.n)<<16+128, 64, q.stag)
	size := uint16(1) << q.sqLog
	b.put(wcSQ+uint64(q.n)<<16+uint64(q.pi&(size-1))*cs.BB, h)
	q.pi++
	q.posted++
	q.pending = true
	b.ring(q)
	return h.WRID()
}

// TestCardCosimTermRecv runs the whole-card workload, posts an RDMA Read
// the peer never answers on most QPs, then has the peer send each QP a
// Terminate (wcPeerTerminates): the RTL card must do as the card model
// does: TERM_RECV with the Terminate's cause, no Terminate of its own on
// the transmit ring, the QP in ERROR, the outstanding Read completed with
// the cause's status, and every WQE posted after it flushed.
func TestCardCosimTermRecv(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, len(wcPeerTerminates))
			for round := 0; round < 4; round++ {
				b.round(round)
			}
			reads := map[uint32]uint64{}
			for i, q := range b.qps {
				if wcPeerTerminates[i].read {
					reads[q.n] = b.postRead(q)
				}
			}
			b.runModel()
			b.runRTL(3_000_000)
			tx := map[uint32]int{}
			for i, q := range b.qps {
				tx[q.n] = len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
				k := wcPeerTerminates[i]
				var ulp []byte
				if k.body == nil {
					ulp = (&rdmap.Terminate{Cause: rdmap.RDMAPCatastrophicStream}).AppendMessage(nil, rdmap.Version1, ddp.Version1, 2)
				} else {
					ulp = ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpTerminate)),
						QN: rdmap.QNTerminate, MSN: 1}.Append(nil)
					ulp = append(ulp, k.body(q)...)
				}
				stream, err := q.peer.AppendFPDU(nil, ulp)
				require.NoError(t, err)
				b.peerSend(q, stream)
			}
			b.runModel()
			b.runRTL(3_000_000)
			b.postAfterError()
			require.Empty(t, b.termEvents(cs.EQETypeTermSent), "seed %d: a Terminate answered with one", seed)
			terms := b.termEvents(cs.EQETypeTermRecv)
			for i, q := range b.qps {
				k := wcPeerTerminates[i]
				st := b.rtlStat(q.n)
				require.Equal(t, cs.QPStateError, st.State(), "seed %d QP %d (%s): state", seed, q.n, k.name)
				c, ok := terms[q.n]
				require.True(t, ok, "seed %d QP %d (%s): no TERM_RECV", seed, q.n, k.name)
				require.Equal(t, k.cause, c, "seed %d QP %d (%s): TERM_RECV cause", seed, q.n, k.name)
				require.Equal(t, tx[q.n], len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)), "seed %d QP %d (%s): transmit ring bytes after the Terminate", seed, q.n, k.name)
				if !k.read {
					continue
				}
				var got *cs.CQE
				for _, e := range b.rWrite[wcKey{"cqe", q.sendCQ}] {
					if c := cs.CQE(e); c.WRID() == reads[q.n] {
						got = &c
					}
				}
				require.NotNil(t, got, "seed %d QP %d (%s): no completion of the Read", seed, q.n, k.name)
				require.Equal(t, k.status, got.Status(), "seed %d QP %d (%s): the Read's status", seed, q.n, k.name)
				require.Equal(t, k.cause, rdmap.NewCause(rdmap.Layer(got.TermLayer()), got.TermType(), got.TermCode()), "seed %d QP %d (%s): the Read's CQE cause", seed, q.n, k.name)
				t.Logf("QP %d: %s: TERM_RECV %v, the Read %v", q.n, k.name, c, got.Status())
			}
		})
	}
}

// TestCardCosimBadDoorbell runs the whole-card workload, then gives each
// QP an RXS_PI doorbell more than its ring's size past what the card has
// consumed: the RTL card must do as the card model does (toError
// BAD_DOORBELL): QP_ERROR with INFO BAD_DOORBELL and no Terminate, the QP
// in ERROR with TX_CLOSED, its ring read no more, and every WQE posted
// after it flushed.
func TestCardCosimBadDoorbell(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, 3)
			for round := 0; round < 4; round++ {
				b.round(round)
			}
			tx := map[uint32]int{}
			for _, q := range b.qps {
				tx[q.n] = len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
				v := q.rxWritten + uint32(1)<<q.rxsLog + 4
				require.NoError(t, b.model.Write32(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBRXSPI, v))
				require.NoError(t, b.rtl.RegWrite(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBRXSPI, v))
				require.NoError(t, b.rtl.Step(b.rng.IntN(400)))
			}
			b.runModel()
			b.runRTL(3_000_000)
			b.postAfterError()
			errs := map[uint32]uint32{}
			for _, e := range b.rWrite[wcKey{"eqe", 0}] {
				if ev := cs.EQE(e); ev.Type() == cs.EQETypeQPError {
					errs[ev.Obj()] = ev.Info()
				}
			}
			for _, q := range b.qps {
				st := b.rtlStat(q.n)
				require.Equal(t, cs.QPStateError, st.State(), "seed %d QP %d: state", seed, q.n)
				require.True(t, st.TXClosed(), "seed %d QP %d: TX_CLOSED", seed, q.n)
				require.EqualValues(t, cs.QPErrBadDoorbell, errs[q.n], "seed %d QP %d: QP_ERROR's INFO", seed, q.n)
				require.Equal(t, tx[q.n], len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)), "seed %d QP %d: a Terminate was sent", seed, q.n)
			}
		})
	}
}

// TestCardCosimBadSQDoorbell runs the whole-card workload, then gives each
// QP a doorbell the card model refuses: an SQ_PI more than the SQ's size
// past SQ_CI, an SQ_PI behind SQ_CI (a producer index that went back)
// (ringMoved), or a TXS_CI past TXS_PI followed by a WQE (drain). The RTL
// card must do as the model does: QP_ERROR BAD_DOORBELL, no Terminate,
// the QP in ERROR with TX_CLOSED, SQ_PI left where it was (nothing of the
// bad range is read or flushed), and what is posted after it flushed.
func TestCardCosimBadSQDoorbell(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, 3)
			for round := 0; round < 4; round++ {
				b.round(round)
			}
			tx := map[uint32]int{}
			sqci := map[uint32]uint16{}
			for i, q := range b.qps {
				tx[q.n] = len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
				sqci[q.n] = q.pi
				db := cs.QPDBBase + q.n*cs.QPDBStride
				reg, v := uint32(cs.QPDBSQPI), uint32(q.pi+uint16(1)<<q.sqLog+1)&0xffff // past the ring
				switch i {
				case 1:
					v = uint32(q.pi-1) & 0xffff // went back
				case 2:
					reg, v = cs.QPDBTXSCI, b.rtlStat(q.n).TXSPI()+1 // past TXS_PI
				}
				require.NoError(t, b.model.Write32(db+reg, v))
				require.NoError(t, b.rtl.RegWrite(db+reg, v))
				if i == 2 {
					q.mTXSCI, q.rTXSCI = v, v
					b.post(q)
					b.ring(q)
				}
				require.NoError(t, b.rtl.Step(b.rng.IntN(400)))
			}
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			errs := map[uint32]uint32{}
			for _, e := range b.rWrite[wcKey{"eqe", 0}] {
				if ev := cs.EQE(e); ev.Type() == cs.EQETypeQPError {
					errs[ev.Obj()] = ev.Info()
				}
			}
			for _, q := range b.qps {
				st := b.rtlStat(q.n)
				require.Equal(t, cs.QPStateError, st.State(), "seed %d QP %d: state", seed, q.n)
				require.True(t, st.TXClosed(), "seed %d QP %d: TX_CLOSED", seed, q.n)
				require.EqualValues(t, cs.QPErrBadDoorbell, errs[q.n], "seed %d QP %d: QP_ERROR's INFO", seed, q.n)
				require.Equal(t, tx[q.n], len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)), "seed %d QP %d: a Terminate was sent", seed, q.n)
				if q != b.qps[2] {
					require.Equal(t, sqci[q.n], st.SQCI(), "seed %d QP %d: SQ_CI moved into the bad range", seed, q.n)
				}
			}
			b.postAfterError()
		})
	}
}

// TestCardCosimBadRQDoorbell rings bad RQ_PI doorbells after the
// whole-card workload: one more than the RQ's 16 blocks past RQ_CI, and
// one behind it. card_rx leaves RQ_PI alone and the QP goes to error with
// QP_ERROR BAD_DOORBELL and no Terminate, as in the card model (ringMoved);
// the third QP is left alone and keeps working.
func TestCardCosimBadRQDoorbell(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, 3)
			for round := 0; round < 3; round++ {
				b.round(round)
			}
			tx := map[uint32]int{}
			bad := b.qps[:2]
			for i, q := range bad {
				tx[q.n] = len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
				v := uint32(17) // the bench's RQs have 16 blocks
				if i == 1 {
					v = 0xffff // behind RQ_CI 0
				}
				db := cs.QPDBBase + q.n*cs.QPDBStride + cs.QPDBRQPI
				require.NoError(t, b.model.Write32(db, v))
				require.NoError(t, b.rtl.RegWrite(db, v))
				require.NoError(t, b.rtl.Step(b.rng.IntN(400)))
			}
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			errs := map[uint32]uint32{}
			for _, e := range b.rWrite[wcKey{"eqe", 0}] {
				if ev := cs.EQE(e); ev.Type() == cs.EQETypeQPError {
					errs[ev.Obj()] = ev.Info()
				}
			}
			for _, q := range bad {
				st := b.rtlStat(q.n)
				require.Equal(t, cs.QPStateError, st.State(), "seed %d QP %d: state", seed, q.n)
				require.EqualValues(t, cs.QPErrBadDoorbell, errs[q.n], "seed %d QP %d: QP_ERROR's INFO", seed, q.n)
				require.Zero(t, st.RQCI(), "seed %d QP %d: RQ_CI", seed, q.n)
				require.Equal(t, tx[q.n], len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)), "seed %d QP %d: a Terminate was sent", seed, q.n)
			}
			require.NotEqual(t, cs.QPStateError, b.rtlStat(b.qps[2].n).State(), "seed %d: the third QP went to error", seed)
			b.postAfterError()
		})
	}
}

// TestCardCosimAfterError runs the whole-card workload, puts each QP in
// error with QP_CMD ERROR, then has the peer send it RDMA Writes: the card
// model reads a QP's receive ring no more once it is in error, so nothing
// may be placed and RXS_CI must not move, on the RTL card as on the model.
func TestCardCosimAfterError(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, 3)
			for round := 0; round < 4; round++ {
				b.round(round)
			}
			ci := map[uint32]uint32{}
			for _, q := range b.qps {
				b.qpCmd(q, cs.QPOpError, cs.QPStateError)
				ci[q.n] = b.rtlStat(q.n).RXSCI()
			}
			for _, q := range b.qps {
				b.peerWrites(q)
			}
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			for _, q := range b.qps {
				require.Equal(t, ci[q.n], b.rtlStat(q.n).RXSCI(), "seed %d QP %d: RXS_CI moved after ERROR", seed, q.n)
			}
		})
	}
}

// peerPart puts the first n octets of stream on q's receive ring and
// rings RXS_PI past them: the rest never comes.
func (b *wcBench) peerPart(q *wcQP, stream []byte, n int) {
	b.putRX(q, stream[:n])
	q.rxWritten += uint32(n)
	b.w32(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBRXSPI, q.rxWritten)
	require.NoError(b.t, b.rtl.Step(b.rng.IntN(400)))
}

// TestCardCosimStreamCut runs the whole-card workload, then has the peer
// leave each QP an FPDU that can never be taken whole: cut by the end of
// its stream (RX_FIN) inside the FPDU, inside its ULPDU_Length, or after
// a whole FPDU; or longer than the receive ring. The RTL card must answer
// as the card model does: QP_ERROR STREAM_CUT with no Terminate for a cut
// stream, a Local Catastrophic Terminate (TERM_SENT) for the FPDU too
// large; the FPDUs before it placed, the QP in ERROR, what is posted
// after it flushed.
func TestCardCosimStreamCut(t *testing.T) {
	rows := []string{"FIN inside an FPDU", "FIN inside the ULPDU_Length", "FIN after a whole FPDU and part of one", "FPDU longer than the ring"}
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			// One QP more: its stream ends after whole FPDUs only, while
			// the reader waits on it for more (STREAM_END, not a cut).
			b := newWCBench(t, w, seed, wcTiming, len(rows)+1)
			for round := 0; round < 4; round++ {
				b.round(round)
			}
			tx := map[uint32]int{}
			send := func(q *wcQP, n int) []byte {
				ulp := ddp.UntaggedFields{Last: true, Version: ddp.Version1, RsvdULP0: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpSend)),
					QN: rdmap.QNSend, MSN: 1}.Append(nil)
				fp, err := q.peer.AppendFPDU(nil, append(ulp, make([]byte, n)...))
				require.NoError(t, err)
				return fp
			}
			last := b.qps[len(rows)]
			for i, q := range b.qps[:len(rows)] {
				tx[q.n] = len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil))
				switch i {
				case 0:
					fp := send(q, 100)
					b.peerPart(q, fp, 3+b.rng.IntN(len(fp)-4))
				case 1:
					b.peerPart(q, send(q, 100), 1)
				case 2:
					wr := ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpWrite)),
						STag: uint32(q.stag), TO: wcRegion + uint64(q.n)<<16}.Append(nil)
					fp, err := q.peer.AppendFPDU(nil, append(wr, "a whole Write before the cut"...))
					require.NoError(t, err)
					b.peerSend(q, fp)
					fp = send(q, 300)
					b.peerPart(q, fp, len(fp)-1)
				case 3:
					b.peerPart(q, send(q, 20000), 200)
				}
				if i < 3 {
					b.w32(cs.QPDBBase+q.n*cs.QPDBStride+cs.QPDBStream, 1<<cs.QPDBStreamRXFinShift)
				}
			}
			b.runModel()
			b.runRTL(3_000_000)
			b.peerWrites(last)
			b.runModel()
			b.runRTL(3_000_000)
			b.w32(cs.QPDBBase+last.n*cs.QPDBStride+cs.QPDBStream, 1<<cs.QPDBStreamRXFinShift)
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			ended := false
			for _, e := range b.rWrite[wcKey{"eqe", 0}] {
				if ev := cs.EQE(e); ev.Type() == cs.EQETypeStreamEnd && ev.Obj() == last.n {
					ended = true
				}
			}
			require.True(t, ended, "seed %d QP %d: no STREAM_END after whole FPDUs and RX_FIN", seed, last.n)
			require.NotEqual(t, cs.QPStateError, b.rtlStat(last.n).State(), "seed %d QP %d: in error after whole FPDUs and RX_FIN", seed, last.n)
			b.qps = b.qps[:len(rows)]
			b.postAfterError()
			errs := map[uint32]uint32{}
			for _, e := range b.rWrite[wcKey{"eqe", 0}] {
				if ev := cs.EQE(e); ev.Type() == cs.EQETypeQPError {
					errs[ev.Obj()] = ev.Info()
				}
			}
			terms := b.termEvents(cs.EQETypeTermSent)
			for i, q := range b.qps {
				st := b.rtlStat(q.n)
				require.Equal(t, cs.QPStateError, st.State(), "seed %d QP %d (%s): state", seed, q.n, rows[i])
				sent := len(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil)) - tx[q.n]
				if i < 3 {
					require.EqualValues(t, cs.QPErrStreamCut, errs[q.n], "seed %d QP %d (%s): QP_ERROR's INFO", seed, q.n, rows[i])
					require.Zero(t, sent, "seed %d QP %d (%s): a Terminate was sent", seed, q.n, rows[i])
					continue
				}
				require.Equal(t, rdmap.RDMAPLocalCatastrophic, terms[q.n], "seed %d QP %d (%s): TERM_SENT", seed, q.n, rows[i])
				require.Positive(t, sent, "seed %d QP %d (%s): no Terminate", seed, q.n, rows[i])
			}
		})
	}
}

// TestCardCosimCQOverrun gives two QPs a CQ of 4 entries and a third QP
// the other CQ, then posts five to eight signaled WQEs on the first QP:
// the fifth completion finds the CQ full. The RTL card must do as the
// card model does: CQ_OVERRUN for the CQ, every QP on it (the idle one
// too) in ERROR with QP_ERROR CQ_OVERRUN and an RDMAP Local Catastrophic
// Terminate on its transmit stream right behind the fifth WQE's FPDUs
// (the WQEs behind it flushed, never sent); the QP on the other CQ
// untouched.
// Completions on the full CQ are then lost (WQEs posted after it are
// flushed with nothing written), and once the host frees entries the
// flushed ones complete again.
func TestCardCosimCQOverrun(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			const cqLog = 2
			b := newWCBenchCQ(t, w, seed, wcTiming, 3, cqLog, func(i int, q *wcQP) {
				q.sendCQ = 1 + uint32(i/2)
				q.sqLog = 5 // room for the five WQEs
			})
			full, idle, other := b.qps[0], b.qps[1], b.qps[2]
			// The fifth overruns; the ones behind it must be flushed, not
			// sent (card_tx holds a WQE on a tight CQ until the completions
			// before it have their verdict).
			for range 1<<cqLog + 1 + b.rng.IntN(4) {
				b.postWQE(full, randomInlineWQE(b.rng, wqeMix{maxLen: 100, signaled: 256}))
			}
			b.ring(full)
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			errs := map[uint32]uint32{}
			overruns := map[uint32]int{}
			for _, e := range b.rWrite[wcKey{"eqe", 0}] {
				switch ev := cs.EQE(e); ev.Type() {
				case cs.EQETypeQPError:
					errs[ev.Obj()] = ev.Info()
					require.Zero(t, ev.TermLayer()|ev.TermType()|ev.TermCode(), "seed %d QP %d: QP_ERROR carries a Terminate cause", seed, ev.Obj())
				case cs.EQETypeCQOverrun:
					overruns[ev.Obj()]++
				}
			}
			require.Equal(t, map[uint32]int{1: 1}, overruns, "seed %d: CQ_OVERRUN events by CQ", seed)
			for _, q := range []*wcQP{full, idle} {
				st := b.rtlStat(q.n)
				require.Equal(t, cs.QPStateError, st.State(), "seed %d QP %d: state", seed, q.n)
				require.True(t, st.TXClosed(), "seed %d QP %d: TX_CLOSED", seed, q.n)
				require.EqualValues(t, cs.QPErrCQOverrun, errs[q.n], "seed %d QP %d: QP_ERROR's INFO", seed, q.n)
				var last rdmap.Message
				d := mpa.NewDeframer(mpa.DeframerConfig{Markers: q.markersTX, CRC: q.crc})
				require.NoError(t, d.Feed(bytes.Join(b.rWrite[wcKey{"txs", q.n}], nil), func(u mpa.ULPDU) (err error) {
					last, err = rdmap.Parse(bytes.Clone(u.Data))
					return err
				}), "seed %d QP %d: the transmit stream", seed, q.n)
				require.NotNil(t, last.Terminate, "seed %d QP %d: the last FPDU is not a Terminate", seed, q.n)
				require.Equal(t, rdmap.RDMAPLocalCatastrophic, last.Terminate.Cause, "seed %d QP %d: Terminate cause", seed, q.n)
			}
			require.Equal(t, cs.QPStateRts, b.rtlStat(other.n).State(), "seed %d QP %d (other CQ): state", seed, other.n)
			require.NotContains(t, errs, other.n, "seed %d QP %d (other CQ): QP_ERROR", seed, other.n)
			// The peer goes on writing to the QPs in error: the card reads
			// their receive rings no more, so nothing is placed and RXS_CI
			// stays (the card model's errorStep).
			ci := map[uint32]uint32{}
			for _, q := range []*wcQP{full, idle} {
				ci[q.n] = b.rtlStat(q.n).RXSCI()
				b.peerWrites(q)
			}
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			for _, q := range []*wcQP{full, idle} {
				require.Equal(t, ci[q.n], b.rtlStat(q.n).RXSCI(), "seed %d QP %d: RXS_CI moved after the overrun", seed, q.n)
			}
			// Posted now: flushed, their completions lost on the full CQ.
			before := len(b.rWrite[wcKey{"cqe", 1}])
			b.postAfterError()
			require.Len(t, b.rWrite[wcKey{"cqe", 1}], before, "seed %d: CQEs written on the full CQ", seed)
			// The host frees every entry: the next flushes are written (at
			// most the CQ's size, from one QP: which QP's flush would find
			// the CQ full again is a matter of timing).
			b.w32(cs.CQDBBase+1*cs.CQDBStride+cs.CQDBCI, uint32(before))
			for range 1 + b.rng.IntN(1<<cqLog) {
				b.post(full)
			}
			b.ring(full)
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			require.Greater(t, len(b.rWrite[wcKey{"cqe", 1}]), before, "seed %d: no flush completion once the CQ has room", seed)
			for _, e := range b.rWrite[wcKey{"cqe", 1}][before:] {
				require.Equal(t, cs.WCStatusWRFlushErr, cs.CQE(e).Status(), "seed %d: a completion after the overrun", seed)
			}
		})
	}
}

// wcRRSeg is one Read Response segment the peer sends: its STag (0: the
// Read's sink), its TO as an offset from the sink's, its length and L;
// or, with write, an RDMA Write segment so.
type wcRRSeg struct {
	stag        mem.STag
	off, n      int
	last, write bool
}

// wcReadResponses are the answers TestCardCosimReadResponse has the peer
// give the 64-byte RDMA Read each QP sends (postRead), one row per QP:
// two that complete it, the rows of the error matrix that only the Read
// outstanding can tell (RFC 5040 §4.4, golden/iwarp's
// CheckReadResponse): a segment that fails writes no byte, and the QP
// sends a Terminate with the cause; and a whole response followed at
// once by a segment that fails: the Read completes first.
var wcReadResponses = []struct {
	name  string
	cause rdmap.Cause // 0: no Terminate
	done  bool        // the Read completes with success
	segs  func(q *wcQP) []wcRRSeg
}{
	{"three segments in order", 0, true, func(q *wcQP) []wcRRSeg {
		return []wcRRSeg{{0, 0, 20, false, false}, {0, 20, 30, false, false}, {0, 50, 14, true, false}}
	}},
	{"the data, then a zero-length last segment", 0, true, func(q *wcQP) []wcRRSeg {
		return []wcRRSeg{{0, 0, 64, false, false}, {0, 64, 0, true, false}}
	}},
	{"into another region of the PD with the local write right", rdmap.DDPInvalidSTag, false, func(q *wcQP) []wcRRSeg {
		return []wcRRSeg{{q.src[0], wcSrc - wcRegion - 128, 64, true, false}}
	}},
	{"the sink's STag with another key", rdmap.DDPInvalidSTag, false, func(q *wcQP) []wcRRSeg {
		return []wcRRSeg{{q.stag ^ 0x5a, 0, 64, true, false}}
	}},
	{"at a TO past the sink's start", rdmap.DDPBaseBounds, false, func(q *wcQP) []wcRRSeg { return []wcRRSeg{{0, 8, 56, true, false}} }},
	{"longer than the Read", rdmap.DDPBaseBounds, false, func(q *wcQP) []wcRRSeg { return []wcRRSeg{{0, 0, 72, true, false}} }},
	{"a last segment that leaves bytes out", rdmap.DDPBaseBounds, false, func(q *wcQP) []wcRRSeg { return []wcRRSeg{{0, 0, 32, true, false}} }},
	{"a segment sent twice", rdmap.DDPBaseBounds, false, func(q *wcQP) []wcRRSeg {
		return []wcRRSeg{{0, 0, 32, false, false}, {0, 0, 32, true, false}}
	}},
	{"a zero-length last segment alone", rdmap.DDPBaseBounds, false, func(q *wcQP) []wcRRSeg { return []wcRRSeg{{0, 0, 0, true, false}} }},
	{"the whole response, then at once an RDMA Write with a wrong key", rdmap.DDPInvalidSTag, true, func(q *wcQP) []wcRRSeg {
		return []wcRRSeg{{0, 0, 64, true, false}, {stag: q.stag ^ 0x5a, n: 16, last: true, write: true}}
	}},
}

// TestCardCosimReadResponse runs the whole-card workload, has every QP
// send a 64-byte RDMA Read, then has the peer answer each one as a row
// of wcReadResponses says: the RTL card must do as the card model does,
// byte for byte (what is placed, CQEs, events, the transmit ring). A row
// with a cause ends with TERM_SENT of that cause, the QP in ERROR and
// the Read not completed with success (but for the last row's, whose
// response came whole before the failing segment); the others complete
// the Read and leave the QP in RTS. Until 27 Nov the RTL checked only that a Read was
// outstanding, and placed the third row's bytes into the gather source.
func TestCardCosimReadResponse(t *testing.T) {
	for _, w := range gen.CardTopWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			b := newWCBench(t, w, seed, wcTiming, len(wcReadResponses))
			for round := 0; round < 3; round++ {
				b.round(round)
			}
			reads := map[uint32]uint64{}
			for _, q := range b.qps {
				reads[q.n] = b.postRead(q)
			}
			b.runModel()
			b.runRTL(3_000_000)
			b.compare()
			placed := map[uint32]int{}
			for i, q := range b.qps {
				placed[q.n] = len(b.rPlace[q.n])
				var stream []byte
				for _, s := range wcReadResponses[i].segs(q) {
					stag := s.stag
					if stag == 0 {
						stag = q.stag
					}
					op := rdmap.OpReadResponse
					if s.write {
						op = rdmap.OpWrite
					}
					ulp := ddp.TaggedFields{Last: s.last, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, op)),
						STag: uint32(stag), TO: uint64(int64(wcRegion+uint64(q.n)<<16+128) + int64(s.off))}.Append(nil)
					p := make([]byte, s.n)
					for k := range p {
						p[k] = byte(b.rng.Uint32())
					}
					var err error
					stream, err = q.peer.AppendFPDU(stream, append(ulp, p...))
					require.NoError(t, err)
				}
				b.peerSend(q, stream)
			}
			b.runModel()
			b.runRTL(3_000_000)
			b.postAfterError()
			terms := b.termEvents(cs.EQETypeTermSent)
			for i, q := range b.qps {
				k := wcReadResponses[i]
				st := b.rtlStat(q.n)
				var got *cs.CQE
				for _, e := range b.rWrite[wcKey{"cqe", q.sendCQ}] {
					if c := cs.CQE(e); c.WRID() == reads[q.n] {
						got = &c
					}
				}
				c, sent := terms[q.n]
				if k.done {
					require.NotNil(t, got, "seed %d QP %d (%s): no completion of the Read", seed, q.n, k.name)
					require.Equal(t, cs.WCStatusSuccess, got.Status(), "seed %d QP %d (%s): the Read's status", seed, q.n, k.name)
				} else if got != nil {
					require.NotEqual(t, cs.WCStatusSuccess, got.Status(), "seed %d QP %d (%s): the Read succeeded", seed, q.n, k.name)
				}
				if k.cause == 0 {
					require.False(t, sent, "seed %d QP %d (%s): TERM_SENT %v", seed, q.n, k.name, c)
					require.Equal(t, cs.QPStateRts, st.State(), "seed %d QP %d (%s): state", seed, q.n, k.name)
					t.Logf("QP %d: %s: the Read completed", q.n, k.name)
					continue
				}
				require.Equal(t, cs.QPStateError, st.State(), "seed %d QP %d (%s): state", seed, q.n, k.name)
				require.True(t, sent, "seed %d QP %d (%s): no TERM_SENT", seed, q.n, k.name)
				require.Equal(t, k.cause, c, "seed %d QP %d (%s): TERM_SENT cause", seed, q.n, k.name)
				t.Logf("QP %d: %s: TERM_SENT %v, %d bytes placed by the answer", q.n, k.name, c, len(b.rPlace[q.n])-placed[q.n])
			}
		})
	}
}
