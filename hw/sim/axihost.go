package sim

import (
	"errors"
	"fmt"
)

// Memory is host memory as a simulated host serves it to a card's AXI4
// master: an error is the bus refusing the access (an IOMMU fault, an
// address nothing decodes), which the card sees as a SLVERR response.
type Memory interface {
	ReadMem(addr uint64, p []byte) error
	WriteMem(addr uint64, p []byte) error
}

// AXITiming is how a simulated host answers an AXI4 master.
type AXITiming struct {
	// ReadLatency is the cycles from a read burst's address to its first
	// beat, plus [0, ReadJitter) when ReadJitter is positive.
	ReadLatency, ReadJitter int
	// WriteLatency is the cycles from a write burst's last beat to its
	// response, plus [0, WriteJitter).
	WriteLatency, WriteJitter int
	// Reorder answers read bursts of different IDs in any order (the
	// oldest burst of each ID is eligible once its latency has passed) and
	// interleaves their beats; without it bursts are answered in the order
	// their addresses were taken.
	Reorder bool
	// Ready is the chance out of 256 that arready, awready and wready are
	// high in a cycle, and that an available R beat or B response is
	// offered (0 or 256 and above: always: no backpressure).
	Ready int
}

// AXIFault is an access Memory refused.
type AXIFault struct {
	Cycle uint64
	Addr  uint64
	Len   int
	Write bool
	Err   error
}

// ErrAXI is wrapped by AXI protocol violations of the master that an
// AXIHost sees (a W beat before its address, a burst crossing 4 KiB, wlast
// in the wrong place).
var ErrAXI = errors.New("sim: AXI4 protocol violation")

type axiPorts struct {
	arID, arAddr, arLen, arValid, arReady    Port
	rID, rData, rResp, rLast, rValid, rReady Port
	awID, awAddr, awLen, awValid, awReady    Port
	wData, wStrb, wLast, wValid, wReady      Port
	bID, bResp, bValid, bReady               Port
	reads, writes, ids                       bool
}

type axiRead struct {
	id, addr uint64
	beats    int
	sent     int
	readyAt  uint64
	data     []byte
	resp     uint64
}

type axiWrite struct {
	id, addr uint64
	beats    int
	got      int
	data     []byte
	strb     []bool
	readyAt  uint64
	resp     uint64
}

// AXIHost is a simulated host behind a block's AXI4 master (ports named
// prefix+"araddr", ...; a block without the read or the write channels
// has only the other): read bursts are answered from Memory after the
// configured latency, write bursts go to Memory once their last beat has
// arrived (one WriteMem per run of strobed bytes) and are answered after
// theirs. An access Memory refuses is answered with SLVERR and recorded
// in Faults. It is driven like a Driver: Drive sets the slave's side of a
// cycle's inputs, Observe takes the master's outputs of the same cycle.
type AXIHost struct {
	Mem    Memory
	Timing AXITiming
	// Faults are the accesses Memory refused, in order.
	Faults []AXIFault
	// ReadBeats, WriteBeats count data beats; ReadBursts and WriteBursts
	// bursts completed.
	ReadBeats, WriteBeats, ReadBursts, WriteBursts uint64

	p      axiPorts
	lanes  int
	rng    Rand
	cycle  uint64
	rd     []*axiRead
	wr     []*axiWrite // addressed, data not complete
	bq     []*axiWrite // response pending, in order
	lastB  uint64
	rSel   int // the burst whose beat Drive offered, or -1
	bOffer bool
	ready  [3]bool // arready, awready, wready offered
	zero   []byte
}

// NewAXIHost binds an AXIHost to the AXI4 master ports of layout l whose
// names start with prefix ("m_axi_").
func NewAXIHost(l Layout, prefix string, mem Memory, t AXITiming, seed uint64) (*AXIHost, error) {
	h := &AXIHost{Mem: mem, Timing: t, rng: NewRand(seed), rSel: -1}
	p := &h.p
	s := &portSet{l: l}
	if _, err := l.Out(prefix + "arvalid"); err == nil {
		p.reads = true
		p.arAddr, p.arLen, p.arValid, p.arReady = s.out(prefix+"araddr"), s.out(prefix+"arlen"), s.out(prefix+"arvalid"), s.in(prefix+"arready")
		p.rData, p.rResp, p.rLast, p.rValid, p.rReady = s.in(prefix+"rdata"), s.in(prefix+"rresp"), s.in(prefix+"rlast"), s.in(prefix+"rvalid"), s.out(prefix+"rready")
		if _, err := l.Out(prefix + "arid"); err == nil {
			p.arID, p.rID = s.out(prefix+"arid"), s.in(prefix+"rid")
		}
		h.lanes = p.rData.Width / 8
	}
	if _, err := l.Out(prefix + "awvalid"); err == nil {
		p.writes = true
		p.awAddr, p.awLen, p.awValid, p.awReady = s.out(prefix+"awaddr"), s.out(prefix+"awlen"), s.out(prefix+"awvalid"), s.in(prefix+"awready")
		p.wData, p.wStrb, p.wLast, p.wValid, p.wReady = s.out(prefix+"wdata"), s.out(prefix+"wstrb"), s.out(prefix+"wlast"), s.out(prefix+"wvalid"), s.in(prefix+"wready")
		p.bResp, p.bValid, p.bReady = s.in(prefix+"bresp"), s.in(prefix+"bvalid"), s.out(prefix+"bready")
		if _, err := l.Out(prefix + "awid"); err == nil {
			p.awID, p.bID, p.ids = s.out(prefix+"awid"), s.in(prefix+"bid"), true
		} else if _, err := l.In(prefix + "bid"); err == nil {
			p.bID = s.in(prefix + "bid")
		}
		h.lanes = p.wData.Width / 8
	}
	if s.err != nil {
		return nil, s.err
	}
	if !p.reads && !p.writes {
		return nil, fmt.Errorf("sim: no AXI4 master named %s* (no port %sarvalid or %sawvalid)", prefix, prefix, prefix)
	}
	h.zero = make([]byte, h.lanes)
	return h, nil
}

// Idle reports whether no burst is in flight (no read answered in full,
// no write without its response).
func (h *AXIHost) Idle() bool { return h.Outstanding() == 0 }

// Outstanding is the number of bursts in flight.
func (h *AXIHost) Outstanding() int { return len(h.rd) + len(h.wr) + len(h.bq) }

func (h *AXIHost) chance() bool {
	return h.Timing.Ready <= 0 || h.Timing.Ready >= 256 || h.rng.Chance(h.Timing.Ready)
}

func (h *AXIHost) latency(fixed, jitter int) uint64 {
	l := uint64(max(fixed, 0))
	if jitter > 0 {
		l += uint64(h.rng.IntN(jitter))
	}
	return l
}

// Drive sets the slave's outputs of the coming cycle in in.
func (h *AXIHost) Drive(in []uint32) {
	p := &h.p
	h.cycle++
	for i := range h.ready {
		h.ready[i] = h.chance()
	}
	if p.reads {
		p.arReady.Set(in, b2u(h.ready[0]))
		h.rSel = h.pickRead()
		if h.rSel >= 0 {
			b := h.rd[h.rSel]
			if b.data == nil { // the burst's bytes are read when its first beat goes out
				b.data = make([]byte, b.beats*h.lanes)
				if err := h.Mem.ReadMem(b.addr, b.data); err != nil {
					h.Faults = append(h.Faults, AXIFault{Cycle: h.cycle, Addr: b.addr, Len: len(b.data), Err: err})
					clear(b.data)
					b.resp = 2
				}
			}
			p.rValid.Set(in, 1)
			if p.rID.Width > 0 {
				p.rID.Set(in, b.id)
			}
			p.rData.SetBytes(in, b.data[b.sent*h.lanes:(b.sent+1)*h.lanes])
			p.rResp.Set(in, b.resp)
			p.rLast.Set(in, b2u(b.sent == b.beats-1))
		} else {
			p.rValid.Set(in, 0)
			p.rLast.Set(in, 0)
			p.rResp.Set(in, 0)
			p.rData.SetBytes(in, h.zero)
		}
	}
	if p.writes {
		p.awReady.Set(in, b2u(h.ready[1]))
		p.wReady.Set(in, b2u(h.ready[2]))
		h.bOffer = len(h.bq) > 0 && h.bq[0].readyAt <= h.cycle && h.chance()
		p.bValid.Set(in, b2u(h.bOffer))
		if h.bOffer {
			p.bResp.Set(in, h.bq[0].resp)
			if p.bID.Width > 0 {
				p.bID.Set(in, h.bq[0].id)
			}
		} else {
			p.bResp.Set(in, 0)
		}
	}
}

// pickRead is the read burst whose beat goes out this cycle, or -1.
func (h *AXIHost) pickRead() int {
	if !h.chance() {
		return -1
	}
	var cand [64]int
	n := 0
	for i, b := range h.rd {
		if b.readyAt > h.cycle {
			if !h.Timing.Reorder {
				return -1
			}
			continue
		}
		older := false // an older burst of the same ID goes first
		for _, o := range h.rd[:i] {
			if o.id == b.id {
				older = true
				break
			}
		}
		if older {
			continue
		}
		if !h.Timing.Reorder {
			return i
		}
		if n < len(cand) {
			cand[n] = i
			n++
		}
	}
	if n == 0 {
		return -1
	}
	// A burst under way keeps going most of the time: interleaving is
	// allowed, but so is a run of beats.
	for _, i := range cand[:n] {
		if h.rd[i].sent > 0 && h.rng.Chance(192) {
			return i
		}
	}
	return cand[h.rng.IntN(n)]
}

// Observe takes the master's outputs of the cycle Drive set up.
func (h *AXIHost) Observe(in, out []uint32) error {
	p := &h.p
	if p.reads {
		if p.arValid.Get(out) != 0 && h.ready[0] {
			id := uint64(0)
			if p.arID.Width > 0 {
				id = p.arID.Get(out)
			}
			b := &axiRead{id: id, addr: p.arAddr.Get(out) &^ uint64(h.lanes-1), beats: int(p.arLen.Get(out)) + 1,
				readyAt: h.cycle + h.latency(h.Timing.ReadLatency, h.Timing.ReadJitter)}
			if err := h.burstOK(b.addr, b.beats, false); err != nil {
				return err
			}
			h.rd = append(h.rd, b)
		}
		if h.rSel >= 0 && p.rReady.Get(out) != 0 {
			b := h.rd[h.rSel]
			b.sent++
			h.ReadBeats++
			if b.sent == b.beats {
				h.rd = append(h.rd[:h.rSel], h.rd[h.rSel+1:]...)
				h.ReadBursts++
			}
		}
	}
	if !p.writes {
		return nil
	}
	if p.awValid.Get(out) != 0 && h.ready[1] {
		b := &axiWrite{addr: p.awAddr.Get(out) &^ uint64(h.lanes-1), beats: int(p.awLen.Get(out)) + 1}
		if p.ids {
			b.id = p.awID.Get(out)
		}
		if err := h.burstOK(b.addr, b.beats, true); err != nil {
			return err
		}
		b.data, b.strb = make([]byte, b.beats*h.lanes), make([]bool, b.beats*h.lanes)
		h.wr = append(h.wr, b)
	}
	if p.wValid.Get(out) != 0 && h.ready[2] {
		if len(h.wr) == 0 {
			return fmt.Errorf("%w: cycle %d: W beat before its address", ErrAXI, h.cycle)
		}
		b := h.wr[0]
		off := b.got * h.lanes
		p.wData.Bytes(out, b.data[off:off+h.lanes])
		strb := p.wStrb.Get(out)
		for i := 0; i < h.lanes; i++ {
			b.strb[off+i] = strb>>i&1 != 0
		}
		b.got++
		h.WriteBeats++
		if (p.wLast.Get(out) != 0) != (b.got == b.beats) {
			return fmt.Errorf("%w: cycle %d: wlast on beat %d of a %d-beat burst at %#x", ErrAXI, h.cycle, b.got, b.beats, b.addr)
		}
		if b.got == b.beats {
			h.wr = h.wr[1:]
			h.commit(b)
			b.readyAt = max(h.lastB, h.cycle+h.latency(h.Timing.WriteLatency, h.Timing.WriteJitter))
			h.lastB = b.readyAt
			h.bq = append(h.bq, b)
			h.WriteBursts++
		}
	}
	if h.bOffer && p.bReady.Get(out) != 0 {
		h.bq = h.bq[1:]
	}
	return nil
}

// commit writes a whole burst's strobed bytes, one WriteMem per run.
func (h *AXIHost) commit(b *axiWrite) {
	for i := 0; i < len(b.data); {
		if !b.strb[i] {
			i++
			continue
		}
		j := i
		for j < len(b.data) && b.strb[j] {
			j++
		}
		if err := h.Mem.WriteMem(b.addr+uint64(i), b.data[i:j]); err != nil {
			h.Faults = append(h.Faults, AXIFault{Cycle: h.cycle, Addr: b.addr + uint64(i), Len: j - i, Write: true, Err: err})
			b.resp = 2
		}
		i = j
	}
}

// burstOK checks that a burst (from its beat-aligned address; an
// unaligned address selects lanes with the strobes) stays inside one 4 KiB
// page.
func (h *AXIHost) burstOK(addr uint64, beats int, write bool) error {
	kind := "read"
	if write {
		kind = "write"
	}
	if end := addr + uint64(beats*h.lanes) - 1; addr>>12 != end>>12 {
		return fmt.Errorf("%w: cycle %d: %s burst at %#x of %d beats crosses a 4 KiB boundary", ErrAXI, h.cycle, kind, addr, beats)
	}
	return nil
}
