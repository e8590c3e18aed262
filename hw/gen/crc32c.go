package gen

import (
	"fmt"
	"math/big"
	"math/bits"
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
	return 1 + (nk+crcFixBits-1)/crcFixBits
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
		"How: the register update over a whole beat is a GF(2) matrix derived at generation time. The last beat is processed with its unused lanes as zeros, which multiplies the true register by Z^p (Z = one zero byte, p = unused lanes); "+
			fmt.Sprintf("%d pipelined correction stage(s) multiply by Z^-p, %d bits of p each.", stages, crcFixBits))
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
	frameEnd := m.WireOf("s_frame_end", And(fire, tlast), "the last beat of a frame is accepted")

	// Lanes not in use are processed as zero bytes.
	parts := make([]Expr, lanes)
	for i := 0; i < lanes; i++ {
		parts[lanes-1-i] = And(Bits(tdata, 8*i+7, 8*i), Rep(Bit(tkeep, i), 8))
	}
	masked := m.WireOf("s_data_masked", Cat(parts...), "tdata with unused lanes zeroed")

	state := m.RegDecl("crc_state", 32, "CRC register (not inverted) of the frame so far")
	crcIn := m.WireOf("crc_in", Cat(masked, state), "operand of the update matrix: {data, register}")
	upd := CRC32CUpdate(lanes)
	next := m.WireOf("crc_next", MatVec(crcIn, upd.Rows[:]), "register after this beat, all lanes counted")
	m.Drive(state, big.NewInt(0xFFFFFFFF), Sel(tlast, Ones(32), next), fire)

	// p = lanes not in use on the last beat. With n lanes in use, the last
	// lane is n-1 and p = lanes-1-(n-1), the complement of n-1.
	ends := make([]Expr, lanes)
	for i := 0; i < lanes; i++ {
		e := Bit(tkeep, i)
		if i+1 < lanes {
			e = And(e, Not(Bit(tkeep, i+1)))
		}
		ends[lanes-1-i] = e
	}
	lastLane := m.WireOf("s_last_lane", Cat(ends...), "one-hot: the last lane in use")
	pads := make([]Expr, nk)
	for j := 0; j < nk; j++ {
		mask := new(big.Int)
		for i := 0; i < lanes; i++ {
			if i>>j&1 == 0 {
				mask.SetBit(mask, i, 1)
			}
		}
		pads[nk-1-j] = RedOr(And(lastLane, CBig(lanes, mask)))
	}
	padLanes := m.WireOf("s_pad_lanes", Cat(pads...), "lanes not in use on this beat")

	valid := m.Reg("p0_valid", 1, big.NewInt(0), frameEnd, adv, "stage 0 holds a frame's uncorrected register")
	crc := m.Reg("p0_crc", 32, nil, next, And(adv, frameEnd), "")
	pad := m.Reg("p0_pad", nk, nil, padLanes, And(adv, frameEnd), "")

	z := ZeroByteMatrix()
	zinv, ok := z.Inverse()
	if !ok {
		return nil, fmt.Errorf("%w: CRC32c zero-byte matrix is singular", ErrInvalid)
	}
	for s := 0; s < stages; s++ {
		lo := s * crcFixBits
		n := min(crcFixBits, nk-lo)
		cands := make([]Expr, 1<<n)
		for v := range cands {
			if v == 0 {
				cands[v] = crc
				continue
			}
			mat := zinv.Pow(v << lo)
			cands[v] = m.WireOf(fmt.Sprintf("p%d_fix%d", s, v), MatVec32(crc, mat),
				fmt.Sprintf("register times Z^-%d", v<<lo))
		}
		var sel []Expr
		for b := 0; b < n; b++ {
			sel = append(sel, Bit(pad, b))
		}
		fixed := m.WireOf(fmt.Sprintf("p%d_fixed", s), muxTree(sel, cands),
			fmt.Sprintf("corrected for pad-lane bits %d..%d", lo, lo+n-1))
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
		crc = m.Reg(fmt.Sprintf("p%d_crc", s+1), 32, nil, fixed, en, "")
		pad = m.Reg(fmt.Sprintf("p%d_pad", s+1), nk-lo-n, nil, Bits(pad, pad.W-1, n), en, "")
		valid = nv
	}
	return m, m.Validate()
}

// muxTree selects cands[v] where v is the binary number sel (bit 0 first).
func muxTree(sel []Expr, cands []Expr) Expr {
	if len(sel) == 0 {
		return cands[0]
	}
	top := len(sel) - 1
	half := len(cands) / 2
	return Sel(sel[top], muxTree(sel[:top], cands[half:]), muxTree(sel[:top], cands[:half]))
}

// MatVec is the GF(2) product rows·x: bit i is the parity of x AND rows[i].
func MatVec(x *Signal, rows []*big.Int) Expr {
	out := make([]Expr, len(rows))
	for i, row := range rows {
		out[len(rows)-1-i] = parityOf(x, row)
	}
	return Cat(out...)
}

// MatVec32 is the product of a 32x32 matrix and a 32-bit signal.
func MatVec32(x *Signal, m Mat32) Expr {
	rows := make([]*big.Int, 32)
	for i, r := range m {
		rows[i] = new(big.Int).SetUint64(uint64(r))
	}
	return MatVec(x, rows)
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
