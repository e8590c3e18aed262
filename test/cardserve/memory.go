package cardserve

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrOutsideRAM: a DMA of the card to guest-physical addresses that are not
// guest RAM QEMU shared with us (MMIO, a hole, beyond the end of memory, or
// no RAM received yet). The card sees an error response.
var ErrOutsideRAM = errors.New("cardserve: DMA outside guest RAM")

// DMAError is one refused DMA of the card.
type DMAError struct {
	Addr  uint64
	Len   int
	Write bool
}

func (e *DMAError) Error() string {
	dir := "read"
	if e.Write {
		dir = "write"
	}
	return fmt.Sprintf("%v: DMA %s of %d bytes at guest-physical %#x", ErrOutsideRAM, dir, e.Len, e.Addr)
}

func (e *DMAError) Unwrap() error { return ErrOutsideRAM }

// Region is one section of guest RAM: guest-physical [GPA, GPA+Size).
type Region struct {
	GPA, Size uint64
}

// ramRegion is a Region mapped into this process.
type ramRegion struct {
	Region
	mem  []byte // the mmap, from the page holding the region's first byte
	skip uint64 // offset of the region's first byte in mem
}

// guestRAM is the guest's memory map: the regions of the last SYNC_SYSMEM,
// each mmapped from the memfd QEMU sent.
type guestRAM struct {
	mu      sync.RWMutex
	regions []ramRegion // sorted by GPA
}

// replace maps the regions of one SYNC_SYSMEM (one fd each, at the given
// file offsets) and drops the previous map. It takes ownership of the
// files and closes them.
func (g *guestRAM) replace(regs []Region, offsets []int64, files []*os.File) error {
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	next := make([]ramRegion, 0, len(regs))
	var errs []error
	for i, r := range regs {
		if r.Size == 0 {
			continue
		}
		off := offsets[i]
		if off < 0 {
			errs = append(errs, fmt.Errorf("cardserve: guest RAM region [%#x,+%#x) at negative file offset %d", r.GPA, r.Size, off))
			continue
		}
		page := int64(os.Getpagesize())
		base := off &^ (page - 1)
		skip := uint64(off - base)
		mem, err := unix.Mmap(int(files[i].Fd()), base, int(r.Size+skip), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			errs = append(errs, fmt.Errorf("cardserve: mapping guest RAM [%#x,+%#x) from file offset %#x: %w", r.GPA, r.Size, off, err))
			continue
		}
		next = append(next, ramRegion{Region: r, mem: mem, skip: skip})
	}
	sort.Slice(next, func(i, j int) bool { return next[i].GPA < next[j].GPA })
	g.mu.Lock()
	old := g.regions
	g.regions = next
	g.mu.Unlock()
	for _, r := range old {
		unix.Munmap(r.mem)
	}
	return errors.Join(errs...)
}

// Regions is the current map.
func (g *guestRAM) Regions() []Region {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]Region, len(g.regions))
	for i, r := range g.regions {
		out[i] = r.Region
	}
	return out
}

func (g *guestRAM) close() {
	g.mu.Lock()
	old := g.regions
	g.regions = nil
	g.mu.Unlock()
	for _, r := range old {
		unix.Munmap(r.mem)
	}
}

// access runs fn on guest RAM [addr, addr+n) with the map held, or returns
// a *DMAError. A DMA must lie inside one region (QEMU's RAM sections do not
// touch: a DMA across a boundary would cross a hole).
func (g *guestRAM) access(addr uint64, n int, write bool, fn func(m []byte)) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	i := sort.Search(len(g.regions), func(i int) bool { return g.regions[i].GPA > addr }) - 1
	if i >= 0 {
		r := g.regions[i]
		if off := addr - r.GPA; off+uint64(n) <= r.Size && off+uint64(n) >= off {
			fn(r.mem[r.skip+off : r.skip+off+uint64(n)])
			return nil
		}
	}
	return &DMAError{Addr: addr, Len: n, Write: write}
}

func (g *guestRAM) read(addr uint64, p []byte) error {
	return g.access(addr, len(p), false, func(m []byte) { copy(p, m) })
}

// write stores p at addr. A record (32 bytes or less, word aligned) goes as
// ascending 32-bit atomic stores, as driver.Phys promises the driver: once
// the driver's atomic load sees a record's flag word, it sees everything
// the card wrote before it.
func (g *guestRAM) write(addr uint64, p []byte) error {
	return g.access(addr, len(p), true, func(m []byte) {
		if len(p) > 32 || addr%4 != 0 || len(p)%4 != 0 {
			copy(m, p)
			return
		}
		for i := 0; i < len(p); i += 4 {
			v := uint32(p[i]) | uint32(p[i+1])<<8 | uint32(p[i+2])<<16 | uint32(p[i+3])<<24
			atomic.StoreUint32((*uint32)(unsafe.Pointer(&m[i])), v)
		}
	})
}
