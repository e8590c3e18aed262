package cycle

import (
	"fmt"
	"slices"

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

// MPATxOut is one cycle of mpa_tx outputs. Data aliases the model: it
// holds until the next Step.
type MPATxOut struct {
	SReady bool
	Data   []byte
	Keep   uint64
	Valid  bool
	Last   bool
	User   uint32 // on the last beat: stream offset just past the FPDU
}

// txULPDU is one ULPDU from its first input beat to its FPDU's last output
// beat; the model then keeps it, buffers and all, for a later ULPDU.
type txULPDU struct {
	ctx      MPATxCtx
	data     []byte // octets received so far
	beats    int    // beats received
	template []byte // the FPDU framed by golden/mpa with a zero ULPDU and no CRC
}

type txHeld struct {
	u     *txULPDU
	index int // beat index within its ULPDU
	last  bool
}

// txBeat is one pipeline stage. Its data is buffer buf of MPATx.bufs: the
// stages shift by copying these few pointer-free words.
type txBeat struct {
	keep  uint64
	user  uint32
	buf   uint8
	valid bool
	last  bool
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
	held  [mpaTxWindow]txHeld
	nheld int
	first bool
	recv  *txULPDU   // ULPDU receiving beats
	ctxq  []*txULPDU // ULPDUs whose FPDU has not started
	cur   *txULPDU   // FPDU being formed
	wire  int        // FPDU octets formed so far
	pipe  []txBeat

	// Buffers reused from cycle to cycle, so that a cycle allocates nothing.
	bufs  [][]byte   // the stages' data buffers and the spare one
	spare uint8      // the buffer the next beat is formed in
	fpdu  []byte     // the current FPDU framed whole, for its last beat
	zeros []byte     // a zero ULPDU, framed into templates
	free  []*txULPDU // ULPDUs whose FPDU has ended
}

// NewMPATx models the block of the given data width.
func NewMPATx(width int) (*MPATx, error) {
	lat, ok := mpaTxLatency[width]
	if !ok {
		return nil, fmt.Errorf("%w: mpa_tx width %d (have 64, 128, 256, 512)", ErrConfig, width)
	}
	m := &MPATx{lanes: width / 8, pipe: make([]txBeat, lat), bufs: make([][]byte, lat+1), spare: uint8(lat)}
	for i := range m.bufs {
		m.bufs[i] = make([]byte, m.lanes)
		if i < lat {
			m.pipe[i].buf = uint8(i)
		}
	}
	m.reset()
	return m, nil
}

// Latency is the number of cycles from forming a beat to showing it.
func (m *MPATx) Latency() int { return len(m.pipe) }

// reset empties the block; the ULPDUs in flight (the one receiving is among
// them) are kept for reuse.
func (m *MPATx) reset() {
	if m.cur != nil {
		m.free = append(m.free, m.cur)
	}
	m.free = append(m.free, m.ctxq...)
	clear(m.ctxq)
	clear(m.held[:])
	m.nheld, m.ctxq, m.cur, m.recv, m.first, m.wire = 0, m.ctxq[:0], nil, nil, true, 0
	// The outputs of the reset cycle alias the last stage's data: keep that
	// buffer as it is until the next Step.
	last := len(m.pipe) - 1
	m.pipe[last].buf, m.spare = m.spare, m.pipe[last].buf
	for i := range m.pipe {
		m.pipe[i] = txBeat{buf: m.pipe[i].buf}
		clear(m.bufs[m.pipe[i].buf])
	}
}

// newULPDU starts the ULPDU whose first beat comes with ctx.
func (m *MPATx) newULPDU(ctx MPATxCtx) *txULPDU {
	u := new(txULPDU)
	if n := len(m.free); n > 0 {
		u, m.free = m.free[n-1], m.free[:n-1]
	}
	*u = txULPDU{ctx: ctx, data: u.data[:0], template: u.template[:0]}
	n := max(ctx.Len, 1)
	if ctx.Len < 0 || n > mpa.MaxULPDULength {
		return u // golden/mpa frames nothing: an empty template
	}
	u.data = slices.Grow(u.data, ctx.Len)
	if len(m.zeros) < n {
		m.zeros = make([]byte, n)
	}
	f := mpa.Framer{Markers: ctx.Markers, Offset: ctx.Offset}
	u.template, _ = f.AppendFPDU(u.template, m.zeros[:n])
	return u
}

// release keeps u, whose FPDU has just ended, for reuse unless it can still
// be seen: a stream with more beats than its ULPDU_Length goes on feeding u
// (as the block does, whatever it then makes of them).
func (m *MPATx) release(u *txULPDU, pop int) {
	if m.recv == u && !m.first {
		return
	}
	for _, h := range m.held[pop:m.nheld] {
		if h.u == u {
			return
		}
	}
	m.free = append(m.free, u)
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

// formBeat writes octets [from, to) of u's FPDU, before the FPDU is complete,
// into dst: markers, the header, PAD and the CRC's place from the template,
// the ULPDU's octets from those received. It copies runs: a beat crosses at
// most a few marker, header and ULPDU boundaries.
func formBeat(dst []byte, u *txULPDU, from, to int) {
	for p := from; p < to; {
		end := to
		if u.ctx.Markers {
			phase := int((u.ctx.Offset + uint32(p)) % mpa.MarkerPeriod)
			if phase < mpa.MarkerLen { // inside a marker
				q := min(p+mpa.MarkerLen-phase, to)
				copy(dst[p-from:], u.template[p:q])
				p = q
				continue
			}
			end = min(p+mpa.MarkerPeriod-phase, to) // up to the next marker
		}
		// Octets p..end-1 are body octets b, b+1, ...: header (b < 2),
		// ULPDU, then PAD and CRC.
		for b := body(u, p); p < end; {
			q := end
			src := u.template[p:]
			switch {
			case b < 2:
				q = min(p+2-b, end)
			case b < u.ctx.Len+2:
				q = min(p+u.ctx.Len+2-b, end)
				src = u.data[b-2:]
			}
			copy(dst[p-from:], src[:q-p])
			b += q - p
			p = q
		}
	}
}

// Step runs one cycle.
func (m *MPATx) Step(in MPATxIn) MPATxOut {
	var out MPATxOut
	m.StepTo(&in, &out)
	return out
}

// StepTo is Step with the cycle's inputs and outputs in place: a caller
// running millions of cycles keeps both instead of copying them each cycle.
func (m *MPATx) StepTo(in *MPATxIn, out *MPATxOut) {
	res := &m.pipe[len(m.pipe)-1]
	// Field by field, like the pipeline's shift below: a store of small
	// fields followed by a wide copy of them stalls the copy.
	out.SReady, out.Data, out.Keep = m.nheld < mpaTxWindow, m.bufs[res.buf], res.keep
	out.Valid, out.Last, out.User = res.valid, res.last, res.user
	if in.Reset {
		m.reset()
		return
	}
	adv := !res.valid || in.MReady
	fire := in.Valid && m.nheld < mpaTxWindow
	ctxHeld := len(m.ctxq) > 0

	// Form a beat of the current FPDU, in the spare buffer, if the held beats
	// allow.
	var formed txBeat
	pop := 0
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
			end := min(m.wire+m.lanes, n)
			k := max(end-m.wire, 0)
			formed = txBeat{valid: true, buf: m.spare, keep: 1<<k - 1, last: m.wire+m.lanes >= n}
			data := m.bufs[m.spare]
			clear(data[k:])
			if formed.last {
				if k > 0 {
					f := mpa.Framer{Markers: u.ctx.Markers, CRC: u.ctx.CRC, Offset: u.ctx.Offset}
					var err error
					// A ULPDU_Length of 0 frames nothing: its lanes stay zero.
					if m.fpdu, err = f.AppendFPDU(m.fpdu[:0], u.data); err == nil {
						copy(data, m.fpdu[m.wire:end])
					}
				}
				formed.user = u.ctx.Offset + uint32(n)
				for pop < m.nheld && m.held[pop].u == u {
					pop++
				}
				m.cur = nil
				m.release(u, pop)
			} else {
				formBeat(data, u, m.wire, end)
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
		m.ctxq = append(m.ctxq[:0], m.ctxq[1:]...)
	}
	if pop > 0 {
		copy(m.held[:], m.held[pop:m.nheld])
		m.nheld -= pop
		clear(m.held[m.nheld:]) // no pointers to ULPDUs kept for reuse
	}

	if fire {
		if m.first {
			m.recv = m.newULPDU(in.Ctx)
			m.ctxq = append(m.ctxq, m.recv)
		}
		u := m.recv
		k := min(m.lanes, u.ctx.Len-len(u.data))
		if k > 0 {
			u.data = append(u.data, in.Data[:k]...)
		}
		m.held[m.nheld] = txHeld{u: u, index: u.beats, last: in.Last}
		m.nheld++
		u.beats++
		m.first = in.Last
	}

	if adv {
		for i := len(m.pipe) - 1; i > 0; i-- {
			if p, q := &m.pipe[i], &m.pipe[i-1]; q.valid {
				p.keep, q.keep = q.keep, p.keep
				p.user, q.user = q.user, p.user
				p.buf, q.buf = q.buf, p.buf
				p.last, q.last = q.last, p.last
				p.valid, q.valid = true, false
			} else {
				m.pipe[i].valid = false
			}
		}
		if formed.valid {
			m.spare = m.pipe[0].buf
			m.pipe[0] = formed
		} else {
			m.pipe[0].valid = false
		}
	}
}
