package gen

// fpduWireLen is the octets an FPDU takes on the wire (golden/mpa.FPDUWireLen)
// when its ULPDU is ulpLen octets (16 bits) and it starts at stream offset
// off (32 bits, a multiple of 4): body = 2 + ulpLen + PAD; with markers, a
// leading marker when the FPDU opens on the 512-octet grid, then one at g0
// octets of body and every 508 after; the CRC. Its wires are m's w_*; the
// bits it leaves unread are returned for the caller's unused list.
func fpduWireLen(m *Module, ulpLen, off *Signal, markers Expr) (wl *Signal, unused []Expr) {
	n17 := m.WireOf("w_n5", Add(Cat(C(1, 0), ulpLen), C(17, 5)), "")
	body := m.WireOf("w_body", Cat(Bits(n17, 16, 2), C(2, 0)), "ULPDU_Length, ULPDU and PAD")
	offLo := m.WireOf("w_off_lo", Bits(off, 8, 0), "")
	k0 := m.WireOf("w_lead", Eq(offLo, C(9, 0)), "a leading marker")
	off1 := m.WireOf("w_off1", Sel(k0, C(10, 4), zext(offLo, 10)), "")
	g0 := m.WireOf("w_g0", zext(Sub(C(10, 512), off1), 17), "body octets before the first grid point")
	ge := m.WireOf("w_ge", Not(Lt(body, g0)), "")
	x := m.WireOf("w_x", Sub(body, g0), "")
	y := m.WireOf("w_y", Bits(x, 15, 2), "")
	mul, sh := markerDiv()
	var prod Expr
	for i := 0; i < 32; i++ {
		if mul>>i&1 == 0 {
			continue
		}
		term := zext(Cat(y, C(max(i, 1), 0)), 40)
		if i == 0 {
			term = zext(y, 40)
		}
		if prod == nil {
			prod = term
		} else {
			prod = Add(prod, term)
		}
	}
	prodW := m.WireOf("w_prod", prod, "")
	q127 := m.WireOf("w_q", Bits(prodW, sh+7, sh), "(body - g0) / 508")
	unused = append(unused, Bit(x, 16), Bits(x, 1, 0), Bits(n17, 1, 0), Bits(prodW, sh-1, 0), Bits(prodW, 39, sh+8))
	kk := m.WireOf("w_markers", Add(zext(k0, 8), Sel(ge, Add(q127, C(8, 1)), C(8, 0))), "markers in the FPDU")
	wire := m.WireOf("w_len", Add(Add(body, Cat(C(7, 0), kk, C(2, 0))), C(17, 4)), "the FPDU's octets on the wire")
	wireNoMk := Add(body, C(17, 4))
	return m.WireOf("w_len_sel", Sel(markers, wire, wireNoMk), ""), unused
}

// markerDiv finds m and s with floor(y*m / 2^s) = floor(y/127) for every
// y < 2^14 (y = body/4: the marker count divides by 508 = 4*127).
func markerDiv() (uint64, int) {
	for s := 14; s < 32; s++ {
		m := (uint64(1)<<s + 126) / 127
		ok := true
		for y := uint64(0); y < 1<<14 && ok; y++ {
			ok = y*m>>s == y/127
		}
		if ok {
			return m, s
		}
	}
	panic("gen: no reciprocal of 127")
}
