package vfio

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ioctlBuf issues an ioctl whose argument is the byte buffer b, retrying
// when a signal interrupts it.
func ioctlBuf(fd int, req uintptr, b []byte) error {
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&b[0])))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// ioctlVal issues an ioctl with an integer argument and returns its result.
func ioctlVal(fd int, req, arg uintptr) (int, error) {
	for {
		r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, arg)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return int(r), e
		}
		return int(r), nil
	}
}

// Container is a VFIO container: one IOMMU domain (type1v2) shared by the
// IOMMU groups attached to it, with the DMA mappings of that domain. A
// Container is safe for concurrent use.
type Container struct {
	h  host
	mu sync.Mutex
	fd int
	// groups attached, by IOMMU group number.
	groups map[int]*group
	// iommu is set once the first group is attached (VFIO_SET_IOMMU needs one).
	iommu *IOMMUInfo
	iova  *IOVAAllocator
	// bufs are the live DMA buffers, by IOVA.
	bufs   map[uint64]*DMABuffer
	pinned uint64 // bytes currently mapped (and so pinned and accounted)
	closed bool
	// Without an IOMMU (a no-IOMMU group): physical addresses, pinned
	// pages; locks counts the mappings holding each locked page.
	type1, noiommuOK, noiommu bool
	locks                     map[uint64]int
}

// group is an open /dev/vfio/<n> attached to a container.
type group struct {
	num  int
	fd   int
	refs int // open devices of this group
}

// NewContainer opens /dev/vfio/vfio and checks that it offers the type1v2
// IOMMU. Devices are added with Container.Open; most programs call the
// package-level Open instead, which makes a container per device.
func NewContainer() (*Container, error) { return newContainer(defaultHost) }

func newContainer(h host) (*Container, error) {
	path := filepath.Join(h.dev, "vfio/vfio")
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		detail := "load the modules: modprobe vfio-pci (and vfio_iommu_type1)"
		if errors.Is(err, unix.EACCES) {
			detail = "run as root or give this user access to " + path
		}
		return nil, newErr("open container", "", ErrNoVFIO, path+": "+detail, err)
	}
	fail := func(kind error, detail string, err error) (*Container, error) {
		unix.Close(fd)
		return nil, newErr("open container", "", kind, detail, err)
	}
	v, err := ioctlVal(fd, ioctlGetAPIVersion, 0)
	if err != nil {
		return fail(ErrNoVFIO, "VFIO_GET_API_VERSION", err)
	}
	if v != apiVersion {
		return fail(ErrNoVFIO, fmt.Sprintf("kernel VFIO API version %d, this driver speaks %d", v, apiVersion), nil)
	}
	type1, err := ioctlVal(fd, ioctlCheckExtension, extType1v2)
	noiommu, err2 := ioctlVal(fd, ioctlCheckExtension, extNoIOMMU)
	if (err != nil || type1 != 1) && (err2 != nil || noiommu != 1) {
		return fail(ErrNoIOMMU, "the kernel offers no type1v2 IOMMU: modprobe vfio_iommu_type1, and boot with the IOMMU on (intel_iommu=on or amd_iommu=on)", err)
	}
	return &Container{h: h, fd: fd, groups: map[int]*group{}, bufs: map[uint64]*DMABuffer{},
		type1: type1 == 1, noiommuOK: noiommu == 1, locks: map[uint64]int{}}, nil
}

// attachGroup opens IOMMU group n (or takes another reference on it) and
// attaches it to the container; the first group also sets the IOMMU type and
// reads the IOMMU's page sizes and IOVA ranges. Called with c.mu held.
func (c *Container) attachGroup(n int, dev Address) (*group, error) {
	if g, ok := c.groups[n]; ok {
		g.refs++
		return g, nil
	}
	path, noiommu := c.h.groupPath(n)
	if len(c.groups) > 0 && noiommu != c.noiommu {
		return nil, newErr("open", dev.String(), ErrGroupNotViable, fmt.Sprintf("%s cannot share a container with the groups already in it: "+
			"a no-IOMMU group and IOMMU groups need containers of their own", path), nil)
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.EBUSY):
			return nil, newErr("open", dev.String(), ErrGroupBusy, path+" is held by another process or container (find it with: fuser -v "+path+")", err)
		case noiommu && errors.Is(err, unix.EPERM):
			return nil, newErr("open", dev.String(), ErrNoVFIO, path+" is a no-IOMMU group, which only a process with CAP_SYS_RAWIO may open: run as root", err)
		case errors.Is(err, unix.ENOENT):
			return nil, newErr("open", dev.String(), ErrNotBoundToVFIO, path+" does not exist: no device of IOMMU group "+strconv.Itoa(n)+" is bound to vfio-pci", err)
		}
		return nil, newErr("open", dev.String(), ErrNoVFIO, path, err)
	}
	fail := func(kind error, detail string, err error) (*group, error) {
		unix.Close(fd)
		return nil, newErr("open", dev.String(), kind, detail, err)
	}
	st := encodeGroupStatus()
	if err := ioctlBuf(fd, ioctlGroupGetStatus, st); err != nil {
		return fail(ErrNoVFIO, "VFIO_GROUP_GET_STATUS", err)
	}
	if ne.Uint32(st[4:])&groupFlagViable == 0 {
		return fail(ErrGroupNotViable, c.h.notViableHint(n, dev), nil)
	}
	cfd := int32(c.fd)
	if err := ioctlBuf(fd, ioctlGroupSetCont, unsafe.Slice((*byte)(unsafe.Pointer(&cfd)), 4)); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fail(ErrGroupBusy, "group "+strconv.Itoa(n)+" is already attached to another container", err)
		}
		return fail(ErrNoVFIO, "VFIO_GROUP_SET_CONTAINER", err)
	}
	if noiommu && !c.noiommu {
		if !c.noiommuOK {
			return fail(ErrNoIOMMU, path+" is a no-IOMMU group but this container offers no no-IOMMU driver (VFIO_NOIOMMU_IOMMU)", nil)
		}
		if _, err := ioctlVal(c.fd, ioctlSetIOMMU, extNoIOMMU); err != nil {
			detail := "VFIO_SET_IOMMU(no-IOMMU)"
			if errors.Is(err, unix.EPERM) {
				detail = "the no-IOMMU mode needs CAP_SYS_RAWIO: run as root"
			}
			return fail(ErrNoIOMMU, detail, err)
		}
		c.noiommu = true
	}
	if c.iommu == nil && !noiommu {
		if _, err := ioctlVal(c.fd, ioctlSetIOMMU, extType1v2); err != nil {
			detail := "VFIO_SET_IOMMU(type1v2)"
			if errors.Is(err, unix.EPERM) {
				detail = "the IOMMU has no interrupt remapping, so VFIO refuses it: enable interrupt remapping " +
					"(x2APIC/IR in the firmware; on a QEMU guest -device intel-iommu,intremap=on) or, on a trusted host only, " +
					"load vfio_iommu_type1 with allow_unsafe_interrupts=1"
			}
			return fail(ErrNoIOMMU, detail, err)
		}
		info, err := c.readIOMMUInfo()
		if err != nil {
			return fail(ErrNoIOMMU, "VFIO_IOMMU_GET_INFO", err)
		}
		ranges := info.IOVARanges
		if len(ranges) == 0 { // kernels before 5.4 do not report ranges
			ranges = []IOVARange{{0, 1<<48 - 1}}
		}
		alloc, err := NewIOVAAllocator(ranges, max(info.MinPageSize(), uint64(os.Getpagesize())))
		if err != nil {
			return fail(ErrNoIOMMU, "IOVA ranges", err)
		}
		c.iommu, c.iova = &info, alloc
	}
	g := &group{num: n, fd: fd, refs: 1}
	c.groups[n] = g
	return g, nil
}

// readIOMMUInfo issues VFIO_IOMMU_GET_INFO, a second time with a larger
// buffer if the capability chain did not fit.
func (c *Container) readIOMMUInfo() (IOMMUInfo, error) {
	b := encodeIOMMUInfo(iommuInfoSize)
	for try := 0; try < 3; try++ {
		if err := ioctlBuf(c.fd, ioctlIOMMUGetInfo, b); err != nil {
			return IOMMUInfo{}, err
		}
		info, need, err := parseIOMMUInfo(b)
		if err != nil || need == 0 {
			return info, err
		}
		b = encodeIOMMUInfo(need)
	}
	return IOMMUInfo{}, fmt.Errorf("%w: iommu info size kept growing", errBadReply)
}

// detachGroup drops a reference on a group and closes it with the last one.
// Called with c.mu held.
func (c *Container) detachGroup(g *group) error {
	if c.closed { // Close closed every group already
		return nil
	}
	g.refs--
	if g.refs > 0 {
		return nil
	}
	var err error
	if len(c.groups) == 1 {
		// The last group: its departure tears the IOMMU down, so unmap
		// while the mappings can still be removed cleanly; a later device
		// sets the IOMMU up afresh.
		err = c.unmapAllLocked()
		c.iommu, c.iova, c.noiommu = nil, nil, false
	}
	unix.Close(g.fd)
	delete(c.groups, g.num)
	return err
}

// IOMMUInfo returns the IOMMU's page sizes and IOVA ranges. It is known
// once a device has been opened in the container.
func (c *Container) IOMMUInfo() (IOMMUInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return IOMMUInfo{}, newErr("IOMMU info", "", ErrClosed, "", nil)
	}
	if c.iommu == nil {
		return IOMMUInfo{}, newErr("IOMMU info", "", ErrNoIOMMU, "no device opened in this container yet", nil)
	}
	return *c.iommu, nil
}

// Pinned is the number of bytes of DMA memory the container has mapped.
func (c *Container) Pinned() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pinned
}

// Close removes every DMA mapping and closes the container and its groups.
// Devices of the container should be closed first. DMA buffers stay
// readable until their Free.
func (c *Container) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	errs := []error{c.unmapAllLocked()}
	for _, g := range c.groups {
		unix.Close(g.fd)
	}
	c.groups = nil
	c.closed = true
	errs = append(errs, unix.Close(c.fd))
	return errors.Join(errs...)
}
