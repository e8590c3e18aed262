package cycle

import "fmt"

// DMAWrConfig sizes the modelled dma_wr (the generator's configuration).
type DMAWrConfig struct {
	Width   int
	IDBits  int
	Bursts  int // bursts awaiting their response, at most
	TagBits int
}

// dmaWrReqQueue is the depth of dma_wr's queue of requests awaiting data.
const dmaWrReqQueue = 2

// DMAWrIn is one cycle of dma_wr inputs.
type DMAWrIn struct {
	Reset    bool
	ReqValid bool
	ReqAddr  uint64
	ReqLenM1 uint16
	ReqTag   uint32
	SData    []byte
	SValid   bool
	AWReady  bool
	WReady   bool
	BValid   bool
	BResp    uint8
	DReady   bool
}

// AXIWr is one cycle of an AXI4 write master's outputs (AWID is always
// 0): dma_wr's, and those of the blocks that write through one.
type AXIWr struct {
	AWValid         bool
	AWAddr          uint64
	AWLen           uint8
	AWSize, AWBurst uint8
	WValid, WLast   bool
	WData           []byte // the model's buffer, valid until the next Step
	WStrb           uint64
	BReady          bool
}

// DMAWrOut is one cycle of dma_wr outputs.
type DMAWrOut struct {
	ReqReady, SReady bool
	AXIWr
	DValid, DErr bool
	DTag         uint32
	// DErrBurst: with DErr, the index in the request of its first burst
	// with an error response (m_done_err_burst).
	DErrBurst uint8
}

type dmaWrReq struct {
	off, nout, nin, end, wib int
}

type dmaWrB struct {
	tag  uint32
	last bool
}

// DMAWr models dma_wr_w<W>: an address splitter issuing INCR bursts, a W
// channel that shifts each request's bytes to its address's lane and
// strobes them, and in-order completions from in-order write responses.
type DMAWr struct {
	cfg             DMAWrConfig
	lanes, lb, bb   int
	reqV            bool
	curA            uint64
	remB            int
	rTag            uint32
	bHead, bTail    int
	bq              []dmaWrB
	awV             bool
	awAddr          uint64
	awLen           uint8
	wq              []dmaWrReq
	wk, wa          int
	inBurst         bool
	permits         int
	wV, wLast       bool
	wData, prev     []byte
	rot, wOut       []byte
	wStrb           uint64
	dV, dErr, errAc bool
	dTag            uint32
	bIdx, errIdx    uint8 // the head burst's index in its request; the first errored one's
	dErrBurst       uint8
}

// NewDMAWr models a dma_wr of the given configuration.
func NewDMAWr(cfg DMAWrConfig) (*DMAWr, error) {
	w := cfg.Width
	if w < 64 || w > 512 || w&(w-1) != 0 || cfg.Bursts < 2 || cfg.Bursts&(cfg.Bursts-1) != 0 {
		return nil, fmt.Errorf("%w: dma_wr %+v", ErrConfig, cfg)
	}
	L := w / 8
	m := &DMAWr{cfg: cfg, lanes: L, bb: min(4096, 256*L) / L, bq: make([]dmaWrB, cfg.Bursts)}
	for 1<<m.lb < L {
		m.lb++
	}
	m.wData, m.prev, m.rot, m.wOut = make([]byte, L), make([]byte, L), make([]byte, L), make([]byte, L)
	return m, nil
}

func (m *DMAWr) reset() {
	m.reqV, m.curA, m.remB, m.rTag = false, 0, 0, 0
	m.bHead, m.bTail = 0, 0
	m.awV, m.awAddr, m.awLen = false, 0, 0
	m.wq = m.wq[:0]
	m.wk, m.wa, m.inBurst, m.permits = 0, 0, false, 0
	m.wV, m.wLast, m.wStrb = false, false, 0
	m.dV, m.dErr, m.errAc, m.dTag = false, false, false, 0
	m.bIdx, m.errIdx, m.dErrBurst = 0, 0, 0
}

// Step writes this cycle's outputs into out and takes the clock edge.
func (m *DMAWr) Step(in *DMAWrIn, out *DMAWrOut) {
	L, NB := m.lanes, m.cfg.Bursts
	toB := m.bb - int(m.curA%uint64(m.bb))
	lastBurst := toB >= m.remB
	beats := toB
	if lastBurst {
		beats = m.remB
	}
	bUsed := (m.bTail - m.bHead) & (2*NB - 1)
	awFree := !m.awV || in.AWReady
	goB := m.reqV && awFree && bUsed < NB
	out.ReqReady = (!m.reqV || (goB && lastBurst)) && len(m.wq) < dmaWrReqQueue
	accept := in.ReqValid && out.ReqReady
	out.AWValid, out.AWAddr, out.AWLen, out.AWSize, out.AWBurst = m.awV, 0, 0, 0, 0
	if m.awV {
		out.AWAddr, out.AWLen, out.AWSize, out.AWBurst = m.awAddr<<m.lb, m.awLen, uint8(m.lb), 1
	}
	out.WValid, out.WLast, out.WStrb, out.WData = m.wV, false, 0, m.wOut
	clear(m.wOut)
	if m.wV {
		out.WLast, out.WStrb = m.wLast, m.wStrb
		copy(m.wOut, m.wData)
	}
	bFree := !m.dV || in.DReady
	out.BReady = bFree && bUsed != 0
	out.DValid, out.DTag, out.DErr, out.DErrBurst = m.dV, 0, false, 0
	if m.dV {
		out.DTag, out.DErr, out.DErrBurst = m.dTag, m.dErr, m.dErrBurst
	}
	var h dmaWrReq
	wHave := len(m.wq) > 0
	if wHave {
		h = m.wq[0]
	}
	wFree := !m.wV || in.WReady
	startOK := m.inBurst || m.permits != 0
	needIn := m.wk < h.nin
	canGo := wHave && wFree && startOK
	out.SReady = canGo && needIn
	wGo := canGo && (!needIn || in.SValid)
	if in.Reset {
		m.reset()
		return
	}

	// W channel.
	take := wGo && needIn
	if take {
		for i := 0; i < L; i++ {
			m.rot[(i+h.off)%L] = in.SData[i]
		}
	}
	wStart := wGo && !m.inBurst
	if wGo {
		first, last := m.wk == 0, m.wk == h.nout-1
		curWa := m.wa
		if first {
			curWa = h.wib
		}
		endBurst := last || curWa == m.bb-1
		full := ^uint64(0) >> (64 - L)
		strb := full
		if first {
			strb &= full &^ (uint64(1)<<h.off - 1)
		}
		if last {
			strb &= uint64(1)<<h.end - 1
		}
		for i := 0; i < L; i++ {
			var b byte
			switch {
			case strb>>i&1 == 0:
			case i >= h.off && needIn:
				b = m.rot[i]
			case i < h.off:
				b = m.prev[i]
			}
			m.wData[i] = b
		}
		m.wV, m.wStrb, m.wLast = true, strb, endBurst
		if last {
			m.wk = 0
			m.wq = m.wq[:copy(m.wq, m.wq[1:])]
		} else {
			m.wk++
		}
		m.wa = (curWa + 1) % m.bb
		m.inBurst = !endBurst
	} else if in.WReady {
		m.wV = false
	}
	if take {
		copy(m.prev, m.rot)
	}
	if m.awV && in.AWReady {
		m.permits++
	}
	if wStart {
		m.permits--
	}

	// Address splitter.
	if goB {
		m.bq[m.bTail&(NB-1)] = dmaWrB{tag: m.rTag, last: lastBurst}
		m.bTail = (m.bTail + 1) & (2*NB - 1)
		m.awAddr, m.awLen = m.curA, uint8(beats-1)
	}
	m.awV = goB || (m.awV && !in.AWReady)
	switch {
	case accept:
		off := int(in.ReqAddr) & (L - 1)
		span := off + int(in.ReqLenM1)
		m.reqV = true
		m.curA = in.ReqAddr >> m.lb
		m.remB = span>>m.lb + 1
		m.rTag = in.ReqTag & (1<<m.cfg.TagBits - 1)
		m.wq = append(m.wq, dmaWrReq{off: off, nout: span>>m.lb + 1, nin: int(in.ReqLenM1)>>m.lb + 1,
			end: span&(L-1) + 1, wib: int(m.curA % uint64(m.bb))})
	case goB:
		m.curA += uint64(beats)
		m.remB -= beats
		if lastBurst {
			m.reqV = false
		}
	}

	// Write responses and completions.
	if in.BValid && out.BReady {
		hb := m.bq[m.bHead&(NB-1)]
		errNow := m.errAc || in.BResp&2 != 0
		errIdx := m.bIdx
		if m.errAc {
			errIdx = m.errIdx
		}
		m.bHead = (m.bHead + 1) & (2*NB - 1)
		m.errAc = !hb.last && errNow
		m.errIdx = errIdx
		m.bIdx++
		if hb.last {
			m.bIdx = 0
			m.dV, m.dTag, m.dErr, m.dErrBurst = true, hb.tag, errNow, 0
			if errNow {
				m.dErrBurst = errIdx
			}
			return
		}
	}
	if in.DReady {
		m.dV = false
	}
}
