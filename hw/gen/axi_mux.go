package gen

import (
	"fmt"
	"math/big"
)

// AXIMuxConfig sizes axi_rd_mux and axi_wr_mux.
type AXIMuxConfig struct {
	Width   int // data width in bits (64 to 512, a power of two)
	Masters int // masters merged (2 to 8)
	IDBits  int // ID width of each master (1 to 8); the merged ID is IDBits + log2(Masters) wide
	// WOrder is the depth of axi_wr_mux's queue of granted write bursts
	// whose W beats have not all gone (a power of two).
	WOrder int
}

// AXIMuxDefault merges the card's masters: card_tx, card_rx, card_cq and
// placement.
func AXIMuxDefault(width int) AXIMuxConfig {
	return AXIMuxConfig{Width: width, Masters: 4, IDBits: 6, WOrder: 16}
}

// AXIMuxWidths lists the widths the project ships.
var AXIMuxWidths = []int{64, 512}

func (c AXIMuxConfig) check(what string) error {
	W := c.Width
	if W < 64 || W > 512 || W&(W-1) != 0 || c.Masters < 2 || c.Masters > 8 || c.Masters&(c.Masters-1) != 0 ||
		c.IDBits < 1 || c.IDBits > 8 || c.WOrder < 2 || c.WOrder > 64 || c.WOrder&(c.WOrder-1) != 0 {
		return fmt.Errorf("%w: %s: width %d, %d masters (2, 4 or 8), %d ID bits, W order queue %d", ErrInvalid, what, W, c.Masters, c.IDBits, c.WOrder)
	}
	return nil
}

// axiArbiter grants one of the requests round robin: the grant is held
// while the granted request stays up and is not yet taken (an AXI valid
// may not drop or change until ready). It returns the one-hot grants.
func axiArbiter(m *Module, name string, reqs []Expr, taken Expr) []*Signal {
	N := len(reqs)
	SB := log2(N)
	last := m.RegDecl(name+"_last", SB, "the master granted last")
	hold := m.RegDecl(name+"_hold", 1, "a granted address waits for its ready")
	held := m.RegDecl(name+"_held", SB, "the master it belongs to")
	grants := make([]*Signal, N)
	for j, free := range roundRobin(reqs, last) {
		grants[j] = m.WireOf(fmt.Sprintf("%s_g%d", name, j), Sel(hold, Eq(held, C(SB, uint64(j))), free), "")
	}
	var idx []Expr
	for j := 0; j < N; j++ {
		idx = append(idx, gate(grants[j], C(SB, uint64(j))))
	}
	gi := m.WireOf(name+"_idx", RedOrParts(idx), "the granted master")
	anyG := m.WireOf(name+"_any", RedOrParts(toExprs(grants)), "")
	m.Drive(last, big.NewInt(0), gi, And(anyG, taken))
	m.Drive(hold, big.NewInt(0), And(anyG, Not(taken)), nil)
	m.Drive(held, big.NewInt(0), gi, nil)
	return grants
}

// roundRobin grants request j when it is up and no request after last and
// before j (cyclically) is: the requests as a round-robin arbiter sees
// them after granting last.
func roundRobin(reqs []Expr, last *Signal) []Expr {
	N := len(reqs)
	var out []Expr
	for j := 0; j < N; j++ {
		var terms []Expr
		for l := 0; l < N; l++ {
			var before []Expr
			for k := (l + 1) % N; k != j; k = (k + 1) % N {
				before = append(before, reqs[k])
			}
			t := Eq(last, C(last.W, uint64(l)))
			if len(before) > 0 {
				t = And(t, Not(RedOrParts(before)))
			}
			terms = append(terms, t)
		}
		out = append(out, And(reqs[j], RedOrParts(terms)))
	}
	return out
}

func toExprs(s []*Signal) []Expr {
	xs := make([]Expr, len(s))
	for i, x := range s {
		xs[i] = x
	}
	return xs
}

// muxGate is the OR of xs[i] gated by sel[i] (one-hot).
func muxGate(sel []*Signal, xs []Expr) Expr {
	var parts []Expr
	for i := range xs {
		parts = append(parts, gate(sel[i], xs[i]))
	}
	return RedOrParts(parts)
}

// AXIRdMux builds axi_rd_mux_m<N>_w<W>: N AXI4 read masters (s<i>_axi_ar*,
// r*) onto one (m_axi_*).
func AXIRdMux(cfg AXIMuxConfig) (*Module, error) {
	if err := cfg.check("axi_rd_mux"); err != nil {
		return nil, err
	}
	W, N, I := cfg.Width, cfg.Masters, cfg.IDBits
	SB := log2(N)
	m := NewModule(fmt.Sprintf("axi_rd_mux_m%d_w%d", N, W), "AMBA AXI4 (read channels)",
		fmt.Sprintf("Merges %d AXI4 read masters into one: the read addresses of the masters are granted round robin (a granted address stays until taken) and go out with the master's number above its %d ID bits (m_axi_arid is %d bits); read data comes back to the master the top bits of m_axi_rid name, with its own ID. Bursts, their lengths and the order of responses per ID are untouched; the slave may interleave responses of different IDs.", N, I, I+SB),
		"No register on the paths: arvalid/arready and rvalid/rready pass through combinationally (ready never depends on valid of the same channel inside the mux).",
	)
	m.Clock()
	m.ResetPort()
	type rdPort struct{ arID, arAddr, arLen, arSize, arBurst, arValid, arReady, rID, rData, rResp, rLast, rValid, rReady *Signal }
	var ps []rdPort
	for i := 0; i < N; i++ {
		p := fmt.Sprintf("s%d_axi_", i)
		ps = append(ps, rdPort{
			arID: m.Input(p+"arid", I, fmt.Sprintf("master %d", i)), arAddr: m.Input(p+"araddr", 64, ""),
			arLen: m.Input(p+"arlen", 8, ""), arSize: m.Input(p+"arsize", 3, ""), arBurst: m.Input(p+"arburst", 2, ""),
			arValid: m.Input(p+"arvalid", 1, ""), arReady: m.Output(p+"arready", 1, ""),
			rID: m.Output(p+"rid", I, ""), rData: m.Output(p+"rdata", W, ""), rResp: m.Output(p+"rresp", 2, ""),
			rLast: m.Output(p+"rlast", 1, ""), rValid: m.Output(p+"rvalid", 1, ""), rReady: m.Input(p+"rready", 1, ""),
		})
	}
	arID := m.Output("m_axi_arid", I+SB, "master number, then its ID")
	arAddr := m.Output("m_axi_araddr", 64, "")
	arLen := m.Output("m_axi_arlen", 8, "")
	arSize := m.Output("m_axi_arsize", 3, "")
	arBurst := m.Output("m_axi_arburst", 2, "")
	arValid := m.Output("m_axi_arvalid", 1, "")
	arReady := m.Input("m_axi_arready", 1, "")
	rID := m.Input("m_axi_rid", I+SB, "")
	rData := m.Input("m_axi_rdata", W, "")
	rResp := m.Input("m_axi_rresp", 2, "")
	rLast := m.Input("m_axi_rlast", 1, "")
	rValid := m.Input("m_axi_rvalid", 1, "")
	rReady := m.Output("m_axi_rready", 1, "")

	var reqs []Expr
	for _, p := range ps {
		reqs = append(reqs, p.arValid)
	}
	g := axiArbiter(m, "ar", reqs, arReady)
	sel := func(f func(rdPort) Expr) Expr {
		var xs []Expr
		for _, p := range ps {
			xs = append(xs, f(p))
		}
		return muxGate(g, xs)
	}
	var ids []Expr
	for i, p := range ps {
		ids = append(ids, Cat(C(SB, uint64(i)), p.arID))
	}
	m.Assign(arID, muxGate(g, ids))
	m.Assign(arAddr, sel(func(p rdPort) Expr { return p.arAddr }))
	m.Assign(arLen, sel(func(p rdPort) Expr { return p.arLen }))
	m.Assign(arSize, sel(func(p rdPort) Expr { return p.arSize }))
	m.Assign(arBurst, sel(func(p rdPort) Expr { return p.arBurst }))
	m.Assign(arValid, sel(func(p rdPort) Expr { return p.arValid }))
	for i, p := range ps {
		m.Assign(p.arReady, And(g[i], arReady))
	}
	to := m.WireOf("r_to", Bits(rID, I+SB-1, I), "the master a read response belongs to")
	var rr []Expr
	for i, p := range ps {
		here := m.WireOf(fmt.Sprintf("r_to%d", i), And(rValid, Eq(to, C(SB, uint64(i)))), "")
		m.Assign(p.rValid, here)
		m.Assign(p.rID, gate(here, Bits(rID, I-1, 0)))
		m.Assign(p.rData, gate(here, rData))
		m.Assign(p.rResp, gate(here, rResp))
		m.Assign(p.rLast, And(here, rLast))
		rr = append(rr, And(Eq(to, C(SB, uint64(i))), p.rReady))
	}
	m.Assign(rReady, RedOrParts(rr))
	return m, m.Validate()
}

// AXIWrMux builds axi_wr_mux_m<N>_w<W>: N AXI4 write masters (s<i>_axi_aw*,
// w*, b*) onto one (m_axi_*).
func AXIWrMux(cfg AXIMuxConfig) (*Module, error) {
	if err := cfg.check("axi_wr_mux"); err != nil {
		return nil, err
	}
	W, N, I, D := cfg.Width, cfg.Masters, cfg.IDBits, cfg.WOrder
	L := W / 8
	SB := log2(N)
	DB := log2(D)
	m := NewModule(fmt.Sprintf("axi_wr_mux_m%d_w%d", N, W), "AMBA AXI4 (write channels)",
		fmt.Sprintf("Merges %d AXI4 write masters into one: write addresses are granted round robin (a granted address stays until taken) and go out with the master's number above its %d ID bits (m_axi_awid is %d bits); each address taken queues its master's number (%d entries), and the W beats go out in that order, a whole burst (to wlast) from one master before the next, so the slave sees write data in address order; write responses go back to the master the top bits of m_axi_bid name, with its own ID.", N, I, I+SB, D),
		"A master's W beats pass only once its address was taken (a master that sends W before AW waits); AW waits while the order queue is full. awvalid/awready, wvalid/wready and bvalid/bready pass through combinationally.",
	)
	m.Clock()
	rst := m.ResetPort()
	type wrPort struct {
		awID, awAddr, awLen, awSize, awBurst, awValid, awReady *Signal
		wData, wStrb, wLast, wValid, wReady                    *Signal
		bID, bResp, bValid, bReady                             *Signal
	}
	var ps []wrPort
	for i := 0; i < N; i++ {
		p := fmt.Sprintf("s%d_axi_", i)
		ps = append(ps, wrPort{
			awID: m.Input(p+"awid", I, fmt.Sprintf("master %d", i)), awAddr: m.Input(p+"awaddr", 64, ""),
			awLen: m.Input(p+"awlen", 8, ""), awSize: m.Input(p+"awsize", 3, ""), awBurst: m.Input(p+"awburst", 2, ""),
			awValid: m.Input(p+"awvalid", 1, ""), awReady: m.Output(p+"awready", 1, ""),
			wData: m.Input(p+"wdata", W, ""), wStrb: m.Input(p+"wstrb", L, ""), wLast: m.Input(p+"wlast", 1, ""),
			wValid: m.Input(p+"wvalid", 1, ""), wReady: m.Output(p+"wready", 1, ""),
			bID: m.Output(p+"bid", I, ""), bResp: m.Output(p+"bresp", 2, ""), bValid: m.Output(p+"bvalid", 1, ""),
			bReady: m.Input(p+"bready", 1, ""),
		})
	}
	awID := m.Output("m_axi_awid", I+SB, "master number, then its ID")
	awAddr := m.Output("m_axi_awaddr", 64, "")
	awLen := m.Output("m_axi_awlen", 8, "")
	awSize := m.Output("m_axi_awsize", 3, "")
	awBurst := m.Output("m_axi_awburst", 2, "")
	awValid := m.Output("m_axi_awvalid", 1, "")
	awReady := m.Input("m_axi_awready", 1, "")
	wData := m.Output("m_axi_wdata", W, "")
	wStrb := m.Output("m_axi_wstrb", L, "")
	wLast := m.Output("m_axi_wlast", 1, "")
	wValid := m.Output("m_axi_wvalid", 1, "")
	wReady := m.Input("m_axi_wready", 1, "")
	bID := m.Input("m_axi_bid", I+SB, "")
	bResp := m.Input("m_axi_bresp", 2, "")
	bValid := m.Input("m_axi_bvalid", 1, "")
	bReady := m.Output("m_axi_bready", 1, "")

	// The order queue: a ring of master numbers.
	head := m.RegDecl("wo_head", DB+1, "")
	tail := m.RegDecl("wo_tail", DB+1, "")
	used := m.WireOf("wo_used", Sub(tail, head), "")
	room := m.WireOf("wo_room", Not(Bit(used, DB)), "")
	var reqs []Expr
	for _, p := range ps {
		reqs = append(reqs, And(p.awValid, room))
	}
	awGo := m.Wire("aw_go", 1, "an address is taken")
	g := axiArbiter(m, "aw", reqs, awReady)
	sel := func(f func(wrPort) Expr) Expr {
		var xs []Expr
		for _, p := range ps {
			xs = append(xs, f(p))
		}
		return muxGate(g, xs)
	}
	var ids []Expr
	for i, p := range ps {
		ids = append(ids, Cat(C(SB, uint64(i)), p.awID))
	}
	m.Assign(awID, muxGate(g, ids))
	m.Assign(awAddr, sel(func(p wrPort) Expr { return p.awAddr }))
	m.Assign(awLen, sel(func(p wrPort) Expr { return p.awLen }))
	m.Assign(awSize, sel(func(p wrPort) Expr { return p.awSize }))
	m.Assign(awBurst, sel(func(p wrPort) Expr { return p.awBurst }))
	m.Assign(awValid, sel(func(p wrPort) Expr { return p.awValid }))
	for i, p := range ps {
		m.Assign(p.awReady, And(g[i], awReady))
	}
	m.Assign(awGo, And(awValid, awReady))
	gi := m.WireOf("aw_gidx", muxGate(g, func() []Expr {
		var xs []Expr
		for i := range ps {
			xs = append(xs, C(SB, uint64(i)))
		}
		return xs
	}()), "")
	var slots []Expr
	for k := 0; k < D; k++ {
		here := m.WireOf(fmt.Sprintf("wo%d_w", k), And(awGo, Eq(Bits(tail, DB-1, 0), C(DB, uint64(k)))), "")
		slots = append(slots, m.Reg(fmt.Sprintf("wo%d", k), SB, big.NewInt(0), gi, here, ""))
	}
	m.Drive(tail, big.NewInt(0), Add(tail, zext(awGo, DB+1)), nil)
	var hb []Expr
	for i := 0; i < DB; i++ {
		hb = append(hb, Bit(head, i))
	}
	wFrom := m.WireOf("w_from", muxTree(hb, slots), "the master whose W beats are due")
	wHave := m.WireOf("w_have", And(RedOr(used), Not(rst)), "")
	wSel := make([]*Signal, N)
	for i := range ps {
		wSel[i] = m.WireOf(fmt.Sprintf("w_sel%d", i), And(wHave, Eq(wFrom, C(SB, uint64(i)))), "")
	}
	wsel := func(f func(wrPort) Expr) Expr {
		var xs []Expr
		for _, p := range ps {
			xs = append(xs, f(p))
		}
		return muxGate(wSel, xs)
	}
	m.Assign(wData, wsel(func(p wrPort) Expr { return p.wData }))
	m.Assign(wStrb, wsel(func(p wrPort) Expr { return p.wStrb }))
	m.Assign(wLast, wsel(func(p wrPort) Expr { return p.wLast }))
	m.Assign(wValid, wsel(func(p wrPort) Expr { return p.wValid }))
	for i, p := range ps {
		m.Assign(p.wReady, And(wSel[i], wReady))
	}
	done := m.WireOf("w_burst_done", And(wValid, wReady, wLast), "a burst's last beat goes")
	m.Drive(head, big.NewInt(0), Add(head, zext(done, DB+1)), nil)

	to := m.WireOf("b_to", Bits(bID, I+SB-1, I), "the master a write response belongs to")
	var br []Expr
	for i, p := range ps {
		here := m.WireOf(fmt.Sprintf("b_to%d", i), And(bValid, Eq(to, C(SB, uint64(i)))), "")
		m.Assign(p.bValid, here)
		m.Assign(p.bID, gate(here, Bits(bID, I-1, 0)))
		m.Assign(p.bResp, gate(here, bResp))
		br = append(br, And(Eq(to, C(SB, uint64(i))), p.bReady))
	}
	m.Assign(bReady, RedOrParts(br))
	return m, m.Validate()
}
