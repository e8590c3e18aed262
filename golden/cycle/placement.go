package cycle

import (
	"fmt"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// Placement destinations, as the block documents them.
const (
	PlaceDrop = iota // valid zero-length tagged segment: nothing leaves
	PlaceDMA         // tagged, checked: DMA writes
	PlaceHost        // untagged, header-checked: host queue
	PlaceTerm        // failed: one Terminate event
)

// PlacementHdrBytes is the ULPDU prefix handed over with host segments and
// Terminate events: an untagged DDP header.
const PlacementHdrBytes = ddp.UntaggedHeaderLen

// PlacementLatency is the number of cycles from the cycle a beat is accepted
// in to the first cycle its output shows (nothing stalling, the beat not held).
const PlacementLatency = 4

// pageShift is the page size of page-list translation (4 KiB).
const pageShift = 12

// PlacementEntry is one STag table entry of the placement engine: the
// protection part exactly as golden/iwarp/mem checks it, and the address
// translation.
type PlacementEntry struct {
	mem.Entry
	Paged bool   // translate through the page list
	Addr  uint64 // contiguous: host address of Base; paged: offset of Base in the first page
	PBL   uint32 // paged: first page-list slot
}

// PlacementCmdKind is a table update the host makes through the register map.
type PlacementCmdKind uint8

// Table updates.
const (
	CmdNone       PlacementCmdKind = iota
	CmdCommit                      // write Entry at Index
	CmdInvalidate                  // clear the valid bit at Index
	CmdPage                        // write page address Addr at page-list Slot
	CmdConnClear                   // forget that connection QP failed
	CmdControl                     // set the options (DropAfterFail)
)

// PlacementCmd is one table update, effective from the next cycle (a lookup
// in the same cycle sees the old contents).
type PlacementCmd struct {
	Kind  PlacementCmdKind
	Index uint32 // STag index (commit, invalidate)
	Entry PlacementEntry
	Slot  uint32 // page-list slot
	Addr  uint64 // page address (4 KiB aligned; low bits ignored)
	QP    uint32 // connection (CmdConnClear)
	// DropAfterFail (CmdControl): after a failed segment, drop the
	// connection's later segments silently until it is cleared.
	DropAfterFail bool
}

// placementRdQPBits is the width of the connection numbers whose Reads
// outstanding the engine counts (hw/gen's).
const placementRdQPBits = 10

// PlacementFailSlots is how many failed connections the engine remembers:
// their later segments are dropped silently until the host clears them.
const PlacementFailSlots = 8

// PlacementIn is one cycle of inputs of placement_w<W>.
type PlacementIn struct {
	Reset     bool
	Data      []byte // W/8 lanes
	Keep      uint64
	Valid     bool
	Last      bool
	Len       uint16 // ULPDU length (sideband)
	QP, PD    uint32
	Rev       bool // DDP/RDMAP version 1
	Cmd       PlacementCmd
	DMAReady  bool
	HostReady bool
	TermReady bool
	DoneReady bool

	// The card's ports: DropAfterFail forces CTRL.DROP_AFTER_FAIL on,
	// Kill records an outside failure of KillQP, Clear forgets ClearQP's.
	DropAfterFail bool
	Kill, Clear   bool
	KillQP        uint32
	ClearQP       uint32
	// ReadCheck refuses a Read Response with no Read outstanding on its
	// connection; RdIssue reports a Read Request sent on RdIssueQP (below
	// 1024), RdIssueCount its Read Requests so far plus one.
	ReadCheck    bool
	RdIssue      bool
	RdIssueQP    uint32
	RdIssueCount uint16
	// RdIssueSink is that Read's sink: a Read Response is checked
	// against the oldest outstanding Read's (with ReadCheck).
	RdIssueSink ReadSink
}

// ReadSink is an RDMA Read's sink as placement keeps it: the STag, the
// first tagged offset and the length the Read Responses must fill.
type ReadSink struct {
	STag uint32
	TO   uint64
	Len  uint32
}

// placementORQSlots is how many Reads a connection may have outstanding
// (the card's ORD limit): placement keeps a sink slot for each.
const placementORQSlots = 16

// orqProg is the progress of a connection's oldest Read: once started,
// the TO its next Read Response must have and the bytes left.
type orqProg struct {
	started bool
	to      uint64
	left    uint32
}

// PlacementOut is one cycle of outputs of placement_w<W>. Data of a channel
// whose valid is low is zero.
type PlacementOut struct {
	SReady   bool
	InitDone bool

	DMAValid bool
	DMAAddr  uint64
	DMAData  []byte // lanes without a strobe are zero
	DMAStrb  uint64
	DMAQP    uint32 // the block's connection

	HostValid   bool
	HostData    []byte
	HostKeep    uint64
	HostLast    bool
	HostQP      uint32
	HostLen     uint16
	HostOpcode  rdmap.Opcode // last beat only
	HostDDPLast bool
	HostQN      uint32
	HostMSN     uint32
	HostMO      uint32
	HostInv     uint32

	TermValid  bool
	TermCause  rdmap.Cause
	TermM      bool
	TermD      bool
	TermR      bool
	TermSegLen uint16
	TermHdr    [PlacementHdrBytes]byte
	TermQP     uint32

	// A placed Read Response segment with L=1 (m_done).
	DoneValid bool
	DoneQP    uint32
	DoneSTag  uint32
	DoneTO    uint64
	DoneLen   uint16

	// Busy: a ULPDU beat taken is still inside (a stage, the output
	// register, a last block to write); low means every m_done of the
	// ULPDUs taken so far has been taken.
	Busy bool
	// TableWr: a command writes the STag table or the page list this
	// cycle (m_tbl_wr: a commit or invalidation of an index in the table
	// once it is initialised, or a page-list write).
	TableWr bool

	// A segment's first beat is decided (m_dec): where it goes, and
	// whether it was dropped because its connection had failed.
	DecValid bool
	DecDest  int
	DecDead  bool
}

type plBeat struct {
	v         bool
	data      []byte // bytes at or past len zeroed
	keep, pay uint64 // lanes in use; lanes that are payload if tagged
	last, sop bool
	bidx      int // beat index, saturating at 3
	len       uint16
	qp, pd    uint32
	rev       bool
}

func (b *plBeat) copyFrom(o *plBeat) {
	d := b.data
	*b = *o
	b.data = append(d[:0], o.data...)
}

type plCtx struct {
	dest    int
	cause   rdmap.Cause
	m, d, r bool
	rot     int
	vbase   uint64
	paged   bool
	pbl     uint32
	len     uint16
	qp      uint32
	done    bool // a Read Response with L=1 that passed: report it once placed
	prog    bool // a Read Response that passed (with payload or L=1): its Read's progress becomes progV
	progV   orqProg
}

// Placement models placement_w<W>, the receive-side placement engine: a
// four-stage pipeline (input register, decision, realignment, output
// register) behind one advance condition, with the decisions taken by the
// golden functions (ddp.Parse, rdmap.Control and Opcode.Fits, mem.Check and
// Fault.Cause, Cause.Headers) in the order golden/iwarp's receive path uses.
//
// Timing contract (hw/rtl/placement_w*.v): the pipeline advances when the
// output register is empty or the channel its content is for is ready;
// s_axis_tready is that, minus the cycle in which a segment's trailing host
// block is written, and minus the reset sweep (TableDepth cycles after reset
// in which the valid bits are cleared). At widths below 128 bits a
// segment's first beat waits in the input register for the second. The
// table is read when a first beat leaves the input register.
type Placement struct {
	lanes, depth, pblDepth int

	table []PlacementEntry
	pages []uint64 // page numbers (address >> 12)

	initCnt  int
	initDone bool

	inSop bool
	inBidx,
	inRem int

	s0, s1, s2 plBeat
	s1Entry    PlacementEntry
	s1IdxOK    bool
	s2Ctx      plCtx

	prev      plBeat // the beat that last left stage 2
	flushData []byte
	flushStrb uint64
	flPaged   bool // translation of the trailing block
	flPBL     uint32
	s3Paged   bool // translation of the block in the output register

	s3v    bool
	s3Done bool
	flDone bool
	s3Dest int
	s3Data []byte
	s3Strb uint64
	s3Last bool
	s3Vblk uint64
	s3Ctx  plCtx
	s3Hdr  [PlacementHdrBytes]byte
	pblRd  uint64
	flush  bool
	vnext  uint64
	ulpdu  []byte
	// Connections whose segments are dropped after a failure (RFC 5041 §7.1).
	failQP    [PlacementFailSlots]uint32
	failValid [PlacementFailSlots]bool
	failPtr   int
	dropOn    bool
	// Reads outstanding per connection: Read Requests sent and Read
	// Responses with L=1 placed, each plus one; a clear waiting for its
	// memory's write port; the counts read for the segment in stage 1.
	rdIssued, rdDone [1 << placementRdQPBits]uint16
	clrIss, clrDone  bool
	clrQ             uint32
	s1Iss, s1Done    uint16
	s1DoneFwd        bool
	s1DoneFwdV       uint16
	// The ORQ's receive side: the sinks of each connection's Reads by
	// slot, the progress of its oldest Read, a clear of it waiting for
	// the write port; what stage 1 read.
	orqSink            [1 << placementRdQPBits][placementORQSlots]ReadSink
	orqProg            [1 << placementRdQPBits]orqProg
	clrProg            bool
	s1Sink             ReadSink // the oldest outstanding Read's (its slot chosen by the count read with it)
	s1Prog, s1ProgFwdV orqProg
	s1ProgFwd          bool
	outData            []byte // what the output register shows (Step's result aliases it)
}

// NewPlacement models the block of the given data width (bits) and table sizes.
func NewPlacement(width, tableDepth, pblDepth int) (*Placement, error) {
	if width < 64 || width > 512 || width&(width-1) != 0 {
		return nil, fmt.Errorf("%w: placement width %d (have 64 to 512, powers of two)", ErrConfig, width)
	}
	if tableDepth < 2 || tableDepth&(tableDepth-1) != 0 || pblDepth < 2 || pblDepth&(pblDepth-1) != 0 {
		return nil, fmt.Errorf("%w: placement table depth %d, page list depth %d", ErrConfig, tableDepth, pblDepth)
	}
	l := width / 8
	m := &Placement{lanes: l, depth: tableDepth, pblDepth: pblDepth,
		table: make([]PlacementEntry, tableDepth), pages: make([]uint64, pblDepth),
		flushData: make([]byte, l), s3Data: make([]byte, l), ulpdu: make([]byte, 1<<16)}
	m.outData = make([]byte, l)
	for _, b := range []*plBeat{&m.s0, &m.s1, &m.s2, &m.prev} {
		b.data = make([]byte, l)
	}
	return m, nil
}

// Lanes is the number of byte lanes.
func (m *Placement) Lanes() int { return m.lanes }

func (m *Placement) adv(in *PlacementIn) bool {
	if !m.s3v {
		return true
	}
	if m.s3Done && !in.DoneReady {
		return false
	}
	return m.chanOK(in)
}

// Step runs one cycle.
func (m *Placement) Step(in PlacementIn) PlacementOut {
	adv := m.adv(&in)
	record := false // a connection's first failure is remembered this cycle
	recordQP := m.s1.qp
	// While a trailing block is written, a first beat that writes nothing
	// (payload starting in the next host block, or zero length) moves on too.
	var scratch [64]byte
	merge := m.flush && m.s2.v && m.s2.sop && !(m.s2.last && m.s2Ctx.done) && (m.s2Ctx.dest == PlaceDrop ||
		m.s2Ctx.dest == PlaceDMA && m.block(scratch[:m.lanes], nil, &m.s2, m.s2Ctx.rot) == 0)
	advUp := adv && (!m.flush || merge)
	out := m.outputs(&in)
	out.SReady = advUp && m.initDone
	dropOn := m.dropOn || in.DropAfterFail
	var dec plCtx
	failed := false
	if advUp && m.s1.v && m.s1.sop {
		failed = dropOn && (m.connFailed(m.s1.qp) || in.Kill && in.KillQP == m.s1.qp)
		dec = m.decide(in.ReadCheck)
		if failed {
			dec.dest, dec.done = PlaceDrop, false // silently: RFC 5041 §7.1
		}
		out.DecValid, out.DecDest, out.DecDead = true, dec.dest, failed
	}
	doneCnt := m.s1DoneCount()
	rdWr := out.DecValid && dec.done // a Read Response with L=1 passes
	progWr := out.DecValid && dec.prog && !failed
	wrQP := m.s1.qp % (1 << placementRdQPBits)
	if in.Reset {
		m.reset()
		return out
	}
	fire := in.Valid && out.SReady
	l := m.lanes

	// Output register (and the page-list read that goes with it).
	if adv {
		nextPBL, nextPaged := m.s2Ctx.pbl, m.s2Ctx.paged
		if m.flush {
			nextPBL, nextPaged = m.flPBL, m.flPaged
		}
		m.s3Paged = nextPaged
		nextVblk := m.s2Ctx.vbase
		if m.flush || !m.s2.sop {
			nextVblk = m.vnext
		}
		slot := (uint64(nextPBL) + nextVblk>>pageShift) % uint64(m.pblDepth)
		m.pblRd = m.pages[slot]
		s2 := &m.s2
		// The beat's trailing block (its lanes below rot come from this beat).
		var trail [64]byte
		trailStrb := m.block(trail[:l], s2, nil, m.s2Ctx.rot)
		spill := s2.v && s2.last && m.s2Ctx.dest == PlaceDMA && trailStrb != 0
		doneNow := s2.v && s2.last && m.s2Ctx.done && !spill
		var newData []byte
		var newStrb uint64
		newV, newDest, newLast := false, m.s2Ctx.dest, s2.last && !m.flush
		switch {
		case m.flush:
			newV, newDest, newData, newStrb = true, PlaceDMA, m.flushData, m.flushStrb
		case m.s2Ctx.dest == PlaceDMA:
			var prev *plBeat
			if !s2.sop {
				prev = &m.prev
			}
			var blk [64]byte
			newStrb = m.block(blk[:l], prev, s2, m.s2Ctx.rot)
			newData, newV = blk[:l], s2.v && newStrb != 0
		default:
			newData, newStrb = s2.data, s2.keep
			newV = s2.v && (m.s2Ctx.dest == PlaceHost || m.s2Ctx.dest == PlaceTerm && s2.last)
		}
		if advUp && s2.v && !m.flush {
			m.s3Ctx = m.s2Ctx
			if s2.sop {
				m.s3Hdr = [PlacementHdrBytes]byte{}
			}
			for k := s2.bidx * l; k < min((s2.bidx+1)*l, PlacementHdrBytes); k++ {
				m.s3Hdr[k] = s2.data[k-s2.bidx*l]
			}
		}
		newDone := doneNow
		if m.flush {
			newDone = m.flDone
		} else {
			newV = newV || doneNow
		}
		m.s3v, m.s3Dest, m.s3Last, m.s3Strb, m.s3Done = newV, newDest, newLast, newStrb, newDone
		copy(m.s3Data, newData)
		switch {
		case merge:
			m.vnext = m.s2Ctx.vbase + uint64(l)
		case m.flush || s2.v:
			m.vnext = nextVblk + uint64(l)
		}
		m.s3Vblk = nextVblk
		newFlush := false
		if advUp && s2.v {
			// The block after the last beat: its lanes below rot come from this beat.
			copy(m.flushData, trail[:l])
			m.flushStrb = trailStrb
			m.flPaged, m.flPBL = m.s2Ctx.paged, m.s2Ctx.pbl
			newFlush = spill
			m.flDone = m.s2Ctx.done && spill
			m.prev.copyFrom(s2)
		}
		m.flush = newFlush
	}

	if advUp {
		hold := l < ddp.TaggedHeaderLen && m.s0.sop && !m.s0.last
		s0move := m.s0.v && (!hold || fire)
		if m.s1.v && m.s1.sop {
			m.s2Ctx = dec
			record = !failed && dec.dest == PlaceTerm && dropOn
		}
		m.s2.copyFrom(&m.s1)
		if s0move {
			q := m.s0.qp % (1 << placementRdQPBits)
			m.s1Iss, m.s1Done = m.rdIssued[q], m.rdDone[q]
			m.s1DoneFwd, m.s1DoneFwdV = rdWr && m.s1.qp%(1<<placementRdQPBits) == q, doneCnt+1
			m.s1Sink = m.orqSink[q][(m.s1DoneCount()-1)%placementORQSlots]
			m.s1Prog = m.orqProg[q]
			m.s1ProgFwd, m.s1ProgFwdV = progWr && wrQP == q, dec.progV
		}
		if s0move && m.s0.sop {
			idx := uint32(m.s0.data[2])<<16 | uint32(m.s0.data[3])<<8 | uint32(m.s0.data[4])
			m.s1IdxOK = idx < uint32(m.depth)
			m.s1Entry = m.table[idx%uint32(m.depth)]
		}
		m.s1.copyFrom(&m.s0)
		m.s1.v = s0move
		if fire {
			m.load(&in)
		}
		m.s0.v = fire || m.s0.v && !s0move
	}

	killRec := in.Kill && !m.connFailed(in.KillQP) // the slots as this cycle found them
	// The Read counts: a clear waits while its memory is written otherwise.
	clrAddr := in.ClearQP % (1 << placementRdQPBits)
	if m.clrIss || m.clrDone {
		clrAddr = m.clrQ
	}
	issClr, doneClr := (in.Clear || m.clrIss) && !in.RdIssue, (in.Clear || m.clrDone) && !rdWr
	m.clrIss, m.clrDone = (in.Clear || m.clrIss) && in.RdIssue, (in.Clear || m.clrDone) && rdWr
	progClrAddr := in.ClearQP % (1 << placementRdQPBits)
	if m.clrProg {
		progClrAddr = m.clrQ
	}
	if in.Clear {
		m.clrQ = in.ClearQP % (1 << placementRdQPBits)
	}
	switch {
	case in.RdIssue:
		m.rdIssued[in.RdIssueQP%(1<<placementRdQPBits)] = in.RdIssueCount
	case issClr:
		m.rdIssued[clrAddr] = 1
	}
	switch {
	case rdWr:
		m.rdDone[wrQP] = doneCnt + 1
	case doneClr:
		m.rdDone[clrAddr] = 1
	}
	if in.RdIssue {
		m.orqSink[in.RdIssueQP%(1<<placementRdQPBits)][(in.RdIssueCount-2)%placementORQSlots] = in.RdIssueSink
	}
	switch {
	case progWr:
		m.orqProg[wrQP] = dec.progV
	case in.Clear || m.clrProg:
		m.orqProg[progClrAddr] = orqProg{}
	}
	m.clrProg = (in.Clear || m.clrProg) && progWr
	// Table updates take effect after this cycle's reads.
	switch c := in.Cmd; c.Kind {
	case CmdCommit, CmdInvalidate:
		out.TableWr = m.initDone && c.Index < uint32(m.depth)
	case CmdPage:
		out.TableWr = true
	}
	switch c := in.Cmd; c.Kind {
	case CmdCommit:
		if m.initDone && c.Index < uint32(m.depth) {
			m.table[c.Index] = c.Entry
		}
	case CmdInvalidate:
		if m.initDone && c.Index < uint32(m.depth) {
			m.table[c.Index].Valid = false
		}
	case CmdPage:
		m.pages[c.Slot%uint32(m.pblDepth)] = c.Addr >> pageShift
	case CmdControl:
		m.dropOn = c.DropAfterFail
	case CmdConnClear:
		for k := range m.failQP {
			if m.failQP[k] == c.QP {
				m.failValid[k] = false
			}
		}
	}
	if in.Clear {
		for k := range m.failQP {
			if m.failQP[k] == in.ClearQP {
				m.failValid[k] = false
			}
		}
	}
	// After the clears: a failure recorded in the same cycle keeps its
	// slot; an outside one takes the next.
	if record {
		m.failQP[m.failPtr], m.failValid[m.failPtr] = recordQP, true
		m.failPtr = (m.failPtr + 1) % PlacementFailSlots
	}
	if killRec {
		m.failQP[m.failPtr], m.failValid[m.failPtr] = in.KillQP, true
		m.failPtr = (m.failPtr + 1) % PlacementFailSlots
	}
	if !m.initDone {
		m.table[m.initCnt].Valid = false
		if m.initCnt == m.depth-1 {
			m.initDone = true
		}
		m.initCnt = (m.initCnt + 1) % m.depth
	}
	return out
}

func (m *Placement) reset() {
	m.initCnt, m.initDone = 0, false
	m.inSop, m.inBidx = true, 0
	m.s0.v, m.s1.v, m.s2.v, m.s3v, m.flush = false, false, false, false, false
	m.failValid, m.failPtr, m.dropOn = [PlacementFailSlots]bool{}, 0, false
	m.clrIss, m.clrDone, m.clrProg = false, false, false
}

func (m *Placement) connFailed(qp uint32) bool {
	for k, v := range m.failValid {
		if v && m.failQP[k] == qp {
			return true
		}
	}
	return false
}

// load takes an accepted beat into the input register: bytes at or past
// the ULPDU length are dropped.
func (m *Placement) load(in *PlacementIn) {
	l := m.lanes
	rem := m.inRem
	if m.inSop {
		rem = int(in.Len)
	}
	b := &m.s0
	b.keep, b.pay = 0, 0
	for i := 0; i < l; i++ {
		b.data[i] = 0
		if in.Keep>>i&1 != 0 && i < rem {
			b.keep |= 1 << i
			b.data[i] = in.Data[i]
			if m.inBidx*l+i >= ddp.TaggedHeaderLen {
				b.pay |= 1 << i
			}
		}
	}
	b.last, b.sop, b.bidx = in.Last, m.inSop, m.inBidx
	b.len, b.qp, b.pd, b.rev = in.Len, in.QP, in.PD, in.Rev
	m.inRem = max(rem-l, 0)
	m.inSop = in.Last
	switch {
	case in.Last:
		m.inBidx = 0
	case m.inBidx < 3:
		m.inBidx++
	}
}

// block fills dst with the host block of a tagged segment that covers the
// end of beat prev and the start of beat cur (either may be nil): host lane
// o holds the segment byte rot lanes before it, from prev when o < rot. It
// returns the strobes (payload bytes present).
func (m *Placement) block(dst []byte, prev, cur *plBeat, rot int) uint64 {
	l := m.lanes
	var strb uint64
	for o := 0; o < l; o++ {
		dst[o] = 0
		src, lane := cur, o-rot
		if o < rot {
			src, lane = prev, l-rot+o
		}
		if src != nil && src.pay>>lane&1 != 0 {
			dst[o] = src.data[lane]
			strb |= 1 << o
		}
	}
	return strb
}

// s1DoneCount is the Read Response count of the segment in stage 1: as
// read, or as written in the cycle it was read.
func (m *Placement) s1DoneCount() uint16 {
	if m.s1DoneFwd {
		return m.s1DoneFwdV
	}
	return m.s1Done
}

// s1ORQ is the oldest outstanding Read of the segment in stage 1 (the
// slot its Read Response count names) as its response has used it so
// far: the TO its next segment must have, the bytes left; and its sink
// STag.
func (m *Placement) s1ORQ() (orqProg, uint32) {
	sink := m.s1Sink
	p := m.s1Prog
	if m.s1ProgFwd {
		p = m.s1ProgFwdV
	}
	if !p.started {
		p = orqProg{to: sink.TO, left: sink.Len}
	}
	return p, sink.STag
}

// decide takes the decision for the segment whose first beat is in stage 1:
// the golden receive checks on its header (bytes 0-13: the first beat and,
// at narrow widths, the second, waiting in stage 0) and its table entry;
// with readCheck, a Read Response's Reads outstanding first.
func (m *Placement) decide(readCheck bool) plCtx {
	l := m.lanes
	n := int(m.s1.len)
	u := m.ulpdu[:n]
	clear(u[:min(n, PlacementHdrBytes)])
	for k := 0; k < min(n, ddp.TaggedHeaderLen); k++ {
		switch {
		case k < l:
			u[k] = m.s1.data[k]
		case !m.s1.last:
			u[k] = m.s0.data[k-l]
		}
	}
	ctx := plCtx{len: m.s1.len, qp: m.s1.qp}
	ver := ddp.VersionRDMAC
	if m.s1.rev {
		ver = ddp.Version1
	}
	fail := func(c rdmap.Cause, op rdmap.Opcode) plCtx {
		ctx.dest, ctx.cause = PlaceTerm, c
		ctx.m, ctx.d, ctx.r = c.Headers(op)
		return ctx
	}
	// The order of golden/iwarp's receive path (Endpoint.onULPDU).
	seg, err := ddp.Parse(u)
	if err != nil {
		if n > 0 && ddp.Control(u[0]).Tagged() {
			return fail(rdmap.DDPTaggedInvalidVersion, rdmap.OpSend)
		}
		return fail(rdmap.DDPUntaggedInvalidVersion, rdmap.OpSend)
	}
	tagged := seg.Control.Tagged()
	ctl := rdmap.Control(seg.RsvdULP0())
	op := ctl.Opcode()
	if seg.Control.Version() != ver {
		if tagged {
			return fail(rdmap.DDPTaggedInvalidVersion, op)
		}
		return fail(rdmap.DDPUntaggedInvalidVersion, op)
	}
	if ctl.Version() != rdmap.Version(ver) {
		return fail(rdmap.RDMAPInvalidVersion, op)
	}
	var qn uint32
	if !tagged {
		if qn = seg.Untagged().QN(); qn >= rdmap.NumQueues {
			return fail(rdmap.DDPInvalidQN, op)
		}
	}
	if !op.Fits(tagged, qn) {
		return fail(rdmap.RDMAPUnexpectedOpcode, op)
	}
	if !tagged {
		ctx.dest = PlaceHost
		return ctx
	}
	h := seg.Tagged()
	payLen := uint64(len(seg.Payload))
	rr := op == rdmap.OpReadResponse
	check := readCheck && rr
	var head orqProg // the oldest outstanding Read's next TO and bytes left
	var sinkSTag uint32
	if rr {
		head, sinkSTag = m.s1ORQ()
	}
	// CheckReadResponse's order: none outstanding; with payload, the
	// sink's STag, then its next TO and the bytes left; a last segment
	// must end the Read.
	if check && m.s1Iss == m.s1DoneCount() {
		return fail(rdmap.DDPLocalCatastrophic, op)
	}
	if check && payLen > 0 {
		if h.STag() != sinkSTag {
			return fail(rdmap.DDPInvalidSTag, op)
		}
		if h.TO() != head.to || uint64(head.left) < payLen {
			return fail(rdmap.DDPBaseBounds, op)
		}
	}
	last := seg.Control.Last()
	if check && last && uint64(head.left) != payLen {
		return fail(rdmap.DDPBaseBounds, op) // the Read's last segment leaves bytes out
	}
	use := mem.UseRemoteWrite
	if op == rdmap.OpReadResponse {
		use = mem.UseReadResponse
	}
	var e *mem.Entry
	if m.s1IdxOK {
		e = &m.s1Entry.Entry
	}
	if f := mem.Check(e, mem.Request{STag: mem.STag(h.STag()), PD: m.s1.pd, QP: m.s1.qp, TO: h.TO(), Len: payLen, Use: use}); f != mem.OK {
		return fail(f.Cause(use), op)
	}
	ctx.done = rr && last
	if rr && (last || payLen > 0) {
		ctx.prog = true
		if !last {
			ctx.progV = orqProg{started: true, to: h.TO() + payLen, left: head.left - uint32(payLen)}
		}
	}
	if payLen == 0 {
		ctx.dest = PlaceDrop
		return ctx
	}
	ctx.dest = PlaceDMA
	// Translation: v is the entry's offset of a byte (contiguous: its host
	// address); the host block of the segment's byte 0 and the lane rotation.
	v0 := h.TO() - m.s1Entry.Base + m.s1Entry.Addr
	vm := v0 - ddp.TaggedHeaderLen
	ctx.rot = int(vm % uint64(l))
	ctx.vbase = vm - uint64(ctx.rot)
	ctx.paged, ctx.pbl = m.s1Entry.Paged, m.s1Entry.PBL%uint32(m.pblDepth)
	return ctx
}

// chanOK is whether the channel the output register's content is for takes it
// this cycle.
func (m *Placement) chanOK(in *PlacementIn) bool {
	switch m.s3Dest {
	case PlaceDMA:
		return m.s3Strb == 0 || in.DMAReady
	case PlaceHost:
		return in.HostReady
	case PlaceTerm:
		return in.TermReady
	}
	return true
}

// outputs are what the output register shows this cycle. A block that also
// completes a Read Response is offered on m_dma only while m_done can be
// taken, and m_done only while the block can: neither is taken twice.
func (m *Placement) outputs(in *PlacementIn) PlacementOut {
	o := PlacementOut{InitDone: m.initDone, Busy: m.s0.v || m.s1.v || m.s2.v || m.s3v || m.flush}
	if !m.s3v {
		return o
	}
	if m.s3Done && m.chanOK(in) {
		h := ddp.Tagged(m.s3Hdr[:])
		o.DoneValid, o.DoneQP, o.DoneSTag, o.DoneTO, o.DoneLen = true, m.s3Ctx.qp, h.STag(), h.TO(), m.s3Ctx.len
	}
	switch m.s3Dest {
	case PlaceDMA:
		if m.s3Strb == 0 || m.s3Done && !in.DoneReady {
			break
		}
		o.DMAValid, o.DMAStrb, o.DMAQP = true, m.s3Strb, m.s3Ctx.qp
		o.DMAData = append(m.outData[:0], m.s3Data...)
		o.DMAAddr = m.s3Vblk
		if m.s3Paged {
			o.DMAAddr = m.pblRd<<pageShift | m.s3Vblk&(1<<pageShift-1)
		}
	case PlaceHost:
		o.HostValid, o.HostKeep, o.HostLast = true, m.s3Strb, m.s3Last
		o.HostData = append(m.outData[:0], m.s3Data...)
		o.HostQP, o.HostLen = m.s3Ctx.qp, m.s3Ctx.len
		if m.s3Last {
			h := ddp.Untagged(m.s3Hdr[:])
			o.HostOpcode = rdmap.Control(h.RsvdULP0()).Opcode()
			o.HostDDPLast = h.Control().Last()
			o.HostQN, o.HostMSN, o.HostMO, o.HostInv = h.QN()&3, h.MSN(), h.MO(), h.RsvdULP1()
		}
	case PlaceTerm:
		o.TermValid = true
		o.TermCause, o.TermM, o.TermD, o.TermR = m.s3Ctx.cause, m.s3Ctx.m, m.s3Ctx.d, m.s3Ctx.r
		o.TermSegLen, o.TermHdr, o.TermQP = m.s3Ctx.len, m.s3Hdr, m.s3Ctx.qp
	}
	return o
}
