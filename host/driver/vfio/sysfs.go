package vfio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// host holds the roots of sysfs and /dev, so that tests can point discovery
// at a fake tree.
type host struct {
	sys string // normally /sys
	dev string // normally /dev
}

var defaultHost = host{sys: "/sys", dev: "/dev"}

// pciDevice is what sysfs says about one PCI function.
type pciDevice struct {
	Addr     Address
	Group    int    // IOMMU group number, -1 if the device has none
	Driver   string // bound driver, "" if none
	Vendor   uint16
	DeviceID uint16
}

func (h host) devDir(a Address) string { return filepath.Join(h.sys, "bus/pci/devices", a.String()) }

// linkBase returns the last element of a symlink's target, "" if the link
// does not exist.
func linkBase(path string) (string, error) {
	t, err := os.Readlink(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return filepath.Base(t), nil
}

func readHex16(path string) (uint16, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimPrefix(strings.TrimSpace(string(b)), "0x")
	v, err := strconv.ParseUint(s, 16, 16)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a 16-bit hex number", path, s)
	}
	return uint16(v), nil
}

// lookup reads a device's IOMMU group, driver and IDs from sysfs.
func (h host) lookup(a Address) (pciDevice, error) {
	d := pciDevice{Addr: a, Group: -1}
	dir := h.devDir(a)
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return d, newErr("open", a.String(), ErrNoDevice, "no "+dir+" (list devices with lspci -D)", nil)
		}
		return d, newErr("open", a.String(), ErrNoDevice, "", err)
	}
	var err error
	if d.Vendor, err = readHex16(filepath.Join(dir, "vendor")); err != nil {
		return d, newErr("open", a.String(), ErrNoDevice, "reading its vendor ID", err)
	}
	if d.DeviceID, err = readHex16(filepath.Join(dir, "device")); err != nil {
		return d, newErr("open", a.String(), ErrNoDevice, "reading its device ID", err)
	}
	if d.Driver, err = linkBase(filepath.Join(dir, "driver")); err != nil {
		return d, newErr("open", a.String(), ErrNoDevice, "reading its driver link", err)
	}
	g, err := linkBase(filepath.Join(dir, "iommu_group"))
	if err != nil {
		return d, newErr("open", a.String(), ErrNoIOMMU, "reading its iommu_group link", err)
	}
	if g == "" {
		if d.Driver != "vfio-pci" && h.noiommuOn() {
			// vfio-pci makes the no-IOMMU group when it binds the device.
			return d, h.checkBound(d)
		}
		return d, newErr("open", a.String(), ErrNoIOMMU, h.noIOMMUHint(), nil)
	}
	n, err := strconv.Atoi(g)
	if err != nil || n < 0 {
		return d, newErr("open", a.String(), ErrNoIOMMU, fmt.Sprintf("iommu_group link names %q, not a group number", g), nil)
	}
	d.Group = n
	return d, nil
}

// noIOMMUHint explains a device without an IOMMU group.
func (h host) noIOMMUHint() string {
	groups, _ := os.ReadDir(filepath.Join(h.sys, "kernel/iommu_groups"))
	if len(groups) == 0 {
		return "the kernel has no IOMMU groups at all: enable VT-d (Intel) or AMD-Vi in the firmware setup " +
			"and boot with intel_iommu=on (or amd_iommu=on) iommu=pt; check with dmesg | grep -e DMAR -e AMD-Vi; " + h.noiommuHint()
	}
	return "the device has no IOMMU group although the host has some: it sits behind a bridge the IOMMU does not translate"
}

// groupMember is a device in an IOMMU group and its driver.
type groupMember struct {
	Addr   string
	Driver string
}

// groupMembers lists the devices of an IOMMU group, sorted by address.
func (h host) groupMembers(group int) ([]groupMember, error) {
	dir := filepath.Join(h.sys, "kernel/iommu_groups", strconv.Itoa(group), "devices")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ms []groupMember
	for _, e := range ents {
		drv, err := linkBase(filepath.Join(dir, e.Name(), "driver"))
		if err != nil {
			return nil, err
		}
		ms = append(ms, groupMember{Addr: e.Name(), Driver: drv})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Addr < ms[j].Addr })
	return ms, nil
}

// userDriver reports whether a driver leaves a group viable: one that
// manages DMA itself and so does not claim the group's DMA ownership
// (vfio-pci, pci-stub, and pcieport for PCIe ports), or no driver at all.
func userDriver(drv string) bool {
	switch drv {
	case "", "vfio-pci", "pci-stub", "pcieport":
		return true
	}
	return false
}

// notViableHint names the group members that keep the group from being
// viable and how to release them.
func (h host) notViableHint(group int, self Address) string {
	ms, err := h.groupMembers(group)
	if err != nil {
		return fmt.Sprintf("IOMMU group %d: cannot list its devices: %v", group, err)
	}
	var busy []string
	var fix strings.Builder
	for _, m := range ms {
		if m.Addr == self.String() || userDriver(m.Driver) {
			continue
		}
		busy = append(busy, m.Addr+" (bound to "+m.Driver+")")
		a, err := ParseAddress(m.Addr)
		if err == nil {
			fix.WriteString("\n" + bindCommands(h.sys, a, m.Driver, h.vfioPCILoaded()))
		}
	}
	if len(busy) == 0 {
		return fmt.Sprintf("IOMMU group %d (%d devices) has no device bound to a host driver now; retry", group, len(ms))
	}
	return fmt.Sprintf("IOMMU group %d also holds %s; every device in a group must be bound to vfio-pci or to no driver "+
		"(or put the card in a slot with its own group: see /sys/kernel/iommu_groups/%d/devices)%s",
		group, strings.Join(busy, ", "), group, fix.String())
}

// vfioPCILoaded reports whether the vfio-pci driver is registered.
func (h host) vfioPCILoaded() bool {
	_, err := os.Stat(filepath.Join(h.sys, "bus/pci/drivers/vfio-pci"))
	return err == nil
}

// checkBound returns ErrNotBoundToVFIO, with the commands that fix it,
// unless the device is bound to vfio-pci.
func (h host) checkBound(d pciDevice) error {
	if d.Driver == "vfio-pci" {
		return nil
	}
	now := "it is bound to no driver"
	if d.Driver != "" {
		now = "it is bound to " + d.Driver
	}
	return newErr("open", d.Addr.String(), ErrNotBoundToVFIO,
		fmt.Sprintf("%s [%04x:%04x]; %s", now, d.Vendor, d.DeviceID, bindCommands(h.sys, d.Addr, d.Driver, h.vfioPCILoaded())), nil)
}
