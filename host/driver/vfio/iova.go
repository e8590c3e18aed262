package vfio

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"sync"
)

// IOVAAllocator hands out I/O virtual addresses from the ranges an IOMMU
// reports. It is first-fit over a sorted free list, merges neighbours on
// free, never hands out IOVA 0 (the first page is kept back so that a zeroed
// descriptor can never point at valid memory), and honours an upper limit
// per allocation for devices that cannot address all 64 bits.
// It is safe for concurrent use.
type IOVAAllocator struct {
	mu    sync.Mutex
	page  uint64
	free  []IOVARange       // sorted, disjoint, not adjacent, inclusive ends
	inUse map[uint64]uint64 // iova -> size of each live allocation
}

// NewIOVAAllocator returns an allocator over ranges (inclusive, as the
// kernel reports them) in units of pageSize, a power of two.
func NewIOVAAllocator(ranges []IOVARange, pageSize uint64) (*IOVAAllocator, error) {
	if pageSize == 0 || pageSize&(pageSize-1) != 0 {
		return nil, newErr("new IOVA allocator", "", ErrOutOfRange, fmt.Sprintf("page size %#x is not a power of two", pageSize), nil)
	}
	a := &IOVAAllocator{page: pageSize, inUse: map[uint64]uint64{}}
	rs := append([]IOVARange(nil), ranges...)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	for _, r := range rs {
		if r.End < r.Start {
			continue
		}
		start := max(r.Start, pageSize) // keep IOVA 0 and its page back
		start, ok := alignUp(start, pageSize)
		if !ok {
			continue
		}
		end := r.End // last byte of the last whole page in the range
		if end != ^uint64(0) {
			top := (end + 1) &^ (pageSize - 1)
			if top == 0 {
				continue
			}
			end = top - 1
		}
		if start > end {
			continue
		}
		a.insertFree(IOVARange{start, end})
	}
	if len(a.free) == 0 {
		return nil, newErr("new IOVA allocator", "", ErrIOVAExhausted, fmt.Sprintf("no whole %#x-byte page in the ranges %v", pageSize, ranges), nil)
	}
	return a, nil
}

// alignUp rounds v up to a multiple of align (a power of two); ok is false
// on overflow.
func alignUp(v, align uint64) (uint64, bool) {
	s, carry := bits.Add64(v, align-1, 0)
	return s &^ (align - 1), carry == 0
}

// PageSize is the allocator's unit.
func (a *IOVAAllocator) PageSize() uint64 { return a.page }

// Alloc reserves size bytes (rounded up to whole pages) at an IOVA aligned
// to align (0 means the page size; otherwise a power of two). If limit is
// not 0, the whole allocation lies below limit: iova+size <= limit.
func (a *IOVAAllocator) Alloc(size, align, limit uint64) (uint64, error) {
	if align == 0 {
		align = a.page
	}
	if size == 0 || align&(align-1) != 0 {
		return 0, newErr("allocate IOVA", "", ErrOutOfRange, fmt.Sprintf("size %#x, alignment %#x: want size > 0 and a power-of-two alignment", size, align), nil)
	}
	align = max(align, a.page)
	size, ok := alignUp(size, a.page)
	if !ok {
		return 0, newErr("allocate IOVA", "", ErrIOVAExhausted, fmt.Sprintf("size %#x overflows", size), nil)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, r := range a.free {
		start, ok := alignUp(r.Start, align)
		if !ok || start > r.End {
			continue
		}
		if limit != 0 && start >= limit {
			break
		}
		last, carry := bits.Add64(start, size-1, 0)
		if carry != 0 || last > r.End || (limit != 0 && last > limit-1) {
			continue
		}
		a.take(i, start, last)
		a.inUse[start] = size
		return start, nil
	}
	where := ""
	if limit != 0 {
		where = fmt.Sprintf(" below %#x", limit)
	}
	return 0, newErr("allocate IOVA", "", ErrIOVAExhausted,
		fmt.Sprintf("no free %#x bytes aligned to %#x%s; free ranges: %s", size, align, where, a.freeString()), nil)
}

// take removes [start, last] from free range i.
func (a *IOVAAllocator) take(i int, start, last uint64) {
	r := a.free[i]
	var repl []IOVARange
	if start > r.Start {
		repl = append(repl, IOVARange{r.Start, start - 1})
	}
	if last < r.End {
		repl = append(repl, IOVARange{last + 1, r.End})
	}
	a.free = append(a.free[:i], append(repl, a.free[i+1:]...)...)
}

// Free returns an allocation made by Alloc.
func (a *IOVAAllocator) Free(iova uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	size, ok := a.inUse[iova]
	if !ok {
		return newErr("free IOVA", "", ErrOutOfRange, fmt.Sprintf("%#x is not the start of a live allocation", iova), nil)
	}
	delete(a.inUse, iova)
	a.insertFree(IOVARange{iova, iova + size - 1})
	return nil
}

// insertFree adds r to the free list, merging it with adjacent ranges.
func (a *IOVAAllocator) insertFree(r IOVARange) {
	i := sort.Search(len(a.free), func(i int) bool { return a.free[i].Start > r.Start })
	a.free = append(a.free, IOVARange{})
	copy(a.free[i+1:], a.free[i:])
	a.free[i] = r
	if i+1 < len(a.free) && r.End != ^uint64(0) && a.free[i+1].Start <= r.End+1 {
		a.free[i].End = max(r.End, a.free[i+1].End)
		a.free = append(a.free[:i+1], a.free[i+2:]...)
	}
	if i > 0 && a.free[i-1].End != ^uint64(0) && a.free[i].Start <= a.free[i-1].End+1 {
		a.free[i-1].End = max(a.free[i-1].End, a.free[i].End)
		a.free = append(a.free[:i], a.free[i+1:]...)
	}
}

// Free ranges, for diagnostics and tests.
func (a *IOVAAllocator) FreeRanges() []IOVARange {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]IOVARange(nil), a.free...)
}

func (a *IOVAAllocator) freeString() string {
	if len(a.free) == 0 {
		return "none"
	}
	s := make([]string, len(a.free))
	for i, r := range a.free {
		s[i] = r.String()
	}
	return strings.Join(s, " ")
}
