package sim

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// MPARxBench is the co-simulation bench of mpa_rx_w<width>: streams of
// FPDUs framed by golden/mpa, cut into TCP segments of random sizes, with
// faults injected into some of them.
func MPARxBench(width int) (*Bench, error) {
	m, err := gen.MPARx(width)
	if err != nil {
		return nil, err
	}
	b := NewBench(m, nil, nil)
	b.NewModel = func() (Model, error) { return newRxModel(b.Layout, width) }
	b.NewDriver = func(seed uint64) Driver { return NewRxDriver(b.Layout, seed, RxRandom) }
	return b, nil
}

type rxPorts struct {
	data, keep, valid, last, ready Port
	rst, off, mk, crc, rev0        Port
	mData, mKeep, mValid, mReady   Port
	mLast, mLen                    Port
	errValid, errKind, errCode     Port
	errOff, eos                    Port
}

func lookupRxPorts(l Layout) (rxPorts, error) {
	var p rxPorts
	err := lookup(l, map[string]*Port{"s_axis_tdata": &p.data, "s_axis_tkeep": &p.keep, "s_axis_tvalid": &p.valid,
		"s_axis_tlast": &p.last, "rst": &p.rst, "cfg_offset": &p.off, "cfg_markers": &p.mk, "cfg_crc": &p.crc,
		"cfg_rev0": &p.rev0, "m_axis_tready": &p.mReady},
		map[string]*Port{"s_axis_tready": &p.ready, "m_axis_tdata": &p.mData, "m_axis_tkeep": &p.mKeep,
			"m_axis_tvalid": &p.mValid, "m_axis_tlast": &p.mLast, "m_axis_tuser_len": &p.mLen,
			"m_err_valid": &p.errValid, "m_err_kind": &p.errKind, "m_err_code": &p.errCode,
			"m_err_offset": &p.errOff, "m_eos": &p.eos})
	return p, err
}

type rxModel struct {
	m   *cycle.MPARx
	p   rxPorts
	buf []byte
}

func newRxModel(l Layout, width int) (Model, error) {
	m, err := cycle.NewMPARx(width)
	if err != nil {
		return nil, err
	}
	p, err := lookupRxPorts(l)
	if err != nil {
		return nil, err
	}
	return &rxModel{m: m, p: p, buf: make([]byte, width/8)}, nil
}

func (a *rxModel) Step(in, out []uint32) {
	p := a.p
	valid := p.valid.Get(in) != 0
	if valid {
		p.data.Bytes(in, a.buf)
	}
	o := a.m.Step(cycle.MPARxIn{
		Reset: p.rst.Get(in) != 0,
		Cfg: cycle.MPARxCfg{Offset: uint32(p.off.Get(in)), Markers: p.mk.Get(in) != 0, CRC: p.crc.Get(in) != 0,
			Rev0: p.rev0.Get(in) != 0},
		Data: a.buf, Keep: p.keep.Get(in), Valid: valid, Last: p.last.Get(in) != 0, MReady: p.mReady.Get(in) != 0,
	})
	p.ready.Set(out, b2u(o.SReady))
	p.mData.SetBytes(out, o.Data)
	p.mKeep.Set(out, o.Keep)
	p.mValid.Set(out, b2u(o.Valid))
	p.mLast.Set(out, b2u(o.Last))
	p.mLen.Set(out, uint64(o.Len))
	p.errValid.Set(out, b2u(o.ErrValid))
	p.errKind.Set(out, uint64(o.ErrKind))
	p.errCode.Set(out, uint64(o.ErrCode))
	p.errOff.Set(out, uint64(o.ErrOffset))
	p.eos.Set(out, b2u(o.EOS))
}

// RxMode selects the stimulus of an mpa_rx driver.
type RxMode int

const (
	// RxRandom: episodes of random length on random contexts, random
	// segmentation, gaps and backpressure, faults in a quarter of them.
	RxRandom RxMode = iota
	// RxSaturated: one endless good stream, markers and CRC on, FPDUs of
	// 1 to 1500 octets, input always offered in whole beats, output always
	// taken: the block's throughput.
	RxSaturated
	// RxFaults: every episode carries a fault, found at its FPDU.
	RxFaults
	// RxSaturatedLarge: RxSaturated with FPDUs of 1448 to 9000 octets, where
	// the input, not the one-packet-per-ULPDU output, is the busier side.
	RxSaturatedLarge
)

// Fault kinds the driver injects.
const (
	faultNone = iota
	faultCRC
	faultMarker
	faultLength
	faultTruncate
	faultFlip
	numFaults
)

// rxEpisode is one reset-to-end run of a half connection.
type rxEpisode struct {
	cfg     cycle.MPARxCfg
	off     uint32 // stream offset of the next FPDU to frame
	fpdus   int    // FPDUs still to frame
	fault   int
	faultAt int // FPDU index that carries the fault
	index   int
	fin     bool // FIN once the FPDUs are sent
	sent    []rxSent
}

// rxSent is one ULPDU framed into the stream.
type rxSent struct {
	offset uint32
	data   []byte
}

// RxDriver makes mpa_rx stimulus: a stream of FPDUs (from golden/mpa's
// Framer, or from Stream when set) cut into TCP segments and beats.
type RxDriver struct {
	p    rxPorts
	rng  Rand
	pool Pool
	mode RxMode
	L    int
	// Stream, if set, supplies the stream octets of each episode instead
	// of the framer (nil: the episode ends, with FIN).
	Stream func() []byte
	// Episode, if set, may change each episode's context as it starts.
	Episode func(cfg *cycle.MPARxCfg)
	// Endless keeps the first episode going: no reset ends it.
	Endless bool

	ep        rxEpisode
	pending   []byte // stream octets not yet in a beat
	segLeft   int    // octets left in the current TCP segment
	gap       int    // idle cycles before the next segment
	resetLeft int
	holding   bool
	beat      []byte
	keep      uint64
	last      bool
	finSent   bool
	endWait   int
	idleOut   int // cycles with nothing left to send and nothing on m_axis
	epCycles  int
	validP    int
	readyP    int
	cycle     uint64
	Episodes  int
}

// NewRxDriver starts a driver.
func NewRxDriver(l Layout, seed uint64, mode RxMode) *RxDriver {
	p, err := lookupRxPorts(l)
	if err != nil {
		panic(err) // the model constructor reports the same error first
	}
	d := &RxDriver{p: p, rng: NewRand(seed), mode: mode, L: p.data.Width / 8, validP: 256, readyP: 256}
	d.pool = NewPool(d.rng, 1<<17)
	d.beat = make([]byte, d.L)
	return d // the first episode starts with the first cycle, after the caller's settings
}

func (d *RxDriver) newEpisode() {
	r := d.rng
	cfg := cycle.MPARxCfg{Markers: r.Chance(192), CRC: r.Chance(224), Rev0: r.Chance(32), Offset: r.Uint32() &^ 3}
	switch r.IntN(4) {
	case 0:
		cfg.Offset = 0 // SeqStart
	case 1:
		cfg.Offset = -uint32(4 * (1 + r.IntN(600))) // about to wrap
	}
	ep := rxEpisode{cfg: cfg, off: cfg.Offset, fpdus: 1 + r.IntN(200), fin: r.Chance(160)}
	if d.saturated() {
		cfg.Markers, cfg.CRC, cfg.Rev0 = true, true, false
		ep = rxEpisode{cfg: cfg, off: cfg.Offset, fpdus: 1 << 30}
	}
	if d.mode == RxFaults || (d.mode == RxRandom && r.Chance(64)) {
		ep.fault = 1 + r.IntN(numFaults-1)
		ep.faultAt = r.IntN(min(ep.fpdus, 8))
		ep.fin = true
	}
	if d.Episode != nil {
		d.Episode(&ep.cfg)
		ep.off = ep.cfg.Offset
	}
	d.ep = ep
	d.pending, d.segLeft, d.gap, d.finSent, d.endWait, d.epCycles = d.pending[:0], 0, 0, false, 0, 0
	d.holding = false
	d.resetLeft = 1 + r.IntN(3)
	d.idleOut = 0
	d.Episodes++
}

// ulpduSize draws a ULPDU length: many small, some up to 64768.
func (d *RxDriver) ulpduSize() int {
	switch d.mode {
	case RxSaturated:
		return 1 + d.rng.IntN(1500)
	case RxSaturatedLarge:
		return 1448 + d.rng.IntN(9000-1448+1)
	}
	switch r := d.rng.IntN(64); {
	case r < 32:
		return 1 + d.rng.IntN(64)
	case r < 52:
		return 1 + d.rng.IntN(1500)
	case r < 63:
		return 1 + d.rng.IntN(9000)
	default:
		return 1 + d.rng.IntN(mpa.MaxULPDULength)
	}
}

// more appends the next FPDU (or Stream's next chunk) to pending; false
// once the episode has nothing more to send.
func (d *RxDriver) more() bool {
	ep := &d.ep
	if d.Stream != nil {
		b := d.Stream()
		d.pending = append(d.pending, b...)
		return len(b) > 0
	}
	if ep.fpdus == 0 {
		return false
	}
	ep.fpdus--
	n := d.ulpduSize()
	u := d.pool.Slice(d.rng, n)
	f := mpa.Framer{Markers: ep.cfg.Markers, CRC: ep.cfg.CRC, Offset: ep.off}
	start := len(d.pending)
	d.pending, _ = f.AppendFPDU(d.pending, u)
	fpdu := d.pending[start:]
	ep.sent = append(ep.sent, rxSent{offset: ep.off, data: u})
	ep.off += uint32(len(fpdu))
	if ep.fault != faultNone && ep.index == ep.faultAt {
		d.inject(fpdu)
	}
	ep.index++
	return true
}

// inject spoils one FPDU (starting at stream offset ep.off-len) as the
// episode's fault asks; golden/mpa decides what that comes to.
func (d *RxDriver) inject(fpdu []byte) {
	ep := &d.ep
	start := ep.off - uint32(len(fpdu))
	hdr := 0
	if ep.cfg.Markers && start%mpa.MarkerPeriod == 0 {
		hdr = mpa.MarkerLen
	}
	switch ep.fault {
	case faultCRC:
		fpdu[len(fpdu)-1-d.rng.IntN(4)] ^= byte(1 << d.rng.IntN(8))
	case faultMarker:
		// The first marker of the FPDU gets a wrong pointer (low bits are ignored).
		for i := 0; i < len(fpdu); i += 4 {
			if (start+uint32(i))%mpa.MarkerPeriod == 0 && ep.cfg.Markers {
				v := binary.BigEndian.Uint16(fpdu[i+2:])
				binary.BigEndian.PutUint16(fpdu[i+2:], v+4*uint16(1+d.rng.IntN(100)))
				if ep.cfg.CRC && d.rng.Chance(192) {
					// A sender that covers its own bad marker: only the marker check can tell.
					crc := crc32.Checksum(fpdu[:len(fpdu)-mpa.CRCLen], crc32.MakeTable(crc32.Castagnoli))
					binary.LittleEndian.PutUint32(fpdu[len(fpdu)-mpa.CRCLen:], crc)
				}
				return
			}
		}
		fpdu[hdr+2] ^= 0x80 // no marker: spoil the ULPDU instead
	case faultLength:
		v := uint16(0)
		if d.rng.Chance(128) {
			v = uint16(mpa.MaxULPDULength + 1 + d.rng.IntN(65535-mpa.MaxULPDULength))
		}
		binary.BigEndian.PutUint16(fpdu[hdr:], v)
	case faultTruncate:
		cut := 1 + d.rng.IntN(len(fpdu)-1)
		d.pending = d.pending[:len(d.pending)-len(fpdu)+cut]
		ep.fpdus = 0
	case faultFlip:
		i := d.rng.IntN(len(fpdu))
		fpdu[i] ^= byte(1 << d.rng.IntN(8))
	}
}

// Next drives this cycle's inputs.
func (d *RxDriver) Next(in []uint32) {
	if d.Episodes == 0 {
		d.newEpisode()
	}
	d.cycle++
	if d.mode == RxRandom && d.cycle%4096 == 0 {
		pr := Pressures[d.rng.IntN(len(Pressures))]
		d.validP, d.readyP = pr.Valid, pr.Ready
	}
	d.p.rst.Set(in, b2u(d.resetLeft > 0))
	c := d.ep.cfg
	d.p.off.Set(in, uint64(c.Offset))
	d.p.mk.Set(in, b2u(c.Markers))
	d.p.crc.Set(in, b2u(c.CRC))
	d.p.rev0.Set(in, b2u(c.Rev0))
	d.p.mReady.Set(in, b2u(d.rng.Chance(d.readyP)))
	if d.resetLeft == 0 && !d.holding {
		d.form()
	}
	if !d.holding {
		r := d.rng.Uint64()
		off := int(r>>32) % (len(d.pool) - d.L)
		d.p.data.SetBytes(in, d.pool[off:off+d.L])
		d.p.keep.Set(in, r&(1<<d.L-1))
		d.p.valid.Set(in, 0)
		d.p.last.Set(in, r>>31&1)
		return
	}
	d.p.data.SetBytes(in, d.beat)
	d.p.keep.Set(in, d.keep)
	d.p.valid.Set(in, 1)
	d.p.last.Set(in, b2u(d.last))
}

// form makes the next beat, if the stream has one to offer this cycle.
func (d *RxDriver) form() {
	if d.finSent {
		return
	}
	if d.gap > 0 {
		d.gap--
		return
	}
	if !d.saturated() && !d.rng.Chance(d.validP) {
		return
	}
	if d.segLeft == 0 {
		d.segLeft = d.segmentSize()
	}
	for len(d.pending) < d.L && d.more() {
	}
	n := min(d.L, d.segLeft, len(d.pending))
	fin := len(d.pending) == n && d.ep.fpdus == 0 && d.ep.fin && d.Stream == nil
	if n == 0 && !fin {
		return // nothing more to send: the episode waits for its end
	}
	copy(d.beat, d.pending[:n])
	clear(d.beat[n:])
	d.keep = 1<<n - 1
	d.last = fin
	d.holding = true
}

// segmentSize draws a TCP segment size: MSS-sized mostly, some small.
func (d *RxDriver) segmentSize() int {
	if d.saturated() {
		return 1 << 30
	}
	switch r := d.rng.IntN(8); {
	case r < 4:
		return 1448
	case r < 6:
		return 1 + d.rng.IntN(200)
	default:
		return 1 + d.rng.IntN(9000)
	}
}

// Observe advances past an accepted beat and ends episodes.
func (d *RxDriver) Observe(in, out []uint32) {
	if d.resetLeft > 0 {
		d.resetLeft--
		return
	}
	d.epCycles++
	if d.holding && d.p.ready.Get(out) != 0 {
		n := 0
		for n < d.L && d.keep>>n&1 == 1 {
			n++
		}
		d.pending = d.pending[n:]
		d.segLeft -= n
		if d.segLeft == 0 && !d.saturated() && d.rng.Chance(64) {
			d.gap = d.rng.IntN(40)
		}
		d.finSent = d.last
		d.holding = false
	}
	if d.saturated() || d.Endless {
		return
	}
	// An episode ends some cycles after the block reports an error or the
	// end of the stream, or, rarely, with a reset in mid-stream.
	done := d.p.errValid.Get(out) != 0 || d.p.eos.Get(out) != 0
	if done && d.p.mValid.Get(out) == 0 {
		d.endWait++
	}
	if d.holding || len(d.pending) > 0 || d.ep.fpdus > 0 || d.p.mValid.Get(out) != 0 {
		d.idleOut = 0
	} else {
		d.idleOut++ // everything sent and delivered, no FIN: start afresh
	}
	if d.endWait > 32 || d.idleOut > 64 || d.epCycles > 400000 || (d.rng.Uint32()%300000 == 0) {
		d.newEpisode()
	}
}

func (d *RxDriver) saturated() bool { return d.mode == RxSaturated || d.mode == RxSaturatedLarge }
