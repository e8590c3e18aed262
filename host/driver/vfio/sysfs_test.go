package vfio

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeHost builds a sysfs tree laid out like the kernel's: devices under
// /sys/devices/pci0000:00, symlinked from /sys/bus/pci/devices, with driver
// and iommu_group links, and /sys/kernel/iommu_groups/N/devices links back.
type fakeHost struct {
	t *testing.T
	h host
}

func newFakeHost(t *testing.T) *fakeHost {
	root := t.TempDir()
	h := host{sys: filepath.Join(root, "sys"), dev: filepath.Join(root, "dev")}
	for _, d := range []string{"bus/pci/devices", "bus/pci/drivers", "kernel/iommu_groups", "devices/pci0000:00"} {
		require.NoError(t, os.MkdirAll(filepath.Join(h.sys, d), 0o755))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(h.dev, "vfio"), 0o755))
	return &fakeHost{t: t, h: h}
}

func (f *fakeHost) driver(name string) {
	require.NoError(f.t, os.MkdirAll(filepath.Join(f.h.sys, "bus/pci/drivers", name), 0o755))
}

// device adds a PCI function; group < 0 means no IOMMU group, driver ""
// means unbound.
func (f *fakeHost) device(addr string, vendor, device uint16, group int, driver string) {
	real := filepath.Join(f.h.sys, "devices/pci0000:00", addr)
	require.NoError(f.t, os.MkdirAll(real, 0o755))
	require.NoError(f.t, os.WriteFile(filepath.Join(real, "vendor"), []byte("0x"+strconv.FormatUint(uint64(vendor), 16)+"\n"), 0o644))
	require.NoError(f.t, os.WriteFile(filepath.Join(real, "device"), []byte("0x"+strconv.FormatUint(uint64(device), 16)+"\n"), 0o644))
	require.NoError(f.t, os.Symlink(filepath.Join("../../../devices/pci0000:00", addr), filepath.Join(f.h.sys, "bus/pci/devices", addr)))
	if driver != "" {
		f.driver(driver)
		require.NoError(f.t, os.Symlink(filepath.Join("../../../bus/pci/drivers", driver), filepath.Join(real, "driver")))
	}
	if group >= 0 {
		g := filepath.Join(f.h.sys, "kernel/iommu_groups", strconv.Itoa(group), "devices")
		require.NoError(f.t, os.MkdirAll(g, 0o755))
		require.NoError(f.t, os.Symlink(filepath.Join("../../../kernel/iommu_groups", strconv.Itoa(group)), filepath.Join(real, "iommu_group")))
		require.NoError(f.t, os.Symlink(filepath.Join("../../../../devices/pci0000:00", addr), filepath.Join(g, addr)))
	}
}

func TestLookup(t *testing.T) {
	f := newFakeHost(t)
	f.device("0000:00:01.0", 0x1234, 0x11e8, 3, "vfio-pci")
	d, err := f.h.lookup(Address{0, 0, 1, 0})
	require.NoError(t, err)
	assert.Equal(t, pciDevice{Addr: Address{0, 0, 1, 0}, Group: 3, Driver: "vfio-pci", Vendor: 0x1234, DeviceID: 0x11e8}, d)
	assert.NoError(t, f.h.checkBound(d))
	ms, err := f.h.groupMembers(3)
	require.NoError(t, err)
	assert.Equal(t, []groupMember{{"0000:00:01.0", "vfio-pci"}}, ms)
}

func TestLookupErrors(t *testing.T) {
	f := newFakeHost(t)
	_, err := f.h.lookup(Address{0, 9, 0, 0})
	assert.ErrorIs(t, err, ErrNoDevice)
	assert.Contains(t, err.Error(), "lspci -D")

	// No IOMMU groups anywhere: the IOMMU is off.
	f.device("0000:03:00.0", 0x10ee, 0x9038, -1, "")
	_, err = f.h.lookup(Address{0, 3, 0, 0})
	assert.ErrorIs(t, err, ErrNoIOMMU)
	assert.Contains(t, err.Error(), "intel_iommu=on")

	// Groups exist, but not for this device.
	f.device("0000:00:02.0", 0x8086, 0x1234, 0, "i915")
	_, err = f.h.lookup(Address{0, 3, 0, 0})
	assert.ErrorIs(t, err, ErrNoIOMMU)
	assert.Contains(t, err.Error(), "behind a bridge")

	// A vendor file that is not hex.
	require.NoError(t, os.WriteFile(filepath.Join(f.h.sys, "devices/pci0000:00/0000:00:02.0/vendor"), []byte("nope"), 0o644))
	_, err = f.h.lookup(Address{0, 0, 2, 0})
	assert.ErrorIs(t, err, ErrNoDevice)
	assert.Contains(t, err.Error(), "vendor")
}

func TestNotBoundMessage(t *testing.T) {
	f := newFakeHost(t)
	f.device("0000:03:00.0", 0x10ee, 0x9038, 12, "xdma")
	d, err := f.h.lookup(Address{0, 3, 0, 0})
	require.NoError(t, err)
	err = f.h.checkBound(d)
	require.ErrorIs(t, err, ErrNotBoundToVFIO)
	dev := f.h.sys + "/bus/pci/devices/0000:03:00.0"
	want := "vfio: open 0000:03:00.0: device is not bound to vfio-pci: it is bound to xdma [10ee:9038]; bind it to vfio-pci as root:\n" +
		"  modprobe vfio-pci\n" +
		"  echo vfio-pci > " + dev + "/driver_override\n" +
		"  echo 0000:03:00.0 > " + dev + "/driver/unbind\n" +
		"  echo 0000:03:00.0 > " + f.h.sys + "/bus/pci/drivers_probe"
	assert.Equal(t, want, err.Error())

	// Unbound, vfio-pci loaded: no modprobe, no unbind.
	f.driver("vfio-pci")
	f.device("0000:04:00.0", 0x10ee, 0x9038, 13, "")
	d, err = f.h.lookup(Address{0, 4, 0, 0})
	require.NoError(t, err)
	err = f.h.checkBound(d)
	require.ErrorIs(t, err, ErrNotBoundToVFIO)
	assert.Contains(t, err.Error(), "bound to no driver")
	assert.NotContains(t, err.Error(), "modprobe")
	assert.NotContains(t, err.Error(), "unbind")
	assert.Contains(t, err.Error(), "driver_override")
}

func TestNotViableHint(t *testing.T) {
	f := newFakeHost(t)
	f.device("0000:02:00.0", 0x10ee, 0x9038, 5, "vfio-pci")
	f.device("0000:02:00.1", 0x8086, 0x10d3, 5, "e1000e")
	f.device("0000:02:00.2", 0x8086, 0x10d3, 5, "pci-stub")
	f.device("0000:02:00.3", 0x8086, 0x10d3, 5, "")
	hint := f.h.notViableHint(5, Address{0, 2, 0, 0})
	assert.Contains(t, hint, "IOMMU group 5 also holds 0000:02:00.1 (bound to e1000e)")
	assert.NotContains(t, hint, "0000:02:00.2 (", "pci-stub keeps a group viable")
	assert.NotContains(t, hint, "0000:02:00.3 (", "an unbound device keeps a group viable")
	assert.Contains(t, hint, "echo 0000:02:00.1 > "+f.h.sys+"/bus/pci/devices/0000:02:00.1/driver/unbind")

	// The whole error, as Open returns it.
	err := newErr("open", "0000:02:00.0", ErrGroupNotViable, hint, nil)
	assert.True(t, errors.Is(err, ErrGroupNotViable))
	assert.True(t, strings.HasPrefix(err.Error(), "vfio: open 0000:02:00.0: IOMMU group is not viable: IOMMU group 5 also holds"))

	assert.Contains(t, f.h.notViableHint(99, Address{}), "cannot list")
	f2 := newFakeHost(t)
	f2.device("0000:02:00.0", 0x10ee, 0x9038, 5, "vfio-pci")
	assert.Contains(t, f2.h.notViableHint(5, Address{0, 2, 0, 0}), "retry")
}

// Open checks sysfs before /dev/vfio, so each problem is named for what it is.
func TestOpenErrorsBeforeVFIO(t *testing.T) {
	f := newFakeHost(t)
	f.device("0000:00:02.0", 0x8086, 0x1234, 0, "i915")
	f.device("0000:03:00.0", 0x10ee, 0x9038, -1, "vfio-pci")
	f.device("0000:04:00.0", 0x10ee, 0x9038, 7, "vfio-pci")
	for _, tc := range []struct {
		addr string
		want error
	}{
		{"nonsense", ErrBadAddress},
		{"0000:09:00.0", ErrNoDevice},
		{"0000:03:00.0", ErrNoIOMMU},
		{"0000:00:02.0", ErrNotBoundToVFIO},
		{"0000:04:00.0", ErrNoVFIO}, // bound, grouped, but no /dev/vfio/vfio
	} {
		_, err := openIn(f.h, tc.addr)
		assert.ErrorIs(t, err, tc.want, "%s: %v", tc.addr, err)
	}
	_, err := openIn(f.h, "0000:04:00.0")
	assert.Contains(t, err.Error(), "modprobe vfio-pci")
}

func TestErrorWrapping(t *testing.T) {
	err := error(newErr("map DMA", "", ErrMemlock, "raise it", os.ErrPermission))
	assert.ErrorIs(t, err, ErrMemlock)
	assert.ErrorIs(t, err, os.ErrPermission)
	assert.NotErrorIs(t, err, ErrNoIOMMU)
	var e *Error
	require.True(t, errors.As(err, &e))
	assert.Equal(t, "map DMA", e.Op)
	assert.Equal(t, "vfio: map DMA: locked-memory limit (RLIMIT_MEMLOCK) too low: permission denied: raise it", err.Error())
	assert.Equal(t, "vfio: reset 0000:00:01.0: not supported by the device", newErr("reset", "0000:00:01.0", ErrNotSupported, "", nil).Error())
}
