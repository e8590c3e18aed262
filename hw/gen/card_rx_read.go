package gen

import (
	"fmt"
	"math/big"
)

// card_rx's Read Request path (docs/card-rtl.md): an untagged QN 1
// segment from placement's m_host is checked as the card model's
// rxReadRequest checks it (MSN, one segment of exactly a Read Request
// header, room within IRD, the source's remote-read check through
// placement's check port) and handed to card_tx's responder as one
// record (m_rreq); card_tx gives each IRD entry back (s_rreq_done) once
// it has answered the request.

// Terminate causes of the Read Request path (RFC 5040 Fig. 9), as
// golden/rdmap names them.
const (
	causeRDMAPCatastrophicStream = 0x0207
	causeRDMAPInvalidSTag        = 0x0100
	causeRDMAPBaseBounds         = 0x0101
	causeRDMAPAccessRights       = 0x0102
	causeRDMAPSTagNotAssociated  = 0x0103
	causeRDMAPTOWrap             = 0x0104
)

// cardRxReadReqLen is a Read Request's ULPDU length: the untagged DDP
// header and the RDMAP Read Request header, no payload.
const cardRxReadReqLen = untaggedHdr + cardTxReadReqBytes

// readSourceCause is the Terminate cause of a failed remote-read check
// (golden/iwarp/mem.Fault.Cause for UseRemoteRead) of fault f (3 bits).
func readSourceCause(f Expr) Expr {
	is := func(v uint64) Expr { return Eq(f, C(3, v)) }
	return Sel(is(1), C(16, causeRDMAPInvalidSTag), Sel(is(2), C(16, causeRDMAPSTagNotAssociated),
		Sel(is(3), C(16, causeRDMAPAccessRights), Sel(is(4), C(16, causeRDMAPTOWrap), C(16, causeRDMAPBaseBounds)))))
}

// rxReadIn is what the Read Request path takes from the Send engine.
type rxReadIn struct {
	create Expr    // QP_CMD CREATE taken this cycle
	cQPN   *Signal // its QP number
	rdEn   Expr    // the engine reads the QP's contexts (sqp) this cycle
	ld     Expr    // ... and loads them this cycle
	qp     *Signal // the segment's QP
	bi     *Signal // index of the s_host beat shown
	hData  *Signal // the beat
	take   Expr    // the engine takes s_host beats of the request body (capture them)
	hdr    *Signal // the segment's DDP header
	slen   *Signal // its ULPDU length
	msnH   Expr    // its MSN
	moH    Expr    // its MO
	lflag  Expr    // its L flag
	out    Expr    // the engine offers the record (m_rreq_valid)
	store  Expr    // the engine stores the next MSN (the record was taken)
}

// rxRead is what the Read Request path gives the Send engine.
type rxRead struct {
	cause    *Signal // the check's Terminate cause, 0 if the request passes (valid once loaded)
	sizeZero *Signal // a zero-length Read: no source check
	srcSTag  *Signal
	srcTO    *Signal
	size     *Signal
	body     *Signal // the request's RDMAP header (28 octets, byte 0 in bits 7:0), for a Terminate that copies it
	taken    *Signal // m_rreq_ready
	storeOK  *Signal // the MSN can be stored this cycle (no CREATE writes the state)
	unused   []Expr
}

func cardRxRead(m *Module, W int, x rxReadIn) *rxRead {
	L := W / 8
	QB := cardRxQPBits
	ird := m.Input("qp_rd_ird", 8, "staged: IRD, Read Requests the peer may have outstanding (1..16)")
	oValid := m.Output("m_rreq_valid", 1, "a Read Request that passed every check (card_tx's responder, s_rreq)")
	oReady := m.Input("m_rreq_ready", 1, "")
	oQPN := m.Output("m_rreq_qpn", QB, "")
	oSinkSTag := m.Output("m_rreq_sink_stag", 32, "Data Sink STag")
	oSinkTO := m.Output("m_rreq_sink_to", 64, "Data Sink Tagged Offset")
	oSize := m.Output("m_rreq_size", 32, "RDMA Read Message Size")
	oSrcSTag := m.Output("m_rreq_src_stag", 32, "Data Source STag (checked: remote read)")
	oSrcTO := m.Output("m_rreq_src_to", 64, "Data Source Tagged Offset")
	oHdr := m.Output("m_rreq_hdr", 8*untaggedHdr, "the Read Request's DDP header, byte 0 in bits 7:0 (for the Terminate of a source revoked while it is answered)")
	dValid := m.Input("s_rreq_done_valid", 1, "card_tx answered a Read Request of the QP: one IRD entry is free again")
	dReady := m.Output("s_rreq_done_ready", 1, "")
	dQPN := m.Input("s_rreq_done_qpn", QB, "")

	// The request body: ULPDU bytes 18..45, taken as the beats pass.
	const nb = cardTxReadReqBytes
	body := m.RegDecl("rr_body", 8*nb, "the Read Request header (RFC 5040 §4.4), byte 0 in bits 7:0")
	var parts []Expr
	for k := nb - 1; k >= 0; k-- {
		u := untaggedHdr + k
		hit := And(x.take, Eq(x.bi, C(x.bi.W, uint64(u/L))))
		parts = append(parts, Sel(hit, Bits(x.hData, 8*(u%L)+7, 8*(u%L)), Bits(body, 8*k+7, 8*k)))
	}
	m.Drive(body, nil, Cat(parts...), nil)
	be := func(name string, off, n int) *Signal {
		var b []Expr
		for i := 0; i < n; i++ {
			b = append(b, Bits(body, 8*(off+i)+7, 8*(off+i)))
		}
		return m.WireOf(name, Cat(b...), "")
	}
	out := &rxRead{body: body}
	sinkSTag := be("rr_sink_stag", 0, 4)
	sinkTO := be("rr_sink_to", 4, 8)
	out.size = be("rr_size", 12, 4)
	out.srcSTag = be("rr_src_stag", 16, 4)
	out.srcTO = be("rr_src_to", 20, 8)
	out.sizeZero = m.WireOf("rr_size_zero", Eq(out.size, C(32, 0)), "a zero-length Read: its source is not checked")

	// Per QP: {IRD, next Read Request MSN}; CREATE writes {IRD, 1}, the
	// engine the MSN past each request it hands on.
	irdQ := m.RegDecl("rr_ird", 5, "the QP's IRD")
	msnQ := m.RegDecl("rr_msn", 32, "the Read Request MSN expected")
	out.storeOK = m.WireOf("rr_store_ok", And(x.store, Not(x.create)), "")
	st := m.Mem("rr_st", 37, 1<<QB, Or(x.create, out.storeOK), Sel(x.create, Bits(x.cQPN, QB-1, 0), x.qp),
		Sel(x.create, Cat(Bits(ird, 4, 0), C(32, 1)), Cat(irdQ, Add(msnQ, C(32, 1)))), x.rdEn, x.qp, "per QP: IRD, next Read Request MSN")
	m.Drive(irdQ, nil, Bits(st, 36, 32), x.ld)
	m.Drive(msnQ, nil, Bits(st, 31, 0), x.ld)
	out.unused = append(out.unused, Bits(ird, 7, 5))

	// IRD entries given back (modulo 32), per QP: a done is taken, its
	// counter read, then written one more (not in a CREATE's cycle). Two
	// copies: the done path's and the engine's read port.
	dB := m.RegDecl("rr_done_b", 1, "a done was taken: its QP's counter is being updated")
	dQ := m.Reg("rr_done_qp", QB, nil, dQPN, And(dValid, Not(dB)), "")
	dWr := m.WireOf("rr_done_wr", And(dB, Not(x.create)), "")
	m.Drive(dB, big.NewInt(0), Or(And(dValid, Not(dB)), And(dB, x.create)), nil)
	m.Assign(dReady, Not(dB))
	wd := m.Wire("rr_done_wd", 5, "")
	we := Or(x.create, dWr)
	wa := Sel(x.create, Bits(x.cQPN, QB-1, 0), dQ)
	cntD := m.Mem("rr_done_d", 5, 1<<QB, we, wa, wd, nil, Sel(dB, dQ, dQPN), "IRD entries given back, read by the done path")
	m.Assign(wd, Sel(x.create, C(5, 0), Add(cntD, C(5, 1))))
	cntE := m.Mem("rr_done_e", 5, 1<<QB, we, wa, wd, x.rdEn, x.qp, "IRD entries given back, read by the engine")
	doneQ := m.Reg("rr_done_n", 5, nil, cntE, x.ld, "")
	// Read Requests handed on are MSN - 1; those not yet answered hold an
	// IRD entry. A done after the engine read the counter is seen at the
	// next request (the count is never below the truth).
	held := m.WireOf("rr_held", Sub(Sub(Bits(msnQ, 4, 0), C(5, 1)), doneQ), "IRD entries in use")

	// Checks, in the order of golden/iwarp's CheckReadRequest.
	c := func(v uint64) Expr { return C(16, v) }
	rl := C(16, cardRxReadReqLen)
	out.cause = m.WireOf("rr_cause", Sel(Ne(x.msnH, msnQ), c(causeDDPInvalidMSNRange),
		Sel(Or(Ne(x.moH, C(32, 0)), Not(x.lflag), Lt(x.slen, rl)), c(causeDDPInvalidMO),
			Sel(Lt(rl, x.slen), c(causeDDPMessageTooLong),
				Sel(Not(Lt(held, irdQ)), c(causeRDMAPCatastrophicStream), c(0))))),
		"the Terminate cause of the request's checks before its source's, 0 if it passes them")

	// The record, while the engine offers it.
	m.Assign(oValid, x.out)
	m.Assign(oQPN, gate(x.out, x.qp))
	m.Assign(oSinkSTag, gate(x.out, sinkSTag))
	m.Assign(oSinkTO, gate(x.out, sinkTO))
	m.Assign(oSize, gate(x.out, out.size))
	m.Assign(oSrcSTag, gate(x.out, out.srcSTag))
	m.Assign(oSrcTO, gate(x.out, out.srcTO))
	m.Assign(oHdr, gate(x.out, x.hdr))
	out.taken = oReady
	if 8*untaggedHdr != x.hdr.W {
		panic(fmt.Sprintf("gen: card_rx header of %d bits", x.hdr.W))
	}
	return out
}
