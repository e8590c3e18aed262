package vfio

// The VFIO user-space ABI (include/uapi/linux/vfio.h), written out in Go.
// Every structure is encoded into a byte slice in native byte order rather
// than mirrored as a Go struct, so that the layouts are explicit, checked by
// unit tests, and free of compiler padding surprises.

import "encoding/binary"

var ne = binary.NativeEndian

// ioctlNone encodes _IO(type, nr): VFIO ioctls carry no size or direction
// bits, because every argument structure starts with its own argsz field.
func ioctlNone(typ, nr uintptr) uintptr { return typ<<8 | nr }

const (
	vfioType = ';'
	vfioBase = 100
)

// Ioctl request numbers. The container, group and device file descriptors
// share one numbering space, and the IOMMU ioctls (issued on the container)
// reuse the numbers of the PCI hot-reset ioctls (issued on the device).
var (
	ioctlGetAPIVersion    = ioctlNone(vfioType, vfioBase+0)
	ioctlCheckExtension   = ioctlNone(vfioType, vfioBase+1)
	ioctlSetIOMMU         = ioctlNone(vfioType, vfioBase+2)
	ioctlGroupGetStatus   = ioctlNone(vfioType, vfioBase+3)
	ioctlGroupSetCont     = ioctlNone(vfioType, vfioBase+4)
	ioctlGroupUnsetCont   = ioctlNone(vfioType, vfioBase+5)
	ioctlGroupGetDeviceFD = ioctlNone(vfioType, vfioBase+6)
	ioctlDeviceGetInfo    = ioctlNone(vfioType, vfioBase+7)
	ioctlDeviceRegionInfo = ioctlNone(vfioType, vfioBase+8)
	ioctlDeviceIRQInfo    = ioctlNone(vfioType, vfioBase+9)
	ioctlDeviceSetIRQs    = ioctlNone(vfioType, vfioBase+10)
	ioctlDeviceReset      = ioctlNone(vfioType, vfioBase+11)
	ioctlIOMMUGetInfo     = ioctlNone(vfioType, vfioBase+12)
	ioctlIOMMUMapDMA      = ioctlNone(vfioType, vfioBase+13)
	ioctlIOMMUUnmapDMA    = ioctlNone(vfioType, vfioBase+14)
)

// apiVersion is the only VFIO_API_VERSION Linux has ever reported.
const apiVersion = 0

// Container extensions (VFIO_CHECK_EXTENSION / VFIO_SET_IOMMU arguments).
const (
	extType1   = 1
	extType1v2 = 3 // the type1 IOMMU with v2 unmap semantics: what openiwarp uses
	extNoIOMMU = 8 // VFIO_NOIOMMU_IOMMU: no translation, DMA at physical addresses
)

// struct vfio_group_status { u32 argsz; u32 flags; }
const (
	groupStatusSize         = 8
	groupFlagViable         = 1 << 0
	groupFlagContainerIsSet = 1 << 1
)

// struct vfio_device_info { u32 argsz, flags, num_regions, num_irqs, cap_offset, pad; }
const (
	deviceInfoSize   = 24
	deviceFlagReset  = 1 << 0
	deviceFlagPCI    = 1 << 1
	deviceFlagCaps   = 1 << 7
	devInfoOffFlags  = 4
	devInfoOffNumReg = 8
	devInfoOffNumIRQ = 12
)

// struct vfio_region_info { u32 argsz, flags, index, cap_offset; u64 size, offset; }
const (
	regionInfoSize   = 32
	regionFlagRead   = 1 << 0
	regionFlagWrite  = 1 << 1
	regionFlagMmap   = 1 << 2
	regionFlagCaps   = 1 << 3
	regionOffFlags   = 4
	regionOffIndex   = 8
	regionOffCapOff  = 12
	regionOffSize    = 16
	regionOffOffset  = 24
	regionCapSparse  = 1 // struct vfio_region_info_cap_sparse_mmap
	regionCapType    = 2 // struct vfio_region_info_cap_type
	regionCapMSIXMap = 3 // the MSI-X table may be mmapped
)

// Region indexes of a vfio-pci device.
const (
	RegionBAR0   = 0
	RegionBAR5   = 5
	RegionROM    = 6
	RegionConfig = 7
	RegionVGA    = 8
)

// struct vfio_irq_info { u32 argsz, flags, index, count; }
const (
	irqInfoSize       = 16
	irqFlagEventfd    = 1 << 0
	irqFlagMaskable   = 1 << 1
	irqFlagAutomasked = 1 << 2
	irqFlagNoResize   = 1 << 3
)

// struct vfio_irq_set { u32 argsz, flags, index, start, count; u8 data[]; }
const (
	irqSetHeaderSize    = 20
	irqSetDataNone      = 1 << 0
	irqSetDataBool      = 1 << 1
	irqSetDataEventfd   = 1 << 2
	irqSetActionMask    = 1 << 3
	irqSetActionUnmask  = 1 << 4
	irqSetActionTrigger = 1 << 5
)

// IRQ indexes of a vfio-pci device.
const (
	irqIndexINTx = 0
	irqIndexMSI  = 1
	irqIndexMSIX = 2
	irqIndexErr  = 3
	irqIndexReq  = 4
)

// struct vfio_iommu_type1_info { u32 argsz, flags; u64 iova_pgsizes; u32 cap_offset, pad; }
const (
	iommuInfoSize        = 24
	iommuInfoFlagPgsizes = 1 << 0
	iommuInfoFlagCaps    = 1 << 1
	iommuCapIOVARange    = 1 // struct vfio_iommu_type1_info_cap_iova_range
	iommuCapMigration    = 2
	iommuCapDMAAvail     = 3 // struct vfio_iommu_type1_info_dma_avail
)

// struct vfio_iommu_type1_dma_map { u32 argsz, flags; u64 vaddr, iova, size; }
// struct vfio_iommu_type1_dma_unmap { u32 argsz, flags; u64 iova, size; }
const (
	dmaMapSize     = 32
	dmaUnmapSize   = 24
	dmaMapFlagRead = 1 << 0
	dmaMapFlagWrit = 1 << 1
)

// struct vfio_info_cap_header { u16 id, version; u32 next; }
const capHeaderSize = 8

// PCI configuration space registers openiwarp touches.
const (
	pciVendorID       = 0x00
	pciDeviceID       = 0x02
	pciCommand        = 0x04
	pciStatus         = 0x06
	pciRevision       = 0x08
	pciCommandMemory  = 1 << 1
	pciCommandMaster  = 1 << 2
	pciCommandINTxOff = 1 << 10
)

func encodeGroupStatus() []byte {
	b := make([]byte, groupStatusSize)
	ne.PutUint32(b[0:], groupStatusSize)
	return b
}

func encodeDeviceInfo() []byte {
	b := make([]byte, deviceInfoSize)
	ne.PutUint32(b[0:], deviceInfoSize)
	return b
}

// encodeRegionInfo returns a vfio_region_info request for index with room for
// argsz bytes (the header alone, or the header plus the capability chain the
// kernel asked room for).
func encodeRegionInfo(index, argsz uint32) []byte {
	if argsz < regionInfoSize {
		argsz = regionInfoSize
	}
	b := make([]byte, argsz)
	ne.PutUint32(b[0:], argsz)
	ne.PutUint32(b[regionOffIndex:], index)
	return b
}

func encodeIRQInfo(index uint32) []byte {
	b := make([]byte, irqInfoSize)
	ne.PutUint32(b[0:], irqInfoSize)
	ne.PutUint32(b[8:], index)
	return b
}

// encodeIRQSet builds a vfio_irq_set. For irqSetDataEventfd, fds holds one
// int32 per vector (-1 detaches that vector); for irqSetDataNone it is empty.
func encodeIRQSet(flags, index, start, count uint32, fds []int32) []byte {
	b := make([]byte, irqSetHeaderSize+4*len(fds))
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint32(b[4:], flags)
	ne.PutUint32(b[8:], index)
	ne.PutUint32(b[12:], start)
	ne.PutUint32(b[16:], count)
	for i, fd := range fds {
		ne.PutUint32(b[irqSetHeaderSize+4*i:], uint32(fd))
	}
	return b
}

func encodeIOMMUInfo(argsz uint32) []byte {
	if argsz < iommuInfoSize {
		argsz = iommuInfoSize
	}
	b := make([]byte, argsz)
	ne.PutUint32(b[0:], argsz)
	return b
}

func encodeDMAMap(vaddr, iova, size uint64, flags uint32) []byte {
	b := make([]byte, dmaMapSize)
	ne.PutUint32(b[0:], dmaMapSize)
	ne.PutUint32(b[4:], flags)
	ne.PutUint64(b[8:], vaddr)
	ne.PutUint64(b[16:], iova)
	ne.PutUint64(b[24:], size)
	return b
}

func encodeDMAUnmap(iova, size uint64) []byte {
	b := make([]byte, dmaUnmapSize)
	ne.PutUint32(b[0:], dmaUnmapSize)
	ne.PutUint64(b[8:], iova)
	ne.PutUint64(b[16:], size)
	return b
}
