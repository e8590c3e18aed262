package cycle

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/mpa"
)

// mpaTxLatency is mpa_tx's documented latency (hw/README.md): cycles from
// the cycle an output beat is formed to the cycle it is on m_axis.
var mpaTxLatency = map[int]int{64: 5, 128: 5, 256: 5, 512: 6}

// mpaTxWindow is how many input beats mpa_tx holds.
const mpaTxWindow = 4

// MPATxCtx is the per-ULPDU context of mpa_tx, given with the first beat.
type MPATxCtx struct {
	Offset  uint32 // stream offset of the FPDU from SeqStart
	Len     int    // ULPDU length
	Markers bool
	CRC     bool
}

// MPATxIn is one cycle of mpa_tx inputs.
type MPATxIn struct {
	Reset  bool
	Data   []byte // lanes octets
	Valid  bool
	Last   bool
	Ctx    MPATxCtx // read with a ULPDU's first beat
	MReady bool
}

// MPATxOut is one cycle of mpa_tx outputs. Data aliases the model.
type MPATxOut struct {
	SReady bool
	Data   []byte
	Keep   uint64
	Valid  bool
	Last   bool
	User   uint32 // on the last beat: stream offset just past the FPDU
}

type txULPDU struct {
	ctx      MPATxCtx
	data     []byte // octets received so far
	beats    int    // beats received
	template []byte // the FPDU framed by golden/mpa with a zero ULPDU and no CRC
	fpdu     []byte // the real FPDU, once the ULPDU is complete
}

type txHeld struct {
	u     *txULPDU
	index int // beat index within its ULPDU
	last  bool
}

type txBeat struct {
	valid bool
	data  []byte
	keep  uint64
	last  bool
	user  uint32
}

// MPATx models mpa_tx_w<W>: FPDUs (golden/mpa's Framer) from ULPDUs with
// per-ULPDU context, with the block's timing contract:
//
//   - an input beat is taken while fewer than four are held;
//   - an output beat is formed once the held beats cover the ULPDU octets
//     from the current position up to one beat's worth of lanes further;
//   - a held beat is released once the output has passed all its octets,
//     the ULPDU's last beat only when its FPDU ends;
//   - an FPDU starts in the cycle its predecessor's last beat is formed when
//     its context is already held, else in a cycle of its own;
//   - formed beats reach m_axis a fixed number of cycles later through a
//     pipeline that, like the framer, advances only when the output
//     register is empty or m_axis_tready is high.
type MPATx struct {
	lanes int
	held  []txHeld
	first bool
	recv  *txULPDU   // ULPDU receiving beats
	ctxq  []*txULPDU // ULPDUs whose FPDU has not started
	cur   *txULPDU   // FPDU being formed
	wire  int        // FPDU octets formed so far
	pipe  []txBeat
}

// NewMPATx models the block of the given data width.
func NewMPATx(width int) (*MPATx, error) {
	lat, ok := mpaTxLatency[width]
	if !ok {
		return nil, fmt.Errorf("%w: mpa_tx width %d (have 64, 128, 256, 512)", ErrConfig, width)
	}
	m := &MPATx{lanes: width / 8, pipe: make([]txBeat, lat)}
	m.reset()
	return m, nil
}

// Latency is the number of cycles from forming a beat to showing it.
func (m *MPATx) Latency() int { return len(m.pipe) }

func (m *MPATx) reset() {
	m.held, m.ctxq, m.cur, m.recv, m.first, m.wire = nil, nil, nil, nil, true, 0
	for i := range m.pipe {
		// New slices: the outputs of the reset cycle still alias the old ones.
		m.pipe[i] = txBeat{data: make([]byte, m.lanes)}
	}
}

// isMarker reports whether FPDU octet p of u belongs to a marker: markers
// sit every 512 octets of stream from SeqStart (RFC 5044 §4.3).
func isMarker(u *txULPDU, p int) bool {
	return u.ctx.Markers && (u.ctx.Offset+uint32(p))%mpa.MarkerPeriod < mpa.MarkerLen
}

// body is the number of non-marker octets of u's FPDU before octet p.
func body(u *txULPDU, p int) int {
	if !u.ctx.Markers || p <= 0 {
		return max(p, 0)
	}
	first := int((mpa.MarkerPeriod - u.ctx.Offset%mpa.MarkerPeriod) % mpa.MarkerPeriod)
	if p <= first {
		return p
	}
	n := (p-first-1)/mpa.MarkerPeriod + 1 // markers starting before p
	inMarkers := mpa.MarkerLen * n
	if last := first + (n-1)*mpa.MarkerPeriod; p < last+mpa.MarkerLen {
		inMarkers -= last + mpa.MarkerLen - p // p falls inside that marker
	}
	return p - inMarkers
}

// Step runs one cycle.
func (m *MPATx) Step(in MPATxIn) MPATxOut {
	res := &m.pipe[len(m.pipe)-1]
	out := MPATxOut{SReady: len(m.held) < mpaTxWindow, Data: res.data, Keep: res.keep, Valid: res.valid, Last: res.last, User: res.user}
	if in.Reset {
		m.reset()
		return out
	}
	adv := !res.valid || in.MReady
	fire := in.Valid && len(m.held) < mpaTxWindow
	ctxHeld := len(m.ctxq) > 0

	// Form a beat of the current FPDU if the held beats allow.
	var formed txBeat
	pop := 0
	lastFormed := false
	if m.cur != nil && adv {
		u := m.cur
		n := len(u.template)
		b := body(u, m.wire)
		ok := true
		if b-2 < u.ctx.Len {
			need := min(b-2+m.lanes-1, u.ctx.Len-1) / m.lanes
			ok = u.beats > need
		}
		if ok {
			formed = txBeat{valid: true, data: make([]byte, m.lanes)}
			lastFormed = m.wire+m.lanes >= n
			for i := 0; i < m.lanes && m.wire+i < n; i++ {
				p := m.wire + i
				formed.keep |= 1 << i
				switch bb := body(u, p); {
				case lastFormed:
					if u.fpdu == nil {
						f := mpa.Framer{Markers: u.ctx.Markers, CRC: u.ctx.CRC, Offset: u.ctx.Offset}
						u.fpdu, _ = f.AppendFPDU(nil, u.data)
					}
					formed.data[i] = u.fpdu[p]
				case !isMarker(u, p) && bb >= 2 && bb < u.ctx.Len+2:
					formed.data[i] = u.data[bb-2]
				default:
					formed.data[i] = u.template[p]
				}
			}
			formed.last = lastFormed
			if lastFormed {
				formed.user = u.ctx.Offset + uint32(n)
				for pop < len(m.held) && m.held[pop].u == u {
					pop++
				}
				m.cur = nil
			} else {
				m.wire += m.lanes
				bNext := body(u, m.wire)
				if h := m.held[0]; !h.last && bNext-2 >= (h.index+1)*m.lanes {
					pop = 1
				}
			}
		}
	}
	if adv && ctxHeld && m.cur == nil {
		m.cur, m.wire = m.ctxq[0], 0
		m.ctxq = m.ctxq[1:]
	}
	m.held = m.held[pop:]

	if fire {
		if m.first {
			u := &txULPDU{ctx: in.Ctx}
			f := mpa.Framer{Markers: u.ctx.Markers, Offset: u.ctx.Offset}
			u.template, _ = f.AppendFPDU(nil, make([]byte, max(u.ctx.Len, 1)))
			m.recv = u
			m.ctxq = append(m.ctxq, u)
		}
		u := m.recv
		k := min(m.lanes, u.ctx.Len-len(u.data))
		if k > 0 {
			u.data = append(u.data, in.Data[:k]...)
		}
		m.held = append(m.held, txHeld{u: u, index: u.beats, last: in.Last})
		u.beats++
		m.first = in.Last
	}

	if adv {
		for i := len(m.pipe) - 1; i > 0; i-- {
			if m.pipe[i-1].valid {
				m.pipe[i], m.pipe[i-1] = m.pipe[i-1], m.pipe[i]
				m.pipe[i-1].valid = false
			} else {
				m.pipe[i].valid = false
			}
		}
		if formed.valid {
			m.pipe[0] = formed
		} else {
			m.pipe[0].valid = false
		}
	}
	return out
}
