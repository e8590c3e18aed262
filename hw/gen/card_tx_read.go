package gen

// RDMA Read requester parts of card_tx (docs/card-rtl.md): the Read
// Request's RDMAP header built from the WQE, and the sink SGE kept as the
// WQE's first block comes in.

// cardTxReadReqBytes is the RDMA Read Request header (RFC 5040 §4.4): sink
// STag, sink TO, size, source STag, source TO.
const cardTxReadReqBytes = 28

// readRequestHeader is the Read Request header as a 256-bit byte vector
// (byte 0, the sink STag's most significant octet, in bits 7:0): the sink
// from the WQE's single SGE (zero without one, as the card model sends),
// the source from REMOTE_ADDR and RKEY.
func readRequestHeader(sinkSTag, sinkTO, size, srcSTag, srcTO *Signal) Expr {
	var wire []Expr // octets in wire order
	be := func(x *Signal, n int) {
		for i := n - 1; i >= 0; i-- {
			wire = append(wire, Bits(x, 8*i+7, 8*i))
		}
	}
	be(sinkSTag, 4)
	be(sinkTO, 8)
	be(size, 4)
	be(srcSTag, 4)
	be(srcTO, 8)
	parts := []Expr{C(8*(32-cardTxReadReqBytes), 0)}
	for i := len(wire) - 1; i >= 0; i-- {
		parts = append(parts, wire[i])
	}
	return Cat(parts...)
}

// payloadWord is word k (of w bits) of a little-endian byte vector v
// whose width is a multiple of w, or v zero-extended when it is narrower.
func payloadWord(m *Module, name string, v, k *Signal, w int) Expr {
	if v.W <= w {
		return zext(v, w)
	}
	n := v.W / w
	var cands, sel []Expr
	for i := 0; i < n; i++ {
		cands = append(cands, Bits(v, w*i+w-1, w*i))
	}
	for i := 0; i < log2(n); i++ {
		sel = append(sel, Bit(k, i))
	}
	return m.WireOf(name, muxTree(sel, cands), "")
}

// captureSGE keeps the first SGE of a WQE (bytes 32..47 of its first
// block) as its beats are taken: beat index wj, data d of w bits, valid
// v. It returns the 128-bit SGE (ADDR in 63:0, LENGTH in 95:64, LKEY in
// 127:96).
func captureSGE(m *Module, v Expr, wj, d *Signal, w int) *Signal {
	if w >= 512 {
		return m.Reg("sge0", 128, nil, Bits(d, 383, 256), And(v, Eq(wj, C(wj.W, 0))), "the WQE's first SGE")
	}
	// 64 bits: bytes 32..39 in beat 4, 40..47 in beat 5.
	lo := m.Reg("sge0_lo", 64, nil, Bits(d, 63, 0), And(v, Eq(wj, C(wj.W, 4))), "the first SGE's ADDR")
	hi := m.Reg("sge0_hi", 64, nil, Bits(d, 63, 0), And(v, Eq(wj, C(wj.W, 5))), "its LENGTH and LKEY")
	return m.WireOf("sge0", Cat(hi, lo), "the WQE's first SGE")
}
