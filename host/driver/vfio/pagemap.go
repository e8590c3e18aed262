package vfio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrPFNHidden: /proc/self/pagemap shows the pages present but their frame
// numbers as zero, which Linux (since 4.2) does for a reader that opened it
// without CAP_SYS_ADMIN; without physical addresses the no-IOMMU path
// cannot tell the device where its buffers are.
var ErrPFNHidden = errors.New("physical page numbers hidden by the kernel")

// pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst).
const (
	pmPresent = 1 << 63
	pmSwapped = 1 << 62
	pmPFNMask = 1<<55 - 1
	pmPage    = 4096 // the page size pagemap indexes by on x86-64 (and the card's page)
)

// pagemapPath is read by physPages; tests point it elsewhere.
var pagemapPath = "/proc/self/pagemap"

// physPages returns the physical address of each of the n 4 KiB pages from
// vaddr (page aligned) on, read from /proc/self/pagemap in one pread. The
// file is opened for each call: the kernel judges the capability of the
// opener, so a process that gains it later is not stuck with zeros.
// The pages must be resident and pinned (mlock) for the answer to stay
// true.
func physPages(vaddr uintptr, n int) ([]uint64, error) {
	op := fmt.Sprintf("physical addresses of %d pages at %#x", n, vaddr)
	if os.Getpagesize() != pmPage {
		return nil, newErr(op, "", ErrNotSupported, fmt.Sprintf("the no-IOMMU path needs 4 KiB pages; this kernel's are %d bytes", os.Getpagesize()), nil)
	}
	if vaddr%pmPage != 0 || n <= 0 {
		return nil, newErr(op, "", ErrOutOfRange, "needs a page-aligned address and at least one page", nil)
	}
	f, err := os.Open(pagemapPath)
	if err != nil {
		return nil, newErr(op, "", ErrPFNHidden, pagemapPath+" cannot be opened (is /proc mounted?)", err)
	}
	defer f.Close()
	b := make([]byte, 8*n)
	for done := 0; done < len(b); {
		k, err := f.ReadAt(b[done:], int64(vaddr/pmPage*8)+int64(done))
		done += k
		if err != nil && done < len(b) {
			return nil, newErr(op, "", ErrPFNHidden, "reading "+pagemapPath, err)
		}
	}
	pages, err := decodePagemap(b, uint64(vaddr))
	switch {
	case errors.Is(err, errPFNZero):
		return nil, newErr(op, "", ErrPFNHidden, "", err)
	case err != nil:
		return nil, newErr(op, "", ErrOutOfRange, "", err)
	}
	return pages, nil
}

// errPFNZero is what decodePagemap wraps when a present page shows PFN 0.
var errPFNZero = errors.New("present page with frame number 0")

// decodePagemap turns pagemap entries (8 bytes each, little-endian, for
// consecutive 4 KiB pages from vaddr) into physical page addresses. Every
// page must be present in RAM (not swapped, not absent) with a non-zero
// frame number.
func decodePagemap(entries []byte, vaddr uint64) ([]uint64, error) {
	if len(entries)%8 != 0 {
		return nil, fmt.Errorf("%d bytes of pagemap entries: not a multiple of 8", len(entries))
	}
	pages := make([]uint64, len(entries)/8)
	for i := range pages {
		e := binary.LittleEndian.Uint64(entries[8*i:])
		va := vaddr + uint64(i)*pmPage
		switch {
		case e&pmPresent == 0 && e&pmSwapped != 0:
			return nil, fmt.Errorf("page at %#x is swapped out: it was not pinned (mlock)", va)
		case e&pmPresent == 0:
			return nil, fmt.Errorf("page at %#x is not in memory: it was not touched and pinned (mlock)", va)
		case e&pmPFNMask == 0:
			return nil, fmt.Errorf("page at %#x: %w: the kernel hides frame numbers from a process without CAP_SYS_ADMIN "+
				"(Linux checks CAP_SYS_ADMIN for pagemap, not CAP_SYS_RAWIO): run as root, or grant it: "+
				"setcap cap_sys_admin,cap_ipc_lock+ep PROGRAM", va, errPFNZero)
		case e&pmPFNMask >= 1<<52:
			return nil, fmt.Errorf("page at %#x: frame number %#x is beyond a 64-bit address", va, e&pmPFNMask)
		}
		pages[i] = (e & pmPFNMask) * pmPage
	}
	return pages, nil
}

// pinPages locks the pages of mem (page aligned) in RAM and returns their
// physical addresses; on failure the caller unlocks them. mlock makes them resident and keeps them from being
// swapped; it does not forbid the kernel to migrate them (compaction), so
// hosts running the no-IOMMU path set vm.compact_unevictable_allowed=0
// (or use huge pages, which are never migrated).
func pinPages(mem []byte) ([]uint64, error) {
	op := fmt.Sprintf("pin %d bytes for DMA without an IOMMU", len(mem))
	if err := unix.Mlock(mem); err != nil {
		if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EAGAIN) {
			return nil, newErr(op, "", ErrMemlock, "mlock went over RLIMIT_MEMLOCK: raise it (ulimit -l unlimited) or run with CAP_IPC_LOCK", err)
		}
		return nil, newErr(op, "", ErrOutOfRange, "mlock", err)
	}
	return physPages(addrOf(mem), len(mem)/pmPage)
}
