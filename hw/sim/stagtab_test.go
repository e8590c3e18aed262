package sim

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/ddp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/stagtab"
	"github.com/openiwarp/openiwarp/hw/gen"
)

// The driver's STag table programmer (host/driver/stagtab), pointed at the
// Verilated placement block's register write port, programs random memory
// regions, contiguous and paged, registered in a host mirror (mem.Table);
// then tagged RDMA Write segments go through the block, and every byte its
// DMA port writes lands exactly where the mirror's placement (mem.Table.Place
// through the region's translation) puts it, and nowhere else: hostile
// segments (wrong key, wrong PD or stream, one byte out of bounds on either
// side, no write right, invalidated or deregistered regions, an index past
// the table) write nothing and end in the Terminate the mirror's fault
// names. After a reset of the block, the Programmer waits for init_done and
// the table is empty until the driver reprograms it from the mirror.
func TestStagtabOnRTL(t *testing.T) {
	for _, w := range gen.PlacementWidths {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			seed := seedFor(t.Name())
			h := newStagHarness(t, w, seed)
			p, err := stagtab.New(h, stagtab.Config{Base: stagBase, TableDepth: h.cfg.TableDepth, PBLDepth: h.cfg.PBLDepth, InitDone: h.initDone})
			require.NoError(t, err)
			// Before init_done the Programmer refuses to write.
			require.ErrorIs(t, p.Write(1, mem.Entry{}, stagtab.Contiguous(0)), stagtab.ErrNotReady)
			require.NoError(t, p.Init(context.Background()))
			h.programmer = p

			for i := 0; i < 48; i++ {
				h.register(t)
			}
			h.traffic(t, 400)
			// Change the table: invalidate, deregister, register more.
			for i := 0; i < 12; i++ {
				h.invalidate(t)
				h.deregister(t)
				h.register(t)
			}
			h.traffic(t, 400)
			// Reset: the block forgets its table; the driver waits for
			// init_done, reprograms from the mirror, and traffic resumes.
			h.resetBlock(t)
			h.traffic(t, 200)

			h.finish(t)
			t.Logf("seed %d: %d cycles, each checked against the cycle model; %d regions (%d paged), %d register writes; segments: %s; %d DMA writes, %d Terminates",
				seed, h.eng.Cycles(), len(h.regions), h.paged, h.regWrites, h.summary(), h.dmaWrites, h.terms)
			assert.Greater(t, h.sent["good"], 300)
			for _, k := range []string{"wrong key", "wrong PD", "wrong stream", "one byte below", "one byte above",
				"no write right", "invalidated", "deregistered", "index past the table", "after reset"} {
				assert.NotZero(t, h.sent[k], "no %q segment, seed %d", k, seed)
			}
		})
	}
}

// stagBase is where the test puts the placement block in its register space.
const stagBase = 0x4000

// stagRegion is one registered buffer: its mirror MR, its host memory as
// the mirror sees it (gold) and as the RTL's DMA writes leave it (rtl), and
// the IOVAs the card reaches it by.
type stagRegion struct {
	mr         *mem.MR
	tr         stagtab.Translation
	gold, rtl  []byte // the backing: whole pages for a paged region
	state      string // "live", "invalidated", "deregistered"
	pdID, qpID uint32
}

// stagHarness drives one Verilated placement block through a
// PlacementEngine, so that every cycle is also checked against the cycle
// model, under random valid gaps and DMA backpressure. It is the
// driver.Regs the Programmer writes through (each write one cycle of
// reg_wr_valid, run before the next segment), and the host memory the
// block's DMA writes land in.
type stagHarness struct {
	cfg         gen.PlacementConfig
	eng         *PlacementEngine
	rng         Rand
	pool        Pool
	lanes       int
	gapP, holdP int // chances (of 256) of a valid gap and of m_dma_ready low, per cycle
	regWrites   uint64
	dmaWrites   uint64
	terms       int
	programmer  *stagtab.Programmer
	table       *mem.Table
	pds         []*mem.PD
	regions     []*stagRegion
	paged       int
	iommu       map[uint64]*stagRegion // IOVA page -> region
	nextIOVA    uint64
	wantTerms   []rdmap.Cause
	violation   string
	sent        map[string]int
}

func newStagHarness(t *testing.T, width int, seed uint64) *stagHarness {
	b, err := LoadPlacement(gen.PlacementDefault(width))
	require.NoError(t, err)
	eng, err := b.NewEngine()
	require.NoError(t, err)
	t.Cleanup(eng.Close)
	h := &stagHarness{cfg: b.Config, eng: eng, rng: NewRand(seed), table: mem.NewTable(), iommu: map[uint64]*stagRegion{},
		nextIOVA: 1 << 32, sent: map[string]int{}, lanes: width / 8}
	eng.Stall = func() (gap, hold bool) { return h.rng.Chance(h.gapP), h.rng.Chance(h.holdP) }
	h.pool = NewPool(h.rng, 1<<16)
	for i := 0; i < 3; i++ {
		h.pds = append(h.pds, h.table.AllocPD())
	}
	return h
}

func (h *stagHarness) fail(format string, args ...any) {
	if h.violation == "" {
		h.violation = fmt.Sprintf(format, args...)
	}
}

// take lands a call's DMA writes in host memory and matches its
// Terminates with the ones expected.
func (h *stagHarness) take(res *PlacementResult) {
	for _, d := range res.DMA {
		h.dmaWrite(d)
	}
	for _, tm := range res.Terms {
		if len(h.wantTerms) == 0 {
			h.fail("cycle %d: unexpected Terminate %v", h.eng.Cycles(), tm.Cause)
		} else if tm.Cause != h.wantTerms[0] {
			h.fail("cycle %d: Terminate %v, expected %v", h.eng.Cycles(), tm.Cause, h.wantTerms[0])
		}
		if len(h.wantTerms) > 0 {
			h.wantTerms = h.wantTerms[1:]
		}
		h.terms++
	}
}

// dmaWrite lands one block write in host memory through the IOMMU map.
func (h *stagHarness) dmaWrite(d PlacementDMA) {
	h.dmaWrites++
	if d.Addr%uint64(h.lanes) != 0 {
		h.fail("cycle %d: DMA address %#x not block aligned", h.eng.Cycles(), d.Addr)
	}
	for o := 0; o < h.lanes; o++ {
		if d.Strb>>o&1 == 0 { // at most 64 lanes
			continue
		}
		a := d.Addr + uint64(o)
		r := h.iommu[a>>stagtab.PageShift]
		if r == nil {
			h.fail("cycle %d: DMA write of byte %#x: no region maps that IOVA", h.eng.Cycles(), a)
			continue
		}
		if !r.tr.Paged {
			if a < r.tr.Addr || a-r.tr.Addr >= uint64(len(r.rtl)) {
				h.fail("cycle %d: DMA write of byte %#x next to the contiguous region at %#x", h.eng.Cycles(), a, r.tr.Addr)
				continue
			}
			r.rtl[a-r.tr.Addr] = d.Data[o]
			continue
		}
		for k, pg := range r.tr.Pages {
			if a>>stagtab.PageShift == pg>>stagtab.PageShift {
				r.rtl[k<<stagtab.PageShift+int(a&(stagtab.PageSize-1))] = d.Data[o]
			}
		}
	}
}

// flush runs the register writes the Programmer queued.
func (h *stagHarness) flush(t *testing.T) {
	h.gapP, h.holdP = 0, 0
	res, err := h.eng.Flush()
	require.NoError(t, err)
	h.take(res)
}

// initDone is the Programmer's view of init_done.
func (h *stagHarness) initDone() (bool, error) { return h.eng.InitDone(), nil }

// The driver.Regs of the block at stagBase: write-only, one write a cycle.

func (h *stagHarness) Write32(off, v uint32) error {
	if off < stagBase || off-stagBase >= 1<<8 || off%4 != 0 {
		return fmt.Errorf("%w: write at %#x outside the placement block at %#x", driver.ErrInvalid, off, stagBase)
	}
	h.regWrites++
	return h.eng.RegWrite(off-stagBase, v)
}

func (h *stagHarness) Write64(off uint32, v uint64) error {
	if err := h.Write32(off, uint32(v)); err != nil {
		return err
	}
	return h.Write32(off+4, uint32(v>>32))
}

func (h *stagHarness) Read32(off uint32) (uint32, error) {
	return 0, fmt.Errorf("%w: the placement block's registers are write-only", driver.ErrInvalid)
}

func (h *stagHarness) Read64(off uint32) (uint64, error) {
	return 0, fmt.Errorf("%w: the placement block's registers are write-only", driver.ErrInvalid)
}

// register makes a random buffer, registers it in the mirror (an index the
// card can hold), maps it into IOVA space contiguous or page by page, and
// programs the card.
func (h *stagHarness) register(t *testing.T) {
	r := h.rng
	n := 1 + r.IntN(3000)
	if r.Chance(80) {
		n = 1 + r.IntN(20000)
	}
	reg := &stagRegion{state: "live"}
	pd := h.pds[r.IntN(len(h.pds))]
	reg.pdID = pd.ID
	if r.Chance(64) {
		reg.qpID = 1 + uint32(r.IntN(4))
	}
	access := mem.RemoteWrite | mem.Access(r.IntN(16))
	if r.Chance(32) {
		access &^= mem.RemoteWrite
	}
	addr := uint64(0)
	if r.Chance(160) {
		addr = r.Uint64() >> 16 // VA-based
	}
	var buf []byte
	if r.Chance(128) {
		off := uint64(r.IntN(stagtab.PageSize))
		reg.gold = make([]byte, stagtab.PagesFor(off, uint64(n))<<stagtab.PageShift)
		buf = reg.gold[off : off+uint64(n)]
		var pages []uint64
		for range stagtab.PagesFor(off, uint64(n)) {
			h.nextIOVA += uint64(1+r.IntN(8)) << stagtab.PageShift
			pages = append(pages, h.nextIOVA)
			h.iommu[h.nextIOVA>>stagtab.PageShift] = reg
		}
		r.Shuffle(len(pages), func(i, j int) { pages[i], pages[j] = pages[j], pages[i] })
		reg.tr = stagtab.Paged(off, pages)
		h.paged++
	} else {
		reg.gold = make([]byte, n)
		buf = reg.gold
		h.nextIOVA += uint64(1+r.IntN(8))<<stagtab.PageShift + uint64(r.IntN(stagtab.PageSize))
		reg.tr = stagtab.Contiguous(h.nextIOVA)
		for pg := h.nextIOVA >> stagtab.PageShift; pg <= (h.nextIOVA+uint64(n)-1)>>stagtab.PageShift; pg++ {
			h.iommu[pg] = reg
		}
		h.nextIOVA = (h.nextIOVA + uint64(n) + stagtab.PageSize) &^ (stagtab.PageSize - 1)
	}
	copy(reg.gold, h.pool.Slice(r, min(len(reg.gold), len(h.pool)/2)))
	reg.rtl = bytes.Clone(reg.gold)
	mr, err := stagtab.RegisterMirror(pd, h.cfg.TableDepth, buf, addr, access, reg.qpID)
	require.NoError(t, err)
	reg.mr = mr
	e, ok := h.table.Lookup(mr.STag)
	require.True(t, ok)
	require.NoError(t, h.programmer.Write(mr.STag.Index(), e, reg.tr))
	h.flush(t)
	h.regions = append(h.regions, reg)
}

func (h *stagHarness) pick(state string) *stagRegion {
	for try := 0; try < 64; try++ {
		if reg := h.regions[h.rng.IntN(len(h.regions))]; reg.state == state {
			return reg
		}
	}
	return nil
}

func (h *stagHarness) invalidate(t *testing.T) {
	if reg := h.pick("live"); reg != nil {
		require.NoError(t, h.table.Invalidate(reg.mr.STag, reg.pdID))
		require.NoError(t, h.programmer.Invalidate(reg.mr.STag.Index()))
		h.flush(t)
		reg.state = "invalidated"
	}
}

// deregister removes a region from card and mirror; its IOVAs stay mapped
// here so that a stray write to them is seen.
func (h *stagHarness) deregister(t *testing.T) {
	if reg := h.pick("live"); reg != nil {
		require.NoError(t, h.programmer.Remove(reg.mr.STag.Index()))
		h.flush(t)
		require.NoError(t, reg.mr.Deregister())
		reg.state = "deregistered"
	}
}

// resetBlock resets the block: the Programmer starts over, and its first
// segments find an empty table; then the driver reprograms every region the
// mirror holds.
func (h *stagHarness) resetBlock(t *testing.T) {
	h.gapP, h.holdP = 0, 0
	require.NoError(t, h.eng.Reset())
	h.programmer.Reset()
	require.ErrorIs(t, h.programmer.Invalidate(1), stagtab.ErrNotReady)
	require.NoError(t, h.programmer.Init(context.Background()))
	for i := 0; i < 40; i++ {
		reg := h.pick("live")
		if reg == nil {
			continue
		}
		h.send(t, reg.mr.STag, reg.pdID, reg.qpID, reg.mr.Addr, 1+h.rng.IntN(len(reg.mr.Buf)), "after reset", rdmap.DDPInvalidSTag)
	}
	for _, reg := range h.regions {
		if reg.state == "deregistered" {
			continue
		}
		e, ok := h.table.Lookup(reg.mr.STag)
		require.True(t, ok)
		require.NoError(t, h.programmer.Write(reg.mr.STag.Index(), e, reg.tr))
	}
	h.flush(t)
}

// traffic sends n random segments, good and hostile, and drains.
func (h *stagHarness) traffic(t *testing.T, n int) {
	r := h.rng
	for i := 0; i < n; i++ {
		reg := h.pick("live")
		if reg == nil {
			continue
		}
		stag, pd, qp := reg.mr.STag, reg.pdID, reg.qpID
		if qp == 0 {
			qp = 1 + uint32(r.IntN(4))
		}
		size := len(reg.mr.Buf)
		ln := 1 + r.IntN(min(size, 3000))
		to := reg.mr.Addr + uint64(r.IntN(size-ln+1))
		what := "good"
		switch x := r.IntN(24); {
		case x == 0:
			stag ^= mem.STag(1 + r.IntN(255))
			what = "wrong key"
		case x == 1:
			pd = pd%uint32(len(h.pds)) + 1
			what = "wrong PD"
		case x == 2 && reg.qpID != 0:
			qp = reg.qpID%4 + 1
			what = "wrong stream"
		case x == 3 && reg.mr.Addr > 0:
			to = reg.mr.Addr - 1
			what = "one byte below"
		case x == 4:
			to = reg.mr.Addr + uint64(size-ln) + 1
			what = "one byte above"
		case x == 5:
			if old := h.pick("invalidated"); old != nil {
				stag, pd, qp = old.mr.STag, old.pdID, max(old.qpID, 1)
				to, ln = old.mr.Addr, min(len(old.mr.Buf), 3000)
				what = "invalidated"
			}
		case x == 6:
			if old := h.pick("deregistered"); old != nil {
				stag, pd, qp = old.mr.STag, old.pdID, max(old.qpID, 1)
				to, ln = old.mr.Addr, min(len(old.mr.Buf), 3000)
				what = "deregistered"
			}
		case x == 7:
			stag = mem.MakeSTag(uint32(h.cfg.TableDepth)+uint32(r.IntN(1<<20)), stag.Key())
			what = "index past the table"
		}
		if what == "good" && reg.mr.Access&mem.RemoteWrite == 0 {
			what = "no write right"
		}
		h.send(t, stag, pd, qp, to, ln, what, 0)
	}
}

// send queues one RDMA Write segment and runs the block until it is in.
// The mirror places the payload (if its check passes) in the region's gold
// memory; a failed check must come out of the block as that fault's
// Terminate (or as force, if not 0).
func (h *stagHarness) send(t *testing.T, stag mem.STag, pd, qp uint32, to uint64, n int, what string, force rdmap.Cause) {
	payload := h.pool.Slice(h.rng, n)
	req := mem.Request{STag: stag, PD: pd, QP: qp, TO: to, Use: mem.UseRemoteWrite}
	if force != 0 {
		h.wantTerms = append(h.wantTerms, force)
	} else {
		f := h.table.Place(req, payload)
		if (f == mem.OK) != (what == "good") {
			t.Fatalf("%s segment to %v: the mirror says %v", what, stag, f)
		}
		if f != mem.OK {
			h.wantTerms = append(h.wantTerms, f.Cause(mem.UseRemoteWrite))
		}
	}
	h.sent[what]++
	frame := ddp.TaggedFields{Last: true, Version: ddp.Version1, RsvdULP: uint8(rdmap.NewControl(rdmap.Version1, rdmap.OpWrite)),
		STag: uint32(stag), TO: to}.Append(nil)
	frame = append(frame, payload...)
	h.gapP, h.holdP = 0, 24
	if h.rng.Chance(64) {
		h.gapP = 160
	}
	res, err := h.eng.Place(PlacementSegment{ULPDU: frame, QP: qp, PD: pd, Rev: true})
	require.NoError(t, err, "seed of this run: see the test log")
	h.take(res)
}

// finish compares every region's memory: what the RTL wrote against what
// the mirror placed, byte for byte, slack of the pages included.
func (h *stagHarness) finish(t *testing.T) {
	require.Empty(t, h.violation)
	require.Empty(t, h.wantTerms, "Terminates that never came")
	for i, reg := range h.regions {
		if !bytes.Equal(reg.gold, reg.rtl) {
			for k := range reg.gold {
				if reg.gold[k] != reg.rtl[k] {
					t.Fatalf("region %d (%v, %s, paged %v): byte %d of its memory is %#02x, the mirror placed %#02x",
						i, reg.mr.STag, reg.state, reg.tr.Paged, k, reg.rtl[k], reg.gold[k])
				}
			}
		}
	}
}

func (h *stagHarness) summary() string {
	s := ""
	for _, k := range []string{"good", "wrong key", "wrong PD", "wrong stream", "one byte below", "one byte above",
		"no write right", "invalidated", "deregistered", "index past the table", "after reset"} {
		s += fmt.Sprintf(" %s=%d", k, h.sent[k])
	}
	return s
}
