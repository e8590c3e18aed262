package sim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/stagtab"
	"github.com/openiwarp/openiwarp/hw/gen"
	hwsim "github.com/openiwarp/openiwarp/hw/sim"
)

// Where the sim card's IOMMU maps memory regions: far above the model
// card's DMA buffers (driver.DMA), so that the two never meet. Every
// region is followed by an unmapped guard page.
const (
	mrIOVABase = 1 << 44
	pageShift  = stagtab.PageShift
	pageSize   = stagtab.PageSize
	// pagedMaxPages: regions of up to this many pages are described to
	// the engine by a page list (each page at its own IOVA, as an IOMMU
	// mapping of scattered host pages gives); larger ones are one
	// contiguous IOVA range, since the 4096-slot page list would not hold
	// many MiB-sized regions.
	pagedMaxPages = 16
	// pagedReserve page-list slots stay free for later small regions.
	pagedReserve = 256
)

// Process-wide counts of the placement RTL's work.
var totalPlaced, totalDMAWrites, totalPlacementTerms atomic.Uint64

// PlacedSegments is the number of tagged segments (RDMA Write, Read
// Response) the placement RTL of every sim card of this process has taken.
func PlacedSegments() uint64 { return totalPlaced.Load() }

// DMAWrites is the number of DMA writes those segments made.
func DMAWrites() uint64 { return totalDMAWrites.Load() }

// PlacementTerminates is the number of Terminate events the placement RTL
// raised (segments it refused, writing nothing).
func PlacementTerminates() uint64 { return totalPlacementTerms.Load() }

// region is a registered memory region as the card's IOMMU maps it.
type region struct {
	mr    *mem.MR
	buf   []byte
	off   uint64   // offset of buf[0] in its first page
	pages []uint64 // IOVA page number of each page the region touches
}

// iommuPage is one mapped IOVA page: page k of region r.
type iommuPage struct {
	r *region
	k uint64
}

// placement is one sim card's placement engine: the Verilated
// placement_w<W> (with its cycle model beside it), the STag table it holds
// (programmed through the register map by a stagtab.Programmer whenever the
// card's registrations change), and the IOMMU through which its DMA writes
// reach the regions' memory.
type placement struct {
	checked *atomic.Uint64 // the card's count of checked cycles
	maxMR   int

	mu       sync.Mutex // everything below: the engine runs one thing at a time
	tab      *mem.Table // the card's STag table (golden), set by the card
	eng      *hwsim.PlacementEngine
	prog     *stagtab.Programmer
	regions  map[uint32]*region // by STag index
	iommu    map[uint64]iommuPage
	nextPage uint64
	err      error    // the engine failed (mismatch) or was closed: no more placement
	seen     []bool   // land: payload bytes written
	at       []uint64 // land: region offset of each write's lane 0
}

var (
	plBlocksMu sync.Mutex
	plBlocks   = map[int]*hwsim.PlacementBlock{}
)

func newPlacement(width int, checked *atomic.Uint64) (*placement, error) {
	plBlocksMu.Lock()
	b := plBlocks[width]
	if b == nil {
		var err error
		if b, err = hwsim.LoadPlacement(gen.PlacementDefault(width)); err != nil {
			plBlocksMu.Unlock()
			return nil, err
		}
		plBlocks[width] = b
	}
	plBlocksMu.Unlock()
	eng, err := b.NewEngine()
	if err != nil {
		return nil, wrapMismatch(err)
	}
	p := &placement{checked: checked, maxMR: b.Config.TableDepth * 3 / 4, eng: eng, regions: map[uint32]*region{},
		iommu: map[uint64]iommuPage{}, nextPage: mrIOVABase >> pageShift}
	p.count(eng.Cycles())
	p.prog, err = stagtab.New(engineRegs{p}, stagtab.Config{TableDepth: b.Config.TableDepth, PBLDepth: b.Config.PBLDepth,
		InitDone: func() (bool, error) { return eng.InitDone(), nil }})
	if err == nil {
		err = p.prog.Init(context.Background())
	}
	if err != nil {
		eng.Close()
		return nil, err
	}
	return p, nil
}

func (p *placement) count(cycles uint64) {
	p.checked.Add(cycles)
	totalCycles.Add(cycles)
}

// wrapMismatch makes an engine's *hwsim.Mismatch an ErrMismatch.
func wrapMismatch(err error) error {
	if hwsim.IsMismatch(err) {
		return fmt.Errorf("%w: %w", ErrMismatch, err)
	}
	return err
}

// engineRegs is the placement block's register window as the Programmer
// sees it: write-only, each write one cycle of reg_wr_valid. It is used
// with placement.mu held.
type engineRegs struct{ p *placement }

func (r engineRegs) Write32(off, v uint32) error { return r.p.eng.RegWrite(off, v) }

func (r engineRegs) Write64(off uint32, v uint64) error {
	if err := r.Write32(off, uint32(v)); err != nil {
		return err
	}
	return r.Write32(off+4, uint32(v>>32))
}

func (r engineRegs) Read32(off uint32) (uint32, error) {
	return 0, fmt.Errorf("%w: the placement block's registers are write-only", driver.ErrInvalid)
}

func (r engineRegs) Read64(off uint32) (uint64, error) {
	return 0, fmt.Errorf("%w: the placement block's registers are write-only", driver.ErrInvalid)
}

// flush runs the queued register writes through the engine. Called with mu held.
func (p *placement) flush() error {
	res, err := p.eng.Flush()
	if err != nil {
		p.err = wrapMismatch(err)
		return p.err
	}
	p.count(res.Cycles)
	return nil
}

// close frees the engine; later placements fail.
func (p *placement) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.eng != nil {
		p.eng.Close()
		p.eng = nil
	}
	if p.err == nil {
		p.err = fmt.Errorf("%w: sim card", driver.ErrClosed)
	}
	return nil
}

// mapRegion gives buf IOVAs and the engine's translation of them:
// contiguous IOVAs from the page offset buf really has in host memory, or,
// for a small region while the page list has room, one IOVA page per host
// page, in descending order with unmapped pages between, so that only the
// page list can find them. Called with mu held.
func (p *placement) mapRegion(buf []byte) (*region, stagtab.Translation) {
	r := &region{buf: buf}
	if len(buf) == 0 {
		return r, stagtab.Contiguous(p.nextPage << pageShift)
	}
	r.off = uint64(uintptr(unsafe.Pointer(&buf[0]))) & (pageSize - 1)
	n := stagtab.PagesFor(r.off, uint64(len(buf)))
	paged := n <= pagedMaxPages && p.prog.FreeSlots() >= int(n)+pagedReserve
	if !paged {
		for k := range n {
			r.pages = append(r.pages, p.nextPage+k)
		}
		p.nextPage += n + 1
	} else {
		for k := range n {
			r.pages = append(r.pages, p.nextPage+2*(n-1-k))
		}
		p.nextPage += 2*n + 1
	}
	for k, pg := range r.pages {
		p.iommu[pg] = iommuPage{r, uint64(k)}
	}
	if !paged {
		return r, stagtab.Contiguous(r.pages[0]<<pageShift | r.off)
	}
	addrs := make([]uint64, n)
	for k, pg := range r.pages {
		addrs[k] = pg << pageShift
	}
	return r, stagtab.Paged(r.off, addrs)
}

func (p *placement) unmap(r *region) {
	for _, pg := range r.pages {
		delete(p.iommu, pg)
	}
}

// registerMR registers buf in pd under an STag the engine's table can
// hold, maps it, and programs the engine's table (model.Options.RegisterMR).
func (p *placement) registerMR(pd *mem.PD, buf []byte, addr uint64, access mem.Access, qp uint32) (*mem.MR, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	if n := len(p.regions); n >= p.maxMR {
		return nil, fmt.Errorf("%w: the placement RTL's STag table holds %d regions, the sim card's limit", mem.ErrFull, n)
	}
	mr, err := stagtab.RegisterMirror(pd, p.prog.Config().TableDepth, buf, addr, access, qp)
	if err != nil {
		return nil, err
	}
	r, tr := p.mapRegion(buf)
	r.mr = mr
	e, _ := pd.Table().Lookup(mr.STag)
	err = p.prog.Write(mr.STag.Index(), e, tr)
	if err == nil {
		err = p.flush()
	}
	if err != nil {
		p.unmap(r)
		return nil, errors.Join(fmt.Errorf("programming the placement RTL's STag table: %w", err), mr.Deregister())
	}
	p.regions[mr.STag.Index()] = r
	return mr, nil
}

// deregisterMR removes the region from the golden table and the engine's
// (model.Options.DeregisterMR), then unmaps it. Placements hold mu, so
// none is using the region once this returns.
func (p *placement) deregisterMR(mr *mem.MR) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.regions[mr.STag.Index()]
	if r == nil || r.mr != mr {
		return fmt.Errorf("%w: %v is not a region of this sim card", driver.ErrInvalid, mr.STag)
	}
	if err := mr.Deregister(); err != nil {
		return err
	}
	delete(p.regions, mr.STag.Index())
	p.unmap(r)
	if p.err != nil {
		return nil // closed or failed: the engine places nothing any more
	}
	if err := p.prog.Remove(mr.STag.Index()); err != nil {
		return fmt.Errorf("removing %v from the placement RTL's STag table: %w", mr.STag, err)
	}
	return p.flush()
}

// invalidated mirrors an invalidation the golden engine made (a Send with
// Invalidate it accepted) into the engine's table.
func (p *placement) invalidated(stag mem.STag) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.regions[stag.Index()] == nil || p.err != nil {
		return nil // not one of the card's, or the engine places nothing any more
	}
	if e, ok := p.tab.Lookup(stag); ok && e.Valid {
		return nil // the golden table kept it (the invalidation was refused)
	}
	if prog, ok := p.prog.Lookup(stag.Index()); !ok || !prog.Entry.Valid {
		return nil
	}
	if err := p.prog.Invalidate(stag.Index()); err != nil {
		return err
	}
	return p.flush()
}

// rtlFault is the mem.Fault a placement Terminate cause names, for
// reporting; the agreement check compares causes, which is exact.
func rtlFault(c rdmap.Cause) mem.Fault {
	switch c {
	case rdmap.DDPSTagNotAssociated:
		return mem.NotAssociated
	case rdmap.DDPTOWrap:
		return mem.TOWrap
	case rdmap.DDPBaseBounds:
		return mem.BaseBounds
	}
	return mem.InvalidSTag
}

// place runs one tagged segment through the engine and, if the engine and
// the golden table agree that it may be placed, lands the engine's DMA
// writes in the region's memory. It returns the golden table's fault and
// an error wrapping ErrMismatch when the engine disagrees (with the golden
// table, or its cycle model with the RTL); nothing is written then.
func (p *placement) place(req mem.Request, rev bool, ulpdu, payload []byte) (mem.Fault, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	gold := p.tab.Verify(req)
	refuse := gold // what a disagreement reports: never OK
	if refuse == mem.OK {
		refuse = mem.InvalidSTag
	}
	if p.err != nil {
		return refuse, p.err
	}
	res, err := p.eng.Place(hwsim.PlacementSegment{ULPDU: ulpdu, QP: req.QP, PD: req.PD, Rev: rev})
	if err != nil {
		p.err = wrapMismatch(err)
		return refuse, p.err
	}
	p.count(res.Cycles)
	totalPlaced.Add(1)
	totalPlacementTerms.Add(uint64(len(res.Terms)))
	disagree := func(format string, args ...any) (mem.Fault, error) {
		what := "RDMA Write"
		if req.Use == mem.UseReadResponse {
			what = "Read Response"
		}
		return refuse, fmt.Errorf("%w: placement_w%d and the golden STag table disagree on the %s segment to %v TO %#x (%d bytes), golden %q: %s",
			ErrMismatch, p.eng.Config().Width, what, req.STag, req.TO, len(payload), gold, fmt.Sprintf(format, args...))
	}
	if len(res.Host) > 0 {
		return disagree("the RTL handed the tagged segment to the host queue")
	}
	if len(res.Terms) > 1 {
		return disagree("the RTL raised %d Terminates", len(res.Terms))
	}
	if len(res.Terms) == 1 {
		c := res.Terms[0].Cause
		if gold == mem.OK || c != gold.Cause(req.Use) {
			return disagree("the RTL raised Terminate %v (%v)", c, rtlFault(c))
		}
		if len(res.DMA) > 0 || len(res.Dones) > 0 {
			return disagree("the RTL wrote memory for a segment it refused")
		}
		return gold, nil
	}
	if gold != mem.OK {
		return disagree("the RTL took it (%d DMA writes)", len(res.DMA))
	}
	wantDone := req.Use == mem.UseReadResponse && ddp.Control(ulpdu[0]).Last() && len(payload) > 0
	if n := len(res.Dones); wantDone != (n == 1) || n > 1 {
		return disagree("%d Read Response completions from the RTL", n)
	}
	if wantDone {
		if d := res.Dones[0]; d.QP != req.QP || mem.STag(d.STag) != req.STag || d.TO != req.TO || int(d.Len) != len(ulpdu) {
			return disagree("the RTL's completion %+v", d)
		}
	}
	if err := p.land(req, res.DMA, payload); err != nil {
		return disagree("%v", err)
	}
	totalDMAWrites.Add(uint64(len(res.DMA)))
	return mem.OK, nil
}

// land checks that the engine's DMA writes cover exactly the payload at
// the region's [TO-Base, TO-Base+len) through the IOMMU, each byte once
// and equal to the payload's, then writes them. Called with mu held.
func (p *placement) land(req mem.Request, dma []hwsim.PlacementDMA, payload []byte) error {
	if len(payload) == 0 { // not checked (RFC 5041 §5.2): the STag may name nothing
		if len(dma) > 0 {
			return fmt.Errorf("%d DMA writes for a zero-length segment", len(dma))
		}
		return nil
	}
	e, _ := p.tab.Lookup(req.STag)
	r := p.regions[req.STag.Index()]
	if r == nil {
		return fmt.Errorf("no region of the card is at index %d", req.STag.Index())
	}
	start := req.TO - e.Base // the golden check passed: inside the region
	p.seen = append(p.seen[:0], make([]bool, len(payload))...)
	p.at = p.at[:0]
	for _, w := range dma {
		// A write is one aligned block of at most 64 bytes: it never
		// crosses a page, so one IOMMU lookup serves all its lanes.
		m, ok := p.iommu[w.Addr>>pageShift]
		if !ok {
			return fmt.Errorf("DMA write at %#x: no region is mapped there", w.Addr)
		}
		if m.r != r {
			return fmt.Errorf("DMA write at %#x lands in %v, the segment is for %v", w.Addr, m.r.mr.STag, req.STag)
		}
		if (w.Addr+uint64(len(w.Data))-1)>>pageShift != w.Addr>>pageShift {
			return fmt.Errorf("DMA write at %#x of %d lanes crosses a page", w.Addr, len(w.Data))
		}
		base := m.k<<pageShift + w.Addr&(pageSize-1) - r.off // region offset of lane 0 (wraps below the region)
		p.at = append(p.at, base)
		for lane, b := range w.Data {
			if w.Strb>>lane&1 == 0 {
				continue
			}
			off := base + uint64(lane)
			switch {
			case off < start || off-start >= uint64(len(payload)):
				return fmt.Errorf("DMA write of byte %#x: region offset %d is outside the segment's [%d, %d)", w.Addr+uint64(lane), int64(off), start, start+uint64(len(payload)))
			case p.seen[off-start]:
				return fmt.Errorf("DMA write of byte %#x: written twice", w.Addr+uint64(lane))
			case b != payload[off-start]:
				return fmt.Errorf("DMA write of byte %#x: %#02x, the payload has %#02x", w.Addr+uint64(lane), b, payload[off-start])
			}
			p.seen[off-start] = true
		}
	}
	for i, ok := range p.seen {
		if !ok {
			return fmt.Errorf("payload byte %d was not written", i)
		}
	}
	// Every strobed byte is one of the payload's, in r: write them.
	for i, w := range dma {
		for lane, b := range w.Data {
			if w.Strb>>lane&1 != 0 {
				r.buf[p.at[i]+uint64(lane)] = b
			}
		}
	}
	return nil
}

// qpPlacer is one QP's tagged placement (iwarp.TaggedPlacer) through the
// card's engine, and the watch over its received Sends with Invalidate.
type qpPlacer struct {
	p   *placement
	rev bool // DDP/RDMAP version 1

	mu  sync.Mutex
	err error // the first mismatch or disagreement
}

func (q *qpPlacer) fail(err error) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.mu.Unlock()
}

// Err is the QP's placement failure (model.Datapath.Err).
func (q *qpPlacer) Err() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// PlaceTagged places a tagged segment through the placement RTL.
func (q *qpPlacer) PlaceTagged(req mem.Request, ulpdu, payload []byte) mem.Fault {
	req.Len = uint64(len(payload))
	f, err := q.p.place(req, q.rev, ulpdu, payload)
	if err != nil {
		q.fail(err)
	}
	return f
}

// invWatch is the QP's deframer with a look at each ULPDU after the golden
// engine has taken it: a Send with Invalidate it accepted has invalidated
// an STag in the golden table, and the engine's table follows at once,
// before the next segment.
type invWatch struct {
	iwarp.Deframer
	q *qpPlacer
}

func (w invWatch) Feed(b []byte, fn func(mpa.ULPDU) error) error {
	return w.Deframer.Feed(b, func(u mpa.ULPDU) error {
		if err := fn(u); err != nil {
			return err
		}
		seg, err := ddp.Parse(u.Data)
		if err != nil || seg.Control.Tagged() || !seg.Control.Last() {
			return nil
		}
		if info, ok := rdmap.Control(seg.RsvdULP0()).Opcode().Info(); !ok || !info.Invalidate {
			return nil
		}
		if err := w.q.p.invalidated(mem.STag(seg.Untagged().RsvdULP1())); err != nil {
			w.q.fail(err)
			return err
		}
		return nil
	})
}

// checkSendWR refuses the memory work requests: golden/iwarp performs
// them on its table from inside the send queue, where the sim card cannot
// mirror them into the placement RTL's table in step.
func checkSendWR(wr *iwarp.SendWR) error {
	if wr.Opcode == iwarp.WRLocalInvalidate || wr.Opcode == iwarp.WRBindMW {
		return fmt.Errorf("%w: WR %d: the sim card does not take %v work requests (its placement RTL's STag table could not follow them)",
			driver.ErrInvalid, wr.ID, wr.Opcode)
	}
	return nil
}
