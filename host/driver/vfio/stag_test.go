package vfio

import (
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/stagtab"
)

// testMapping is an IOMMU mapping as MapMemory computes it (the same page
// arithmetic over the slice's real address), without the ioctl.
type testMapping struct {
	span     pageSpan
	iova     uint64
	unmapped int
	onUnmap  func()
}

func (m *testMapping) Pages4K() (uint64, []uint64) { return m.span.pages4K(m.iova) }
func (m *testMapping) Unmap() error {
	m.unmapped++
	if m.onUnmap != nil {
		m.onUnmap()
	}
	return nil
}

// failRegs passes writes to an Image until told to fail.
type failRegs struct {
	*stagtab.Image
	fail bool
}

func (r *failRegs) Write32(off, v uint32) error {
	if r.fail {
		return errors.New("bus gone")
	}
	return r.Image.Write32(off, v)
}

type stagFixture struct {
	s        *stagTable
	img      *stagtab.Image
	regs     *failRegs
	maps     []*testMapping
	mapErr   error
	flushes  int
	flushErr error
	log      []string // order of card writes and unmaps
}

func newStagFixture(t *testing.T, iommuPage uint64) *stagFixture {
	t.Helper()
	b := DefaultBoard
	b.InitWait = time.Millisecond
	f := &stagFixture{img: stagtab.NewImage(b.TableDepth, b.PBLDepth)}
	f.img.Base = b.PlacementBase
	f.regs = &failRegs{Image: f.img}
	next := uint64(0x7_0000_0000)
	mapMem := func(buf []byte) (userMemory, error) {
		if f.mapErr != nil {
			return nil, f.mapErr
		}
		span, ok := spanOf(uint64(uintptr(unsafe.Pointer(&buf[0]))), uint64(len(buf)), iommuPage)
		require.True(t, ok)
		m := &testMapping{span: span, iova: next}
		m.onUnmap = func() { f.log = append(f.log, "unmap") }
		next += span.length + iommuPage
		f.maps = append(f.maps, m)
		return m, nil
	}
	flush := func() error { f.flushes++; f.log = append(f.log, "flush"); return f.flushErr }
	opened := time.Now()
	s, err := newStagTable(b, f.regs, opened, mapMem, flush)
	require.NoError(t, err)
	require.ErrorIs(t, s.prog.Write(1, mem.Entry{}, stagtab.Contiguous(0)), stagtab.ErrNotReady)
	require.NoError(t, s.init())
	assert.GreaterOrEqual(t, time.Since(opened), b.InitWait, "Init waits for the engine")
	f.s = s
	return f
}

// Every byte of a registered buffer translates, through what the card
// holds, to the IOVA of that byte in the mapping; nothing outside does.
func TestRegisterMRPageList(t *testing.T) {
	for _, page := range []uint64{4096, 65536} {
		f := newStagFixture(t, page)
		pd := f.s.allocPD()
		backing := make([]byte, 3*65536)
		for _, c := range []struct {
			off, n int
			addr   uint64
		}{{0, 1, 0}, {100, 4000, 0x1000}, {4095, 2, 0}, {5000, 70000, 0x7fff_0000_0000}, {0, 3 * 65536, 0}} {
			buf := backing[c.off : c.off+c.n]
			mr, err := f.s.register(pd, buf, c.addr, mem.RemoteWrite|mem.LocalWrite, 0)
			require.NoError(t, err)
			require.Less(t, mr.STag.Index(), uint32(DefaultBoard.TableDepth))
			m := f.maps[len(f.maps)-1]
			e, tr, ok := f.img.Lookup(mr.STag.Index())
			require.True(t, ok, "page %d, case %+v, %v", page, c, mr.STag)
			want, _ := f.s.tab.Lookup(mr.STag)
			want.Kind = mem.KindMR
			assert.Equal(t, want, e, "the card holds the mirror's entry")
			assert.True(t, tr.Paged)
			base := uint64(uintptr(unsafe.Pointer(&buf[0])))
			for _, i := range []int{0, min(1, c.n-1), c.n / 2, c.n - 1} {
				got, ok := stagtab.Translate(e, tr, c.addr+uint64(i))
				require.True(t, ok, "byte %d of %d", i, c.n)
				assert.Equal(t, m.iova+(base+uint64(i)-m.span.vaddr), got, "page %d, byte %d of %d at offset %d", page, i, c.n, c.off)
			}
			_, ok = stagtab.Translate(e, tr, c.addr+uint64(c.n))
			assert.False(t, ok)
		}
		assert.Equal(t, 5, f.s.count())
	}
}

// Deregistration: the card stops (invalidation, then the flush read), then
// the mirror forgets the region and the memory is unmapped, in that order.
func TestDeregisterMR(t *testing.T) {
	f := newStagFixture(t, 4096)
	pd := f.s.allocPD()
	buf := make([]byte, 10000)
	mr, err := f.s.register(pd, buf, 0, mem.RemoteWrite, 5)
	require.NoError(t, err)
	free := f.s.prog.FreeSlots()
	require.NoError(t, f.s.deregister(mr))
	assert.Equal(t, []string{"flush", "unmap"}, f.log)
	e, _, ok := f.img.Lookup(mr.STag.Index())
	require.True(t, ok)
	assert.False(t, e.Valid, "the card's entry is invalid")
	_, ok = f.s.tab.Lookup(mr.STag)
	assert.False(t, ok, "the mirror forgot it")
	assert.Greater(t, f.s.prog.FreeSlots(), free, "its page-list slots are free")
	assert.Equal(t, 0, f.s.count())
	assert.ErrorIs(t, f.s.deregister(mr), driver.ErrInvalid, "twice")

	// The flush fails: the card may still use the entry, so the region
	// stays mapped and registered.
	mr, err = f.s.register(pd, buf, 0, mem.RemoteWrite, 0)
	require.NoError(t, err)
	f.flushErr = errors.New("link down")
	assert.ErrorIs(t, f.s.deregister(mr), f.flushErr)
	assert.Equal(t, 0, f.maps[1].unmapped)
	assert.Equal(t, 1, f.s.count())
	f.flushErr = nil
	require.NoError(t, f.s.deregister(mr))
	assert.Equal(t, 1, f.maps[1].unmapped)
}

func TestRegisterMRErrors(t *testing.T) {
	f := newStagFixture(t, 4096)
	pd := f.s.allocPD()
	buf := make([]byte, 100)

	_, err := f.s.register(mem.NewTable().AllocPD(), buf, 0, 0, 0)
	assert.ErrorIs(t, err, driver.ErrInvalid, "a foreign PD")
	_, err = f.s.register(nil, buf, 0, 0, 0)
	assert.ErrorIs(t, err, driver.ErrInvalid)

	// Longer than the page list: refused before anything is pinned.
	big := make([]byte, DefaultBoard.PBLDepth*4096+1)
	_, err = f.s.register(pd, big, 0, mem.RemoteWrite, 0)
	assert.ErrorIs(t, err, driver.ErrInvalid)
	assert.ErrorIs(t, err, stagtab.ErrLength)
	assert.Empty(t, f.maps)

	// The mapping fails.
	f.mapErr = newErr("map DMA", "", ErrMemlock, "limit", nil)
	_, err = f.s.register(pd, buf, 0, mem.RemoteWrite, 0)
	assert.ErrorIs(t, err, ErrMemlock)
	f.mapErr = nil

	// The mirror refuses (the tagged range wraps): unmapped again.
	_, err = f.s.register(pd, buf, ^uint64(0)-10, mem.RemoteWrite, 0)
	assert.ErrorIs(t, err, driver.ErrInvalid)
	assert.ErrorIs(t, err, mem.ErrArgument)
	require.Len(t, f.maps, 1)
	assert.Equal(t, 1, f.maps[0].unmapped)

	// The card cannot be written: the mirror forgets the region, unmapped.
	f.regs.fail = true
	_, err = f.s.register(pd, buf, 0, mem.RemoteWrite, 0)
	assert.ErrorContains(t, err, "bus gone")
	require.Len(t, f.maps, 2)
	assert.Equal(t, 1, f.maps[1].unmapped)
	assert.Empty(t, f.img.Entries)
	assert.Equal(t, 0, f.s.count())
	f.regs.fail = false

	// A zero-length region maps nothing and still gets a (useless) entry.
	mr, err := f.s.register(pd, nil, 0x1000, mem.RemoteWrite, 0)
	require.NoError(t, err)
	assert.Len(t, f.maps, 2)
	e, tr, ok := f.img.Lookup(mr.STag.Index())
	require.True(t, ok)
	assert.Equal(t, uint64(0), e.Length)
	assert.Empty(t, tr.Pages)
	require.NoError(t, f.s.deregister(mr))
}

func TestSTagTableLimit(t *testing.T) {
	f := newStagFixture(t, 4096)
	assert.Equal(t, 3072, f.s.limit)
	f.s.limit = 6
	pd := f.s.allocPD()
	for i := 0; i < 6; i++ {
		_, err := f.s.register(pd, make([]byte, 10), 0, mem.RemoteWrite, 0)
		require.NoError(t, err)
	}
	_, err := f.s.register(pd, make([]byte, 10), 0, mem.RemoteWrite, 0)
	assert.ErrorIs(t, err, mem.ErrFull)
	require.NoError(t, f.s.close())
	for _, m := range f.maps {
		assert.Equal(t, 1, m.unmapped)
	}
	for _, c := range f.img.Entries {
		assert.False(t, c.Entry.Valid)
	}
}

func TestPageSpan(t *testing.T) {
	for _, c := range []struct {
		name          string
		addr, n, page uint64
		vaddr, length uint64
		off           uint64
		pages         []uint64 // relative to the mapping's IOVA
	}{
		{"one byte", 0x10_0005, 1, 4096, 0x10_0000, 4096, 5, []uint64{0}},
		{"whole page", 0x10_0000, 4096, 4096, 0x10_0000, 4096, 0, []uint64{0}},
		{"crosses a page", 0x10_0fff, 2, 4096, 0x10_0000, 8192, 0xfff, []uint64{0, 4096}},
		{"64 KiB IOMMU pages", 0x12_3456, 0x2000, 65536, 0x12_0000, 65536, 0x456, []uint64{0x3000, 0x4000, 0x5000}},
		{"64 KiB, across", 0x12_f800, 0x1000, 65536, 0x12_0000, 2 * 65536, 0x800, []uint64{0xf000, 0x10000}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, ok := spanOf(c.addr, c.n, c.page)
			require.True(t, ok)
			assert.Equal(t, c.vaddr, s.vaddr)
			assert.Equal(t, c.length, s.length)
			off, pages := s.pages4K(0x1_0000_0000)
			assert.Equal(t, c.off, off)
			for i := range c.pages {
				c.pages[i] += 0x1_0000_0000
			}
			assert.Equal(t, c.pages, pages)
		})
	}
	_, ok := spanOf(^uint64(0)-10, 100, 4096)
	assert.False(t, ok)
}

// A device that is not an openiwarp board: nothing operational works, and
// the errors say why.
func TestCardOperationalErrors(t *testing.T) {
	c := &Card{name: "vfio:0000:03:00.0", dev: &Device{pci: pciDevice{Addr: Address{Bus: 3}, Vendor: 0x1234, DeviceID: 0x11e8}},
		bar: &BAR{info: RegionInfo{Size: 1 << 20}}}
	_, err := c.AllocPD()
	assert.ErrorIs(t, err, ErrNotSupported)
	assert.ErrorContains(t, err, "[1234:11e8] is not an openiwarp board [1234:1f1a]")
	_, err = c.RegisterMR(nil, nil, 0, 0, 0)
	assert.ErrorIs(t, err, ErrNotSupported)
	assert.ErrorIs(t, c.DeregisterMR(nil), ErrNotSupported)
	_, err = c.CreateCQ(16)
	assert.ErrorIs(t, err, ErrNotSupported)
	assert.ErrorContains(t, err, "a completion queue needs the queue and doorbell registers")
	_, err = c.Attach(nil, mpa.Params{}, driver.QPConfig{})
	assert.ErrorContains(t, err, "a queue pair needs the queue and doorbell registers")
	assert.Equal(t, 0, c.Info().MaxMR)
	assert.Contains(t, c.Info().Detail, "[1234:11e8]")

	// On a board, the STag table answers; a nil region is refused.
	f := newStagFixture(t, 4096)
	c.stags = f.s
	assert.Equal(t, 3072, c.Info().MaxMR)
	pd, err := c.AllocPD()
	require.NoError(t, err)
	mr, err := c.RegisterMR(pd, make([]byte, 10), 0, mem.RemoteWrite, 0)
	require.NoError(t, err)
	assert.ErrorIs(t, c.DeregisterMR(nil), driver.ErrInvalid)
	require.NoError(t, c.DeregisterMR(mr))
	c.closed = true
	_, err = c.AllocPD()
	assert.ErrorIs(t, err, driver.ErrClosed)
}
