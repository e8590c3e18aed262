package sim

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/openiwarp/openiwarp/golden/cycle"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// plPorts are the ports of placement_w<W> in its vector layout.
type plPorts struct {
	s                                          AXISPorts
	rst, uLen, uQP, uPD, uRev                  Port
	regWr, regAddr, regData                    Port
	dmaReady, hostReady, termReady             Port
	initDone                                   Port
	dmaAddr, dmaData, dmaStrb, dmaValid, dmaQP Port
	hData, hKeep, hLast, hValid, hQP           Port
	hLen, hOp, hDDPLast, hQN, hMSN, hMO        Port
	hInv                                       Port
	tValid, tCause, tMDR, tSegLen, tHdr        Port
	tQP                                        Port
	dReady, dValid, dQP, dSTag, dTO, dLen      Port
	busy, tblWr                                Port
	drop, killV, killQP, clrV, clrQP           Port // the card's ports
	decV, decDest, decDead                     Port
	rdChk, rdIssV, rdIssQP, rdIssN             Port
	rdIssSTag, rdIssTO, rdIssLen               Port // the Read's sink
	chkReady                                   Port // the check port (not in the cycle model: idle here)
	// card_rx's receive key-check port and invalidation input: not in the
	// cycle model either; the harness never uses them, so they show ready
	// and idle (card_rx's co-simulation checks them).
	rxkReady, invReady, rxkValid, rxkFault, rxkAddr Port
}

func lookupPlPorts(l Layout) (plPorts, error) {
	var p plPorts
	var err error
	if p.s, err = StreamPorts(l, "s_axis"); err != nil {
		return p, err
	}
	ins := map[string]*Port{"rst": &p.rst, "s_axis_tuser_len": &p.uLen, "s_axis_tuser_qp": &p.uQP, "s_axis_tuser_pd": &p.uPD,
		"s_axis_tuser_rev": &p.uRev, "reg_wr_valid": &p.regWr, "reg_wr_addr": &p.regAddr, "reg_wr_data": &p.regData,
		"m_dma_ready": &p.dmaReady, "m_host_tready": &p.hostReady, "m_term_ready": &p.termReady, "m_done_ready": &p.dReady,
		"cfg_drop_after_fail": &p.drop, "s_kill_valid": &p.killV, "s_kill_qp": &p.killQP, "s_clear_valid": &p.clrV, "s_clear_qp": &p.clrQP,
		"cfg_read_check": &p.rdChk, "s_rd_issue_valid": &p.rdIssV, "s_rd_issue_qp": &p.rdIssQP, "s_rd_issue_count": &p.rdIssN,
		"s_rd_issue_stag": &p.rdIssSTag, "s_rd_issue_to": &p.rdIssTO, "s_rd_issue_len": &p.rdIssLen}
	outs := map[string]*Port{"init_done": &p.initDone, "m_dma_addr": &p.dmaAddr, "m_dma_data": &p.dmaData, "m_dma_strb": &p.dmaStrb, "m_dma_qp": &p.dmaQP,
		"m_dma_valid": &p.dmaValid, "m_host_tdata": &p.hData, "m_host_tkeep": &p.hKeep, "m_host_tlast": &p.hLast,
		"m_host_tvalid": &p.hValid, "m_host_qp": &p.hQP, "m_host_len": &p.hLen, "m_host_opcode": &p.hOp,
		"m_host_last": &p.hDDPLast, "m_host_qn": &p.hQN, "m_host_msn": &p.hMSN, "m_host_mo": &p.hMO,
		"m_host_inv_stag": &p.hInv, "m_term_valid": &p.tValid, "m_term_cause": &p.tCause, "m_term_mdr": &p.tMDR,
		"m_term_seglen": &p.tSegLen, "m_term_hdr": &p.tHdr, "m_term_qp": &p.tQP,
		"m_done_valid": &p.dValid, "m_done_qp": &p.dQP, "m_done_stag": &p.dSTag, "m_done_to": &p.dTO, "m_done_len": &p.dLen,
		"busy": &p.busy, "m_tbl_wr": &p.tblWr, "s_chk_ready": &p.chkReady, "m_dec_valid": &p.decV, "m_dec_dest": &p.decDest, "m_dec_dead": &p.decDead,
		"s_rxk_ready": &p.rxkReady, "s_inv_ready": &p.invReady, "m_rxk_valid": &p.rxkValid, "m_rxk_fault": &p.rxkFault, "m_rxk_addr": &p.rxkAddr}
	for name, dst := range ins {
		if *dst, err = l.In(name); err != nil {
			return p, err
		}
	}
	for name, dst := range outs {
		if *dst, err = l.Out(name); err != nil {
			return p, err
		}
	}
	return p, nil
}

// plModel adapts cycle.Placement to vectors. It also decodes register
// writes with the register map (gen.PlacementRegMap, the source the RTL
// decoder is generated from) into table commands.
type plModel struct {
	m       *cycle.Placement
	p       plPorts
	rm      *gen.RegMap
	staged  map[uint32]uint32
	data    []byte
	hdr     []byte
	lanes   int
	offsets map[string]uint32
}

func newPlModel(l Layout, cfg gen.PlacementConfig) (*plModel, error) {
	m, err := cycle.NewPlacement(cfg.Width, cfg.TableDepth, cfg.PBLDepth)
	if err != nil {
		return nil, err
	}
	p, err := lookupPlPorts(l)
	if err != nil {
		return nil, err
	}
	rm := gen.PlacementRegMap()
	offs := map[string]uint32{}
	for _, r := range rm.Regs {
		offs[r.Name] = r.Offset
	}
	return &plModel{m: m, p: p, rm: rm, staged: map[uint32]uint32{}, data: make([]byte, cfg.Width/8),
		hdr: make([]byte, gen.PlacementHdrBytes), lanes: cfg.Width / 8, offsets: offs}, nil
}

func (a *plModel) field(reg, name string) uint32 {
	f := a.rm.Field(reg, name)
	return a.staged[a.offsets[reg]] >> f.Lo & f.Mask()
}

func (a *plModel) reg64(lo, hi string) uint64 {
	return uint64(a.staged[a.offsets[hi]])<<32 | uint64(a.staged[a.offsets[lo]])
}

// command turns a register write into a table command, staging the rest.
func (a *plModel) command(addr, data uint32) cycle.PlacementCmd {
	r := ""
	for _, reg := range a.rm.Regs {
		if reg.Offset == addr {
			r = reg.Name
		}
	}
	switch r {
	case "":
		return cycle.PlacementCmd{}
	case "STAG_COMMIT":
		return cycle.PlacementCmd{Kind: cycle.CmdCommit, Index: a.field("STAG_INDEX", "INDEX"), Entry: cycle.PlacementEntry{
			Entry: mem.Entry{Valid: a.field("STAG_CTRL", "VALID") != 0, Key: uint8(a.field("STAG_CTRL", "KEY")),
				PD: a.field("STAG_PD", "PD"), QP: a.field("STAG_QP", "QP"), Base: a.reg64("STAG_BASE_LO", "STAG_BASE_HI"),
				Length: a.reg64("STAG_LEN_LO", "STAG_LEN_HI"), Access: mem.Access(a.field("STAG_CTRL", "ACCESS"))},
			Paged: a.field("STAG_CTRL", "PAGED") != 0, Addr: a.reg64("STAG_ADDR_LO", "STAG_ADDR_HI"), PBL: a.field("STAG_PBL", "SLOT")}}
	case "STAG_INVALIDATE":
		f := a.rm.Field(r, "INDEX")
		return cycle.PlacementCmd{Kind: cycle.CmdInvalidate, Index: data >> f.Lo & f.Mask()}
	case "CONN_CLEAR":
		return cycle.PlacementCmd{Kind: cycle.CmdConnClear, QP: data}
	case "CTRL":
		f := a.rm.Field(r, "DROP_AFTER_FAIL")
		return cycle.PlacementCmd{Kind: cycle.CmdControl, DropAfterFail: data>>f.Lo&f.Mask() != 0}
	case "PBL_COMMIT":
		page := a.rm.Field("PBL_ADDR_LO", "PAGE")
		return cycle.PlacementCmd{Kind: cycle.CmdPage, Slot: a.field("PBL_INDEX", "SLOT"),
			Addr: uint64(a.staged[a.offsets["PBL_ADDR_HI"]])<<32 | uint64(a.staged[a.offsets["PBL_ADDR_LO"]]&(page.Mask()<<page.Lo))}
	}
	a.staged[addr] = data
	return cycle.PlacementCmd{}
}

func (a *plModel) Step(in, out []uint32) {
	p := a.p
	p.s.Data.Bytes(in, a.data)
	x := cycle.PlacementIn{Reset: p.rst.Get(in) != 0, Data: a.data, Keep: p.s.Keep.Get(in), Valid: p.s.Valid.Get(in) != 0,
		Last: p.s.Last.Get(in) != 0, Len: uint16(p.uLen.Get(in)), QP: uint32(p.uQP.Get(in)), PD: uint32(p.uPD.Get(in)),
		Rev: p.uRev.Get(in) != 0, DMAReady: p.dmaReady.Get(in) != 0, HostReady: p.hostReady.Get(in) != 0, TermReady: p.termReady.Get(in) != 0, DoneReady: p.dReady.Get(in) != 0,
		DropAfterFail: p.drop.Get(in) != 0, Kill: p.killV.Get(in) != 0, KillQP: uint32(p.killQP.Get(in)),
		Clear: p.clrV.Get(in) != 0, ClearQP: uint32(p.clrQP.Get(in)),
		ReadCheck: p.rdChk.Get(in) != 0, RdIssue: p.rdIssV.Get(in) != 0, RdIssueQP: uint32(p.rdIssQP.Get(in)), RdIssueCount: uint16(p.rdIssN.Get(in)),
		RdIssueSink: cycle.ReadSink{STag: uint32(p.rdIssSTag.Get(in)), TO: p.rdIssTO.Get(in), Len: uint32(p.rdIssLen.Get(in))}}
	if x.Reset {
		clear(a.staged)
	} else if p.regWr.Get(in) != 0 {
		x.Cmd = a.command(uint32(p.regAddr.Get(in)), uint32(p.regData.Get(in)))
	}
	o := a.m.Step(x)
	p.s.Ready.Set(out, b2u(o.SReady))
	p.initDone.Set(out, b2u(o.InitDone))
	// golden/cycle.Placement does not model the check port: the benches
	// leave s_chk_valid low, where its only output is s_chk_ready, which
	// follows init_done (TestPlacementCheckPort verifies the port).
	p.chkReady.Set(out, b2u(o.InitDone))
	p.rxkReady.Set(out, b2u(o.InitDone))
	p.invReady.Set(out, b2u(o.InitDone && x.Cmd.Kind != cycle.CmdCommit && x.Cmd.Kind != cycle.CmdInvalidate))
	p.rxkValid.Set(out, 0)
	p.rxkFault.Set(out, 0)
	p.rxkAddr.Set(out, 0)
	p.dmaValid.Set(out, b2u(o.DMAValid))
	p.dmaAddr.Set(out, o.DMAAddr)
	p.dmaData.SetBytes(out, o.DMAData)
	p.dmaStrb.Set(out, o.DMAStrb)
	p.dmaQP.Set(out, uint64(o.DMAQP))
	p.hValid.Set(out, b2u(o.HostValid))
	p.hData.SetBytes(out, o.HostData)
	p.hKeep.Set(out, o.HostKeep)
	p.hLast.Set(out, b2u(o.HostLast))
	p.hQP.Set(out, uint64(o.HostQP))
	p.hLen.Set(out, uint64(o.HostLen))
	p.hOp.Set(out, uint64(o.HostOpcode))
	p.hDDPLast.Set(out, b2u(o.HostDDPLast))
	p.hQN.Set(out, uint64(o.HostQN))
	p.hMSN.Set(out, uint64(o.HostMSN))
	p.hMO.Set(out, uint64(o.HostMO))
	p.hInv.Set(out, uint64(o.HostInv))
	p.tValid.Set(out, b2u(o.TermValid))
	p.tCause.Set(out, uint64(o.TermCause))
	p.tMDR.Set(out, b2u(o.TermM)<<2|b2u(o.TermD)<<1|b2u(o.TermR))
	p.tSegLen.Set(out, uint64(o.TermSegLen))
	p.tHdr.SetBytes(out, o.TermHdr[:])
	p.tQP.Set(out, uint64(o.TermQP))
	p.dValid.Set(out, b2u(o.DoneValid))
	p.dQP.Set(out, uint64(o.DoneQP))
	p.dSTag.Set(out, uint64(o.DoneSTag))
	p.dTO.Set(out, o.DoneTO)
	p.dLen.Set(out, uint64(o.DoneLen))
	p.busy.Set(out, b2u(o.Busy))
	p.tblWr.Set(out, b2u(o.TableWr))
	p.decV.Set(out, b2u(o.DecValid))
	p.decDest.Set(out, uint64(o.DecDest))
	p.decDead.Set(out, b2u(o.DecDead))
}

// regWrite is one register write: byte offset and value.
type regWrite struct{ addr, data uint32 }

// PlacementBlock is the loaded Verilated placement engine of one shipped
// configuration: what NewEngine makes instances of.
type PlacementBlock struct {
	Config gen.PlacementConfig
	Module *gen.Module
	Layout Layout
	lib    *Lib
	p      plPorts
}

// LoadPlacement builds (with make, when hw/rtl is newer than the library)
// and loads the Verilated placement engine of cfg, which must be the
// shipped configuration of a width: gen.PlacementDefault(w) for w in
// gen.PlacementWidths (hw/rtl holds no other).
func LoadPlacement(cfg gen.PlacementConfig) (*PlacementBlock, error) {
	if cfg != gen.PlacementDefault(cfg.Width) {
		return nil, fmt.Errorf("%w: placement configuration %+v: hw/rtl ships gen.PlacementDefault(width) only", ErrLibrary, cfg)
	}
	m, err := gen.Placement(cfg)
	if err != nil {
		return nil, err
	}
	b := &PlacementBlock{Config: cfg, Module: m, Layout: LayoutOf(m)}
	path := LibPath(m.Name, false)
	if err := Build(path); err != nil {
		return nil, fmt.Errorf("building the Verilated %s (make, verilator and g++ are needed): %w", m.Name, err)
	}
	if b.lib, err = Load(path); err != nil {
		return nil, err
	}
	if b.lib.InWords != b.Layout.InWords || b.lib.OutWords != b.Layout.OutWords {
		return nil, fmt.Errorf("%w: %s has %d/%d words per cycle, the generator %d/%d: rebuild it",
			ErrLibrary, path, b.lib.InWords, b.lib.OutWords, b.Layout.InWords, b.Layout.OutWords)
	}
	if b.p, err = lookupPlPorts(b.Layout); err != nil {
		return nil, fmt.Errorf("%s: %w", m.Name, err)
	}
	return b, nil
}

// PlacementSegment is one ULPDU (DDP segment, headers included) with the
// connection sideband the MPA receiver gives the engine.
type PlacementSegment struct {
	ULPDU  []byte
	QP, PD uint32 // the connection (stream) and its protection domain
	Rev    bool   // DDP/RDMAP version 1 (MPA revision 1 or 2); false: version 0
}

// PlacementDMA is one DMA write of the engine: the W/8-byte aligned host
// block at Addr, with byte strobes (lane i is Addr+i; Data holds every
// lane, zero where Strb is clear).
type PlacementDMA struct {
	Addr uint64
	Strb uint64
	Data []byte
}

// PlacementHost is one untagged segment on the host queue, with the header
// fields the engine parsed.
type PlacementHost struct {
	QP     uint32
	Len    uint16
	Data   []byte // the ULPDU bytes the engine handed over
	Opcode rdmap.Opcode
	Last   bool // DDP L flag
	QN     uint32
	MSN    uint32
	MO     uint32
	Inv    uint32 // Invalidate STag field (RsvdULP1)
}

// PlacementTerm is one Terminate event: a segment that failed a check and
// wrote nothing.
type PlacementTerm struct {
	Cause   rdmap.Cause
	M, D, R bool // Terminate Hdr Ctrl flags (RFC 5040 Fig. 10)
	SegLen  uint16
	Hdr     [cycle.PlacementHdrBytes]byte // the ULPDU's first bytes
	QP      uint32
}

// PlacementDone is a placed Read Response segment with L=1.
type PlacementDone struct {
	QP, STag uint32
	TO       uint64
	Len      uint16
}

// PlacementResult is what the engine put out while it ran a call's
// register writes and segments. Its slices are valid until the engine's
// next call.
type PlacementResult struct {
	DMA    []PlacementDMA
	Host   []PlacementHost
	Terms  []PlacementTerm
	Dones  []PlacementDone
	Cycles uint64 // cycles run (and checked) by the call
}

// Errors of a PlacementEngine (match with errors.Is).
var (
	// ErrPlacementInput: a segment the engine's port cannot carry.
	ErrPlacementInput = errors.New("sim: segment the placement engine cannot take")
	// ErrPlacementStalled: the engine stopped taking beats.
	ErrPlacementStalled = errors.New("sim: placement engine stalled")
)

// placementStall bounds the cycles a beat may wait for s_axis_tready once
// the engine is initialised: with every output channel ready it is low for
// one cycle at most; under Stall, for as long as the DMA channel is held.
const placementStall = 1 << 16

// PlacementEngine is one instance of the Verilated placement engine with
// its cycle model (golden/cycle.Placement) beside it: every cycle it runs,
// every output port of the RTL is compared with the model's, and a
// difference is returned as a *Mismatch, after which the engine refuses
// to run. Segments stream in at full speed (one beat per cycle, every
// output channel ready), each call running until the pipeline is empty, so
// a call's result holds everything its segments caused.
//
// The engine's STag table is programmed through its register port
// (RegWrite, docs/regmap.md): writes are queued and run, one per cycle,
// before the next call's segments (Flush runs them alone). A
// PlacementEngine is not safe for concurrent use.
type PlacementEngine struct {
	b     *PlacementBlock
	inst  *Instance
	model *plModel
	regs  []regWrite

	in, want []uint32 // one call's inputs and the model's outputs
	got      []uint32 // the RTL's outputs in a cycle that differs
	n        int      // cycles recorded
	cycles   uint64   // cycles run before this call
	gap      bool     // Stall's answer for the cycle being made
	initDone bool
	err      error

	res   PlacementResult
	arena []byte

	// Stall, if not nil, is asked every cycle of a call: gap leaves the
	// input idle that cycle (a valid gap, before any beat), hold drops
	// m_dma_ready. Tests run the engine under backpressure with it; by
	// default every cycle offers a beat and every channel is ready.
	Stall func() (gap, hold bool)
}

// NewEngine makes an engine: a fresh instance, reset, and run until its
// table sweep raised init_done (TableDepth cycles, all checked).
func (b *PlacementBlock) NewEngine() (*PlacementEngine, error) {
	m, err := newPlModel(b.Layout, b.Config)
	if err != nil {
		return nil, err
	}
	e := &PlacementEngine{b: b, inst: b.lib.New(), model: m}
	if err := e.Reset(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close frees the Verilated instance.
func (e *PlacementEngine) Close() {
	e.inst.Close()
}

// Config is the engine's configuration.
func (e *PlacementEngine) Config() gen.PlacementConfig { return e.b.Config }

// Cycles is the number of cycles run and checked so far.
func (e *PlacementEngine) Cycles() uint64 { return e.cycles }

// InitDone reports the engine's init_done output as of its last cycle.
func (e *PlacementEngine) InitDone() bool { return e.initDone }

// Err is the mismatch that stopped the engine, or nil.
func (e *PlacementEngine) Err() error { return e.err }

// RegWrite queues a write of v to the register at byte offset off of the
// block's register map (docs/regmap.md, host/driver/regs).
func (e *PlacementEngine) RegWrite(off, v uint32) error {
	if off%4 != 0 || off>>e.b.p.regAddr.Width != 0 {
		return fmt.Errorf("%w: register offset %#x (4-byte aligned, below %#x)", ErrPlacementInput, off, 1<<e.b.p.regAddr.Width)
	}
	e.regs = append(e.regs, regWrite{off, v})
	return nil
}

// Reset pulses rst for three cycles (queued register writes are dropped:
// the reset clears the table they were for), then runs until the engine
// has cleared its table and raised init_done.
func (e *PlacementEngine) Reset() error {
	if e.err != nil {
		return e.err
	}
	e.regs = e.regs[:0]
	e.begin()
	for range 3 {
		in := e.cycle()
		e.b.p.rst.Set(in, 1)
		e.step(in)
	}
	for limit := e.b.Config.TableDepth + 16; !e.modelInitDone(); limit-- {
		if limit == 0 {
			return fmt.Errorf("%w: %s: no init_done %d cycles after reset", ErrPlacementStalled, e.b.Module.Name, e.b.Config.TableDepth+16)
		}
		e.step(e.cycle())
	}
	_, err := e.finish()
	return err
}

// Flush runs the queued register writes.
func (e *PlacementEngine) Flush() (*PlacementResult, error) { return e.Place() }

// Place runs the queued register writes, then segs back to back, then idle
// cycles until the pipeline is empty, and returns what came out.
func (e *PlacementEngine) Place(segs ...PlacementSegment) (*PlacementResult, error) {
	if e.err != nil {
		return nil, e.err
	}
	for i, s := range segs {
		if len(s.ULPDU) == 0 || len(s.ULPDU) > 0xffff {
			return nil, fmt.Errorf("%w: segment %d of %d bytes (1 to 65535)", ErrPlacementInput, i, len(s.ULPDU))
		}
	}
	if !e.initDone && len(segs) > 0 {
		return nil, fmt.Errorf("%w: %s has not raised init_done", ErrPlacementStalled, e.b.Module.Name)
	}
	p, lanes := &e.b.p, e.b.Config.Width/8
	e.begin()
	for _, w := range e.regs {
		in := e.cycle()
		p.regWr.Set(in, 1)
		p.regAddr.Set(in, uint64(w.addr))
		p.regData.Set(in, uint64(w.data))
		e.step(in)
	}
	e.regs = e.regs[:0]
	for _, s := range segs {
		for off := 0; off < len(s.ULPDU); off += lanes {
			beat := s.ULPDU[off:min(off+lanes, len(s.ULPDU))]
			offered := false // once offered, a beat stays until taken (AXI-Stream)
			for wait := 0; ; wait++ {
				if wait == placementStall {
					return nil, fmt.Errorf("%w: %s: a beat waited %d cycles", ErrPlacementStalled, e.b.Module.Name, wait)
				}
				in := e.cycle()
				if e.gap && !offered {
					e.step(in)
					continue
				}
				offered = true
				p.s.Data.SetBytes(in, beat)
				p.s.Keep.Set(in, lanesMask(len(beat)))
				p.s.Valid.Set(in, 1)
				p.s.Last.Set(in, b2u(off+lanes >= len(s.ULPDU)))
				p.uLen.Set(in, uint64(len(s.ULPDU)))
				p.uQP.Set(in, uint64(s.QP))
				p.uPD.Set(in, uint64(s.PD))
				p.uRev.Set(in, b2u(s.Rev))
				if p.s.Ready.Get(e.step(in)) != 0 {
					break
				}
			}
		}
	}
	// Drain: with every channel ready the pipeline moves every cycle, so
	// after this many cycles without output nothing is left in it.
	for quiet := 0; quiet < cycle.PlacementLatency+2; {
		quiet++
		if e.anyValid(e.step(e.cycle())) {
			quiet = 0
		}
	}
	return e.finish()
}

func lanesMask(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<n - 1
}

// begin starts recording a call's cycles.
func (e *PlacementEngine) begin() {
	e.n = 0
	e.in, e.want = e.in[:0], e.want[:0]
}

// cycle appends a cycle of idle inputs (every output channel ready) and
// returns it for the caller to fill.
func (e *PlacementEngine) cycle() []uint32 {
	iw := e.b.Layout.InWords
	e.in = append(e.in, make([]uint32, iw)...)
	in := e.in[len(e.in)-iw:]
	p := &e.b.p
	hold := false
	if e.Stall != nil {
		e.gap, hold = e.Stall()
	}
	for _, r := range []Port{p.hostReady, p.termReady, p.dReady} {
		r.Set(in, 1)
	}
	p.dmaReady.Set(in, b2u(!hold))
	return in
}

// step runs the model on the last cycle's inputs and returns its outputs.
func (e *PlacementEngine) step(in []uint32) []uint32 {
	ow := e.b.Layout.OutWords
	e.want = append(e.want, make([]uint32, ow)...)
	out := e.want[len(e.want)-ow:]
	e.model.Step(in, out)
	e.n++
	return out
}

func (e *PlacementEngine) modelInitDone() bool {
	ow := e.b.Layout.OutWords
	return len(e.want) >= ow && e.b.p.initDone.Get(e.want[len(e.want)-ow:]) != 0
}

func (e *PlacementEngine) anyValid(out []uint32) bool {
	p := &e.b.p
	return p.dmaValid.Get(out)|p.hValid.Get(out)|p.tValid.Get(out)|p.dValid.Get(out) != 0
}

// finish runs the recorded cycles through the RTL, compares every output
// of every cycle with the model's (in C++, Instance.RunCheck), and collects
// the outputs (the model's, equal to the RTL's).
func (e *PlacementEngine) finish() (*PlacementResult, error) {
	l := e.b.Layout
	iw, ow := l.InWords, l.OutWords
	if len(e.got) != ow {
		e.got = make([]uint32, ow)
	}
	c, err := e.inst.RunCheck(e.in, e.want, e.got)
	if err != nil {
		e.err = err
		return nil, err
	}
	if c >= 0 {
		want := e.want[c*ow : (c+1)*ow]
		m := &Mismatch{Block: e.b.Module.Name, Cycle: e.cycles + uint64(c), Inputs: Describe(l.Inputs, e.in[c*iw:(c+1)*iw]),
			TraceErr: errors.New("the placement engine keeps no stimulus history to replay")}
		for _, p := range l.Outputs {
			if m.Port == "" && p.Hex(want) != p.Hex(e.got) {
				m.Port, m.Want, m.Got = p.Name, p.Hex(want), p.Hex(e.got)
			}
		}
		e.err = m
		return nil, m
	}
	e.cycles += uint64(e.n)
	if e.n > 0 {
		e.initDone = e.b.p.initDone.Get(e.want[(e.n-1)*ow:]) != 0
	}
	return e.collect(), nil
}

// collect decodes the outputs of the call's cycles.
func (e *PlacementEngine) collect() *PlacementResult {
	p, iw, ow, lanes := &e.b.p, e.b.Layout.InWords, e.b.Layout.OutWords, e.b.Config.Width/8
	r := &e.res
	r.DMA, r.Host, r.Terms, r.Dones, r.Cycles = r.DMA[:0], r.Host[:0], r.Terms[:0], r.Dones[:0], uint64(e.n)
	e.arena = e.arena[:0]
	type span struct{ off, n int }
	var hostSpan []span // where each host segment's bytes are in the arena
	hostStart := -1
	var dmaOff []int
	for c := 0; c < e.n; c++ {
		out := e.want[c*ow : (c+1)*ow]
		if p.dmaValid.Get(out) != 0 && p.dmaReady.Get(e.in[c*iw:]) != 0 {
			dmaOff = append(dmaOff, len(e.arena))
			e.arena = append(e.arena, make([]byte, lanes)...)
			p.dmaData.Bytes(out, e.arena[len(e.arena)-lanes:])
			r.DMA = append(r.DMA, PlacementDMA{Addr: p.dmaAddr.Get(out), Strb: p.dmaStrb.Get(out)})
		}
		if p.hValid.Get(out) != 0 {
			if hostStart < 0 {
				hostStart = len(e.arena)
			}
			k := min(lanes, bits.TrailingZeros64(^p.hKeep.Get(out))) // keep is contiguous from lane 0
			e.arena = append(e.arena, make([]byte, lanes)...)
			p.hData.Bytes(out, e.arena[len(e.arena)-lanes:])
			e.arena = e.arena[:len(e.arena)-lanes+k]
			if p.hLast.Get(out) != 0 {
				hostSpan = append(hostSpan, span{hostStart, len(e.arena) - hostStart})
				hostStart = -1
				r.Host = append(r.Host, PlacementHost{QP: uint32(p.hQP.Get(out)), Len: uint16(p.hLen.Get(out)),
					Opcode: rdmap.Opcode(p.hOp.Get(out)), Last: p.hDDPLast.Get(out) != 0, QN: uint32(p.hQN.Get(out)),
					MSN: uint32(p.hMSN.Get(out)), MO: uint32(p.hMO.Get(out)), Inv: uint32(p.hInv.Get(out))})
			}
		}
		if p.tValid.Get(out) != 0 {
			t := PlacementTerm{Cause: rdmap.Cause(p.tCause.Get(out)), SegLen: uint16(p.tSegLen.Get(out)), QP: uint32(p.tQP.Get(out))}
			mdr := p.tMDR.Get(out)
			t.M, t.D, t.R = mdr&4 != 0, mdr&2 != 0, mdr&1 != 0
			p.tHdr.Bytes(out, t.Hdr[:])
			r.Terms = append(r.Terms, t)
		}
		if p.dValid.Get(out) != 0 {
			r.Dones = append(r.Dones, PlacementDone{QP: uint32(p.dQP.Get(out)), STag: uint32(p.dSTag.Get(out)),
				TO: p.dTO.Get(out), Len: uint16(p.dLen.Get(out))})
		}
	}
	// The arena is complete: point the results into it.
	for i, off := range dmaOff {
		r.DMA[i].Data = e.arena[off : off+lanes : off+lanes]
	}
	for i, s := range hostSpan {
		r.Host[i].Data = e.arena[s.off : s.off+s.n : s.off+s.n]
	}
	return r
}
