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

// AXIMuxDefault merges the card's masters: reads of card_tx, card_rx and
// card_rx's RQ WQE fetch (CardRdMaster*, the fourth slot unused), writes
// of card_tx, card_rx, card_cq and card_stat (CardWrMaster*).
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
// may not drop or change until ready). It returns the one-hot grants and
// the granted master's number.
func axiArbiter(m *Module, name string, reqs []Expr, taken Expr) ([]*Signal, *Signal) {
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
	return grants, gi
}

// axiAddr is an AXI4 read or write address channel.
type axiAddr struct{ id, addr, len, size, burst, valid, ready *Signal }

// axiAddrPorts declares an address channel named prefix+ch+"id"...: a
// slave port (in: the channel comes in) or a master port, idBits wide IDs.
func axiAddrPorts(m *Module, prefix, ch string, idBits int, in bool, doc string) axiAddr {
	fwd, back := m.Output, m.Input
	if in {
		fwd, back = m.Input, m.Output
	}
	n := prefix + ch
	return axiAddr{
		id: fwd(n+"id", idBits, doc), addr: fwd(n+"addr", 64, ""), len: fwd(n+"len", 8, ""),
		size: fwd(n+"size", 3, ""), burst: fwd(n+"burst", 2, ""), valid: fwd(n+"valid", 1, ""), ready: back(n+"ready", 1, ""),
	}
}

// muxAddr drives out with the address of the master g grants, its number
// above its ID bits, and each master's ready with out's ready when granted.
func muxAddr(m *Module, g []*Signal, masters []axiAddr, out axiAddr) {
	SB := log2(len(masters))
	sel := func(f func(axiAddr) Expr) Expr { return muxOf(g, masters, f) }
	var ids []Expr
	for i, a := range masters {
		ids = append(ids, Cat(C(SB, uint64(i)), a.id))
	}
	m.Assign(out.id, muxGate(g, ids))
	m.Assign(out.addr, sel(func(a axiAddr) Expr { return a.addr }))
	m.Assign(out.len, sel(func(a axiAddr) Expr { return a.len }))
	m.Assign(out.size, sel(func(a axiAddr) Expr { return a.size }))
	m.Assign(out.burst, sel(func(a axiAddr) Expr { return a.burst }))
	m.Assign(out.valid, sel(func(a axiAddr) Expr { return a.valid }))
	for i, a := range masters {
		m.Assign(a.ready, And(g[i], out.ready))
	}
}

// routeResp returns the response on valid to the master the top bits of id
// name (name+"_to<i>" is that master's valid, given to each to drive its
// own signals), and the merged ready.
func routeResp(m *Module, name string, id *Signal, valid Expr, idBits, masters int, each func(i int, here, ownID Expr) (ready Expr)) Expr {
	SB := log2(masters)
	to := m.WireOf(name+"_to", Bits(id, idBits+SB-1, idBits), "the master a response belongs to")
	var rdy []Expr
	for i := 0; i < masters; i++ {
		here := m.WireOf(fmt.Sprintf("%s_to%d", name, i), And(valid, Eq(to, C(SB, uint64(i)))), "")
		rdy = append(rdy, And(Eq(to, C(SB, uint64(i))), each(i, here, gate(here, Bits(id, idBits-1, 0)))))
	}
	return RedOrParts(rdy)
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

// muxOf is muxGate over field f of each of xs.
func muxOf[T any](sel []*Signal, xs []T, f func(T) Expr) Expr {
	es := make([]Expr, len(xs))
	for i, x := range xs {
		es[i] = f(x)
	}
	return muxGate(sel, es)
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
	type rdPort struct {
		ar                                       axiAddr
		rID, rData, rResp, rLast, rValid, rReady *Signal
	}
	var ps []rdPort
	var ars []axiAddr
	var reqs []Expr
	for i := 0; i < N; i++ {
		p := fmt.Sprintf("s%d_axi_", i)
		ps = append(ps, rdPort{
			ar:  axiAddrPorts(m, p, "ar", I, true, fmt.Sprintf("master %d", i)),
			rID: m.Output(p+"rid", I, ""), rData: m.Output(p+"rdata", W, ""), rResp: m.Output(p+"rresp", 2, ""),
			rLast: m.Output(p+"rlast", 1, ""), rValid: m.Output(p+"rvalid", 1, ""), rReady: m.Input(p+"rready", 1, ""),
		})
		ars = append(ars, ps[i].ar)
		reqs = append(reqs, ps[i].ar.valid)
	}
	ar := axiAddrPorts(m, "m_axi_", "ar", I+SB, false, "master number, then its ID")
	rID := m.Input("m_axi_rid", I+SB, "")
	rData := m.Input("m_axi_rdata", W, "")
	rResp := m.Input("m_axi_rresp", 2, "")
	rLast := m.Input("m_axi_rlast", 1, "")
	rValid := m.Input("m_axi_rvalid", 1, "")
	rReady := m.Output("m_axi_rready", 1, "")

	g, _ := axiArbiter(m, "ar", reqs, ar.ready)
	muxAddr(m, g, ars, ar)
	m.Assign(rReady, routeResp(m, "r", rID, rValid, I, N, func(i int, here, id Expr) Expr {
		p := ps[i]
		m.Assign(p.rValid, here)
		m.Assign(p.rID, id)
		m.Assign(p.rData, gate(here, rData))
		m.Assign(p.rResp, gate(here, rResp))
		m.Assign(p.rLast, And(here, rLast))
		return p.rReady
	}))
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
		aw                                  axiAddr
		wData, wStrb, wLast, wValid, wReady *Signal
		bID, bResp, bValid, bReady          *Signal
	}
	var ps []wrPort
	var aws []axiAddr
	for i := 0; i < N; i++ {
		p := fmt.Sprintf("s%d_axi_", i)
		ps = append(ps, wrPort{
			aw:    axiAddrPorts(m, p, "aw", I, true, fmt.Sprintf("master %d", i)),
			wData: m.Input(p+"wdata", W, ""), wStrb: m.Input(p+"wstrb", L, ""), wLast: m.Input(p+"wlast", 1, ""),
			wValid: m.Input(p+"wvalid", 1, ""), wReady: m.Output(p+"wready", 1, ""),
			bID: m.Output(p+"bid", I, ""), bResp: m.Output(p+"bresp", 2, ""), bValid: m.Output(p+"bvalid", 1, ""),
			bReady: m.Input(p+"bready", 1, ""),
		})
		aws = append(aws, ps[i].aw)
	}
	aw := axiAddrPorts(m, "m_axi_", "aw", I+SB, false, "master number, then its ID")
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
		reqs = append(reqs, And(p.aw.valid, room))
	}
	g, gi := axiArbiter(m, "aw", reqs, aw.ready)
	muxAddr(m, g, aws, aw)
	awGo := m.WireOf("aw_go", And(aw.valid, aw.ready), "an address is taken")
	var slots []Expr
	for k := 0; k < D; k++ {
		here := m.WireOf(fmt.Sprintf("wo%d_w", k), And(awGo, Eq(Bits(tail, DB-1, 0), C(DB, uint64(k)))), "")
		slots = append(slots, m.Reg(fmt.Sprintf("wo%d", k), SB, big.NewInt(0), gi, here, ""))
	}
	m.Drive(tail, big.NewInt(0), Add(tail, zext(awGo, DB+1)), nil)
	wFrom := m.WireOf("w_from", muxTree(selBits(head, 0, DB), slots), "the master whose W beats are due")
	wHave := m.WireOf("w_have", And(RedOr(used), Not(rst)), "")
	wSel := make([]*Signal, N)
	for i := range ps {
		wSel[i] = m.WireOf(fmt.Sprintf("w_sel%d", i), And(wHave, Eq(wFrom, C(SB, uint64(i)))), "")
	}
	wsel := func(f func(wrPort) Expr) Expr { return muxOf(wSel, ps, f) }
	m.Assign(wData, wsel(func(p wrPort) Expr { return p.wData }))
	m.Assign(wStrb, wsel(func(p wrPort) Expr { return p.wStrb }))
	m.Assign(wLast, wsel(func(p wrPort) Expr { return p.wLast }))
	m.Assign(wValid, wsel(func(p wrPort) Expr { return p.wValid }))
	for i, p := range ps {
		m.Assign(p.wReady, And(wSel[i], wReady))
	}
	done := m.WireOf("w_burst_done", And(wValid, wReady, wLast), "a burst's last beat goes")
	m.Drive(head, big.NewInt(0), Add(head, zext(done, DB+1)), nil)

	m.Assign(bReady, routeResp(m, "b", bID, bValid, I, N, func(i int, here, id Expr) Expr {
		p := ps[i]
		m.Assign(p.bValid, here)
		m.Assign(p.bID, id)
		m.Assign(p.bResp, gate(here, bResp))
		return p.bReady
	}))
	return m, m.Validate()
}
