package sim

import (
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"unsafe"
)

// Windows is the benches' host memory for a Card: disjoint
// windows of the caller's memory at IOVAs; an access with a byte outside
// every window is refused (ErrUnmapped). The card's writes land as whole
// aligned 32-bit words stored atomically (sync/atomic) in ascending order,
// so another goroutine may poll a word with an atomic load; reads load
// aligned words atomically too. Not safe for concurrent Map/Unmap and
// access: the Card's caller serialises them.
type Windows struct{ wins []window }

type window struct {
	iova uint64
	mem  []byte
}

// ErrUnmapped is wrapped by a Windows access outside every window.
var ErrUnmapped = errors.New("sim: DMA outside every mapped window")

// Map makes mem reachable at iova..iova+len(mem)-1 until Unmap.
func (w *Windows) Map(iova uint64, mem []byte) error {
	if len(mem) == 0 {
		return fmt.Errorf("%w: Map at %#x: empty window", ErrCard, iova)
	}
	end := iova + uint64(len(mem))
	if end < iova {
		return fmt.Errorf("%w: Map at %#x of %d bytes wraps the address space", ErrCard, iova, len(mem))
	}
	i := sort.Search(len(w.wins), func(i int) bool { return w.wins[i].iova >= iova })
	if i > 0 && w.wins[i-1].iova+uint64(len(w.wins[i-1].mem)) > iova || i < len(w.wins) && w.wins[i].iova < end {
		return fmt.Errorf("%w: Map at %#x of %d bytes overlaps a mapped window", ErrCard, iova, len(mem))
	}
	w.wins = append(w.wins, window{})
	copy(w.wins[i+1:], w.wins[i:])
	w.wins[i] = window{iova: iova, mem: mem}
	return nil
}

// Unmap revokes the window mapped at iova.
func (w *Windows) Unmap(iova uint64) error {
	i := sort.Search(len(w.wins), func(i int) bool { return w.wins[i].iova >= iova })
	if i == len(w.wins) || w.wins[i].iova != iova {
		return fmt.Errorf("%w: Unmap at %#x: no window starts there", ErrCard, iova)
	}
	w.wins = append(w.wins[:i], w.wins[i+1:]...)
	return nil
}

// find returns the bytes of [a, a+n) if one window holds them whole.
func (w *Windows) find(a uint64, n int) ([]byte, error) {
	i := sort.Search(len(w.wins), func(i int) bool { return w.wins[i].iova > a }) - 1
	if i >= 0 {
		x := w.wins[i]
		if e := a + uint64(n); e >= a && e <= x.iova+uint64(len(x.mem)) {
			return x.mem[a-x.iova : e-x.iova], nil
		}
	}
	return nil, fmt.Errorf("%w: %d bytes at %#x", ErrUnmapped, n, a)
}

// ReadMem copies the memory at iova into p.
func (w *Windows) ReadMem(iova uint64, p []byte) error {
	m, err := w.find(iova, len(p))
	if err != nil {
		return err
	}
	loadBytes(p, m)
	return nil
}

// WriteMem copies p to iova, word by word as described above.
func (w *Windows) WriteMem(iova uint64, p []byte) error {
	m, err := w.find(iova, len(p))
	if err != nil {
		return err
	}
	storeBytes(m, p)
	return nil
}

// loadBytes copies src into dst, aligned words with atomic loads.
func loadBytes(dst, src []byte) {
	i := 0
	for i < len(dst) {
		if uintptr(unsafe.Pointer(&src[i]))%4 == 0 && i+4 <= len(dst) {
			v := atomic.LoadUint32((*uint32)(unsafe.Pointer(&src[i])))
			dst[i], dst[i+1], dst[i+2], dst[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			i += 4
			continue
		}
		dst[i] = src[i]
		i++
	}
}

// storeBytes copies src into dst in ascending order, each aligned word it
// touches stored atomically (a partial word merged by compare-and-swap).
func storeBytes(dst, src []byte) {
	i := 0
	for i < len(src) {
		off := int(uintptr(unsafe.Pointer(&dst[i])) % 4)
		base := i - off
		if base < 0 || base+4 > len(dst) {
			dst[i] = src[i]
			i++
			continue
		}
		wp := (*uint32)(unsafe.Pointer(&dst[base]))
		k := min(4-off, len(src)-i)
		if off == 0 && k == 4 {
			atomic.StoreUint32(wp, uint32(src[i])|uint32(src[i+1])<<8|uint32(src[i+2])<<16|uint32(src[i+3])<<24)
		} else {
			for {
				old := atomic.LoadUint32(wp)
				nw := old
				for j := 0; j < k; j++ {
					sh := uint(8 * (off + j))
					nw = nw&^(0xff<<sh) | uint32(src[i+j])<<sh
				}
				if atomic.CompareAndSwapUint32(wp, old, nw) {
					break
				}
			}
		}
		i += k
	}
}
