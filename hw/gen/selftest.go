package gen

import (
	"fmt"
	"math/big"
	"math/bits"
)

// The board self-test (Selftest) runs the MPA data path on itself: a ULPDU
// generator feeds mpa_tx, whose FPDUs pass through an error injector into
// mpa_rx, whose ULPDUs a checker compares with a second copy of the
// generator. The constants below define the test; fpga/selftest's Go model
// of the UART report uses the same ones.
const (
	// SelftestWidth is the data path width of the self-test.
	SelftestWidth = 64
	// SelftestRxBufferBeats is the ULPDU buffer of the self-test's mpa_rx
	// (a ULPDU may be up to 14 beats; the generator's are at most 10).
	SelftestRxBufferBeats = 16
	// SelftestSeed is the episode seed after reset (an xorshift64 state).
	SelftestSeed = 0x9E3779B97F4A7C15
	// SelftestULPDUs is the number of ULPDUs of an episode without a
	// marker error (and of a CRC-error episode's generator).
	SelftestULPDUs = 8
	// SelftestMarkerULPDUs bounds a marker-error episode's ULPDUs: its
	// stream passes a marker long before (every FPDU is at least 8 octets).
	SelftestMarkerULPDUs = 128
	// SelftestCRCFPDU is the index in its episode of the FPDU whose CRC is
	// corrupted.
	SelftestCRCFPDU = 3
	// SelftestDrainCycles is how long the checker waits after mpa_rx
	// reports an error, for the ULPDUs before it to come out.
	SelftestDrainCycles = 64
	// SelftestWatchdogCycles ends an episode that made no verdict.
	SelftestWatchdogCycles = 8192
)

// Episode kinds, the episode number modulo 4.
const (
	SelftestClean       = 0 // markers and CRC, no error
	SelftestCRCError    = 1 // markers and CRC; FPDU SelftestCRCFPDU's last CRC octet has bit 0 flipped
	SelftestNoMarkers   = 2 // CRC without markers, no error
	SelftestMarkerError = 3 // markers without CRC; the first marker's FPDUPTR has bit 2 flipped
)

// SelftestFields are the counters of each report line, in order.
var SelftestFields = []string{"ep", "ok", "crc", "mrk", "bad"}

// SelftestConfig is one board's self-test build.
type SelftestConfig struct {
	Name            string // module name
	ClockHz, Baud   int
	EpisodesPerLine int // a power of two: a report line after this many episodes
	// TxOnly replaces mpa_rx and the ULPDU checker with crc32c checking
	// each FPDU's CRC by residue (for a part too small for both): every
	// episode then runs with the CRC on, and a corrupted marker is caught
	// by the CRC that covers it.
	TxOnly bool
}

// SelftestHX8K is the self-test of the iCE40-HX8K breakout board: its 12 MHz
// oscillator, 115200 baud through the FTDI's second channel.
var SelftestHX8K = SelftestConfig{Name: "selftest_hx8k", ClockHz: 12_000_000, Baud: 115200, EpisodesPerLine: 1024}

// SelftestTxHX8K is the transmit-side self-test that fits the HX8K: mpa_tx
// and crc32c (mpa_tx and mpa_rx together need about 8,500 of its 7,680
// logic cells).
var SelftestTxHX8K = SelftestConfig{Name: "selftest_tx_hx8k", ClockHz: 12_000_000, Baud: 115200, EpisodesPerLine: 1024, TxOnly: true}

// SelftestLine is the report's line format: each field, a space, its value
// as eight upper-case hex digits, a space between fields, CR LF at the end.
func SelftestLine(values []uint32) string {
	s := ""
	for i, f := range SelftestFields {
		sep := " "
		if i == len(SelftestFields)-1 {
			sep = "\r\n"
		}
		s += fmt.Sprintf("%s %08X%s", f, values[i], sep)
	}
	return s
}

// SelftestModules builds the self-test top and the modules it instantiates
// that Blocks does not already ship: an mpa_rx with a small ULPDU buffer
// and the UART transmitter.
func SelftestModules(cfg SelftestConfig) (top *Module, subs []*Module, err error) {
	if cfg.EpisodesPerLine < 2 || cfg.EpisodesPerLine&(cfg.EpisodesPerLine-1) != 0 || cfg.EpisodesPerLine > 1<<20 {
		return nil, nil, fmt.Errorf("%w: self-test %s: %d episodes per line (need a power of two, 2 to 2^20)", ErrInvalid, cfg.Name, cfg.EpisodesPerLine)
	}
	div, err := UARTTxDivisor(cfg.ClockHz, cfg.Baud)
	if err != nil {
		return nil, nil, err
	}
	uart, err := UARTTx(div)
	if err != nil {
		return nil, nil, err
	}
	tx, err := MPATx(SelftestWidth)
	if err != nil {
		return nil, nil, err
	}
	if cfg.TxOnly {
		chk, err := CRC32C(SelftestWidth)
		if err != nil {
			return nil, nil, err
		}
		top, err = selftest(cfg, div, tx, chk, uart)
		return top, []*Module{uart}, err
	}
	rx, err := MPARxBuffered(SelftestWidth, SelftestRxBufferBeats)
	if err != nil {
		return nil, nil, err
	}
	rx.Name = fmt.Sprintf("mpa_rx_w%d_b%d", SelftestWidth, SelftestRxBufferBeats)
	rx.Doc = append(rx.Doc, fmt.Sprintf("This build's ULPDU buffer holds %d beats (the board self-test's); a ULPDU longer than %d beats stalls it.", SelftestRxBufferBeats, SelftestRxBufferBeats-2))
	top, err = selftest(cfg, div, tx, rx, uart)
	if err != nil {
		return nil, nil, err
	}
	return top, []*Module{rx, uart}, nil
}

// xorshift64 is Marsaglia's xorshift (13, 7, 17) step of x, as a wire.
func xorshift64(m *Module, name string, x *Signal) *Signal {
	a := m.WireOf(name+"_a", Xor(x, Cat(Bits(x, 50, 0), C(13, 0))), "")
	b := m.WireOf(name+"_b", Xor(a, Cat(C(7, 0), Bits(a, 63, 7))), "")
	return m.WireOf(name, Xor(b, Cat(Bits(b, 46, 0), C(17, 0))), "xorshift64 step")
}

// ulpduStream is the generator's sequence of ULPDU beats, seen from the
// generator (the beat offered to mpa_tx) or the checker (the beat mpa_rx
// must deliver next): the xorshift64 state is the beat's data, a ULPDU's
// length comes from the state at its first beat.
type ulpduStream struct {
	x, first, left *Signal // registers
	len, rem, last *Signal // wires
}

func newULPDUStream(m *Module, p, what string) ulpduStream {
	const lanes = SelftestWidth / 8
	var s ulpduStream
	s.x = m.RegDecl(p+"_x", 64, "xorshift64 state: the data of "+what)
	s.first = m.RegDecl(p+"_first", 1, what+" is a ULPDU's first")
	s.left = m.RegDecl(p+"_left", 8, "octets of the ULPDU from "+what+" on, after its first")
	s.len = ulpduLen(m, p+"_len", s.x)
	s.rem = m.WireOf(p+"_rem", Sel(s.first, s.len, s.left), "octets of the ULPDU from "+what+" on")
	s.last = m.WireOf(p+"_last", Lt(s.rem, C(8, lanes+1)), what+" is the ULPDU's last")
	return s
}

// drive restarts the sequence from seed when start is 1 and moves it one
// beat on when adv is 1.
func (s ulpduStream) drive(m *Module, seed, start *Signal, adv Expr) {
	const lanes = SelftestWidth / 8
	m.Drive(s.x, nil, Sel(start, seed, xorshift64(m, s.x.Name+"_next", s.x)), Or(start, adv))
	m.Drive(s.first, nil, Sel(start, C(1, 1), s.last), Or(start, adv))
	m.Drive(s.left, nil, Sub(s.rem, C(8, lanes)), adv)
}

// ulpduLen is a ULPDU's length from the generator state at its first beat:
// 1 + x[5:0] + x[11:8], 1 to 79 octets (at most 10 beats).
func ulpduLen(m *Module, name string, x *Signal) *Signal {
	return m.WireOf(name, Add(Add(Cat(C(2, 0), Bits(x, 5, 0)), Cat(C(4, 0), Bits(x, 11, 8))), C(8, 1)),
		"ULPDU length: 1 + x[5:0] + x[11:8]")
}

// inc is x + 1.
func inc(x *Signal) Expr { return Add(x, C(x.W, 1)) }

func selftest(cfg SelftestConfig, div int, tx, rx, uart *Module) (*Module, error) {
	const lanes = SelftestWidth / 8
	what := fmt.Sprintf("Board self-test of the MPA data path at %d bits, clocked at %d Hz: a ULPDU generator (xorshift64) feeds %s, whose FPDUs pass through an error injector into %s, whose ULPDUs a checker compares with a second copy of the generator. It runs episodes: %s and %s reset with the episode's stream offset (from the episode seed, in [2^30, 2^31)), then %d ULPDUs of 1 to 79 octets go through. Episode kinds by episode number modulo 4: 0 markers and CRC; 1 markers and CRC, and FPDU %d's last CRC octet has bit 0 flipped on the wire (mpa_rx must report a CRC error, code 2, at that FPDU's offset, after delivering the %d ULPDUs before it); 2 CRC without markers; 3 markers without CRC, and the first marker's FPDUPTR has bit 2 flipped (a marker error, code 3, at the FPDU that holds it; up to %d ULPDUs).",
		SelftestWidth, cfg.ClockHz, tx.Name, rx.Name, tx.Name, rx.Name, SelftestULPDUs, SelftestCRCFPDU, SelftestCRCFPDU, SelftestMarkerULPDUs)
	unit, wrong := "ULPDUs delivered intact", "a ULPDU that differs, an error where none was injected or a different one, none where one was, a stream end"
	if cfg.TxOnly {
		what = fmt.Sprintf("Transmit-side board self-test of the MPA data path at %d bits, clocked at %d Hz: a ULPDU generator (xorshift64) feeds %s, whose FPDUs pass through an error injector into %s, which checks each FPDU's CRC by its residue. It runs episodes: %s resets, then %d ULPDUs of 1 to 79 octets are framed at the episode's stream offset (from the episode seed, in [2^30, 2^31)), always with the CRC. Episode kinds by episode number modulo 4: 0 markers; 1 markers, and FPDU %d's last CRC octet has bit 0 flipped on the wire; 2 no markers; 3 markers, and the first marker's FPDUPTR has bit 2 flipped (the episode ends with that FPDU). Exactly the corrupted FPDU must fail its check.",
			SelftestWidth, cfg.ClockHz, tx.Name, rx.Name, tx.Name, SelftestULPDUs, SelftestCRCFPDU)
		unit, wrong = "FPDUs whose CRC checked out", "an FPDU that failed its check uncorrupted or passed it corrupted"
	}
	m := NewModule(cfg.Name, "RFC 5044 §4 (the FPDUs mpa_tx frames and checks of their markers and CRC)", what,
		fmt.Sprintf("Report: after every %d episodes the test stops and prints one line on tx (8N1, %d baud, %d cycles a bit): \"ep E ok U crc C mrk M bad B\" CR LF, each value eight hex digits: episodes run, %s, CRC-error and marker-error episodes whose error came out as expected, and episodes that went wrong in any way (%s, no verdict within %d cycles). led[6:0] counts the lines printed; led[7] lights at the first bad episode and stays lit.",
			cfg.EpisodesPerLine, cfg.Baud, div, unit, wrong, SelftestWatchdogCycles),
		"Reset: at power-up (a counter of 15 cycles; iCE40 flip-flops start at 0) and while the rx line from the host is low for two cycles or more (a key typed in the terminal restarts the test).")
	m.Clock()
	rxIn := m.Input("rx", 1, "serial line from the host, idle high: low restarts the test")
	txOut := m.Output("tx", 1, "serial line to the host: the report")
	led := m.Output("led", 8, "led[6:0] lines printed, led[7] a bad episode happened")

	// Reset: power-up counter and the rx line, synchronised.
	rxM := m.Reg("rx_meta", 1, nil, rxIn, nil, "rx, first synchroniser stage")
	rxS := m.Reg("rx_sync", 1, nil, rxM, nil, "rx, synchronised")
	por := m.RegDecl("por", 4, "power-up counter (starts at 0, stops at 15)")
	porDone := m.WireOf("por_done", RedAnd(por), "")
	m.Drive(por, nil, Add(por, Cat(C(3, 0), Not(porDone))), nil)
	rst := m.Reg("rst", 1, nil, Or(Not(porDone), Not(rxS)), nil, "reset of the whole test")

	zero := big.NewInt(0)
	// Episode state machine: 0 start (the blocks in reset), 1 run, 2 drain, 3 print.
	st := m.RegDecl("st", 2, "0 start, 1 run, 2 drain after an error, 3 print")
	start := m.WireOf("st_start", Eq(st, C(2, 0)), "")
	run := m.WireOf("st_run", Eq(st, C(2, 1)), "")
	drain := m.WireOf("st_drain", Eq(st, C(2, 2)), "")
	prt := m.WireOf("st_print", Eq(st, C(2, 3)), "")
	ep := m.RegDecl("ep", 32, "episodes finished")
	seed := m.RegDecl("ep_seed", 64, "this episode's seed (xorshift64, one step per episode)")
	kind := m.WireOf("kind", Bits(ep, 1, 0), "episode kind: 0 clean, 1 CRC error, 2 no markers, 3 marker error")
	kCRC := m.WireOf("k_crc_inj", Eq(kind, C(2, SelftestCRCError)), "")
	kMrk := m.WireOf("k_mrk_inj", Eq(kind, C(2, SelftestMarkerError)), "")
	markers := m.WireOf("markers", Ne(kind, C(2, SelftestNoMarkers)), "markers on")
	crc := m.WireOf("crc_on", Or(Not(kMrk), C(1, b2i(cfg.TxOnly))), "CRC on")
	offset := m.WireOf("ep_offset", Cat(C(2, 1), Bits(seed, 63, 36), C(2, 0)), "the episode's stream offset: 01 seed[63:36] 00")
	blkRst := m.WireOf("blk_rst", Or(rst, start), "reset of mpa_tx and mpa_rx")

	// Wires of the instances.
	txSReady := m.Wire("tx_s_tready", 1, "")
	txData := m.Wire("tx_m_tdata", SelftestWidth, "")
	txKeep := m.Wire("tx_m_tkeep", lanes, "")
	txValid := m.Wire("tx_m_tvalid", 1, "")
	txLast := m.Wire("tx_m_tlast", 1, "")
	txUser := m.Wire("tx_m_tuser", 32, "")
	rxSReady := m.Wire("rx_s_tready", 1, "")
	uReady := m.Wire("uart_ready", 1, "")
	uLine := m.Wire("uart_tx", 1, "")

	// Generator.
	g := newULPDUStream(m, "g", "the beat offered")
	gx, gFirst, gLen, gLast := g.x, g.first, g.len, g.last
	gN := m.RegDecl("g_n", 8, "ULPDUs started")
	gOffOK := m.RegDecl("g_off_ok", 1, "the next FPDU's offset is known (mpa_tx returned it)")
	fOff := m.RegDecl("f_off", 32, "stream offset of the FPDU on mpa_tx's output")
	gLim := m.WireOf("g_lim", Sel(kMrk, C(8, SelftestMarkerULPDUs), C(8, SelftestULPDUs)), "")
	iDone := m.RegDecl("i_done", 1, "the episode's error is injected")
	more := Ne(gN, gLim)
	if cfg.TxOnly { // a marker episode ends with the corrupted FPDU
		more = And(more, Not(And(kMrk, iDone)))
	}
	gValid := m.WireOf("g_valid", And(run, Sel(gFirst, And(gOffOK, more), C(1, 1))), "")
	var genIdle *Signal
	if cfg.TxOnly {
		genIdle = m.WireOf("g_idle", And(gFirst, Not(more)), "the generator starts no more ULPDUs this episode")
	}
	gTake := m.WireOf("g_take", And(gValid, txSReady), "mpa_tx takes a beat")
	tXfer := m.WireOf("t_xfer", And(txValid, rxSReady), "an FPDU beat passes to mpa_rx")
	tEnd := m.WireOf("t_end", And(tXfer, txLast), "an FPDU's last beat passes")
	g.drive(m, seed, start, gTake)
	m.Drive(gN, nil, Sel(start, C(8, 0), inc(gN)), Or(start, And(gTake, gFirst)))
	m.Drive(gOffOK, nil, Sel(start, C(1, 1), Sel(tEnd, C(1, 1), C(1, 0))), Or(start, tEnd, And(gTake, gFirst)))
	m.Drive(fOff, nil, Sel(start, offset, txUser), Or(start, tEnd))

	m.Instantiate("u_tx", tx,
		Conn{"clk", m.Port("clk")}, Conn{"rst", blkRst},
		Conn{"s_axis_tdata", gx}, Conn{"s_axis_tvalid", gValid}, Conn{"s_axis_tready", txSReady},
		Conn{"s_axis_tlast", gLast}, Conn{"s_offset", fOff}, Conn{"s_ulpdu_len", Cat(C(8, 0), gLen)},
		Conn{"s_markers", markers}, Conn{"s_crc", crc},
		Conn{"m_axis_tdata", txData}, Conn{"m_axis_tkeep", txKeep}, Conn{"m_axis_tvalid", txValid},
		Conn{"m_axis_tready", rxSReady}, Conn{"m_axis_tlast", txLast}, Conn{"m_axis_tuser", txUser})

	// Injector.
	iPos := m.RegDecl("i_pos", 32, "stream offset of lane 0 of mpa_tx's output beat")
	iN := m.RegDecl("i_n", 8, "FPDUs passed")
	var eOff *Signal // mpa_rx must name this offset
	if !cfg.TxOnly {
		eOff = m.RegDecl("e_off", 32, "offset of the FPDU the error was injected into")
	}
	eN := m.RegDecl("e_n", 8, "FPDUs before it")
	m.Drive(iPos, nil, Sel(start, offset, Sel(txLast, txUser, Add(iPos, C(32, lanes)))), Or(start, tXfer))
	m.Drive(iN, nil, Sel(start, C(8, 0), inc(iN)), Or(start, tEnd))
	lastLane := m.WireOf("i_last_lane", And(txKeep, Not(Cat(C(1, 0), Bits(txKeep, lanes-1, 1)))), "the last kept lane, one-hot")
	var crcMask []Expr
	for i := lanes - 1; i >= 0; i-- {
		crcMask = append(crcMask, C(7, 0), Bit(lastLane, i))
	}
	posLow := m.WireOf("i_pos_low", Bits(iPos, 8, 0), "")
	m0 := m.WireOf("i_mrk0", And(Eq(posLow, C(9, 0)), Bit(txKeep, 0)), "a marker in lane 0")
	m4 := m.WireOf("i_mrk4", And(Eq(posLow, C(9, 508)), Bit(txKeep, 4)), "a marker in lane 4")
	injCRC := m.WireOf("inj_crc", And(kCRC, Not(iDone), txValid, txLast, Eq(iN, C(8, SelftestCRCFPDU))), "")
	injMrk := m.WireOf("inj_mrk", And(kMrk, Not(iDone), txValid, Or(m0, m4)), "")
	one := new(big.Int).SetUint64(1)
	mrkMask := Sel(m0, CBig(64, new(big.Int).Lsh(one, 26)), CBig(64, new(big.Int).Lsh(one, 58)))
	mask := m.WireOf("inj_mask", Sel(injCRC, Cat(crcMask...), Sel(injMrk, mrkMask, C(64, 0))), "bits flipped on the wire")
	inj := m.WireOf("inj_take", And(Or(injCRC, injMrk), rxSReady), "the corrupted beat passes")
	m.Drive(iDone, nil, Not(start), Or(start, inj))
	if eOff != nil {
		m.Drive(eOff, nil, fOff, inj)
	}
	m.Drive(eN, nil, iN, inj)

	x := selftestNets{txData: txData, mask: mask, txKeep: txKeep, txValid: txValid, txLast: txLast, rxSReady: rxSReady,
		blkRst: blkRst, start: start, run: run, drain: drain, seed: seed, offset: offset, markers: markers, crc: crc,
		iDone: iDone, iN: iN, gN: gN, eOff: eOff, eN: eN, kCRC: kCRC, kMrk: kMrk, genIdle: genIdle}
	var chk selftestVerdict
	if cfg.TxOnly {
		chk = selftestCRCCheck(m, rx, x)
	} else {
		chk = selftestRxCheck(m, rx, x)
	}
	intact, fin, good, errValid := chk.intact, chk.fin, chk.good, chk.stop
	epNext := m.WireOf("ep_next", inc(ep), "")
	lw := bits.TrailingZeros(uint(cfg.EpisodesPerLine))
	printNow := m.WireOf("print_now", Eq(Bits(epNext, lw-1, 0), C(lw, 0)), "a report line is due")
	m.Drive(ep, zero, epNext, fin)
	m.Drive(seed, new(big.Int).SetUint64(SelftestSeed), xorshift64(m, "ep_seed_next", seed), fin)
	counter := func(name, comment string, en Expr) *Signal {
		q := m.RegDecl(name, 32, comment)
		m.Drive(q, zero, inc(q), en)
		return q
	}
	cntOK := counter("cnt_ok", chk.okDoc, intact)
	cntCRC := counter("cnt_crc", "CRC-error episodes as expected", And(fin, good, kCRC))
	cntMrk := counter("cnt_mrk", "marker-error episodes as expected", And(fin, good, kMrk))
	cntBad := counter("cnt_bad", "episodes that went wrong", And(fin, Not(good)))

	// Report: one character a time into the UART; the counters stand still
	// while it prints.
	type item struct {
		ch  byte
		val *Signal
		nib int
	}
	var line []item
	for i, f := range SelftestFields {
		for _, c := range []byte(f + " ") {
			line = append(line, item{ch: c})
		}
		val := []*Signal{ep, cntOK, cntCRC, cntMrk, cntBad}[i]
		for d := 7; d >= 0; d-- {
			line = append(line, item{val: val, nib: d})
		}
		if i < len(SelftestFields)-1 {
			line = append(line, item{ch: ' '})
		} else {
			line = append(line, item{ch: '\r'}, item{ch: '\n'})
		}
	}
	pw := bits.Len(uint(len(line) - 1))
	pIdx := m.RegDecl("p_idx", pw, "the character being printed")
	var idxBits []Expr
	for i := 0; i < pw; i++ {
		idxBits = append(idxBits, Bit(pIdx, i))
	}
	nibs := make([]Expr, 1<<pw)
	chars := make([]Expr, 1<<pw)
	isNib := make([]Expr, 1<<pw)
	for i := range nibs {
		nibs[i], chars[i], isNib[i] = C(4, 0), C(8, 0), C(1, 0)
		if i < len(line) {
			if it := line[i]; it.val != nil {
				nibs[i], isNib[i] = Bits(it.val, 4*it.nib+3, 4*it.nib), C(1, 1)
			} else {
				chars[i] = C(8, uint64(it.ch))
			}
		}
	}
	nib := m.WireOf("p_nib", muxTree(idxBits, nibs), "the hex digit to print")
	hex := Sel(Lt(nib, C(4, 10)), Add(Cat(C(4, 0), nib), C(8, '0')), Add(Cat(C(4, 0), nib), C(8, 'A'-10)))
	pChar := m.WireOf("p_char", Sel(muxTree(idxBits, isNib), hex, muxTree(idxBits, chars)), "the character to print")
	pTake := m.WireOf("p_take", And(prt, uReady), "the UART takes a character")
	pDone := m.WireOf("p_done", And(pTake, Eq(pIdx, C(pw, uint64(len(line)-1)))), "the line's last character is taken")
	m.Drive(pIdx, zero, Sel(pDone, C(pw, 0), inc(pIdx)), pTake)
	lines := m.RegDecl("lines", 7, "report lines printed")
	m.Drive(lines, zero, inc(lines), pDone)
	badSeen := m.Reg("bad_seen", 1, zero, C(1, 1), And(fin, Not(good)), "a bad episode happened")

	// State transitions.
	afterFin := Sel(printNow, C(2, 3), C(2, 0))
	m.Drive(st, zero,
		Sel(start, C(2, 1), Sel(run, Sel(errValid, C(2, 2), Sel(fin, afterFin, C(2, 1))),
			Sel(drain, Sel(fin, afterFin, C(2, 2)), Sel(pDone, C(2, 0), C(2, 3))))), nil)

	m.Instantiate("u_uart", uart,
		Conn{"clk", m.Port("clk")}, Conn{"rst", rst},
		Conn{"s_axis_tdata", pChar}, Conn{"s_axis_tvalid", prt}, Conn{"s_axis_tready", uReady}, Conn{"tx", uLine})
	m.Assign(txOut, uLine)
	m.Assign(led, Cat(badSeen, lines))
	return m, m.Validate()
}

// watchdog is 1 when the run state has lasted SelftestWatchdogCycles.
func watchdog(m *Module, run *Signal) *Signal {
	wdW := bits.Len(SelftestWatchdogCycles - 1)
	wd := m.RegDecl("wd", wdW, "cycles in the run state")
	m.Drive(wd, nil, Sel(run, inc(wd), C(wdW, 0)), nil)
	return m.WireOf("wd_expired", RedAnd(wd), "the episode made no verdict in time")
}

// selftestNets are the top's signals a checker reads.
type selftestNets struct {
	txData, mask, txKeep, txValid, txLast, rxSReady, blkRst *Signal
	start, run, drain, seed, offset, markers, crc           *Signal
	iDone, iN, gN, eOff, eN, kCRC, kMrk, genIdle            *Signal
}

// selftestVerdict is what a checker tells the episode state machine.
type selftestVerdict struct {
	intact Expr   // one unit (ULPDU or FPDU) came through as it must
	okDoc  string // what cnt_ok counts
	fin    Expr   // the episode ends
	good   Expr   // ... and went as it must
	stop   Expr   // go to the drain state (an error came out)
}

func b2i(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// selftestRxCheck is mpa_rx and the ULPDU checker.
func selftestRxCheck(m *Module, rx *Module, x selftestNets) selftestVerdict {
	const lanes = SelftestWidth / 8
	start, run, drain, seed, iDone, eOff, eN, kCRC, kMrk := x.start, x.run, x.drain, x.seed, x.iDone, x.eOff, x.eN, x.kCRC, x.kMrk
	rxData := m.Wire("rx_m_tdata", SelftestWidth, "")
	rxKeep := m.Wire("rx_m_tkeep", lanes, "")
	rxValid := m.Wire("rx_m_tvalid", 1, "")
	rxLast := m.Wire("rx_m_tlast", 1, "")
	rxLen := m.Wire("rx_m_tuser_len", 16, "")
	errValid := m.Wire("rx_err_valid", 1, "")
	errKind := m.Wire("rx_err_kind", 3, "")
	errCode := m.Wire("rx_err_code", 3, "")
	errOff := m.Wire("rx_err_offset", 32, "")
	eos := m.Wire("rx_eos", 1, "")
	m.Instantiate("u_rx", rx,
		Conn{"clk", m.Port("clk")}, Conn{"rst", x.blkRst},
		Conn{"s_axis_tdata", Xor(x.txData, x.mask)}, Conn{"s_axis_tkeep", x.txKeep}, Conn{"s_axis_tvalid", x.txValid},
		Conn{"s_axis_tready", x.rxSReady}, Conn{"s_axis_tlast", C(1, 0)},
		Conn{"cfg_offset", x.offset}, Conn{"cfg_markers", x.markers}, Conn{"cfg_crc", x.crc}, Conn{"cfg_rev0", C(1, 0)},
		Conn{"m_axis_tdata", rxData}, Conn{"m_axis_tkeep", rxKeep}, Conn{"m_axis_tvalid", rxValid},
		Conn{"m_axis_tready", C(1, 1)}, Conn{"m_axis_tlast", rxLast}, Conn{"m_axis_tuser_len", rxLen},
		Conn{"m_err_valid", errValid}, Conn{"m_err_kind", errKind}, Conn{"m_err_code", errCode},
		Conn{"m_err_offset", errOff}, Conn{"m_eos", eos})

	// Checker.
	c := newULPDUStream(m, "c", "the next beat mpa_rx delivers")
	cx, cFirst, cLen, cRem, cLast := c.x, c.first, c.len, c.rem, c.last
	cLenQ := m.RegDecl("c_len_q", 8, "the ULPDU's length")
	cULPBad := m.RegDecl("c_ulp_bad", 1, "a beat of this ULPDU differed")
	cBad := m.RegDecl("c_bad", 1, "a beat of this episode differed")
	cN := m.RegDecl("c_n", 8, "ULPDUs received")
	var keepBits, octMask []Expr
	for i := lanes - 1; i >= 0; i-- {
		keepBits = append(keepBits, Lt(C(8, uint64(i)), cRem))
	}
	cKeep := m.WireOf("c_keep", Cat(keepBits...), "the lanes the next beat must keep")
	for i := lanes - 1; i >= 0; i-- {
		octMask = append(octMask, Rep(Bit(cKeep, i), 8))
	}
	diff := m.WireOf("c_diff", And(Xor(rxData, cx), Cat(octMask...)), "")
	beatOK := m.WireOf("c_beat_ok", And(Eq(diff, C(64, 0)), Eq(rxKeep, cKeep), Eq(rxLast, cLast),
		Eq(rxLen, Cat(C(8, 0), Sel(cFirst, cLen, cLenQ)))), "the beat is the expected one")
	cEnd := m.WireOf("c_end", And(rxValid, cLast), "a ULPDU ends")
	intact := m.WireOf("c_intact", And(cEnd, beatOK, Not(cULPBad)), "a ULPDU ended intact")
	c.drive(m, seed, start, rxValid)
	m.Drive(cLenQ, nil, cLen, And(rxValid, cFirst))
	m.Drive(cULPBad, nil, Sel(start, C(1, 0), And(Not(cLast), Or(cULPBad, Not(beatOK)))), Or(start, rxValid))
	m.Drive(cBad, nil, Not(start), Or(start, And(rxValid, Not(beatOK))))
	m.Drive(cN, nil, Sel(start, C(8, 0), inc(cN)), Or(start, cEnd))

	// Verdict: a clean episode ends when its ULPDUs are in, an error after
	// the drain, any episode at the watchdog.
	wdExp := watchdog(m, run)
	drW := bits.Len(SelftestDrainCycles - 1)
	dr := m.RegDecl("dr", drW, "cycles in the drain state")
	m.Drive(dr, nil, Sel(drain, inc(dr), C(drW, 0)), nil)
	injKind := m.WireOf("inj_kind", Or(kCRC, kMrk), "an error is injected in this episode")
	finRun := m.WireOf("fin_run", And(run, Not(errValid), Or(And(Not(injKind), Eq(cN, C(8, SelftestULPDUs))), wdExp)), "")
	fin := m.WireOf("fin", Or(finRun, And(drain, RedAnd(dr))), "the episode ends")
	errOK := m.WireOf("err_ok", And(errValid, iDone, Eq(cN, eN), Eq(errOff, eOff),
		Eq(errKind, Sel(kCRC, C(3, 1), C(3, 2))), Eq(errCode, Sel(kCRC, C(3, 2), C(3, 3)))), "the injected error came out as it must")
	good := m.WireOf("good", And(Not(cBad), Not(eos), Sel(injKind, errOK, And(Not(errValid), Eq(cN, C(8, SelftestULPDUs))))), "the episode went as it must")
	return selftestVerdict{intact: intact, okDoc: "ULPDUs delivered intact", fin: fin, good: good, stop: errValid}
}

// selftestCRCCheck is the transmit-only checker: crc32c checks each FPDU
// by residue (its result and its residue flag must agree); exactly the
// corrupted FPDU must fail. The episode ends once every FPDU started has
// been checked.
func selftestCRCCheck(m *Module, crcMod *Module, x selftestNets) selftestVerdict {
	crcOut := m.Wire("chk_crc", 32, "")
	resOK := m.Wire("chk_residue_ok", 1, "")
	resValid := m.Wire("chk_valid", 1, "")
	m.Instantiate("u_crc", crcMod,
		Conn{"clk", m.Port("clk")}, Conn{"rst", x.blkRst},
		Conn{"s_axis_tdata", Xor(x.txData, x.mask)}, Conn{"s_axis_tkeep", x.txKeep}, Conn{"s_axis_tvalid", x.txValid},
		Conn{"s_axis_tready", x.rxSReady}, Conn{"s_axis_tlast", x.txLast},
		Conn{"m_axis_tdata", crcOut}, Conn{"m_axis_tuser", resOK}, Conn{"m_axis_tvalid", resValid}, Conn{"m_axis_tready", C(1, 1)})
	cN := m.RegDecl("c_n", 8, "FPDUs checked")
	cBad := m.RegDecl("c_bad", 1, "an FPDU's check went wrong")
	passed := m.WireOf("chk_pass", And(resOK, Eq(crcOut, C(32, crc32cResidueValue))), "the FPDU ends with its own correct CRC")
	want := m.WireOf("chk_want_fail", And(Or(x.kCRC, x.kMrk), x.iDone, Eq(cN, x.eN)), "this FPDU is the corrupted one")
	m.Drive(cN, nil, Sel(x.start, C(8, 0), inc(cN)), Or(x.start, resValid))
	m.Drive(cBad, nil, Not(x.start), Or(x.start, And(resValid, Eq(passed, want))))
	wdExp := watchdog(m, x.run)
	done := m.WireOf("chk_done", And(x.run, x.genIdle, Eq(x.iN, x.gN), Eq(cN, x.gN)), "every FPDU started is checked")
	fin := m.WireOf("fin", Or(done, And(x.run, wdExp)), "the episode ends")
	good := m.WireOf("good", And(Not(cBad), done, Sel(Or(x.kCRC, x.kMrk), x.iDone, C(1, 1))), "the episode went as it must")
	intact := m.WireOf("c_intact", And(resValid, passed, Not(want)), "an FPDU checked out as it must")
	return selftestVerdict{intact: intact, okDoc: "FPDUs whose CRC checked out", fin: fin, good: good, stop: C(1, 0)}
}

// crc32cResidueValue is the CRC32c (as hash/crc32 returns it) of any frame
// that ends with its own CRC field.
const crc32cResidueValue = 0x48674BC7
