package cycle

import "math/bits"

// placement's DMA write port as AXI4 (place_axi_w<W>), modelled from its
// contract (hw/gen's doc of it, docs/card-rtl.md): each block becomes a
// one-beat INCR burst on ID 0, address and data registered together and
// held until taken, at most PlaceAXIMaxOut writes awaiting their response;
// a faulted response names its write's QP and first strobed byte.

// PlaceAXIMaxOut is how many writes may await their response.
const PlaceAXIMaxOut = 511

// PlaceAXIIn is one cycle of place_axi's inputs.
type PlaceAXIIn struct {
	Reset bool
	// The block placement offers: a W/8-byte aligned address (its low
	// bits are ignored), data and byte strobes.
	Addr  uint64
	Data  []byte
	Strb  uint64
	Valid bool
	QP    uint32 // the block's QP

	AWReady, WReady bool
	BResp           uint8
	BValid          bool
	BHold           bool // responses are held back
}

// PlaceAXIOut is what place_axi shows in a cycle.
type PlaceAXIOut struct {
	Ready bool // s_dma_ready

	AXIWr           // single beats: AWLen 0
	BErr     bool   // a write response with SLVERR or DECERR is taken
	BErrQP   uint32 // ... of a write of this QP
	BErrAddr uint64 // ... whose first strobed byte is here
}

// placeWrite is a write awaiting its response.
type placeWrite struct {
	qp   uint32
	addr uint64 // its first strobed byte
}

// PlaceAXI is place_axi's cycle model.
type PlaceAXI struct {
	lanes   int
	awV, wV bool
	out     int // writes awaiting their response
	addr    uint64
	data    []byte
	strb    uint64
	waiting []placeWrite // in issue order
}

// NewPlaceAXI returns place_axi of width bits fresh from reset.
func NewPlaceAXI(width int) *PlaceAXI {
	return &PlaceAXI{lanes: width / 8, data: make([]byte, width/8)}
}

// Step returns this cycle's outputs and takes the clock edge.
func (p *PlaceAXI) Step(in PlaceAXIIn) PlaceAXIOut {
	awFree, wFree := !p.awV || in.AWReady, !p.wV || in.WReady
	o := PlaceAXIOut{Ready: awFree && wFree && p.out < PlaceAXIMaxOut,
		AXIWr: AXIWr{AWValid: p.awV, WLast: p.wV, WValid: p.wV, BReady: p.out != 0 && !in.BHold, WData: make([]byte, p.lanes)}}
	if p.awV {
		o.AWAddr, o.AWSize, o.AWBurst = p.addr, uint8(log2u(uint32(p.lanes))), 1 // INCR
	}
	if p.wV {
		copy(o.WData, p.data)
		o.WStrb = p.strb
	}
	bGo := in.BValid && p.out != 0 && !in.BHold
	o.BErr = bGo && in.BResp&2 != 0
	if o.BErr {
		o.BErrQP, o.BErrAddr = p.waiting[0].qp, p.waiting[0].addr
	}
	take := in.Valid && o.Ready
	p.awV = take || p.awV && !in.AWReady
	p.wV = take || p.wV && !in.WReady
	if take {
		p.addr = in.Addr &^ uint64(p.lanes-1)
		copy(p.data, in.Data)
		p.strb = in.Strb
		p.out++
		first := 0 // the RTL's lane when no strobe is set
		if in.Strb != 0 {
			first = bits.TrailingZeros64(in.Strb)
		}
		p.waiting = append(p.waiting, placeWrite{in.QP, p.addr + uint64(first)})
	}
	if bGo {
		p.out--
		p.waiting = p.waiting[1:]
	}
	if in.Reset { // the data register has no reset
		p.awV, p.wV, p.out, p.addr, p.strb = false, false, 0, 0, 0
		p.waiting = p.waiting[:0]
	}
	return o
}
