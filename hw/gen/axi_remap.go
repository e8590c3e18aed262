package gen

import (
	"fmt"
	"math/big"
)

// AXIRemapConfig sizes axi_rd_remap and axi_wr_remap: an AXI4 master's
// IDs narrowed to what a slave accepts (the card's merged DMA master onto
// a PCIe bridge whose slave takes fewer ID bits, XDMA's 4).
type AXIRemapConfig struct {
	Width   int // data width in bits (64 to 512, a power of two)
	InBits  int // the master's ID width (2 to 12)
	OutBits int // the slave's ID width (1 to InBits-1)
	// Depth is how many bursts may be outstanding on one slave ID (a
	// power of two): a burst waits for its address while its slave ID
	// has that many.
	Depth int
}

// AXIRemapBoard narrows the card top's DMA master IDs (the engine's number
// above its 6 ID bits: 8) to the 4 of XDMA's AXI bridge slave, for the U250
// wrapper (fpga/pcie).
func AXIRemapBoard(width int) AXIRemapConfig {
	mux := AXIMuxDefault(width)
	return AXIRemapConfig{Width: width, InBits: mux.IDBits + log2(mux.Masters), OutBits: 4, Depth: 8}
}

// AXIRemapWidths lists the widths the project ships: the U250 wrapper's.
var AXIRemapWidths = []int{512}

func (c AXIRemapConfig) check(what string) error {
	W := c.Width
	if W < 64 || W > 512 || W&(W-1) != 0 || c.InBits < 2 || c.InBits > 12 || c.OutBits < 1 || c.OutBits >= c.InBits ||
		c.Depth < 2 || c.Depth > 64 || c.Depth&(c.Depth-1) != 0 {
		return fmt.Errorf("%w: %s: width %d, IDs %d bits to %d, depth %d", ErrInvalid, what, W, c.InBits, c.OutBits, c.Depth)
	}
	return nil
}

func (c AXIRemapConfig) name(kind string) string {
	return fmt.Sprintf("axi_%s_remap_i%do%d_w%d", kind, c.InBits, c.OutBits, c.Width)
}

const remapDoc = "The slave sees the low %[2]d bits of the master's %[1]d-bit ID; the high %[3]d bits wait, in one queue of %[4]d per slave ID, for the response, which goes back with them above the slave's ID. Bursts of one master ID share a slave ID, so they stay in order as AXI requires; bursts of master IDs that share a slave ID are put in order by the slave, which costs reordering, never correctness. An address waits (valid held low toward the slave, ready low toward the master) while its slave ID has %[4]d bursts outstanding."

// remapQueues builds the per-slave-ID queues of high ID bits: addr is the
// address channel toward the slave (its valid and ready gated by the room
// of the queue of the address's slave ID), from the master's channel in;
// the response channel's slave ID rid, its handshake and last beat pop;
// it returns the master's ID of the response (the queue's head above rid).
func remapQueues(m *Module, c AXIRemapConfig, in, out axiAddr, rid *Signal, pop Expr) Expr {
	K := 1 << c.OutBits
	DB := log2(c.Depth)
	HB := c.InBits - c.OutBits
	lo := m.WireOf("a_lo", Bits(in.id, c.OutBits-1, 0), "the slave ID of the offered address")
	hi := m.WireOf("a_hi", Bits(in.id, c.InBits-1, c.OutBits), "what the response's ID gets back")
	var fulls, heads []Expr
	type q struct{ head, tail *Signal }
	qs := make([]q, K)
	for k := range K {
		qs[k] = q{m.RegDecl(fmt.Sprintf("q%d_head", k), DB+1, ""), m.RegDecl(fmt.Sprintf("q%d_tail", k), DB+1, "")}
		h, t := qs[k].head, qs[k].tail
		fulls = append(fulls, And(Not(Eq(Bit(t, DB), Bit(h, DB))), Eq(Bits(t, DB-1, 0), Bits(h, DB-1, 0))))
	}
	room := m.WireOf("a_room", Not(muxTree(selBits(lo, 0, c.OutBits), fulls)), "the queue of the address's slave ID has room")
	m.Assign(out.valid, And(in.valid, room))
	m.Assign(in.ready, And(out.ready, room))
	m.Assign(out.id, lo)
	m.Assign(out.addr, in.addr)
	m.Assign(out.len, in.len)
	m.Assign(out.size, in.size)
	m.Assign(out.burst, in.burst)
	push := m.WireOf("a_go", And(in.valid, out.ready, room), "an address is taken")
	for k := range K {
		here := m.WireOf(fmt.Sprintf("q%d_push", k), And(push, Eq(lo, C(c.OutBits, uint64(k)))), "")
		gone := m.WireOf(fmt.Sprintf("q%d_pop", k), And(pop, Eq(rid, C(c.OutBits, uint64(k)))), "")
		var slots []Expr
		for e := range c.Depth {
			at := And(here, Eq(Bits(qs[k].tail, DB-1, 0), C(DB, uint64(e))))
			slots = append(slots, m.Reg(fmt.Sprintf("q%d_e%d", k, e), HB, nil, hi, at, ""))
		}
		heads = append(heads, muxTree(selBits(qs[k].head, 0, DB), slots))
		m.Drive(qs[k].tail, big.NewInt(0), Add(qs[k].tail, zext(here, DB+1)), nil)
		m.Drive(qs[k].head, big.NewInt(0), Add(qs[k].head, zext(gone, DB+1)), nil)
	}
	return Cat(muxTree(selBits(rid, 0, c.OutBits), heads), rid)
}

// AXIRdRemap builds axi_rd_remap_i<In>o<Out>_w<W>: an AXI4 read master
// (s_axi_ar*, r*) with In-bit IDs onto a slave (m_axi_*) with Out-bit IDs.
func AXIRdRemap(cfg AXIRemapConfig) (*Module, error) {
	if err := cfg.check("axi_rd_remap"); err != nil {
		return nil, err
	}
	W := cfg.Width
	m := NewModule(cfg.name("rd"), "AMBA AXI4 (read channels)",
		"Narrows a read master's IDs. "+fmt.Sprintf(remapDoc, cfg.InBits, cfg.OutBits, cfg.InBits-cfg.OutBits, cfg.Depth),
		"No register on the data paths: arvalid/arready and rvalid/rready pass through combinationally; a queue's head moves on the last beat of a burst.",
	)
	m.Clock()
	m.ResetPort()
	in := axiAddrPorts(m, "s_axi_", "ar", cfg.InBits, true, "the master's")
	rID := m.Output("s_axi_rid", cfg.InBits, "")
	rData := m.Output("s_axi_rdata", W, "")
	rResp := m.Output("s_axi_rresp", 2, "")
	rLast := m.Output("s_axi_rlast", 1, "")
	rValid := m.Output("s_axi_rvalid", 1, "")
	rReady := m.Input("s_axi_rready", 1, "")
	out := axiAddrPorts(m, "m_axi_", "ar", cfg.OutBits, false, "the slave's")
	mID := m.Input("m_axi_rid", cfg.OutBits, "")
	mData := m.Input("m_axi_rdata", W, "")
	mResp := m.Input("m_axi_rresp", 2, "")
	mLast := m.Input("m_axi_rlast", 1, "")
	mValid := m.Input("m_axi_rvalid", 1, "")
	mReady := m.Output("m_axi_rready", 1, "")
	pop := m.WireOf("r_done", And(mValid, rReady, mLast), "a burst's last beat goes")
	m.Assign(rID, remapQueues(m, cfg, in, out, mID, pop))
	m.Assign(rData, mData)
	m.Assign(rResp, mResp)
	m.Assign(rLast, mLast)
	m.Assign(rValid, mValid)
	m.Assign(mReady, rReady)
	return m, m.Validate()
}

// AXIWrRemap builds axi_wr_remap_i<In>o<Out>_w<W>: an AXI4 write master
// (s_axi_aw*, w*, b*) with In-bit IDs onto a slave (m_axi_*) with Out-bit
// IDs; write data passes untouched (AXI4 W beats carry no ID).
func AXIWrRemap(cfg AXIRemapConfig) (*Module, error) {
	if err := cfg.check("axi_wr_remap"); err != nil {
		return nil, err
	}
	W := cfg.Width
	L := W / 8
	m := NewModule(cfg.name("wr"), "AMBA AXI4 (write channels)",
		"Narrows a write master's IDs. "+fmt.Sprintf(remapDoc, cfg.InBits, cfg.OutBits, cfg.InBits-cfg.OutBits, cfg.Depth)+" Write data passes untouched, in address order as it came.",
		"No register on the data paths: awvalid/awready, wvalid/wready and bvalid/bready pass through combinationally.",
	)
	m.Clock()
	m.ResetPort()
	in := axiAddrPorts(m, "s_axi_", "aw", cfg.InBits, true, "the master's")
	pass := func(name string, w int, toSlave bool) {
		if toSlave {
			m.Assign(m.Output("m_axi_"+name, w, ""), m.Input("s_axi_"+name, w, ""))
		} else {
			m.Assign(m.Output("s_axi_"+name, w, ""), m.Input("m_axi_"+name, w, ""))
		}
	}
	pass("wdata", W, true)
	pass("wstrb", L, true)
	pass("wlast", 1, true)
	pass("wvalid", 1, true)
	pass("wready", 1, false)
	bID := m.Output("s_axi_bid", cfg.InBits, "")
	bResp := m.Output("s_axi_bresp", 2, "")
	bValid := m.Output("s_axi_bvalid", 1, "")
	bReady := m.Input("s_axi_bready", 1, "")
	out := axiAddrPorts(m, "m_axi_", "aw", cfg.OutBits, false, "the slave's")
	mID := m.Input("m_axi_bid", cfg.OutBits, "")
	mResp := m.Input("m_axi_bresp", 2, "")
	mValid := m.Input("m_axi_bvalid", 1, "")
	mReady := m.Output("m_axi_bready", 1, "")
	pop := m.WireOf("b_done", And(mValid, bReady), "a write response goes")
	m.Assign(bID, remapQueues(m, cfg, in, out, mID, pop))
	m.Assign(bResp, mResp)
	m.Assign(bValid, mValid)
	m.Assign(mReady, bReady)
	return m, m.Validate()
}
