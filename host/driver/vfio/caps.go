package vfio

import (
	"errors"
	"fmt"
)

// Parsers for what the kernel writes back: the fixed headers and the
// capability chains that follow them. They take the raw reply bytes, so a
// malformed or truncated reply is an error naming what was wrong, never a
// read out of bounds.

// errBadReply wraps every malformed-reply error so callers can tell a kernel
// ABI mismatch from an ordinary failure.
var errBadReply = errors.New("malformed VFIO reply")

// capability is one entry of a vfio_info_cap_header chain: its id, version
// and its body (the bytes after the 8-byte header up to the next entry or
// the end of the buffer).
type capability struct {
	ID, Version uint16
	Body        []byte
}

// walkCaps follows a capability chain that starts at offset first inside b.
// Offsets are from the start of b. The chain must move forward (the kernel
// builds it in increasing order), which also rules out loops.
func walkCaps(b []byte, first uint32) ([]capability, error) {
	var caps []capability
	off := uint64(first)
	for off != 0 {
		if off+capHeaderSize > uint64(len(b)) {
			return nil, fmt.Errorf("%w: capability header at %d overruns the %d-byte reply", errBadReply, off, len(b))
		}
		id := ne.Uint16(b[off:])
		ver := ne.Uint16(b[off+2:])
		next := uint64(ne.Uint32(b[off+4:]))
		end := uint64(len(b))
		if next != 0 {
			if next < off+capHeaderSize || next > end {
				return nil, fmt.Errorf("%w: capability %d at %d links to %d (reply is %d bytes)", errBadReply, id, off, next, len(b))
			}
			end = next
		}
		caps = append(caps, capability{ID: id, Version: ver, Body: b[off+capHeaderSize : end]})
		off = next
	}
	return caps, nil
}

// IOVARange is an inclusive range of I/O virtual addresses the IOMMU can map.
type IOVARange struct {
	Start, End uint64 // End is the last usable address, as the kernel reports it
}

// Size is the number of bytes in the range (0 means the whole 64-bit space).
func (r IOVARange) Size() uint64 { return r.End - r.Start + 1 }

func (r IOVARange) String() string { return fmt.Sprintf("[%#x-%#x]", r.Start, r.End) }

// IOMMUInfo is what VFIO_IOMMU_GET_INFO reports for a type1 container.
type IOMMUInfo struct {
	// PageSizes is a bitmap of the IOMMU page sizes; its lowest set bit is
	// the smallest unit of mapping (IOVA, size and address alignment).
	PageSizes uint64
	// IOVARanges are the usable IOVA ranges, in increasing order. They
	// exclude reserved regions such as the x86 MSI window at 0xfee00000.
	// Empty if the kernel did not report any (pre-5.4 kernels): then every
	// IOVA the IOMMU's address width allows is usable.
	IOVARanges []IOVARange
	// DMAAvail is how many more DMA mappings the container accepts
	// (vfio_iommu_type1's dma_entry_limit), valid if HasDMAAvail.
	DMAAvail    uint32
	HasDMAAvail bool
}

// MinPageSize is the smallest IOMMU page size, or 4096 if none was reported.
func (i IOMMUInfo) MinPageSize() uint64 {
	if i.PageSizes == 0 {
		return 4096
	}
	return i.PageSizes & -i.PageSizes
}

// parseIOMMUInfo decodes a vfio_iommu_type1_info reply. If the kernel asked
// for a larger buffer (the capability chain did not fit), need is that size
// and the caller repeats the ioctl with it.
func parseIOMMUInfo(b []byte) (info IOMMUInfo, need uint32, err error) {
	if len(b) < iommuInfoSize {
		return info, 0, fmt.Errorf("%w: iommu info is %d bytes, want at least %d", errBadReply, len(b), iommuInfoSize)
	}
	argsz := ne.Uint32(b[0:])
	flags := ne.Uint32(b[4:])
	if flags&iommuInfoFlagPgsizes != 0 {
		info.PageSizes = ne.Uint64(b[8:])
	}
	if flags&iommuInfoFlagCaps == 0 {
		return info, 0, nil
	}
	if uint64(argsz) > uint64(len(b)) {
		return info, argsz, nil
	}
	capOff := ne.Uint32(b[16:])
	if capOff == 0 { // the chain did not fit and argsz was not raised: nothing to read
		return info, 0, nil
	}
	if capOff < iommuInfoSize {
		return info, 0, fmt.Errorf("%w: iommu capability chain starts at %d, inside the %d-byte header", errBadReply, capOff, iommuInfoSize)
	}
	caps, err := walkCaps(b, capOff)
	if err != nil {
		return info, 0, err
	}
	for _, c := range caps {
		switch c.ID {
		case iommuCapIOVARange:
			if info.IOVARanges, err = parseIOVARanges(c.Body); err != nil {
				return info, 0, err
			}
		case iommuCapDMAAvail:
			if len(c.Body) < 4 {
				return info, 0, fmt.Errorf("%w: dma_avail capability body is %d bytes", errBadReply, len(c.Body))
			}
			info.DMAAvail, info.HasDMAAvail = ne.Uint32(c.Body), true
		}
	}
	return info, 0, nil
}

// parseIOVARanges decodes the body of vfio_iommu_type1_info_cap_iova_range:
// u32 nr_iovas, u32 reserved, then nr_iovas {u64 start, u64 end}.
func parseIOVARanges(body []byte) ([]IOVARange, error) {
	if len(body) < 8 {
		return nil, fmt.Errorf("%w: iova range capability body is %d bytes", errBadReply, len(body))
	}
	n := uint64(ne.Uint32(body))
	if n > uint64(len(body)-8)/16 {
		return nil, fmt.Errorf("%w: iova range capability claims %d ranges in %d bytes", errBadReply, n, len(body))
	}
	ranges := make([]IOVARange, n)
	var prevEnd uint64
	for i := range ranges {
		p := body[8+16*i:]
		r := IOVARange{Start: ne.Uint64(p), End: ne.Uint64(p[8:])}
		if r.End < r.Start || (i > 0 && r.Start <= prevEnd) {
			return nil, fmt.Errorf("%w: iova range %d %v is empty or out of order", errBadReply, i, r)
		}
		prevEnd = r.End
		ranges[i] = r
	}
	return ranges, nil
}

// SparseArea is a part of a region that may be mmapped, relative to the
// start of the region.
type SparseArea struct {
	Offset, Size uint64
}

// RegionInfo describes one region of a device (a BAR, the ROM, config space).
type RegionInfo struct {
	Index  uint32
	Flags  uint32
	Size   uint64
	Offset uint64 // file offset of the region on the device fd
	// Sparse, if not nil, lists the only parts of the region that may be
	// mmapped (for example everything but an MSI-X table).
	Sparse []SparseArea
	// MSIXMappable says the MSI-X table inside this BAR may be mmapped too.
	MSIXMappable bool
}

// Readable, Writable and Mappable report the region's access flags.
func (r RegionInfo) Readable() bool { return r.Flags&regionFlagRead != 0 }
func (r RegionInfo) Writable() bool { return r.Flags&regionFlagWrite != 0 }
func (r RegionInfo) Mappable() bool { return r.Flags&regionFlagMmap != 0 }

// mmapAreas are the parts of the region to mmap: the sparse areas if the
// kernel listed any, otherwise the whole region.
func (r RegionInfo) mmapAreas() []SparseArea {
	if !r.Mappable() || r.Size == 0 {
		return nil
	}
	if r.Sparse != nil {
		return r.Sparse
	}
	return []SparseArea{{0, r.Size}}
}

// parseRegionInfo decodes a vfio_region_info reply; need works as in
// parseIOMMUInfo.
func parseRegionInfo(b []byte) (info RegionInfo, need uint32, err error) {
	if len(b) < regionInfoSize {
		return info, 0, fmt.Errorf("%w: region info is %d bytes, want at least %d", errBadReply, len(b), regionInfoSize)
	}
	argsz := ne.Uint32(b[0:])
	info.Flags = ne.Uint32(b[regionOffFlags:])
	info.Index = ne.Uint32(b[regionOffIndex:])
	info.Size = ne.Uint64(b[regionOffSize:])
	info.Offset = ne.Uint64(b[regionOffOffset:])
	if info.Flags&regionFlagCaps == 0 {
		return info, 0, nil
	}
	if uint64(argsz) > uint64(len(b)) {
		return info, argsz, nil
	}
	capOff := ne.Uint32(b[regionOffCapOff:])
	if capOff == 0 {
		return info, 0, nil
	}
	if capOff < regionInfoSize {
		return info, 0, fmt.Errorf("%w: region %d capability chain starts at %d, inside the header", errBadReply, info.Index, capOff)
	}
	caps, err := walkCaps(b, capOff)
	if err != nil {
		return info, 0, err
	}
	for _, c := range caps {
		switch c.ID {
		case regionCapSparse:
			if info.Sparse, err = parseSparse(c.Body, info.Size); err != nil {
				return info, 0, fmt.Errorf("region %d: %w", info.Index, err)
			}
		case regionCapMSIXMap:
			info.MSIXMappable = true
		}
	}
	return info, 0, nil
}

// parseSparse decodes vfio_region_info_cap_sparse_mmap: u32 nr_areas,
// u32 reserved, then nr_areas {u64 offset, u64 size}. Every area must lie
// inside the region; empty areas are dropped.
func parseSparse(body []byte, regionSize uint64) ([]SparseArea, error) {
	if len(body) < 8 {
		return nil, fmt.Errorf("%w: sparse mmap capability body is %d bytes", errBadReply, len(body))
	}
	n := uint64(ne.Uint32(body))
	if n > uint64(len(body)-8)/16 {
		return nil, fmt.Errorf("%w: sparse mmap capability claims %d areas in %d bytes", errBadReply, n, len(body))
	}
	areas := make([]SparseArea, 0, n)
	for i := uint64(0); i < n; i++ {
		p := body[8+16*i:]
		a := SparseArea{Offset: ne.Uint64(p), Size: ne.Uint64(p[8:])}
		if a.Size == 0 {
			continue
		}
		if a.Offset > regionSize || a.Size > regionSize-a.Offset {
			return nil, fmt.Errorf("%w: sparse area %d [%#x+%#x] is outside the %#x-byte region", errBadReply, i, a.Offset, a.Size, regionSize)
		}
		areas = append(areas, a)
	}
	return areas, nil
}

// DeviceInfo is what VFIO_DEVICE_GET_INFO reports.
type DeviceInfo struct {
	Flags      uint32
	NumRegions uint32
	NumIRQs    uint32
}

// CanReset reports whether the device supports VFIO_DEVICE_RESET.
func (d DeviceInfo) CanReset() bool { return d.Flags&deviceFlagReset != 0 }

// IsPCI reports whether the device is a vfio-pci device.
func (d DeviceInfo) IsPCI() bool { return d.Flags&deviceFlagPCI != 0 }

func parseDeviceInfo(b []byte) (DeviceInfo, error) {
	if len(b) < 16 {
		return DeviceInfo{}, fmt.Errorf("%w: device info is %d bytes", errBadReply, len(b))
	}
	return DeviceInfo{
		Flags:      ne.Uint32(b[devInfoOffFlags:]),
		NumRegions: ne.Uint32(b[devInfoOffNumReg:]),
		NumIRQs:    ne.Uint32(b[devInfoOffNumIRQ:]),
	}, nil
}

// IRQInfo is what VFIO_DEVICE_GET_IRQ_INFO reports for one IRQ index.
type IRQInfo struct {
	Index, Flags, Count uint32
}

// Eventfd, Maskable and Automasked report the IRQ index's flags. An
// automasked interrupt (INTx) stays masked after it fires until unmasked.
func (i IRQInfo) Eventfd() bool    { return i.Flags&irqFlagEventfd != 0 }
func (i IRQInfo) Maskable() bool   { return i.Flags&irqFlagMaskable != 0 }
func (i IRQInfo) Automasked() bool { return i.Flags&irqFlagAutomasked != 0 }

func parseIRQInfo(b []byte) (IRQInfo, error) {
	if len(b) < irqInfoSize {
		return IRQInfo{}, fmt.Errorf("%w: irq info is %d bytes", errBadReply, len(b))
	}
	return IRQInfo{Flags: ne.Uint32(b[4:]), Index: ne.Uint32(b[8:]), Count: ne.Uint32(b[12:])}, nil
}
