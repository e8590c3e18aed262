package vfio

import (
	"errors"
	"strings"
)

// Sentinel errors. Every error this package returns is an *Error whose Kind
// is one of these (match with errors.Is) and whose Err, if any, is the
// underlying system error (also reachable with errors.Is, e.g. unix.EPERM).
var (
	// ErrNoIOMMU: the host has no IOMMU VFIO can use (disabled in firmware
	// or on the kernel command line), so devices have no IOMMU group or the
	// container cannot take the type1v2 IOMMU.
	ErrNoIOMMU = errors.New("no usable IOMMU")
	// ErrNoVFIO: the VFIO modules are not loaded (/dev/vfio/vfio missing).
	ErrNoVFIO = errors.New("VFIO is not available")
	// ErrBadAddress: a PCI address that does not parse.
	ErrBadAddress = errors.New("bad PCI address")
	// ErrNoDevice: no PCI device at that address.
	ErrNoDevice = errors.New("no such PCI device")
	// ErrNotBoundToVFIO: the device is bound to another driver, or to none.
	// The message carries the commands that bind it to vfio-pci.
	ErrNotBoundToVFIO = errors.New("device is not bound to vfio-pci")
	// ErrGroupNotViable: another device in the same IOMMU group is bound to
	// a host driver, so the group cannot be given to user space.
	ErrGroupNotViable = errors.New("IOMMU group is not viable")
	// ErrGroupBusy: the group is already open (another process or another
	// container in this one).
	ErrGroupBusy = errors.New("IOMMU group is busy")
	// ErrMemlock: pinning DMA memory went over RLIMIT_MEMLOCK.
	ErrMemlock = errors.New("locked-memory limit (RLIMIT_MEMLOCK) too low")
	// ErrBARNotMappable: the BAR does not exist, is an I/O port BAR, or
	// vfio-pci does not allow mmap of it.
	ErrBARNotMappable = errors.New("BAR cannot be mapped")
	// ErrIOVAExhausted: no free IOVA range of the requested size, alignment
	// and limit is left, or the IOMMU refuses more mappings.
	ErrIOVAExhausted = errors.New("IOVA space exhausted")
	// ErrNotSupported: the device does not offer the feature (reset, an
	// interrupt type).
	ErrNotSupported = errors.New("not supported by the device")
	// ErrOutOfRange: a register or config-space access outside the region,
	// or not aligned to its width.
	ErrOutOfRange = errors.New("access out of range")
	// ErrClosed: the device, container, buffer or interrupt set was closed.
	ErrClosed = errors.New("already closed")
)

// Error is the error type of this package.
type Error struct {
	Op     string // what was being done: "open", "map BAR0", "map DMA", ...
	Device string // the PCI address, if the error concerns a device
	Kind   error  // one of the Err* sentinels
	Detail string // what was found and, where it helps, how to fix it
	Err    error  // the underlying system error, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("vfio: ")
	b.WriteString(e.Op)
	if e.Device != "" {
		b.WriteString(" ")
		b.WriteString(e.Device)
	}
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(e.Kind.Error())
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns the sentinel and the underlying error.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

func newErr(op, dev string, kind error, detail string, err error) *Error {
	return &Error{Op: op, Device: dev, Kind: kind, Detail: detail, Err: err}
}

// bindCommands is the shell recipe that hands a device to vfio-pci, for the
// ErrNotBoundToVFIO message. current is the driver it is bound to now ("" if
// none); vfioLoaded says whether the vfio-pci driver is registered.
func bindCommands(sysRoot string, addr Address, current string, vfioLoaded bool) string {
	dev := sysRoot + "/bus/pci/devices/" + addr.String()
	var b strings.Builder
	b.WriteString("bind it to vfio-pci as root:\n")
	if !vfioLoaded {
		b.WriteString("  modprobe vfio-pci\n")
	}
	b.WriteString("  echo vfio-pci > " + dev + "/driver_override\n")
	if current != "" {
		b.WriteString("  echo " + addr.String() + " > " + dev + "/driver/unbind\n")
	}
	b.WriteString("  echo " + addr.String() + " > " + sysRoot + "/bus/pci/drivers_probe")
	return b.String()
}
