package cycle

import "fmt"

// DMARdConfig sizes the modelled dma_rd (the generator's configuration).
type DMARdConfig struct {
	Width    int // bits
	IDBits   int
	ROBBeats int
	TagBits  int
}

// DMARdOutQueue is the depth of dma_rd's output queue (hw/README.md).
const DMARdOutQueue = 4

// DMARdIn is one cycle of dma_rd inputs.
type DMARdIn struct {
	Reset    bool
	ReqValid bool
	ReqAddr  uint64
	ReqLenM1 uint16 // bytes minus one
	ReqTag   uint32
	ARReady  bool
	RValid   bool
	RID      uint32
	RData    []byte // Width/8 lanes
	RResp    uint8
	OReady   bool // m_axis_tready
}

// DMARdOut is one cycle of dma_rd outputs.
type DMARdOut struct {
	ReqReady bool
	ARValid  bool
	ARID     uint32
	ARAddr   uint64
	ARLen    uint8 // beats minus one
	ARSize   uint8
	ARBurst  uint8
	OValid   bool
	OData    []byte // the model's buffer: valid until the next Step
	OKeep    uint64
	OLast    bool
	OTag     uint32
	OErr     bool
	OBErr    bool // a response beat of the request up to this beat's had an error
}

type dmaRdMeta struct {
	base, blenM1 int
	first, last  bool
	tag          uint32
	off, lkb     int
	flush        bool
}

// dmaRdBurst is a burst in the splitter's queue.
type dmaRdBurst struct {
	addr  uint64
	beats int
	meta  dmaRdMeta
}

// dmaRdBurstQueue is the depth of the queue between splitter and issue.
const dmaRdBurstQueue = 2

type dmaRdBeat struct {
	data []byte
	keep uint64
	last bool
	tag  uint32
	err  bool // the request's error so far (OBErr; OErr on the last beat)
}

// DMARd models dma_rd_w<W>: it splits requests into bursts (into a
// two-entry queue), issues each with an ID and reorder-buffer room,
// registers each response beat and writes it where its burst's room is,
// and reads the buffer out in issue order through a realigner into a small
// output queue. The timing is the block's (see hw/README.md); the bytes are
// the slave's.
type DMARd struct {
	cfg                DMARdConfig
	lanes, lb, bb, n   int
	reqV, reqFirst     bool
	reqFlush           bool
	curA               uint64
	remIn              int
	reqTag             uint32
	reqOff, reqLkb     int
	bq                 []dmaRdBurst
	issued, retired    int
	retiredPrev        int // retired at the start of the previous cycle (IDs are reused against it)
	alloc, drain       int
	drainPrev          int // drain at the start of the previous cycle (room is reserved against it)
	r1v, r1err         bool
	r1id               int
	r1data             []byte
	arV                bool
	arID               uint32
	arAddr             uint64
	arLen              uint8
	meta               []dmaRdMeta
	cnt                []int
	errs               []bool
	j                  int
	flushing, reqErr   bool
	fTag               uint32
	fOff, fLkb         int
	fErr               bool
	rob                [][]byte
	robRd              []byte
	s1v, s1Flush       bool
	s1First, s1Last    bool
	s1Off, s1Lkb       int
	s1Tag              uint32
	s1Err              bool
	prev, rot, outData []byte
	queue              []dmaRdBeat
	spare              [][]byte
}

// NewDMARd models a dma_rd of the given configuration.
func NewDMARd(cfg DMARdConfig) (*DMARd, error) {
	w := cfg.Width
	if w < 64 || w > 512 || w&(w-1) != 0 || cfg.IDBits < 1 || cfg.IDBits > 8 || cfg.ROBBeats < 2 || cfg.ROBBeats&(cfg.ROBBeats-1) != 0 {
		return nil, fmt.Errorf("%w: dma_rd %+v", ErrConfig, cfg)
	}
	L := w / 8
	m := &DMARd{cfg: cfg, lanes: L, bb: min(4096, 256*L) / L, n: 1 << cfg.IDBits}
	for 1<<m.lb < L {
		m.lb++
	}
	m.meta, m.cnt, m.errs = make([]dmaRdMeta, m.n), make([]int, m.n), make([]bool, m.n)
	m.rob = make([][]byte, cfg.ROBBeats)
	for i := range m.rob {
		m.rob[i] = make([]byte, L)
	}
	m.robRd, m.prev, m.rot, m.outData, m.r1data = make([]byte, L), make([]byte, L), make([]byte, L), make([]byte, L), make([]byte, L)
	for i := 0; i < DMARdOutQueue+1; i++ {
		m.spare = append(m.spare, make([]byte, L))
	}
	return m, nil
}

func (m *DMARd) reset() {
	m.reqV, m.reqFirst, m.reqFlush, m.curA, m.remIn, m.reqTag, m.reqOff, m.reqLkb = false, false, false, 0, 0, 0, 0, 0
	m.issued, m.retired, m.retiredPrev, m.alloc, m.drain, m.drainPrev = 0, 0, 0, 0, 0, 0
	m.bq = m.bq[:0]
	m.r1v = false
	m.arV, m.arID, m.arAddr, m.arLen = false, 0, 0, 0
	clear(m.cnt)
	clear(m.errs)
	m.j, m.flushing, m.reqErr = 0, false, false
	m.s1v, m.s1Flush, m.s1First, m.s1Last, m.s1Off, m.s1Lkb, m.s1Tag, m.s1Err = false, false, false, false, 0, 0, 0, false
	for _, b := range m.queue {
		m.spare = append(m.spare, b.data)
	}
	m.queue = m.queue[:0]
}

// Step writes this cycle's outputs into out and takes the clock edge.
func (m *DMARd) Step(in *DMARdIn, out *DMARdOut) {
	L, N, R := m.lanes, m.n, m.cfg.ROBBeats
	outst := (m.issued - m.retired) & (2*N - 1)
	// The splitter: the request's rest ends in this largest-burst window.
	toB := m.bb - int(m.curA%uint64(m.bb))
	lastBurst := toB >= m.remIn
	beats := toB
	if lastBurst {
		beats = m.remIn
	}
	push := m.reqV && len(m.bq) < dmaRdBurstQueue
	// The issue stage: the queue's head, once its ID and room are free.
	var goB bool
	var hb dmaRdBurst
	if len(m.bq) > 0 {
		hb = m.bq[0]
		idFree := (m.issued-m.retiredPrev)&(2*N-1) < N
		room := (m.alloc-m.drainPrev)&(2*R-1)+hb.beats <= R
		goB = idFree && room && (!m.arV || in.ARReady)
	}
	out.ReqReady = !m.reqV || (len(m.bq) < dmaRdBurstQueue && lastBurst)
	accept := in.ReqValid && out.ReqReady
	out.ARValid = m.arV
	out.ARID, out.ARAddr, out.ARLen, out.ARSize, out.ARBurst = 0, 0, 0, 0, 0
	if m.arV {
		out.ARID, out.ARAddr, out.ARLen, out.ARSize, out.ARBurst = m.arID, m.arAddr<<m.lb, m.arLen, uint8(m.lb), 1
	}
	out.OValid = len(m.queue) > 0
	out.OData, out.OKeep, out.OLast, out.OTag, out.OErr, out.OBErr = m.outData, 0, false, 0, false, false
	clear(m.outData)
	if out.OValid {
		h := m.queue[0]
		copy(m.outData, h.data)
		out.OKeep, out.OLast, out.OTag, out.OErr, out.OBErr = h.keep, h.last, h.tag, h.last && h.err, h.err
	}
	if in.Reset {
		m.reset()
		return
	}

	// Read-out slot.
	h := m.retired & (N - 1)
	hm := m.meta[h]
	credit := len(m.queue)+b2i(m.s1v) < DMARdOutQueue
	flushSlot := m.flushing && credit
	readSlot := !m.flushing && outst != 0 && m.j < m.cnt[h] && credit
	endBurst := m.j == hm.blenM1
	firstIn := hm.first && m.j == 0
	lastIn := hm.last && endBurst
	errNow := m.reqErr || m.errs[h]

	// Realignment of the slot in s1 (this cycle's buffer read data).
	var emit bool
	var beat dmaRdBeat
	if m.s1v {
		amt := (L - m.s1Off) % L
		for i := 0; i < L; i++ {
			m.rot[(i+amt)%L] = m.robRd[i]
		}
		lim := L - m.s1Off
		aligned := m.s1Off == 0
		emit = m.s1Flush || aligned || !m.s1First
		if emit {
			d := m.spare[len(m.spare)-1]
			m.spare = m.spare[:len(m.spare)-1]
			for i := 0; i < L; i++ {
				switch {
				case aligned:
					d[i] = m.rot[i]
				case i < lim:
					d[i] = m.prev[i]
				case m.s1Flush:
					d[i] = 0
				default:
					d[i] = m.rot[i]
				}
			}
			keep := ^uint64(0) >> (64 - L)
			if m.s1Last {
				keep = (uint64(1) << m.s1Lkb) - 1
				clear(d[m.s1Lkb:])
			}
			beat = dmaRdBeat{data: d, keep: keep, last: m.s1Last, tag: m.s1Tag, err: m.s1Err}
		}
		if !m.s1Flush {
			copy(m.prev, m.rot)
		}
	}

	// Buffer read (read-first), then the response beat's write.
	if readSlot {
		copy(m.robRd, m.rob[(hm.base+m.j)&(R-1)])
	}
	// The registered response beat is written at its burst's place.
	nid := m.issued & (N - 1)
	if m.r1v {
		id := m.r1id
		copy(m.rob[(m.meta[id].base+m.cnt[id])&(R-1)], m.r1data)
		if !(goB && id == nid) {
			m.cnt[id] = (m.cnt[id] + 1) & (2*m.bb - 1)
			m.errs[id] = m.errs[id] || m.r1err
		}
	}
	m.r1v, m.r1id, m.r1err = in.RValid, int(in.RID)&(N-1), in.RResp&2 != 0
	copy(m.r1data, in.RData)
	m.retiredPrev, m.drainPrev = m.retired, m.drain
	if goB {
		hb.meta.base = m.alloc & (R - 1)
		m.meta[nid] = hb.meta
		m.cnt[nid], m.errs[nid] = 0, false
		m.arID, m.arAddr, m.arLen = uint32(nid), hb.addr, uint8(hb.beats-1)
		m.issued = (m.issued + 1) & (2*N - 1)
		m.alloc = (m.alloc + hb.beats) & (2*R - 1)
		m.bq = m.bq[:copy(m.bq, m.bq[1:])]
	}
	m.arV = goB || (m.arV && !in.ARReady)
	if push {
		m.bq = append(m.bq, dmaRdBurst{addr: m.curA, beats: beats, meta: dmaRdMeta{blenM1: beats - 1, first: m.reqFirst,
			last: lastBurst, tag: m.reqTag, off: m.reqOff, lkb: m.reqLkb, flush: m.reqFlush}})
	}
	switch {
	case accept:
		off := int(in.ReqAddr) & (L - 1)
		span := off + int(in.ReqLenM1)
		m.reqV, m.reqFirst = true, true
		m.curA = in.ReqAddr >> m.lb
		m.remIn = span>>m.lb + 1
		m.reqTag = in.ReqTag & (1<<m.cfg.TagBits - 1)
		m.reqOff = off
		m.reqFlush = off != 0 && span>>m.lb == int(in.ReqLenM1)>>m.lb
		m.reqLkb = int(in.ReqLenM1)&(L-1) + 1
	case push:
		m.curA += uint64(beats)
		m.remIn -= beats
		m.reqFirst = false
		if lastBurst {
			m.reqV = false
		}
	}

	// Read-out bookkeeping.
	startFlush := readSlot && lastIn && hm.flush
	s1Last := flushSlot || (readSlot && lastIn && !hm.flush)
	s1Off, s1Tag, s1Lkb, s1Err := hm.off, hm.tag, hm.lkb, errNow
	if m.flushing {
		s1Off, s1Tag, s1Lkb, s1Err = m.fOff, m.fTag, m.fLkb, m.fErr
	}
	if readSlot {
		m.drain = (m.drain + 1) & (2*R - 1)
		if endBurst {
			m.j = 0
			m.retired = (m.retired + 1) & (2*N - 1)
			m.reqErr = !hm.last && errNow
		} else {
			m.j++
		}
	}
	if startFlush {
		m.fTag, m.fOff, m.fLkb, m.fErr = hm.tag, hm.off, hm.lkb, errNow
	}
	m.flushing = startFlush || (m.flushing && !flushSlot)
	m.s1v, m.s1Flush, m.s1First, m.s1Last = readSlot || flushSlot, flushSlot, readSlot && firstIn, s1Last
	m.s1Off, m.s1Tag, m.s1Lkb, m.s1Err = s1Off, s1Tag, s1Lkb, s1Err

	// Output queue.
	if out.OValid && in.OReady {
		m.spare = append(m.spare, m.queue[0].data)
		m.queue = m.queue[:copy(m.queue, m.queue[1:])]
	}
	if emit {
		m.queue = append(m.queue, beat)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
