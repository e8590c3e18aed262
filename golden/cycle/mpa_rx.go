package cycle

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/openiwarp/openiwarp/golden/mpa"
)

// mpaRxVerdictLatency is mpa_rx's documented latency (hw/README.md):
// cycles from the cycle the framer takes an FPDU's last piece to the cycle
// its verdict (commit or error) takes effect.
var mpaRxVerdictLatency = map[int]int{64: 4, 128: 4, 256: 4, 512: 5}

// mpaRxBufferBeats is the documented depth of mpa_rx's ULPDU buffer: two
// ULPDUs of 64768 octets, rounded up to a power of two.
var mpaRxBufferBeats = map[int]int{64: 16384, 128: 8192, 256: 4096, 512: 2048}

// mpaRxRing is the number of aligned beats mpa_rx's input ring holds.
const mpaRxRing = 4

// MPARxCfg is mpa_rx's context, read during reset.
type MPARxCfg struct {
	Offset  uint32 // stream offset from SeqStart of the next octet (a multiple of 4)
	Markers bool
	CRC     bool
	Rev0    bool // MPA revision 0 peer: draft-01's FPDUPTR to a leading marker is accepted too
}

// MPARxIn is one cycle of mpa_rx inputs.
type MPARxIn struct {
	Reset  bool
	Cfg    MPARxCfg
	Data   []byte // lanes octets
	Keep   uint64 // contiguous from lane 0
	Valid  bool
	Last   bool // end of the stream (FIN)
	MReady bool
}

// MPARxOut is one cycle of mpa_rx outputs. Data aliases the model.
type MPARxOut struct {
	SReady    bool
	Data      []byte
	Keep      uint64
	Valid     bool
	Last      bool
	Len       uint16
	ErrValid  bool
	ErrKind   uint8 // golden/mpa Kind
	ErrCode   uint8 // RFC 5044 §8 code
	ErrOffset uint32
	EOS       bool
}

type rxBeat struct {
	data []byte
	last bool
	len  uint16
}

// rxVerdict is what the framer hands the check pipeline for one FPDU (or
// the stream's end): golden/mpa's outcome.
type rxVerdict struct {
	due   uint64 // cycle at whose end it takes effect
	err   *mpa.Error
	ulpdu []byte // a good FPDU's ULPDU
	eos   bool   // the stream ended at an FPDU boundary
}

// MPARx models mpa_rx_w<W>, the receive path of one MPA half connection:
// golden/mpa's Deframer decides every ULPDU and error, and the model
// reproduces the block's timing contract:
//
//   - input octets go into a ring of four aligned beats (stream offset s
//     in lane s mod W/8); a beat is taken while the ring has room for a
//     whole one, or always once delivery has stopped;
//   - the framer takes one piece per cycle: from its position to the end
//     of the aligned beat, of the FPDU, or of the whole 4-octet groups
//     received, whichever comes first, and only if the piece reaches the
//     beat's end or the FPDU's end, or no beat is offered this cycle, or
//     the stream has ended; a starting FPDU needs its ULPDU_Length group;
//   - in the cycle an FPDU ends inside a beat, it also takes the next
//     FPDU's first piece, to the beat's end, when that part has arrived,
//     holds a good ULPDU_Length and neither that FPDU nor its ULPDU ends in
//     the beat;
//   - it writes the ULPDU into the buffer as the pieces complete output
//     beats, a ULPDU's last two at once when its end leaves two (the buffer
//     has two banks); it waits while fewer than two buffer beats are free;
//   - an FPDU's verdict takes effect a fixed number of cycles after its
//     last piece: a good ULPDU becomes readable, an error is shown and
//     stops the framer; a length error is found on the ULPDU_Length
//     group, the end of the stream when nothing more can be taken, and
//     both travel the same pipeline so verdicts stay in stream order;
//   - readable beats reach m_axis through a buffer read (one cycle) and
//     a two-beat queue.
type MPARx struct {
	lanes, lat, depth int
	cfg               MPARxCfg
	golden            *mpa.Deframer
	cycle             uint64

	stream    []byte // octets from streamOff on
	streamOff uint32
	wpos      uint32
	rpos      uint32
	fin       bool
	bHalt     bool
	vErr      bool

	inF    bool
	fLen   int
	left   int // body octets (no markers) of the FPDU left
	done   int // body octets taken
	nAcc   int // lanes of the output beat being filled
	fStart uint32

	wptr, rptr int // buffer beats written, read
	pipe       []rxVerdict
	readable   []rxBeat // committed beats not yet read
	reading    *rxBeat
	queue      []rxBeat

	errKind, errCode uint8
	errOff           uint32
	eos              bool

	zero  []byte
	ulp   []byte // the ULPDU golden/mpa delivered during the last Feed
	moved bool   // the framer did something in the last cycle
}

// NewMPARx models the block of the given data width.
func NewMPARx(width int) (*MPARx, error) {
	lat, ok := mpaRxVerdictLatency[width]
	if !ok {
		return nil, fmt.Errorf("%w: mpa_rx width %d (have 64, 128, 256, 512)", ErrConfig, width)
	}
	m := &MPARx{lanes: width / 8, lat: lat, depth: mpaRxBufferBeats[width], zero: make([]byte, width/8)}
	m.reset(MPARxCfg{})
	return m, nil
}

// VerdictLatency is the number of cycles from an FPDU's last piece to its
// verdict taking effect.
func (m *MPARx) VerdictLatency() int { return m.lat }

func (m *MPARx) reset(cfg MPARxCfg) {
	rev := mpa.Rev1
	if cfg.Rev0 {
		rev = mpa.Rev0
	}
	*m = MPARx{lanes: m.lanes, lat: m.lat, depth: m.depth, zero: m.zero, cycle: m.cycle, cfg: cfg,
		golden:    mpa.NewDeframer(mpa.DeframerConfig{Markers: cfg.Markers, CRC: cfg.CRC, Rev: rev, StartOffset: cfg.Offset}),
		streamOff: cfg.Offset, wpos: cfg.Offset, rpos: cfg.Offset}
}

// octets returns the n stream octets from offset off.
func (m *MPARx) octets(off uint32, n int) []byte {
	i := int(off - m.streamOff)
	return m.stream[i : i+n]
}

// feed gives golden/mpa the stream octets [rpos, rpos+n).
func (m *MPARx) feed(n int) *mpa.Error {
	m.ulp = nil
	err := m.golden.Feed(m.octets(m.rpos, n), func(u mpa.ULPDU) error {
		m.ulp = append([]byte(nil), u.Data...)
		return nil
	})
	return asMPAError(err)
}

func asMPAError(err error) *mpa.Error {
	if err == nil {
		return nil
	}
	var me *mpa.Error
	if errors.As(err, &me) {
		return me
	}
	return &mpa.Error{Msg: err.Error()} // not an MPA error: shows as kind 0
}

// Step runs one cycle.
func (m *MPARx) Step(in MPARxIn) MPARxOut {
	L := m.lanes
	halted := m.bHalt || m.vErr
	rbase := m.rpos &^ uint32(L-1)
	room := m.wpos-rbase <= uint32((mpaRxRing-1)*L)
	out := MPARxOut{SReady: room || halted, Data: m.zero, ErrValid: m.vErr, ErrKind: m.errKind, ErrCode: m.errCode, ErrOffset: m.errOff, EOS: m.eos}
	if len(m.queue) > 0 {
		h := m.queue[0]
		out.Valid, out.Data, out.Last, out.Len = true, h.data, h.last, h.len
		n := L
		if h.last {
			n = (int(h.len)-1)%L + 1
		}
		out.Keep = 1<<n - 1 // wraps to all ones at 64 lanes
	}
	if in.Reset {
		m.reset(in.Cfg)
		m.cycle++
		return out
	}
	fire := in.Valid && (room || halted)

	// --- the framer, on the state at the start of the cycle ---
	a := int(m.rpos % uint32(L))
	avail := m.wpos - m.rpos
	endAvail := a + int(avail&^3)
	if avail >= uint32(L-a) {
		endAvail = L
	}
	mk := 0
	if m.cfg.Markers && m.rpos%mpa.MarkerPeriod == 0 {
		mk = mpa.MarkerLen
	}
	starting := !m.inF
	hdrAvail := endAvail >= a+mk+4
	n := 0
	lenBad := false
	if starting && hdrAvail {
		n = int(binary.BigEndian.Uint16(m.octets(m.rpos+uint32(mk), 2)))
		lenBad = n == 0 || n > mpa.MaxULPDULength
	}
	bufRoom := m.wptr-m.rptr < m.depth-1
	ready := !halted && bufRoom
	canGo := endAvail > a
	left, done, fLen := m.left, m.done, m.fLen
	if starting {
		canGo = hdrAvail && !lenBad
		left, done, fLen = (2+n+3)&^3+mpa.CRCLen, 0, n
	}
	bodyLane := a + mk
	endsF := endAvail >= bodyLane && endAvail-bodyLane >= left
	bodyP := endAvail - bodyLane
	if endsF {
		bodyP = left
	}
	e := bodyLane + bodyP
	idle := !in.Valid || m.fin
	goPiece := ready && canGo && (endsF || endAvail == L || idle)
	lenErr := ready && starting && hdrAvail && lenBad
	var eosGo bool
	if starting {
		eosGo = !halted && m.fin && !hdrAvail
	} else {
		eosGo = !halted && m.fin && !canGo
	}

	var verdict *rxVerdict
	m.moved = goPiece || lenErr || eosGo
	switch {
	case goPiece:
		if starting {
			m.inF, m.fLen, m.fStart, m.nAcc = true, fLen, m.rpos, 0
		}
		uBefore := min(max(done-2, 0), fLen)
		uAfter := min(max(done+bodyP-2, 0), fLen)
		k := uAfter - uBefore
		ulpEnds := done < fLen+2 && done+bodyP >= fLen+2
		tot := m.nAcc + k
		full := tot >= L
		if full || ulpEnds {
			m.wptr++
		}
		if ulpEnds && full && tot%L != 0 {
			m.wptr++ // the ULPDU's last beat too, into the other bank
		}
		m.nAcc = tot % L
		err := m.feed(e - a)
		m.rpos += uint32(e - a)
		m.left, m.done = left-bodyP, done+bodyP
		if endsF {
			m.inF = false
			verdict = &rxVerdict{err: err, ulpdu: m.ulp}
			m.second(e, endAvail)
		}
	case lenErr:
		m.bHalt = true
		verdict = &rxVerdict{err: m.feed(mk + 4)}
	case eosGo:
		m.bHalt = true
		m.golden.Feed(m.octets(m.rpos, int(avail)), func(mpa.ULPDU) error { return nil })
		err := asMPAError(m.golden.End())
		verdict = &rxVerdict{err: err, eos: err == nil}
	}
	if verdict != nil {
		verdict.due = m.cycle + uint64(m.lat) - 1
		m.pipe = append(m.pipe, *verdict)
	}

	// --- the reader: its queue, the read under way, the readable beats ---
	pop := len(m.queue) > 0 && in.MReady
	rd := 0
	if m.reading != nil {
		rd = 1
	}
	p := 0
	if pop {
		p = 1
	}
	rdGo := len(m.readable) > 0 && len(m.queue)+rd < 2+p
	if pop {
		m.queue = m.queue[1:]
	}
	if m.reading != nil {
		m.queue = append(m.queue, *m.reading)
		m.reading = nil
	}
	if rdGo {
		b := m.readable[0]
		m.readable = m.readable[1:]
		m.reading = &b
		m.rptr++
	}

	// --- verdicts due this cycle ---
	for len(m.pipe) > 0 && m.pipe[0].due == m.cycle {
		v := m.pipe[0]
		m.pipe = m.pipe[1:]
		switch {
		case m.vErr:
		case v.err != nil:
			m.vErr = true
			m.errKind, m.errCode, m.errOff = uint8(v.err.Kind), uint8(v.err.Code), uint32(v.err.Offset)
		case v.eos:
			m.eos = true
		default:
			m.commit(v.ulpdu)
		}
	}

	// --- input ---
	if fire {
		cnt := 0
		for cnt < L && in.Keep>>cnt&1 == 1 {
			cnt++
		}
		m.stream = append(m.stream, in.Data[:cnt]...)
		m.wpos += uint32(cnt)
		m.fin = m.fin || in.Last
	}
	if drop := int(int32(m.rpos&^uint32(L-1) - m.streamOff)); drop >= 4096 {
		m.stream = append(m.stream[:0], m.stream[drop:]...)
		m.streamOff += uint32(drop)
	}
	m.cycle++
	return out
}

// second takes the next FPDU's first piece in the cycle the previous FPDU
// ended at lane e, when the rest of the beat has arrived and holds its
// ULPDU_Length (a good one), and neither it nor its ULPDU ends in the beat.
func (m *MPARx) second(e, endAvail int) {
	L := m.lanes
	if e >= L || endAvail != L {
		return
	}
	n := int(binary.BigEndian.Uint16(m.octets(m.rpos, 2)))
	body := L - e
	if n == 0 || n > mpa.MaxULPDULength || 2+n <= body {
		return
	}
	m.feed(body) // golden/mpa sees these octets in order; nothing completes
	m.inF, m.fLen, m.fStart = true, n, m.rpos
	m.left, m.done, m.nAcc = (2+n+3)&^3+mpa.CRCLen-body, body, body-2
	m.rpos += uint32(body)
}

// Quiet reports whether the block has nothing left to do until more input
// comes: the framer did nothing in the last cycle, and no verdict, buffer
// write or output beat is under way.
func (m *MPARx) Quiet() bool {
	return !m.moved && len(m.pipe) == 0 && len(m.readable) == 0 && m.reading == nil && len(m.queue) == 0
}

// commit makes a good ULPDU readable, a beat at a time.
func (m *MPARx) commit(u []byte) {
	L := m.lanes
	for i := 0; i < len(u); i += L {
		b := rxBeat{data: make([]byte, L), len: uint16(len(u))}
		copy(b.data, u[i:])
		b.last = i+L >= len(u)
		m.readable = append(m.readable, b)
	}
}
