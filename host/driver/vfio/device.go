package vfio

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Device is a PCI function opened through VFIO: its config space, regions
// (BARs), interrupts and reset. Its DMA memory comes from its Container.
// A Device is safe for concurrent use.
type Device struct {
	c        *Container
	ownsCont bool
	pci      pciDevice
	grp      *group
	fd       int
	info     DeviceInfo
	config   RegionInfo

	mu     sync.Mutex
	bars   []*BAR
	irqs   *Interrupts
	closed bool
}

// Open opens the PCI device at addr ("0000:03:00.0", or "03:00.0" for
// domain 0) in a container of its own, with the type1v2 IOMMU set up. The
// device must be bound to vfio-pci; Open's errors say how to get there.
func Open(addr string) (*Device, error) { return openIn(defaultHost, addr) }

func openIn(h host, addr string) (*Device, error) {
	a, err := ParseAddress(addr)
	if err != nil {
		return nil, err
	}
	// Check the device before touching /dev/vfio, so that the error names
	// the real cause (no IOMMU, wrong driver) rather than a missing file.
	pd, err := h.lookup(a)
	if err != nil {
		return nil, err
	}
	if err := h.checkBound(pd); err != nil {
		return nil, err
	}
	c, err := newContainer(h)
	if err != nil {
		return nil, err
	}
	d, err := c.open(pd)
	if err != nil {
		c.Close()
		return nil, err
	}
	d.ownsCont = true
	return d, nil
}

// Open opens another device in this container, so that it shares the IOMMU
// domain (and the DMA buffers) of the devices already there. Devices of one
// IOMMU group must share a container.
func (c *Container) Open(addr string) (*Device, error) {
	a, err := ParseAddress(addr)
	if err != nil {
		return nil, err
	}
	pd, err := c.h.lookup(a)
	if err != nil {
		return nil, err
	}
	if err := c.h.checkBound(pd); err != nil {
		return nil, err
	}
	return c.open(pd)
}

func (c *Container) open(pd pciDevice) (*Device, error) {
	name := pd.Addr.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, newErr("open", name, ErrClosed, "container", nil)
	}
	g, err := c.attachGroup(pd.Group, pd.Addr)
	if err != nil {
		return nil, err
	}
	fail := func(kind error, detail string, err error) (*Device, error) {
		c.detachGroup(g)
		return nil, newErr("open", name, kind, detail, err)
	}
	arg := append([]byte(name), 0)
	fd, err := ioctlPtrResult(g.fd, ioctlGroupGetDeviceFD, arg)
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fail(ErrGroupBusy, "the device is already open", err)
		}
		return fail(ErrNotBoundToVFIO, "VFIO_GROUP_GET_DEVICE_FD", err)
	}
	d := &Device{c: c, pci: pd, grp: g, fd: fd}
	b := encodeDeviceInfo()
	if err := ioctlBuf(fd, ioctlDeviceGetInfo, b); err != nil {
		unix.Close(fd)
		return fail(ErrNoVFIO, "VFIO_DEVICE_GET_INFO", err)
	}
	if d.info, err = parseDeviceInfo(b); err != nil {
		unix.Close(fd)
		return fail(ErrNoVFIO, "VFIO_DEVICE_GET_INFO", err)
	}
	if !d.info.IsPCI() || d.info.NumRegions <= RegionConfig {
		unix.Close(fd)
		return fail(ErrNotBoundToVFIO, fmt.Sprintf("not a vfio-pci device (flags %#x, %d regions)", d.info.Flags, d.info.NumRegions), nil)
	}
	if d.config, err = d.regionInfo(RegionConfig); err != nil {
		unix.Close(fd)
		return fail(ErrNoVFIO, "config space region", err)
	}
	d.bars = make([]*BAR, RegionBAR5+1)
	return d, nil
}

// ioctlPtrResult issues an ioctl with a buffer argument and returns the
// ioctl's non-negative result (VFIO_GROUP_GET_DEVICE_FD returns the new fd).
func ioctlPtrResult(fd int, req uintptr, b []byte) (int, error) {
	for {
		r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&b[0])))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(r), nil
	}
}

// Address is the device's PCI address.
func (d *Device) Address() Address { return d.pci.Addr }

// String is the device's PCI address.
func (d *Device) String() string { return d.pci.Addr.String() }

// IOMMUGroup is the device's IOMMU group number.
func (d *Device) IOMMUGroup() int { return d.pci.Group }

// Info is what VFIO_DEVICE_GET_INFO reported.
func (d *Device) Info() DeviceInfo { return d.info }

// Container is the container whose IOMMU domain the device is in; DMA
// buffers for the device come from it.
func (d *Device) Container() *Container { return d.c }

// AllocDMA is d.Container().AllocDMA.
func (d *Device) AllocDMA(size int, opts ...DMAOption) (*DMABuffer, error) {
	return d.c.AllocDMA(size, opts...)
}

// RegionInfo describes region index (RegionBAR0..RegionBAR5, RegionROM,
// RegionConfig, ...), following its capability chain.
func (d *Device) RegionInfo(index int) (RegionInfo, error) {
	if err := d.check("region info"); err != nil {
		return RegionInfo{}, err
	}
	if index < 0 || uint32(index) >= d.info.NumRegions {
		return RegionInfo{}, newErr("region info", d.String(), ErrOutOfRange, fmt.Sprintf("region %d: the device has regions 0-%d", index, d.info.NumRegions-1), nil)
	}
	ri, err := d.regionInfo(uint32(index))
	if err != nil {
		return ri, newErr("region info", d.String(), ErrNoVFIO, fmt.Sprintf("region %d", index), err)
	}
	return ri, nil
}

func (d *Device) regionInfo(index uint32) (RegionInfo, error) {
	b := encodeRegionInfo(index, regionInfoSize)
	for try := 0; try < 3; try++ {
		if err := ioctlBuf(d.fd, ioctlDeviceRegionInfo, b); err != nil {
			return RegionInfo{}, err
		}
		ri, need, err := parseRegionInfo(b)
		if err != nil || need == 0 {
			return ri, err
		}
		b = encodeRegionInfo(index, need)
	}
	return RegionInfo{}, fmt.Errorf("%w: region info size kept growing", errBadReply)
}

func (d *Device) check(op string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return newErr(op, d.String(), ErrClosed, "", nil)
	}
	return nil
}

// ReadConfig reads len(p) bytes of PCI config space at off.
func (d *Device) ReadConfig(off int64, p []byte) error {
	return d.configIO("read config", off, p, unix.Pread)
}

// WriteConfig writes p to PCI config space at off. vfio-pci virtualizes
// some registers (BARs, MSI/MSI-X capabilities) and filters writes to them.
func (d *Device) WriteConfig(off int64, p []byte) error {
	return d.configIO("write config", off, p, unix.Pwrite)
}

func (d *Device) configIO(op string, off int64, p []byte, io func(int, []byte, int64) (int, error)) error {
	if err := d.check(op); err != nil {
		return err
	}
	if off < 0 || uint64(off)+uint64(len(p)) > d.config.Size {
		return newErr(op, d.String(), ErrOutOfRange, fmt.Sprintf("[%#x+%d] outside the %#x-byte config space", off, len(p), d.config.Size), nil)
	}
	for done := 0; done < len(p); {
		n, err := io(d.fd, p[done:], int64(d.config.Offset)+off+int64(done))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return newErr(op, d.String(), ErrOutOfRange, fmt.Sprintf("at %#x", off+int64(done)), err)
		}
		if n == 0 {
			return newErr(op, d.String(), ErrOutOfRange, fmt.Sprintf("short access at %#x", off+int64(done)), nil)
		}
		done += n
	}
	return nil
}

// Config16 reads a 16-bit config register (little-endian, as PCI is).
func (d *Device) Config16(off int64) (uint16, error) {
	var b [2]byte
	err := d.ReadConfig(off, b[:])
	return uint16(b[0]) | uint16(b[1])<<8, err
}

// Config32 reads a 32-bit config register.
func (d *Device) Config32(off int64) (uint32, error) {
	var b [4]byte
	err := d.ReadConfig(off, b[:])
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24, err
}

// SetConfig16 writes a 16-bit config register.
func (d *Device) SetConfig16(off int64, v uint16) error {
	return d.WriteConfig(off, []byte{byte(v), byte(v >> 8)})
}

// SetConfig32 writes a 32-bit config register.
func (d *Device) SetConfig32(off int64, v uint32) error {
	return d.WriteConfig(off, []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)})
}

// IDs reads the vendor and device IDs from config space.
func (d *Device) IDs() (vendor, device uint16, err error) {
	if vendor, err = d.Config16(pciVendorID); err != nil {
		return
	}
	device, err = d.Config16(pciDeviceID)
	return
}

// EnableBusMaster turns on memory decoding and bus mastering in the PCI
// command register. vfio-pci leaves bus mastering off when it opens a
// device, and without it the device's DMA never reaches memory.
func (d *Device) EnableBusMaster() error { return d.setCommand(pciCommandMemory|pciCommandMaster, 0) }

// DisableBusMaster turns bus mastering off: the device can no longer DMA.
func (d *Device) DisableBusMaster() error { return d.setCommand(0, pciCommandMaster) }

func (d *Device) setCommand(set, clear uint16) error {
	cmd, err := d.Config16(pciCommand)
	if err != nil {
		return err
	}
	if err := d.SetConfig16(pciCommand, cmd&^clear|set); err != nil {
		return err
	}
	got, err := d.Config16(pciCommand)
	if err != nil {
		return err
	}
	if got&(set|clear) != set {
		return newErr("set PCI command", d.String(), ErrNotSupported, fmt.Sprintf("wrote %#04x, reads back %#04x", cmd&^clear|set, got), nil)
	}
	return nil
}

// Reset resets the device with VFIO_DEVICE_RESET (function-level reset or
// whatever vfio-pci found to work). It fails with ErrNotSupported if the
// device offers no reset. Registers and bus mastering must be set up again
// afterwards.
func (d *Device) Reset() error {
	if err := d.check("reset"); err != nil {
		return err
	}
	if !d.info.CanReset() {
		return newErr("reset", d.String(), ErrNotSupported, fmt.Sprintf("[%04x:%04x] has no function-level reset, PM reset or bus reset vfio-pci can use", d.pci.Vendor, d.pci.DeviceID), nil)
	}
	if _, err := ioctlVal(d.fd, ioctlDeviceReset, 0); err != nil {
		return newErr("reset", d.String(), ErrNotSupported, "VFIO_DEVICE_RESET", err)
	}
	return nil
}

// Close disables interrupts, unmaps the BARs and closes the device (and its
// container, if Open made it). DMA buffers of a shared container stay.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	irqs, bars := d.irqs, d.bars
	d.irqs, d.bars = nil, nil
	d.mu.Unlock()
	var errs []error
	if irqs != nil {
		errs = append(errs, irqs.Close())
	}
	for _, b := range bars {
		if b != nil {
			errs = append(errs, b.unmap())
		}
	}
	errs = append(errs, unix.Close(d.fd))
	d.c.mu.Lock()
	errs = append(errs, d.c.detachGroup(d.grp))
	d.c.mu.Unlock()
	if d.ownsCont {
		errs = append(errs, d.c.Close())
	}
	return errors.Join(errs...)
}
