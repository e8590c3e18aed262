package stagtab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/host/driver"
)

const testBase = 0x1000

// recRegs records every write and passes it to an Image; it can fail the
// n-th write (counting from 1), performing nothing, as a Regs must.
type recRegs struct {
	img    *Image
	writes []Write
	failAt int
}

var errBus = errors.New("bus error")

func (r *recRegs) Write32(off, v uint32) error {
	if r.failAt > 0 {
		r.failAt--
		if r.failAt == 0 {
			return errBus
		}
	}
	r.writes = append(r.writes, Write{off, v})
	return r.img.Write32(off, v)
}
func (r *recRegs) Write64(off uint32, v uint64) error { return r.img.Write64(off, v) }
func (r *recRegs) Read32(off uint32) (uint32, error)  { return r.img.Read32(off) }
func (r *recRegs) Read64(off uint32) (uint64, error)  { return r.img.Read64(off) }

func newTestProgrammer(t *testing.T, tableDepth, pblDepth int) (*Programmer, *recRegs) {
	t.Helper()
	img := NewImage(tableDepth, pblDepth)
	img.Base = testBase
	r := &recRegs{img: img}
	p, err := New(r, Config{Base: testBase, TableDepth: tableDepth, PBLDepth: pblDepth, InitDone: func() (bool, error) { return true, nil }})
	require.NoError(t, err)
	require.NoError(t, p.Init(context.Background()))
	return p, r
}

// checkImage asserts that the card holds exactly what the Programmer says.
func checkImage(t *testing.T, p *Programmer, img *Image, index uint32) {
	t.Helper()
	want, ok := p.Lookup(index)
	e, tr, cardOK := img.Lookup(index)
	if !ok {
		if cardOK {
			assert.False(t, e.Valid, "index %d removed but valid on the card", index)
		}
		return
	}
	require.True(t, cardOK, "index %d", index)
	assert.Equal(t, want.Entry, e, "index %d", index)
	assert.Equal(t, want.Translation.Paged, tr.Paged)
	assert.Equal(t, want.Translation.Addr, tr.Addr)
	assert.Equal(t, len(want.Translation.Pages), len(tr.Pages))
	for k := range tr.Pages {
		assert.Equal(t, want.Translation.Pages[k], tr.Pages[k], "index %d page %d", index, k)
	}
}

func TestNewConfig(t *testing.T) {
	img := NewImage(16, 16)
	done := func() (bool, error) { return true, nil }
	for _, c := range []struct {
		name string
		r    driver.Regs
		cfg  Config
	}{
		{"no regs", nil, Config{TableDepth: 16, PBLDepth: 16, InitDone: done}},
		{"no table", img, Config{PBLDepth: 16, InitDone: done}},
		{"table too deep", img, Config{TableDepth: 1<<24 + 1, PBLDepth: 16, InitDone: done}},
		{"page list too deep", img, Config{TableDepth: 16, PBLDepth: 1<<16 + 1, InitDone: done}},
		{"misaligned base", img, Config{Base: 2, TableDepth: 16, PBLDepth: 16, InitDone: done}},
		{"base at the top", img, Config{Base: 0xffff_ff00 + 4, TableDepth: 16, PBLDepth: 16, InitDone: done}},
		{"no init_done", img, Config{TableDepth: 16, PBLDepth: 16}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.r, c.cfg)
			assert.ErrorIs(t, err, ErrConfig)
		})
	}
	_, err := New(img, Config{Base: 0xffff_ff00, TableDepth: 1 << 24, PBLDepth: 1 << 16, InitDone: done})
	assert.NoError(t, err)
}

// Nothing is written before init_done; Init waits for it, and Reset
// forgets everything.
func TestInitAndReset(t *testing.T) {
	img := NewImage(16, 16)
	r := &recRegs{img: img}
	polls := 0
	p, err := New(r, Config{TableDepth: 16, PBLDepth: 16, InitDone: func() (bool, error) { polls++; return polls > 3, nil }})
	require.NoError(t, err)
	e := mem.Entry{Valid: true, Length: 10}
	assert.ErrorIs(t, p.Write(1, e, Contiguous(0)), ErrNotReady)
	assert.ErrorIs(t, p.Invalidate(1), ErrNotReady)
	assert.ErrorIs(t, p.Remove(1), ErrNotReady)
	assert.Empty(t, r.writes)
	require.NoError(t, p.Init(context.Background()))
	assert.Equal(t, 4, polls)
	require.NoError(t, p.Write(1, e, Paged(0, []uint64{0x1000})))
	assert.Equal(t, 15, p.FreeSlots())

	p.Reset()
	_, ok := p.Lookup(1)
	assert.False(t, ok)
	assert.Equal(t, 16, p.FreeSlots())
	assert.ErrorIs(t, p.Write(1, e, Contiguous(0)), ErrNotReady)

	// init_done never comes: Init gives up with the context.
	p2, err := New(r, Config{TableDepth: 16, PBLDepth: 16, InitDone: func() (bool, error) { return false, nil }})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err = p2.Init(ctx)
	assert.ErrorIs(t, err, ErrNotReady)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	// A failing probe is reported.
	p3, err := New(r, Config{TableDepth: 16, PBLDepth: 16, InitDone: func() (bool, error) { return false, errBus }})
	require.NoError(t, err)
	assert.ErrorIs(t, p3.Init(context.Background()), errBus)
}

// The exact writes of Write, Invalidate and Remove, at the base offset.
func TestProgrammerSequences(t *testing.T) {
	p, r := newTestProgrammer(t, 64, 16)
	e := mem.Entry{Valid: true, Key: 3, PD: 4, Base: 0x2000, Length: 0x1001, Access: mem.RemoteWrite}
	pages := []uint64{0xa000, 0xb000}
	require.NoError(t, p.Write(9, e, Paged(0xfff, pages)))
	var want []Write
	for _, w := range AppendWrites(nil, 9, e, Paged(0xfff, pages), 0) {
		want = append(want, Write{testBase + w.Off, w.Val})
	}
	assert.Equal(t, want, r.writes)
	checkImage(t, p, r.img, 9)

	r.writes = nil
	require.NoError(t, p.Invalidate(9))
	assert.Equal(t, []Write{{testBase + 0x30, 9}}, r.writes)
	got, ok := p.Lookup(9)
	require.True(t, ok)
	assert.False(t, got.Entry.Valid)
	assert.Equal(t, 14, p.FreeSlots(), "an invalidated entry keeps its pages")
	checkImage(t, p, r.img, 9)

	r.writes = nil
	require.NoError(t, p.Remove(9))
	assert.Equal(t, []Write{{testBase + 0x30, 9}}, r.writes)
	_, ok = p.Lookup(9)
	assert.False(t, ok)
	assert.Equal(t, 16, p.FreeSlots())
	assert.ErrorIs(t, p.Invalidate(64), ErrIndex)
	assert.ErrorIs(t, p.Remove(64), ErrIndex)
	assert.ErrorIs(t, p.Write(64, e, Contiguous(0)), ErrIndex)
}

// Replacing an entry commits the new page list in fresh slots and frees the
// old ones only afterwards; next-fit keeps freed slots unused as long as
// possible.
func TestProgrammerSlots(t *testing.T) {
	p, r := newTestProgrammer(t, 16, 8)
	e := mem.Entry{Valid: true, Length: 3 * PageSize}
	three := []uint64{0x1000, 0x2000, 0x3000}
	require.NoError(t, p.Write(1, e, Paged(0, three)))
	got, _ := p.Lookup(1)
	assert.Equal(t, uint32(0), got.Slot)
	require.NoError(t, p.Write(1, e, Paged(0, []uint64{0x4000, 0x5000, 0x6000})))
	got, _ = p.Lookup(1)
	assert.Equal(t, uint32(3), got.Slot, "the new list does not overwrite the live one")
	assert.Equal(t, 5, p.FreeSlots())
	checkImage(t, p, r.img, 1)
	// Slots 0-2 are free again, but next-fit hands out 6-7 first.
	two := mem.Entry{Valid: true, Length: 2 * PageSize}
	require.NoError(t, p.Write(2, two, Paged(0, []uint64{0x7000, 0x8000})))
	got, _ = p.Lookup(2)
	assert.Equal(t, uint32(6), got.Slot)
	// Then it wraps round to the freed ones.
	require.NoError(t, p.Write(3, e, Paged(0, three)))
	got, _ = p.Lookup(3)
	assert.Equal(t, uint32(0), got.Slot)
	assert.Equal(t, 0, p.FreeSlots())
	err := p.Write(4, mem.Entry{Length: 1}, Paged(0, []uint64{0x9000}))
	assert.ErrorIs(t, err, ErrPageListFull)
	assert.Contains(t, err.Error(), "index 4")
	// A contiguous entry needs no slot, and replacing a paged entry by a
	// contiguous one frees its slots.
	require.NoError(t, p.Write(4, mem.Entry{Length: 1}, Contiguous(0x9000)))
	require.NoError(t, p.Write(2, two, Contiguous(0x9000)))
	assert.Equal(t, 2, p.FreeSlots())
	// Fragmented: two free slots, not consecutive.
	require.NoError(t, p.Write(5, mem.Entry{Length: 1}, Paged(0, []uint64{0xa000})))
	require.NoError(t, p.Remove(1))
	require.NoError(t, p.Write(6, e, Paged(0, three)))
	for i := uint32(0); i < 16; i++ {
		checkImage(t, p, r.img, i)
	}
}

// A failed register write keeps the card's entry and the slots as they were.
func TestProgrammerWriteFails(t *testing.T) {
	p, r := newTestProgrammer(t, 16, 8)
	e := mem.Entry{Valid: true, Key: 1, Length: 2 * PageSize}
	require.NoError(t, p.Write(1, e, Paged(0, []uint64{0x1000, 0x2000})))
	n := len(AppendWrites(nil, 1, e, Paged(0, []uint64{0x1000, 0x2000}), 0))
	for fail := 1; fail <= n; fail++ {
		r.failAt = fail
		e2 := e
		e2.Key = 2
		err := p.Write(1, e2, Paged(0, []uint64{0x3000, 0x4000}))
		require.ErrorIs(t, err, errBus)
		assert.Contains(t, err.Error(), "writing index 1")
		assert.Equal(t, 6, p.FreeSlots())
		got, _ := p.Lookup(1)
		assert.Equal(t, uint8(1), got.Entry.Key)
		checkImage(t, p, r.img, 1)
	}
	r.failAt = 1
	assert.ErrorIs(t, p.Invalidate(1), errBus)
	got, _ := p.Lookup(1)
	assert.True(t, got.Entry.Valid)
	r.failAt = 1
	assert.ErrorIs(t, p.Remove(1), errBus)
	assert.Equal(t, 6, p.FreeSlots())
}

// Random programs of writes, invalidations and removals, from many
// goroutines: the card ends up holding exactly what the Programmer says,
// and no two live entries share a page-list slot.
func TestProgrammerRandom(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	const depth, pbl = 64, 256
	p, r := newTestProgrammer(t, depth, pbl)
	var mu sync.Mutex
	locked := &lockedRegs{mu: &mu, r: r}
	p.regs = locked
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for i := 0; i < 300; i++ {
				idx := uint32(g*depth/4 + rng.IntN(depth/4))
				switch rng.IntN(8) {
				case 0:
					_ = p.Invalidate(idx)
				case 1:
					_ = p.Remove(idx)
				default:
					e, tr := randEntry(rng)
					err := p.Write(idx, e, tr)
					if err != nil && !errors.Is(err, ErrPageListFull) {
						t.Errorf("seed %d: %v", seed, err)
					}
				}
			}
		}(g)
	}
	wg.Wait()
	owner := map[uint32]uint32{}
	for i := uint32(0); i < depth; i++ {
		checkImage(t, p, r.img, i)
		if got, ok := p.Lookup(i); ok && got.Translation.Paged {
			for k := range got.Translation.Pages {
				s := got.Slot + uint32(k)
				if o, dup := owner[s]; dup {
					t.Errorf("seed %d: slot %d used by indexes %d and %d", seed, s, o, i)
				}
				owner[s] = i
			}
		}
	}
	assert.Equal(t, pbl-len(owner), p.FreeSlots(), "seed %d", seed)
}

type lockedRegs struct {
	mu *sync.Mutex
	r  *recRegs
}

func (l *lockedRegs) Write32(off, v uint32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Write32(off, v)
}
func (l *lockedRegs) Write64(off uint32, v uint64) error { return l.r.Write64(off, v) }
func (l *lockedRegs) Read32(off uint32) (uint32, error)  { return l.r.Read32(off) }
func (l *lockedRegs) Read64(off uint32) (uint64, error)  { return l.r.Read64(off) }

// randEntry is a valid random entry: contiguous, or paged over up to 8 pages.
func randEntry(rng *rand.Rand) (mem.Entry, Translation) {
	e := mem.Entry{Valid: rng.IntN(8) != 0, Key: uint8(rng.Uint32()), PD: rng.Uint32(), Access: mem.Access(rng.IntN(16)),
		Length: uint64(rng.IntN(8 * PageSize)), Base: rng.Uint64() >> 1}
	if rng.IntN(2) == 0 {
		e.QP = rng.Uint32()
	}
	if rng.IntN(2) == 0 {
		return e, Contiguous(rng.Uint64() >> 2)
	}
	off := uint64(rng.IntN(PageSize))
	if e.Length > 7*PageSize {
		e.Length = 7 * PageSize
	}
	pages := make([]uint64, PagesFor(off, e.Length))
	for k := range pages {
		pages[k] = rng.Uint64() >> 12 << 12
	}
	return e, Paged(off, pages)
}

func TestImageRegs(t *testing.T) {
	img := NewImage(4, 4)
	img.Base = 0x100
	assert.ErrorIs(t, img.Write32(0x0fc, 0), driver.ErrInvalid)
	assert.ErrorIs(t, img.Write32(0x200, 0), driver.ErrInvalid)
	assert.ErrorIs(t, img.Write32(0x102, 0), driver.ErrInvalid)
	assert.ErrorIs(t, img.Write64(0x1fc, 0), driver.ErrInvalid)
	_, err := img.Read32(0x100)
	assert.ErrorIs(t, err, driver.ErrInvalid)
	_, err = img.Read64(0x100)
	assert.ErrorIs(t, err, driver.ErrInvalid)
	// Write64 is the low register, then the high one.
	require.NoError(t, img.Write64(0x110, 0x2_0000_0001))
	require.NoError(t, img.Write32(0x100, 3))
	require.NoError(t, img.Write32(0x12c, 0))
	e, _, ok := img.Lookup(3)
	require.True(t, ok)
	assert.Equal(t, uint64(0x2_0000_0001), e.Base)
	// Commits beyond the depth are not stored; invalidating nothing is nothing.
	require.NoError(t, img.Write32(0x100, 4))
	require.NoError(t, img.Write32(0x12c, 0))
	require.NoError(t, img.Write32(0x130, 2))
	assert.Len(t, img.Entries, 1)
}

// The mirror's STags fit the card's table.
func TestRegisterMirror(t *testing.T) {
	pd := mem.NewTable().AllocPD()
	buf := make([]byte, 64)
	start := time.Now()
	seen := map[uint32]bool{}
	for i := 0; i < 40; i++ {
		mr, err := RegisterMirror(pd, 4096, buf, 0x1000, mem.RemoteWrite, 7)
		require.NoError(t, err)
		require.Less(t, mr.STag.Index(), uint32(4096))
		require.False(t, seen[mr.STag.Index()])
		seen[mr.STag.Index()] = true
		e, ok := pd.Table().Lookup(mr.STag)
		require.True(t, ok)
		assert.Equal(t, mem.Entry{Valid: true, Key: mr.STag.Key(), PD: pd.ID, QP: 7, Base: 0x1000, Length: 64, Access: mem.RemoteWrite}, e)
	}
	t.Logf("40 registrations in a 4096-entry table: %v", time.Since(start))
	_, err := RegisterMirror(pd, 4096, buf, ^uint64(0), 0, 0)
	assert.ErrorIs(t, err, mem.ErrArgument)
}

func ExampleProgrammer() {
	// An Image stands for the card here: on a board, the Regs is BAR0.
	img := NewImage(4096, 4096)
	img.Base = 0x10000
	p, err := New(img, Config{Base: 0x10000, TableDepth: 4096, PBLDepth: 4096,
		InitDone: func() (bool, error) { return true, nil }})
	if err != nil {
		panic(err)
	}
	if err := p.Init(context.Background()); err != nil {
		panic(err)
	}
	// 6000 bytes of a buffer starting 0x80 into its first page, whose pages
	// the IOMMU maps at two unrelated IOVAs, open to remote writes at
	// tagged offsets 0x10000 on.
	e := mem.Entry{Valid: true, Key: 0x5a, PD: 1, Base: 0x10000, Length: 6000, Access: mem.RemoteWrite}
	tr := Paged(0x80, []uint64{0x7f_0000_3000, 0x7f_0009_1000})
	if err := p.Write(42, e, tr); err != nil {
		panic(err)
	}
	for _, to := range []uint64{0x10000, 0x10f7f, 0x10f80, 0x1176f, 0x11770} {
		addr, ok := Translate(e, tr, to)
		fmt.Printf("TO %#x -> %#x %v\n", to, addr, ok)
	}
	got, _, _ := img.Lookup(42)
	fmt.Println(got == e, p.FreeSlots())
	err = p.Write(4096, e, tr)
	fmt.Println(errors.Is(err, ErrIndex))
	// Output:
	// TO 0x10000 -> 0x7f00003080 true
	// TO 0x10f7f -> 0x7f00003fff true
	// TO 0x10f80 -> 0x7f00091000 true
	// TO 0x1176f -> 0x7f000917ef true
	// TO 0x11770 -> 0x0 false
	// true 4094
	// true
}
