package gen

// card_rx's path for a Terminate the peer sent (an untagged QN 2
// segment, docs/card-rtl.md): its body is taken as a Read Request's is,
// and its cause read as golden/iwarp/qp.TerminateReceived and
// golden/rdmap.ParseTerminate read it. The record goes to card_tx on
// m_rxterm like a receive error's, where it raises TERM_RECV instead of
// sending a Terminate (a Terminate is never answered with one) and
// blames the oldest WQE the card started and did not finish.

// causeRDMAPOperationUnspecified is the cause of a Terminate that cannot
// be read (golden/rdmap.RDMAPOperationUnspecified).
const causeRDMAPOperationUnspecified = 0x02FF

// cardKnownCauses are the causes golden/rdmap names (rdmap.Causes;
// TestKnownCauses keeps the two lists equal): a control word unknown in
// RFC 5040's layout and known in siw's little-endian one is read in
// siw's, as ParseTerminate does.
var cardKnownCauses = []uint64{
	0x00FF, 0x0100, 0x0101, 0x0102, 0x0103, 0x0104, 0x0109, 0x01FF,
	0x0205, 0x0206, 0x0207, 0x0208, 0x0209, 0x02FF,
	0x1000, 0x1100, 0x1101, 0x1102, 0x1103, 0x1104,
	0x1201, 0x1202, 0x1203, 0x1204, 0x1205, 0x1206,
	0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007,
}

// knownCause is rdmap.Cause.Known of the 16-bit cause c: a named cause,
// or any code of the RDMAP Local Catastrophic type.
func knownCause(c *Signal) Expr {
	k := Eq(Bits(c, 15, 8), C(8, 0))
	for _, v := range cardKnownCauses {
		k = Or(k, Eq(c, C(16, v)))
	}
	return k
}

// termRecvCause is the cause a received Terminate reports: its own, in
// RFC 5040's layout or siw's, or RDMAP Operation Unspecified when its DDP
// header is not a lone first segment of MSN 1 (the only Terminate a
// stream carries) or it is shorter than the headers its flags announce.
// body is the segment's first 28 payload octets (byte 0 in bits 7:0),
// slen its ULPDU length.
func termRecvCause(m *Module, body, slen *Signal, msnH, moH, lflag Expr) *Signal {
	b0 := m.WireOf("tr_octet0", Bits(body, 7, 0), "")
	b1 := m.WireOf("tr_octet1", Bits(body, 15, 8), "")
	c := func(v uint64) Expr { return C(17, v) }
	p := m.WireOf("tr_len", Sub(zext(slen, 17), c(untaggedHdr)), "the Terminate's octets (the segment's payload)")
	rfc := m.WireOf("tr_rfc", Cat(b0, b1), "the control word read as RFC 5040 lays it out")
	siw := m.WireOf("tr_siw", Cat(Bits(b0, 3, 0), Bits(b0, 7, 4), b1), "... and as siw does (octet 0 EType<<4 | Layer)")
	hcRFC := m.WireOf("tr_flags_rfc", Bits(body, 23, 21), "octet 2: M, D, R in RFC 5040's bits")
	hcSiw := m.WireOf("tr_flags_siw", Bits(body, 18, 16), "... and R, D, M in siw's")
	rfcLay := m.WireOf("tr_rfc_lay", RedOr(hcRFC), "RFC 5040's layout")
	useSiw := m.WireOf("tr_use_siw", And(Not(rfcLay), Or(RedOr(hcSiw), And(Not(knownCause(rfc)), knownCause(siw)))), "siw's layout")
	// With neither layout's flags set, siw's bits are zero too.
	fM := m.WireOf("tr_m", Sel(rfcLay, Bit(hcRFC, 2), Bit(hcSiw, 0)), "M: the DDP segment length is copied")
	fD := m.WireOf("tr_d", Sel(rfcLay, Bit(hcRFC, 1), Bit(hcSiw, 1)), "D: a DDP header is copied")
	fR := m.WireOf("tr_r", Sel(rfcLay, Bit(hcRFC, 0), Bit(hcSiw, 2)), "R: an RDMAP header is copied")
	tagged := Bit(body, 55)        // the copied DDP header's T flag (octet 6)
	copiedOp := Bits(body, 59, 56) // its RDMAP opcode (octet 7)
	hl := Sel(tagged, c(taggedHdr), c(untaggedHdr))
	// Without a copied DDP header, R can only mean a Read Request's.
	rrCopied := m.WireOf("tr_rr", And(fR, Or(Not(fD), And(Not(tagged), Eq(copiedOp, C(4, 1))))), "a Read Request's header is copied")
	need := m.WireOf("tr_need", Sel(Or(fM, fD), c(6), c(4)), "octets of the control word and segment length")
	needD := m.WireOf("tr_need_d", Add(need, gate(fD, hl)), "... and of the copied DDP header")
	short := m.WireOf("tr_short", Or(Lt(slen, C(16, untaggedHdr)), Lt(p, need), Lt(p, needD),
		And(rrCopied, Lt(p, Add(needD, c(cardTxReadReqBytes))))), "shorter than its flags say")
	bad := m.WireOf("tr_malformed", Or(Ne(msnH, C(32, 1)), Ne(moH, C(32, 0)), Not(lflag), short), "")
	return m.WireOf("tr_cause", Sel(bad, C(16, causeRDMAPOperationUnspecified), Sel(useSiw, siw, rfc)), "the Terminate's cause")
}
