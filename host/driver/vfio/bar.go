package vfio

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BAR is a memory BAR of a device mapped into this process with mmap. Its
// registers are read and written through typed accessors (Reg32, Reg64, or
// Read32/Write32/Read64/Write64), each one single access of that width in
// program order, as a device's registers need.
//
// If vfio-pci maps only parts of the BAR (a sparse mapping, for instance
// around an MSI-X table), accesses to the other parts go through the device
// file (pread/pwrite) instead, transparently.
//
// After Close, loads return all ones and stores are dropped, as they are on
// PCIe for a device that is gone. Close must not run concurrently with
// accesses.
type BAR struct {
	d      *Device
	index  int
	info   RegionInfo
	base   unsafe.Pointer // start of the BAR in this process (size info.Size)
	areas  []SparseArea   // the mmapped parts
	ro     bool           // mapped read-only: stores go to the file, which refuses them
	closed atomic.Bool
}

// MapBAR maps BAR index (0-5). Mapping the same BAR again returns the same
// *BAR. It fails with ErrBARNotMappable if the BAR is not implemented, is an
// I/O port BAR, or vfio-pci does not allow mmap of it.
func (d *Device) MapBAR(index int) (*BAR, error) {
	op := fmt.Sprintf("map BAR%d", index)
	if index < RegionBAR0 || index > RegionBAR5 {
		return nil, newErr(op, d.String(), ErrOutOfRange, "PCI has BARs 0-5", nil)
	}
	ri, err := d.RegionInfo(index)
	if err != nil {
		return nil, err
	}
	return d.mapBAR(index, ri)
}

// mapBAR maps BAR index as ri describes it.
func (d *Device) mapBAR(index int, ri RegionInfo) (*BAR, error) {
	op := fmt.Sprintf("map BAR%d", index)
	var err error
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, newErr(op, d.String(), ErrClosed, "", nil)
	}
	if b := d.bars[index]; b != nil {
		return b, nil
	}
	if ri.Size == 0 {
		return nil, newErr(op, d.String(), ErrBARNotMappable, fmt.Sprintf("the device does not implement BAR%d (size 0)", index), nil)
	}
	areas := ri.mmapAreas()
	if len(areas) == 0 {
		return nil, newErr(op, d.String(), ErrBARNotMappable, fmt.Sprintf(
			"vfio-pci does not allow mmap of BAR%d (%#x bytes, flags %#x): an I/O port BAR, or one smaller than a page", index, ri.Size, ri.Flags), nil)
	}
	if ri.Size > 1<<46 {
		return nil, newErr(op, d.String(), ErrBARNotMappable, fmt.Sprintf("BAR%d size %#x is implausible", index, ri.Size), nil)
	}
	prot := unix.PROT_READ
	if ri.Writable() {
		prot |= unix.PROT_WRITE
	}
	b := &BAR{d: d, index: index, info: ri, areas: areas, ro: !ri.Writable()}
	if len(areas) == 1 && areas[0].Offset == 0 && areas[0].Size == ri.Size {
		b.base, err = unix.MmapPtr(d.fd, int64(ri.Offset), nil, uintptr(ri.Size), prot, unix.MAP_SHARED)
		if err != nil {
			return nil, newErr(op, d.String(), ErrBARNotMappable, fmt.Sprintf("mmap of %#x bytes", ri.Size), err)
		}
	} else {
		// Reserve the whole BAR's address range inaccessible, then map the
		// allowed areas over it, so that offsets stay those of the BAR.
		b.base, err = unix.MmapPtr(-1, 0, nil, uintptr(ri.Size), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
		if err != nil {
			return nil, newErr(op, d.String(), ErrBARNotMappable, fmt.Sprintf("reserving %#x bytes of address space", ri.Size), err)
		}
		for _, a := range areas {
			if _, err := unix.MmapPtr(d.fd, int64(ri.Offset+a.Offset), unsafe.Add(b.base, a.Offset), uintptr(a.Size), prot, unix.MAP_SHARED|unix.MAP_FIXED); err != nil {
				unix.MunmapPtr(b.base, uintptr(ri.Size))
				return nil, newErr(op, d.String(), ErrBARNotMappable, fmt.Sprintf("mmap of area [%#x+%#x]", a.Offset, a.Size), err)
			}
		}
	}
	d.bars[index] = b
	return b, nil
}

// Index is the BAR number; Size its size in bytes; Info its region info.
func (b *BAR) Index() int       { return b.index }
func (b *BAR) Size() uint64     { return b.info.Size }
func (b *BAR) Info() RegionInfo { return b.info }

// Close unmaps the BAR.
func (b *BAR) Close() error {
	b.d.mu.Lock()
	if b.d.bars != nil && b.d.bars[b.index] == b {
		b.d.bars[b.index] = nil
	}
	b.d.mu.Unlock()
	return b.unmap()
}

func (b *BAR) unmap() error {
	if b.closed.Swap(true) {
		return nil
	}
	if err := unix.MunmapPtr(b.base, uintptr(b.info.Size)); err != nil {
		return newErr(fmt.Sprintf("unmap BAR%d", b.index), b.d.String(), ErrOutOfRange, "", err)
	}
	return nil
}

// reg checks a width-byte access at off and returns its direct pointer, or
// nil if that part of the BAR is reachable only through the device file.
func (b *BAR) reg(off uint64, width uint64) (unsafe.Pointer, error) {
	if b.closed.Load() {
		return nil, newErr("access", b.d.String(), ErrClosed, fmt.Sprintf("BAR%d", b.index), nil)
	}
	if off%width != 0 || off > b.info.Size || width > b.info.Size-off {
		return nil, newErr("access", b.d.String(), ErrOutOfRange, fmt.Sprintf("%d-bit register at %#x of the %#x-byte BAR%d (must be inside and %d-byte aligned)", width*8, off, b.info.Size, b.index, width), nil)
	}
	for _, a := range b.areas {
		if off >= a.Offset && off+width <= a.Offset+a.Size {
			return unsafe.Add(b.base, off), nil
		}
	}
	return nil, nil
}

// Reg32 is a 32-bit register of a mapped BAR, checked once when it is made.
type Reg32 struct {
	b   *BAR
	p   unsafe.Pointer // nil: go through the device file
	off uint64
}

// Reg64 is a 64-bit register of a mapped BAR.
type Reg64 struct {
	b   *BAR
	p   unsafe.Pointer
	off uint64
}

// Reg32 returns the 32-bit register at off; it must lie inside the BAR and
// be 4-byte aligned.
func (b *BAR) Reg32(off uint64) (Reg32, error) {
	p, err := b.reg(off, 4)
	return Reg32{b, p, off}, err
}

// Reg64 returns the 64-bit register at off; it must lie inside the BAR and
// be 8-byte aligned. Its accesses are single 64-bit accesses: a device that
// wants two 32-bit halves needs two Reg32.
func (b *BAR) Reg64(off uint64) (Reg64, error) {
	p, err := b.reg(off, 8)
	return Reg64{b, p, off}, err
}

// Load reads the register (all ones once the BAR is closed).
func (r Reg32) Load() uint32 {
	if r.b == nil || r.b.closed.Load() {
		return ^uint32(0)
	}
	if r.p != nil {
		return mmioLoad32(r.p)
	}
	var buf [4]byte
	if r.b.fileIO(buf[:], r.off, unix.Pread) != nil {
		return ^uint32(0)
	}
	return binary.LittleEndian.Uint32(buf[:])
}

// Store writes the register (dropped once the BAR is closed, and refused
// by the kernel if the BAR is read-only).
func (r Reg32) Store(v uint32) {
	if r.b == nil || r.b.closed.Load() {
		return
	}
	if r.p != nil && !r.b.ro {
		mmioStore32(r.p, v)
		return
	}
	var buf [4]byte
	binary.LittleEndian.PutUint32(buf[:], v)
	r.b.fileIO(buf[:], r.off, unix.Pwrite)
}

// Load reads the register (all ones once the BAR is closed).
func (r Reg64) Load() uint64 {
	if r.b == nil || r.b.closed.Load() {
		return ^uint64(0)
	}
	if r.p != nil {
		return mmioLoad64(r.p)
	}
	var buf [8]byte
	if r.b.fileIO(buf[:], r.off, unix.Pread) != nil {
		return ^uint64(0)
	}
	return binary.LittleEndian.Uint64(buf[:])
}

// Store writes the register (dropped once the BAR is closed).
func (r Reg64) Store(v uint64) {
	if r.b == nil || r.b.closed.Load() {
		return
	}
	if r.p != nil && !r.b.ro {
		mmioStore64(r.p, v)
		return
	}
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], v)
	r.b.fileIO(buf[:], r.off, unix.Pwrite)
}

// fileIO accesses the BAR through the device file (one access of len(p)).
func (b *BAR) fileIO(p []byte, off uint64, io func(int, []byte, int64) (int, error)) error {
	for {
		n, err := io(b.d.fd, p, int64(b.info.Offset+off))
		if err == unix.EINTR {
			continue
		}
		if err == nil && n != len(p) {
			err = unix.EIO
		}
		return err
	}
}

// Read32 reads the 32-bit register at off.
func (b *BAR) Read32(off uint64) (uint32, error) {
	r, err := b.Reg32(off)
	if err != nil {
		return ^uint32(0), err
	}
	return r.Load(), nil
}

// Write32 writes the 32-bit register at off.
func (b *BAR) Write32(off uint64, v uint32) error {
	r, err := b.Reg32(off)
	if err == nil {
		err = b.checkWritable(off)
	}
	if err == nil {
		r.Store(v)
	}
	return err
}

func (b *BAR) checkWritable(off uint64) error {
	if b.ro {
		return newErr("write", b.d.String(), ErrOutOfRange, fmt.Sprintf("BAR%d is read-only (offset %#x)", b.index, off), nil)
	}
	return nil
}

// Read64 reads the 64-bit register at off.
func (b *BAR) Read64(off uint64) (uint64, error) {
	r, err := b.Reg64(off)
	if err != nil {
		return ^uint64(0), err
	}
	return r.Load(), nil
}

// Write64 writes the 64-bit register at off.
func (b *BAR) Write64(off uint64, v uint64) error {
	r, err := b.Reg64(off)
	if err == nil {
		err = b.checkWritable(off)
	}
	if err == nil {
		r.Store(v)
	}
	return err
}
