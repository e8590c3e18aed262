package sim

import (
	"fmt"
	"slices"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// axiMuxModels checks axi_rd_mux and axi_wr_mux against their cycle
// models (golden/cycle) on every output of every cycle, beside the
// transaction checks of AXIMuxDriver.
type axiMuxModels struct {
	cfg      gen.AXIMuxConfig
	rd       *cycle.AXIRdMux
	wr       *cycle.AXIWrMux
	rdP, wrP *portSet
	rdWant   []uint32
	wrWant   []uint32
	cycle    uint64
	Compared uint64 // cycles whose outputs were compared
}

func newAXIMuxModels(cfg gen.AXIMuxConfig, rdP, wrP *portSet) *axiMuxModels {
	return &axiMuxModels{cfg: cfg, rd: cycle.NewAXIRdMux(cfg.Masters, cfg.IDBits), wr: cycle.NewAXIWrMux(cfg.Masters, cfg.IDBits, cfg.WOrder),
		rdP: rdP, wrP: wrP, rdWant: make([]uint32, rdP.l.OutWords), wrWant: make([]uint32, wrP.l.OutWords)}
}

// axiAddrIn reads the address channel pre* from vec's input ports.
func axiAddrIn(ps *portSet, vec []uint32, pre string) cycle.AXIAddr {
	g := func(n string) uint64 { return ps.in(pre + n).Get(vec) }
	return cycle.AXIAddr{ID: uint16(g("id")), Addr: g("addr"), Len: uint8(g("len")), Size: uint8(g("size")), Burst: uint8(g("burst")), Valid: g("valid") != 0}
}

// axiAddrOut sets the address channel pre* among vec's output ports.
func axiAddrOut(ps *portSet, vec []uint32, pre string, a cycle.AXIAddr) {
	s := func(n string, v uint64) { ps.out(pre+n).Set(vec, v) }
	s("id", uint64(a.ID))
	s("addr", a.Addr)
	s("len", uint64(a.Len))
	s("size", uint64(a.Size))
	s("burst", uint64(a.Burst))
	s("valid", b2u(a.Valid))
}

// bytesIn reads input port name's bytes from vec.
func bytesIn(ps *portSet, vec []uint32, name string) []byte {
	p := ps.in(name)
	b := make([]byte, (p.Width+7)/8)
	p.Bytes(vec, b)
	return b
}

// step runs both models on this cycle's inputs and compares every output
// with the RTL's.
func (m *axiMuxModels) step(rdI, rdO, wrI, wrO []uint32) error {
	m.cycle++
	N := m.cfg.Masters
	rdIn := cycle.AXIRdMuxIn{Reset: m.rdP.in("rst").Get(rdI) != 0, ARReady: m.rdP.in("m_axi_arready").Get(rdI) != 0,
		R: cycle.AXIResp{ID: uint16(m.rdP.in("m_axi_rid").Get(rdI)), Data: bytesIn(m.rdP, rdI, "m_axi_rdata"),
			Resp: uint8(m.rdP.in("m_axi_rresp").Get(rdI)), Last: m.rdP.in("m_axi_rlast").Get(rdI) != 0, Valid: m.rdP.in("m_axi_rvalid").Get(rdI) != 0}}
	wrIn := cycle.AXIWrMuxIn{Reset: m.wrP.in("rst").Get(wrI) != 0, AWReady: m.wrP.in("m_axi_awready").Get(wrI) != 0,
		WReady: m.wrP.in("m_axi_wready").Get(wrI) != 0,
		B:      cycle.AXIResp{ID: uint16(m.wrP.in("m_axi_bid").Get(wrI)), Resp: uint8(m.wrP.in("m_axi_bresp").Get(wrI)), Valid: m.wrP.in("m_axi_bvalid").Get(wrI) != 0}}
	for i := 0; i < N; i++ {
		pre := fmt.Sprintf("s%d_axi_", i)
		rdIn.AR = append(rdIn.AR, axiAddrIn(m.rdP, rdI, pre+"ar"))
		rdIn.RReady = append(rdIn.RReady, m.rdP.in(pre+"rready").Get(rdI) != 0)
		wrIn.AW = append(wrIn.AW, axiAddrIn(m.wrP, wrI, pre+"aw"))
		wrIn.W = append(wrIn.W, cycle.AXIW{Data: bytesIn(m.wrP, wrI, pre+"wdata"), Strb: m.wrP.in(pre + "wstrb").Get(wrI),
			Last: m.wrP.in(pre+"wlast").Get(wrI) != 0, Valid: m.wrP.in(pre+"wvalid").Get(wrI) != 0})
		wrIn.BReady = append(wrIn.BReady, m.wrP.in(pre+"bready").Get(wrI) != 0)
	}
	ro, wo := m.rd.Step(rdIn), m.wr.Step(wrIn)
	axiAddrOut(m.rdP, m.rdWant, "m_axi_ar", ro.AR)
	m.rdP.out("m_axi_rready").Set(m.rdWant, b2u(ro.RReady))
	axiAddrOut(m.wrP, m.wrWant, "m_axi_aw", wo.AW)
	m.wrP.out("m_axi_wdata").SetBytes(m.wrWant, wo.W.Data)
	m.wrP.out("m_axi_wstrb").Set(m.wrWant, wo.W.Strb)
	m.wrP.out("m_axi_wlast").Set(m.wrWant, b2u(wo.W.Last))
	m.wrP.out("m_axi_wvalid").Set(m.wrWant, b2u(wo.W.Valid))
	m.wrP.out("m_axi_bready").Set(m.wrWant, b2u(wo.BReady))
	for i := 0; i < N; i++ {
		pre := fmt.Sprintf("s%d_axi_", i)
		m.rdP.out(pre+"arready").Set(m.rdWant, b2u(ro.ARReady[i]))
		r := ro.R[i]
		m.rdP.out(pre+"rid").Set(m.rdWant, uint64(r.ID))
		m.rdP.out(pre+"rdata").SetBytes(m.rdWant, r.Data)
		m.rdP.out(pre+"rresp").Set(m.rdWant, uint64(r.Resp))
		m.rdP.out(pre+"rlast").Set(m.rdWant, b2u(r.Last))
		m.rdP.out(pre+"rvalid").Set(m.rdWant, b2u(r.Valid))
		m.wrP.out(pre+"awready").Set(m.wrWant, b2u(wo.AWReady[i]))
		m.wrP.out(pre+"wready").Set(m.wrWant, b2u(wo.WReady[i]))
		b := wo.B[i]
		m.wrP.out(pre+"bid").Set(m.wrWant, uint64(b.ID))
		m.wrP.out(pre+"bresp").Set(m.wrWant, uint64(b.Resp))
		m.wrP.out(pre+"bvalid").Set(m.wrWant, b2u(b.Valid))
	}
	if m.rdP.err != nil || m.wrP.err != nil {
		return fmt.Errorf("axi mux cycle model ports: %v %v", m.rdP.err, m.wrP.err)
	}
	if err := compareOutputs("axi_rd_mux", m.cycle, m.rdP.l.Outputs, m.rdWant, rdO); err != nil {
		return err
	}
	if err := compareOutputs("axi_wr_mux", m.cycle, m.wrP.l.Outputs, m.wrWant, wrO); err != nil {
		return err
	}
	m.Compared++
	return nil
}

// compareOutputs names the first output port whose bits differ.
func compareOutputs(block string, cyc uint64, outs []Port, want, got []uint32) error {
	if slices.Equal(want, got) {
		return nil
	}
	for _, p := range outs {
		if p.Hex(want) != p.Hex(got) {
			return fmt.Errorf("%s cycle %d: port %s: the cycle model shows %s, the RTL %s", block, cyc, p.Name, p.Hex(want), p.Hex(got))
		}
	}
	return nil
}

// axiCycleModels is a pair of AXI blocks' cycle models run beside the RTL.
type axiCycleModels interface {
	step(rdI, rdO, wrI, wrO []uint32) error
	compared() uint64
}

func (m *axiMuxModels) compared() uint64 { return m.Compared }

// axiRemapModels checks axi_rd_remap and axi_wr_remap against their
// cycle models every cycle.
type axiRemapModels struct {
	rd, wr         *cycle.AXIRemap
	rdP, wrP       *portSet
	rdWant, wrWant []uint32
	cycle, n       uint64
}

func newAXIRemapModels(cfg gen.AXIRemapConfig, rdP, wrP *portSet) *axiRemapModels {
	return &axiRemapModels{rd: cycle.NewAXIRemap(cfg.OutBits, cfg.Depth), wr: cycle.NewAXIRemap(cfg.OutBits, cfg.Depth),
		rdP: rdP, wrP: wrP, rdWant: make([]uint32, rdP.l.OutWords), wrWant: make([]uint32, wrP.l.OutWords)}
}

func (m *axiRemapModels) compared() uint64 { return m.n }

func (m *axiRemapModels) step(rdI, rdO, wrI, wrO []uint32) error {
	m.cycle++
	in := func(ps *portSet, vec []uint32, n string) uint64 { return ps.in(n).Get(vec) }
	pass := func(ps *portSet, want, vec []uint32, from, to string) { // a port the remap passes through
		ps.out(to).SetBytes(want, bytesIn(ps, vec, from))
	}
	// Reads: R beats pass through; the response's ID is the model's.
	ro := m.rd.Step(cycle.AXIRemapIn{Reset: in(m.rdP, rdI, "rst") != 0, A: axiAddrIn(m.rdP, rdI, "s_axi_ar"), AReady: in(m.rdP, rdI, "m_axi_arready") != 0,
		RespID:  uint16(in(m.rdP, rdI, "m_axi_rid")),
		RespEnd: in(m.rdP, rdI, "m_axi_rvalid") != 0 && in(m.rdP, rdI, "s_axi_rready") != 0 && in(m.rdP, rdI, "m_axi_rlast") != 0})
	axiAddrOut(m.rdP, m.rdWant, "m_axi_ar", ro.A)
	m.rdP.out("s_axi_arready").Set(m.rdWant, b2u(ro.AReady))
	m.rdP.out("s_axi_rid").Set(m.rdWant, uint64(ro.RespID))
	for _, f := range []string{"data", "resp", "last", "valid"} {
		pass(m.rdP, m.rdWant, rdI, "m_axi_r"+f, "s_axi_r"+f)
	}
	pass(m.rdP, m.rdWant, rdI, "s_axi_rready", "m_axi_rready")
	// Writes: W beats and B pass through; the response's ID is the model's.
	wo := m.wr.Step(cycle.AXIRemapIn{Reset: in(m.wrP, wrI, "rst") != 0, A: axiAddrIn(m.wrP, wrI, "s_axi_aw"), AReady: in(m.wrP, wrI, "m_axi_awready") != 0,
		RespID: uint16(in(m.wrP, wrI, "m_axi_bid")), RespEnd: in(m.wrP, wrI, "m_axi_bvalid") != 0 && in(m.wrP, wrI, "s_axi_bready") != 0})
	axiAddrOut(m.wrP, m.wrWant, "m_axi_aw", wo.A)
	m.wrP.out("s_axi_awready").Set(m.wrWant, b2u(wo.AReady))
	m.wrP.out("s_axi_bid").Set(m.wrWant, uint64(wo.RespID))
	for _, f := range []string{"wdata", "wstrb", "wlast", "wvalid"} {
		pass(m.wrP, m.wrWant, wrI, "s_axi_"+f, "m_axi_"+f)
	}
	pass(m.wrP, m.wrWant, wrI, "m_axi_wready", "s_axi_wready")
	for _, f := range []string{"bresp", "bvalid"} {
		pass(m.wrP, m.wrWant, wrI, "m_axi_"+f, "s_axi_"+f)
	}
	pass(m.wrP, m.wrWant, wrI, "s_axi_bready", "m_axi_bready")
	if m.rdP.err != nil || m.wrP.err != nil {
		return fmt.Errorf("axi remap cycle model ports: %v %v", m.rdP.err, m.wrP.err)
	}
	if err := compareOutputs("axi_rd_remap", m.cycle, m.rdP.l.Outputs, m.rdWant, rdO); err != nil {
		return err
	}
	if err := compareOutputs("axi_wr_remap", m.cycle, m.wrP.l.Outputs, m.wrWant, wrO); err != nil {
		return err
	}
	m.n++
	return nil
}
