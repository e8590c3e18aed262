package gen

// The Terminate sender of card_tx (docs/card-rtl.md): a receive-side
// error record (card_rx's m_rxterm) puts the QP in error, raises
// TERM_SENT, and, at the QP's next turn, a Terminate goes to the
// transmit ring as an untagged message not from a WQE (QN 2, MSN 1: the
// only Terminate a QP ever sends), its header built here from the record
// (RFC 5040 §5.4, the headers golden/rdmap.Cause.Headers asks for).

// EQE_TYPE values of card_tx's events.
const (
	cardTxEvTermSent = 6 // TERM_SENT
	cardTxEvTermRecv = 7 // TERM_RECV
)

// WC_STATUS values the engines write other than SUCCESS (TestCardTxCodes
// ties them to cardspec): the transmit side's and, LOC_LEN_ERR, card_rx's.
const (
	cardRxStatLocLen    = 1 // LOC_LEN_ERR: a Send longer than its receive WQE's buffers
	cardTxStatProt      = 2 // LOC_PROT_ERR
	cardTxStatFlush     = 3 // WR_FLUSH_ERR
	cardTxStatRemAccess = 4 // REM_ACCESS_ERR: a peer's Terminate blames the WQE
	cardTxStatRemOp     = 5 // REM_OP_ERR: ditto
	cardTxStatFatal     = 7 // FATAL_ERR: ditto
	cardTxStatMWBind    = 9 // MW_BIND_ERR: a bind refused
	cardTxStatQPOp      = 8 // LOC_QP_OP_ERR: a malformed WQE
)

// remoteStatus is the completion status of the WQE a peer's Terminate of
// cause c (16 bits) blames (the card model's remoteStatus): a protection
// or tagged buffer error is a remote access error, a remote operation or
// untagged buffer error a remote operation error, any other fatal.
func remoteStatus(c *Signal) Expr {
	typ := Bits(c, 15, 8)
	is := func(v uint64) Expr { return Eq(typ, C(8, v)) }
	return Sel(Or(is(0x01), is(0x11)), C(8, cardTxStatRemAccess), Sel(Or(is(0x02), is(0x12)), C(8, cardTxStatRemOp), C(8, cardTxStatFatal)))
}

// terminatePayload is the Terminate's DDP payload (64 octets, byte 0 in
// bits 7:0, zero past its length) and its length, for cause (Layer 15:12,
// EType 11:8, Code 7:0), the offending segment's DDP header (byte 0 in
// bits 7:0; a tagged header's 14 octets, an untagged one's 18), its
// length, and a Read Request's RDMAP header (rdma, 28 octets).
func terminatePayload(m *Module, cause, hdr, segLen, rdma *Signal) (Expr, Expr) {
	typ := m.WireOf("term_etype", Bits(cause, 15, 8), "layer and error type")
	is := func(v uint64) Expr { return Eq(cause, C(16, v)) }
	none := m.WireOf("term_no_hdrs", Or(Eq(typ, C(8, 0x00)), Eq(typ, C(8, 0x10)), Eq(Bits(cause, 15, 12), C(4, 2)),
		is(causeDDPTaggedVersion), is(causeDDPUntaggedVersion), is(causeRDMAPInvalidVersion), is(causeRDMAPUnexpectedOpcod)),
		"a local catastrophic, MPA or version/opcode error: no header is copied")
	md := m.WireOf("term_md", Not(none), "M and D: the segment length and the DDP header are copied")
	op := m.WireOf("term_op", Bits(hdr, 11, 8), "the offending message's RDMAP opcode")
	tagged := m.WireOf("term_tagged", Bit(hdr, 7), "the offending segment is tagged (14-octet header)")
	r := m.WireOf("term_r", And(md, Eq(typ, C(8, 0x01)), Or(Eq(op, C(4, 1)), Eq(op, C(4, 4)), Eq(op, C(4, 6)))),
		"R: a remote protection error of a Read Request or a Send with Invalidate")
	rb := m.WireOf("term_r_bytes", And(r, Eq(op, C(4, 1)), Not(tagged)), "the Read Request's header follows")
	var b []Expr // octets in wire order
	b = append(b, Bits(cause, 15, 8), Bits(cause, 7, 0), Cat(md, md, r, C(5, 0)), C(8, 0))
	b = append(b, gate(md, Bits(segLen, 15, 8)), gate(md, Bits(segLen, 7, 0)))
	for k := 0; k < untaggedHdr; k++ {
		on := Expr(md)
		if k >= taggedHdr {
			on = And(md, Not(tagged))
		}
		b = append(b, gate(on, Bits(hdr, 8*k+7, 8*k)))
	}
	for k := 0; k < cardTxReadReqBytes; k++ {
		b = append(b, gate(rb, Bits(rdma, 8*k+7, 8*k)))
	}
	parts := []Expr{C(8*(64-len(b)), 0)}
	for i := len(b) - 1; i >= 0; i-- {
		parts = append(parts, b[i])
	}
	hl := Sel(tagged, C(16, taggedHdr), C(16, untaggedHdr))
	n := Add(Add(C(16, 4), Sel(md, Add(hl, C(16, 2)), C(16, 0))), Sel(rb, C(16, cardTxReadReqBytes), C(16, 0)))
	return Cat(parts...), n
}
