package cycle

// The card's AXI4 interconnect (axi_rd_mux, axi_wr_mux), modelled from
// its contract (docs/card-rtl.md, hw/README.md) and AMBA AXI4: N masters
// onto one slave port, addresses granted round robin and held until
// taken, the master's number above its ID, responses routed back by that
// number, write data in the order the addresses were taken.

// AXIAddr is an AXI4 read or write address channel as a master drives it.
type AXIAddr struct {
	ID    uint16
	Addr  uint64
	Len   uint8
	Size  uint8
	Burst uint8
	Valid bool
}

// AXIResp is a response beat (R or B) as it reaches a master.
type AXIResp struct {
	ID    uint16
	Data  []byte // R only; nil for B
	Resp  uint8
	Last  bool // R only
	Valid bool
}

// axiArbiter grants one master's address round robin, after the master
// granted last, and holds a grant whose address the slave has not taken.
type axiArbiter struct {
	n          int
	last, held int
	hold       bool
}

// grant returns the granted master and whether there is one.
func (a *axiArbiter) grant(reqs []bool) (int, bool) {
	if a.hold {
		return a.held, true
	}
	for k := 1; k <= a.n; k++ {
		if j := (a.last + k) % a.n; reqs[j] {
			return j, true
		}
	}
	return 0, false
}

// edge takes the clock edge: taken is the slave's ready.
func (a *axiArbiter) edge(g int, any, taken bool) {
	if any && taken {
		a.last = g
	}
	a.hold = any && !taken
	a.held = g
}

// muxAddr is what the slave sees of master g's address (zero without a
// grant): its number above its ID bits.
func muxAddr(in []AXIAddr, g int, any bool, idBits int) AXIAddr {
	if !any {
		return AXIAddr{}
	}
	a := in[g]
	a.ID |= uint16(g) << idBits
	return a
}

// routeResp routes a response beat to the master the top bits of its ID
// name; it returns each master's beat and the slave's ready (the named
// master's ready, whether or not the beat is valid).
func routeResp(r AXIResp, ready []bool, idBits int) ([]AXIResp, bool) {
	n := len(ready)
	to := int(r.ID>>idBits) % n
	out := make([]AXIResp, n)
	for i := range out {
		if r.Valid && i == to {
			out[i] = AXIResp{ID: r.ID & (1<<idBits - 1), Data: r.Data, Resp: r.Resp, Last: r.Last, Valid: true}
		} else if r.Data != nil {
			out[i].Data = make([]byte, len(r.Data))
		}
	}
	return out, ready[to]
}

// AXIRdMux models axi_rd_mux: N read masters onto one.
type AXIRdMux struct {
	idBits int
	arb    axiArbiter
}

// NewAXIRdMux returns the read mux of masters masters with idBits-bit IDs.
func NewAXIRdMux(masters, idBits int) *AXIRdMux {
	return &AXIRdMux{idBits: idBits, arb: axiArbiter{n: masters}}
}

// AXIRdMuxIn is one cycle of axi_rd_mux's inputs.
type AXIRdMuxIn struct {
	Reset   bool
	AR      []AXIAddr // per master
	RReady  []bool    // per master
	ARReady bool      // the slave's
	R       AXIResp   // the slave's read data beat
}

// AXIRdMuxOut is what axi_rd_mux shows in a cycle.
type AXIRdMuxOut struct {
	ARReady []bool    // per master
	R       []AXIResp // per master
	AR      AXIAddr   // to the slave
	RReady  bool      // to the slave
}

// Step returns this cycle's outputs and takes the clock edge.
func (m *AXIRdMux) Step(in AXIRdMuxIn) AXIRdMuxOut {
	reqs := make([]bool, len(in.AR))
	for i, a := range in.AR {
		reqs[i] = a.Valid
	}
	g, any := m.arb.grant(reqs)
	out := AXIRdMuxOut{AR: muxAddr(in.AR, g, any, m.idBits), ARReady: make([]bool, len(in.AR))}
	out.ARReady[g] = any && in.ARReady
	out.R, out.RReady = routeResp(in.R, in.RReady, m.idBits)
	m.arb.edge(g, any, in.ARReady)
	if in.Reset {
		m.arb = axiArbiter{n: m.arb.n}
	}
	return out
}

// AXIWrMux models axi_wr_mux: N write masters onto one, with a queue of
// order depth entries of the masters whose addresses were taken, which
// the W beats follow a burst at a time.
type AXIWrMux struct {
	idBits int
	arb    axiArbiter
	order  []int // the queue's ring
	head   int   // free running, modulo 2*len(order)
	tail   int
}

// NewAXIWrMux returns the write mux of masters masters with idBits-bit
// IDs and a write-order queue of order entries.
func NewAXIWrMux(masters, idBits, order int) *AXIWrMux {
	return &AXIWrMux{idBits: idBits, arb: axiArbiter{n: masters}, order: make([]int, order)}
}

// AXIW is a write data beat.
type AXIW struct {
	Data  []byte
	Strb  uint64
	Last  bool
	Valid bool
}

// AXIWrMuxIn is one cycle of axi_wr_mux's inputs.
type AXIWrMuxIn struct {
	Reset   bool
	AW      []AXIAddr // per master
	W       []AXIW    // per master
	BReady  []bool    // per master
	AWReady bool      // the slave's
	WReady  bool
	B       AXIResp // the slave's write response
}

// AXIWrMuxOut is what axi_wr_mux shows in a cycle.
type AXIWrMuxOut struct {
	AWReady, WReady []bool    // per master
	B               []AXIResp // per master
	AW              AXIAddr   // to the slave
	W               AXIW
	BReady          bool
}

// Step returns this cycle's outputs and takes the clock edge.
func (m *AXIWrMux) Step(in AXIWrMuxIn) AXIWrMuxOut {
	n, d := len(in.AW), len(m.order)
	used := (m.tail - m.head + 2*d) % (2 * d)
	reqs := make([]bool, n)
	for i, a := range in.AW {
		reqs[i] = a.Valid && used < d // an address waits while the queue is full
	}
	g, any := m.arb.grant(reqs)
	out := AXIWrMuxOut{AW: muxAddr(in.AW, g, any, m.idBits), AWReady: make([]bool, n), WReady: make([]bool, n)}
	out.AWReady[g] = any && in.AWReady
	awGo := out.AW.Valid && in.AWReady
	// W beats of the oldest burst whose address was taken, and only those.
	lanes := len(in.W[0].Data)
	out.W.Data = make([]byte, lanes)
	if used != 0 && !in.Reset {
		from := m.order[m.head%d]
		out.W = in.W[from]
		out.WReady[from] = in.WReady
	}
	out.B, out.BReady = routeResp(in.B, in.BReady, m.idBits)
	if awGo {
		m.order[m.tail%d] = g
		m.tail = (m.tail + 1) % (2 * d)
	}
	if out.W.Valid && in.WReady && out.W.Last {
		m.head = (m.head + 1) % (2 * d)
	}
	m.arb.edge(g, any, in.AWReady)
	if in.Reset {
		m.arb = axiArbiter{n: n}
		m.head, m.tail = 0, 0
		clear(m.order)
	}
	return out
}

// AXIRemap models axi_rd_remap or axi_wr_remap: a master's IDs narrowed
// to a slave's low outBits; the high bits of each burst's ID wait in a
// queue per slave ID (depth entries) for its response, which goes back
// with them above the slave's ID. An address waits while its slave ID's
// queue is full.
type AXIRemap struct {
	outBits    int
	queues     [][]uint16 // per slave ID, a ring of high ID bits
	head, tail []int      // free running, modulo 2*depth
}

// NewAXIRemap returns a remap of outBits-bit slave IDs with queues of
// depth entries.
func NewAXIRemap(outBits, depth int) *AXIRemap {
	k := 1 << outBits
	r := &AXIRemap{outBits: outBits, queues: make([][]uint16, k), head: make([]int, k), tail: make([]int, k)}
	for i := range r.queues {
		r.queues[i] = make([]uint16, depth)
	}
	return r
}

// AXIRemapIn is one cycle of a remap's inputs: the master's address, the
// slave's ready for it, and the response channel: its slave ID, whether
// a burst's response ends this cycle (R: valid, ready and last; B: valid
// and ready).
type AXIRemapIn struct {
	Reset   bool
	A       AXIAddr
	AReady  bool
	RespID  uint16
	RespEnd bool
}

// AXIRemapOut is what the remap shows: the address to the slave, the
// master's ready, and the master's ID of the response on the channel now
// (the head of its slave ID's queue above it, valid or not).
type AXIRemapOut struct {
	A      AXIAddr
	AReady bool
	RespID uint16
}

// Step returns this cycle's outputs and takes the clock edge.
func (r *AXIRemap) Step(in AXIRemapIn) AXIRemapOut {
	d := len(r.queues[0])
	lo := int(in.A.ID) & (1<<r.outBits - 1)
	room := (r.tail[lo]-r.head[lo]+2*d)%(2*d) < d
	out := AXIRemapOut{A: in.A, AReady: in.AReady && room}
	out.A.ID, out.A.Valid = uint16(lo), in.A.Valid && room
	rid := int(in.RespID) & (1<<r.outBits - 1)
	out.RespID = r.queues[rid][r.head[rid]%d]<<r.outBits | uint16(rid)
	if in.A.Valid && in.AReady && room {
		r.queues[lo][r.tail[lo]%d] = in.A.ID >> r.outBits
		r.tail[lo] = (r.tail[lo] + 1) % (2 * d)
	}
	if in.RespEnd {
		r.head[rid] = (r.head[rid] + 1) % (2 * d)
	}
	if in.Reset { // the queues' heads and tails; the entries keep their bits
		clear(r.head)
		clear(r.tail)
	}
	return out
}
