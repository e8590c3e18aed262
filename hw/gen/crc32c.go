package gen

import (
	"fmt"
	"math/big"
	"math/bits"
	"slices"
)

// CRC32CResidue is the CRC32c register (before the final inversion) after a
// frame followed by its own CRC field, sent least significant octet first:
// ^0x48674BC7 (RFC 5044 §4.4; digest §1.5).
const CRC32CResidue = 0xB798B438

// crcFixBits is how many bits of the pad-lane count one correction stage
// handles: 2^3 candidate 32x32 products and an 8:1 mux per stage keeps each
// stage about as deep as the 512-bit update tree.
const crcFixBits = 3

// CRC32CWidths lists the data widths the project ships.
var CRC32CWidths = []int{32, 64, 128, 256, 512}

// CRC32CLatency is the number of cycles from the acceptance of a frame's
// last beat to its result on m_axis (with m_axis_tready high).
func CRC32CLatency(width int) int {
	nk := bits.TrailingZeros(uint(width / 8))
	return 3 + (nk+crcFixBits-1)/crcFixBits
}

// CRC32C builds crc32c_w<width>: CRC32c over an AXI-Stream, one beat per
// cycle, with a result and a residue check per frame. width is a power of
// two from 32 to 1024.
func CRC32C(width int) (*Module, error) {
	if width < 32 || width > 1024 || width&(width-1) != 0 {
		return nil, fmt.Errorf("%w: crc32c data width %d (need a power of two from 32 to 1024)", ErrInvalid, width)
	}
	lanes := width / 8
	nk := bits.TrailingZeros(uint(lanes)) // bits of the pad-lane count
	stages := (nk + crcFixBits - 1) / crcFixBits
	m := NewModule(fmt.Sprintf("crc32c_w%d", width),
		"RFC 5044 §4.4 (CRC32c, iSCSI polynomial; residue check of digest §1.5); RFC 3720 §12.1",
		fmt.Sprintf("CRC32c (Castagnoli) of each frame of a %d-bit AXI-Stream (%d byte lanes, lane 0 first on the wire), one beat per cycle.", width, lanes),
		"Input: s_axis_* beats; every beat but the last of a frame carries all lanes, the last carries lanes 0..n-1 (tkeep contiguous from bit 0, at least one lane). Output: one m_axis beat per frame, "+
			fmt.Sprintf("%d cycles after the frame's last beat is accepted: m_axis_tdata is the CRC32c of the frame's bytes (what hash/crc32 returns; send it least significant octet first), ", CRC32CLatency(width))+
			"m_axis_tuser is 1 when the frame ended with its own correct CRC field (the register equals the residue 0xB798B438), which is the check an MPA receiver makes.",
		"Backpressure: the pipeline advances when the result register is empty or m_axis_tready is 1; s_axis_tready is that same condition (so it depends combinationally on m_axis_tready).",
		"How: the register update over a whole beat is a GF(2) matrix derived at generation time; beats are registered as they arrive (stage i), their data term is registered next (stage b), so the feedback loop is a 32x32 update. The last beat is processed with its unused lanes as zeros, which multiplies the true register by Z^p (Z = one zero byte, p = unused lanes); "+
			fmt.Sprintf("%d pipelined correction stage(s) multiply by Z^-p, %d bits of p each, selecting the rows of Z^-p among constant matrices.", stages, crcFixBits))
	m.Clock()
	m.ResetPort()
	tdata := m.Input("s_axis_tdata", width, "frame bytes, lane 0 in bits 7:0")
	tkeep := m.Input("s_axis_tkeep", lanes, "lanes in use: all on every beat but the last")
	tvalid := m.Input("s_axis_tvalid", 1, "")
	tready := m.Output("s_axis_tready", 1, "")
	tlast := m.Input("s_axis_tlast", 1, "last beat of the frame")
	mData := m.Output("m_axis_tdata", 32, "CRC32c of the frame")
	mUser := m.Output("m_axis_tuser", 1, "1: the frame's trailing CRC field was correct (residue check)")
	mValid := m.Output("m_axis_tvalid", 1, "")
	mReady := m.Input("m_axis_tready", 1, "")

	resValid := m.RegDecl("res_valid", 1, "a result waits on m_axis")
	adv := m.WireOf("advance", Or(Not(resValid), mReady), "every pipeline stage moves on this cycle")
	m.Assign(tready, adv)
	fire := m.WireOf("s_fire", And(tvalid, adv), "a beat is accepted")

	// Stage i registers each accepted beat as it arrived, which keeps the
	// upstream routing out of the XOR trees' timing.
	iValid := m.Reg("i_valid", 1, big.NewInt(0), fire, adv, "stage i holds an accepted beat")
	iData := m.Reg("i_data", width, nil, tdata, fire, "")
	iKeep := m.Reg("i_keep", lanes, nil, tkeep, fire, "")
	iLast := m.Reg("i_last", 1, nil, tlast, fire, "")

	// Lanes not in use are processed as zero bytes.
	masked := maskedWords(m, "i_data_masked", iData, iKeep)
	dataRows, stateRows := CRC32CUpdate(lanes).Split()

	// p = lanes not in use on the last beat. With n lanes in use, the last
	// lane is n-1 and p = lanes-1-(n-1), the complement of n-1.
	oneHot := lastLaneVector(iKeep)
	if lanes <= 8 { // cheap to simulate either way; nextpnr-ice40 placed this form faster
		oneHot = lastLaneOneHot(iKeep)
	}
	lastLane := m.WireOf("i_last_lane", oneHot, "one-hot: the last lane in use")
	padLanes := m.WireOf("i_pad_lanes", complementIndex(lastLane, nk), "lanes not in use on this beat")

	// Stage b registers the beat's data term, so that the feedback loop is
	// only the register's own 32x32 update.
	take := m.WireOf("i_take", And(adv, iValid), "stage i's beat moves to stage b")
	bValid := m.Reg("b_valid", 1, big.NewInt(0), iValid, adv, "stage b holds a beat's data term")
	bLast := m.Reg("b_last", 1, nil, iLast, take, "")
	// The data term is written into the register rather than given a wire
	// of its own: the same logic, which a simulator then evaluates only for
	// beats that move (the widest part of the block).
	bTerm := m.Reg("b_term", 32, nil, MatVecWords(masked, dataRows), take, "the beat's contribution to the register")
	bPad := m.Reg("b_pad", nk, nil, padLanes, take, "")

	state := m.RegDecl("crc_state", 32, "CRC register (not inverted) of the frame before stage b's beat")
	stateTerm := m.WireOf("crc_state_term", MatVec(state, stateRows), "the register's own contribution")
	next := m.WireOf("crc_next", Xor(bTerm, stateTerm), "register after stage b's beat, all lanes counted")
	m.Drive(state, big.NewInt(0xFFFFFFFF), Sel(bLast, Ones(32), next), And(adv, bValid))

	bEnd := m.WireOf("b_frame_end", And(bValid, bLast), "stage b holds a frame's last beat")
	valid := m.Reg("p0_valid", 1, big.NewInt(0), bEnd, adv, "stage 0 holds a frame's uncorrected register")
	crc := m.Reg("p0_crc", 32, nil, next, And(adv, bEnd), "")
	pad := m.Reg("p0_pad", nk, nil, bPad, And(adv, bEnd), "")

	z := ZeroByteMatrix()
	zinv, ok := z.Inverse()
	if !ok {
		return nil, fmt.Errorf("%w: CRC32c zero-byte matrix is singular", ErrInvalid)
	}
	zinvParam := zinvParams(m, zinv)
	// Each correction is written into the registers it feeds (no wire), so
	// that a simulator evaluates it only for frames that end.
	for s := 0; s < stages; s++ {
		lo := s * crcFixBits
		n := min(crcFixBits, nk-lo)
		fixed := crcFixExpr(crc, pad, lo, n, zinvParam)
		en := And(adv, valid)
		if s == stages-1 {
			m.Drive(resValid, big.NewInt(0), valid, adv)
			res := m.Reg("res_crc", 32, big.NewInt(0), Not(fixed), en, "the frame's CRC32c")
			okr := m.Reg("res_ok", 1, big.NewInt(0), Eq(fixed, C(32, CRC32CResidue)), en, "residue check passed")
			m.Assign(mData, res)
			m.Assign(mUser, okr)
			m.Assign(mValid, resValid)
			break
		}
		nv := m.Reg(fmt.Sprintf("p%d_valid", s+1), 1, big.NewInt(0), valid, adv, "")
		crc = m.Reg(fmt.Sprintf("p%d_crc", s+1), 32, nil, fixed, en, fmt.Sprintf("register corrected for pad-lane bits 0..%d", lo+n-1))
		pad = m.Reg(fmt.Sprintf("p%d_pad", s+1), nk-lo-n, nil, Bits(pad, pad.W-1, n), en, "")
		valid = nv
	}
	return m, m.Validate()
}

// zinvParams returns a function that declares (once) the parameter holding
// the rows of Z^-k, row i in bits 32i+31:32i.
func zinvParams(m *Module, zinv Mat32) func(k int) *Signal {
	zinvs := map[int]*Signal{}
	return func(k int) *Signal {
		if p := zinvs[k]; p != nil {
			return p
		}
		rows := zinv.Pow(k)
		v := new(big.Int)
		for i := 31; i >= 0; i-- {
			v.Lsh(v, 32).Or(v, big.NewInt(int64(rows[i])))
		}
		zinvs[k] = m.Param(fmt.Sprintf("zinv_%d", k), 1024, v, fmt.Sprintf("Z^-%d: row i (bits 32i+31:32i) selects the register bits that give bit i", k))
		return zinvs[k]
	}
}

// laneMasked is data with the byte lanes whose keep bit is 0 zeroed.
func laneMasked(data, keep *Signal) Expr { return lanesMasked(data, keep, 0, keep.W) }

// lanesMasked is lanes lo..lo+n-1 of data, those whose keep bit is 0 zeroed.
func lanesMasked(data, keep *Signal, lo, n int) Expr {
	parts := make([]Expr, n)
	for i := lo; i < lo+n; i++ {
		parts[lo+n-1-i] = And(Bits(data, 8*i+7, 8*i), Rep(Bit(keep, i), 8))
	}
	return Cat(parts...)
}

// maskedWords is data with the lanes whose keep bit is 0 zeroed, as wires of
// at most 64 bits (least significant first): the same AND gates, but a
// simulator evaluates a 64-bit wire as one machine word, where it would
// evaluate a wider expression 32 bits at a time.
func maskedWords(m *Module, name string, data, keep *Signal) []*Signal {
	if data.W <= 64 {
		return []*Signal{m.WireOf(name, laneMasked(data, keep), "the beat with unused lanes zeroed")}
	}
	words := make([]*Signal, data.W/64)
	for k := range words {
		words[k] = m.WireOf(fmt.Sprintf("%s_%d", name, k), lanesMasked(data, keep, 8*k, 8),
			fmt.Sprintf("lanes %d..%d of the beat, unused lanes zeroed", 8*k, 8*k+7))
	}
	return words
}

// crcFix multiplies the 32-bit register crc by Z^-p selected by the bits of
// pad from lo to lo+n-1 (the rows chosen among constant matrices).
func crcFix(m *Module, prefix string, crc *Signal, pad *Signal, lo, n int, zinvParam func(int) *Signal) *Signal {
	return m.WireOf(prefix+"_fixed", crcFixExpr(crc, pad, lo, n, zinvParam), fmt.Sprintf("register corrected for pad-lane bits %d..%d", lo, lo+n-1))
}

// crcFixExpr is crcFix's product as an expression: bit i is the parity of
// crc and row i of Z^-p, that row selected among the constant matrices'
// rows i. Selecting row by row (rather than a whole matrix, then its rows)
// is the same logic, and lets a simulator pick 32-bit constants instead of
// copying a 1024-bit matrix.
func crcFixExpr(crc *Signal, pad *Signal, lo, n int, zinvParam func(int) *Signal) Expr {
	var sel []Expr
	for b := 0; b < n; b++ {
		sel = append(sel, Bit(pad, b))
	}
	prod := make([]Expr, 32)
	cands := make([]Expr, 1<<n)
	for i := 0; i < 32; i++ {
		for v := range cands {
			cands[v] = Bits(zinvParam(v<<lo), 32*i+31, 32*i)
		}
		prod[31-i] = RedXor(And(crc, muxTree(sel, cands)))
	}
	return Cat(prod...)
}

// MatVec is the GF(2) product rows·x: bit i is the parity of x AND rows[i].
func MatVec(x *Signal, rows []*big.Int) Expr { return MatVecWords([]*Signal{x}, rows) }

// MatVecWords is MatVec of the vector made of words (least significant
// first, all of the same width when more than one): bit i is the parity of
// the words, each ANDed with its slice of rows[i], concatenated. Splitting
// a wide vector into 64-bit words is the same logic, and lets a simulator
// work on whole machine words; one reduction over the concatenation (rather
// than an XOR of the words) keeps the XOR tree synthesis tools map best.
func MatVecWords(words []*Signal, rows []*big.Int) Expr {
	if len(words) == 1 {
		out := make([]Expr, len(rows))
		for i, row := range rows {
			out[len(rows)-1-i] = parityOf(words[0], row)
		}
		return Cat(out...)
	}
	w := words[0].W
	for _, x := range words {
		if x.W != w {
			return bad("MatVecWords: words of different widths (%d and %d)", w, x.W)
		}
	}
	wordMask := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(w)), big.NewInt(1))
	out := make([]Expr, len(rows))
	for i, row := range rows {
		var terms []Expr
		last := -1
		for k, x := range words {
			mask := new(big.Int).And(new(big.Int).Rsh(row, uint(k*w)), wordMask)
			if mask.Sign() != 0 {
				terms = append(terms, And(x, CBig(w, mask)))
				last = k
			}
		}
		switch len(terms) {
		case 0:
			out[len(rows)-1-i] = C(1, 0)
		case 1:
			out[len(rows)-1-i] = parityOf(words[last], new(big.Int).And(new(big.Int).Rsh(row, uint(last*w)), wordMask))
		default: // the parity of all the words' bits, as one reduction
			slices.Reverse(terms)
			out[len(rows)-1-i] = RedXor(Cat(terms...))
		}
	}
	return Cat(out...)
}

// parityOf is the XOR of the bits of x selected by mask.
func parityOf(x *Signal, mask *big.Int) Expr {
	switch mask.BitLen() {
	case 0:
		return C(1, 0)
	}
	if n := popCount(mask); n == 1 {
		return Bit(x, mask.BitLen()-1)
	}
	return RedXor(And(x, CBig(x.W, mask)))
}

func popCount(x *big.Int) int {
	n := 0
	for _, w := range x.Bits() {
		n += bits.OnesCount64(uint64(w))
	}
	return n
}
