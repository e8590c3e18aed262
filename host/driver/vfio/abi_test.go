package vfio

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The request numbers as the C headers compute them (_IO(';', 100 + n)).
func TestIoctlNumbers(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"VFIO_GET_API_VERSION", ioctlGetAPIVersion, 0x3b64},
		{"VFIO_CHECK_EXTENSION", ioctlCheckExtension, 0x3b65},
		{"VFIO_SET_IOMMU", ioctlSetIOMMU, 0x3b66},
		{"VFIO_GROUP_GET_STATUS", ioctlGroupGetStatus, 0x3b67},
		{"VFIO_GROUP_SET_CONTAINER", ioctlGroupSetCont, 0x3b68},
		{"VFIO_GROUP_UNSET_CONTAINER", ioctlGroupUnsetCont, 0x3b69},
		{"VFIO_GROUP_GET_DEVICE_FD", ioctlGroupGetDeviceFD, 0x3b6a},
		{"VFIO_DEVICE_GET_INFO", ioctlDeviceGetInfo, 0x3b6b},
		{"VFIO_DEVICE_GET_REGION_INFO", ioctlDeviceRegionInfo, 0x3b6c},
		{"VFIO_DEVICE_GET_IRQ_INFO", ioctlDeviceIRQInfo, 0x3b6d},
		{"VFIO_DEVICE_SET_IRQS", ioctlDeviceSetIRQs, 0x3b6e},
		{"VFIO_DEVICE_RESET", ioctlDeviceReset, 0x3b6f},
		{"VFIO_IOMMU_GET_INFO", ioctlIOMMUGetInfo, 0x3b70},
		{"VFIO_IOMMU_MAP_DMA", ioctlIOMMUMapDMA, 0x3b71},
		{"VFIO_IOMMU_UNMAP_DMA", ioctlIOMMUUnmapDMA, 0x3b72},
	} {
		assert.Equal(t, tc.want, tc.got, tc.name)
	}
}

func TestEncodings(t *testing.T) {
	le := ne // the tests run on little-endian hosts; the layouts are native-endian
	m := encodeDMAMap(0x7f0012345000, 0x100000, 0x3000, dmaMapFlagRead|dmaMapFlagWrit)
	require.Len(t, m, 32)
	assert.Equal(t, uint32(32), le.Uint32(m[0:]), "argsz")
	assert.Equal(t, uint32(3), le.Uint32(m[4:]), "flags")
	assert.Equal(t, uint64(0x7f0012345000), le.Uint64(m[8:]), "vaddr")
	assert.Equal(t, uint64(0x100000), le.Uint64(m[16:]), "iova")
	assert.Equal(t, uint64(0x3000), le.Uint64(m[24:]), "size")

	u := encodeDMAUnmap(0x200000, 0x1000)
	require.Len(t, u, 24)
	assert.Equal(t, uint32(24), le.Uint32(u[0:]))
	assert.Equal(t, uint32(0), le.Uint32(u[4:]))
	assert.Equal(t, uint64(0x200000), le.Uint64(u[8:]))
	assert.Equal(t, uint64(0x1000), le.Uint64(u[16:]))

	s := encodeIRQSet(irqSetDataEventfd|irqSetActionTrigger, irqIndexMSI, 0, 2, []int32{7, -1})
	require.Len(t, s, 28)
	assert.Equal(t, uint32(28), le.Uint32(s[0:]), "argsz")
	assert.Equal(t, uint32(0x24), le.Uint32(s[4:]), "flags")
	assert.Equal(t, uint32(1), le.Uint32(s[8:]), "index")
	assert.Equal(t, uint32(0), le.Uint32(s[12:]), "start")
	assert.Equal(t, uint32(2), le.Uint32(s[16:]), "count")
	assert.Equal(t, uint32(7), le.Uint32(s[20:]))
	assert.Equal(t, uint32(0xffffffff), le.Uint32(s[24:]), "fd -1 detaches")

	un := encodeIRQSet(irqSetDataNone|irqSetActionUnmask, irqIndexINTx, 0, 1, nil)
	assert.Equal(t, []byte{20, 0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}, un)

	r := encodeRegionInfo(RegionConfig, 0)
	require.Len(t, r, 32)
	assert.Equal(t, uint32(32), le.Uint32(r[0:]))
	assert.Equal(t, uint32(7), le.Uint32(r[8:]))
	assert.Len(t, encodeRegionInfo(0, 80), 80, "room for a capability chain")
	assert.Len(t, encodeIOMMUInfo(0), 24)
	assert.Equal(t, uint32(16), le.Uint32(encodeIRQInfo(2)[0:]))
	assert.Equal(t, uint32(2), le.Uint32(encodeIRQInfo(2)[8:]))
	assert.Equal(t, uint32(8), le.Uint32(encodeGroupStatus()))
	assert.Equal(t, uint32(24), le.Uint32(encodeDeviceInfo()))
}
