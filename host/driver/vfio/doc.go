// Package vfio drives a PCI device from user space through Linux VFIO, in
// pure Go: no kernel module of ours and no cgo. It is the generic layer
// under openiwarp's board backend, and registers that backend with
// host/driver as "vfio" (Card, in card.go: driver.Open("vfio:0000:03:00.0")
// after importing this package). Apart from Card, nothing in it is specific
// to the openiwarp card.
//
// What it does, in the order a driver needs it:
//
//   - Open finds the device's IOMMU group in sysfs, checks the device is
//     bound to vfio-pci and the group is viable, opens a container with the
//     type1v2 IOMMU, reads the IOMMU's page sizes and usable IOVA ranges,
//     and gets the device file descriptor.
//   - Device.ReadConfig / WriteConfig / Config16 ... reach PCI config space;
//     Device.EnableBusMaster turns on DMA (vfio-pci leaves it off).
//   - Device.MapBAR maps a memory BAR with mmap; BAR.Reg32 / Reg64 give typed
//     registers whose Load and Store are single, ordered accesses.
//   - Container.AllocDMA (or Device.AllocDMA) allocates page-aligned or
//     huge-page memory outside the Go heap and maps it into the IOMMU at an
//     IOVA inside the reported ranges and below an optional limit;
//     DMABuffer.Free unmaps and frees it.
//   - Device.EnableInterrupts routes INTx, MSI or MSI-X vectors to eventfds
//     and delivers them on a channel (or to a handler); INTx is unmasked
//     with Interrupts.Unmask. Device.Reset resets the device if it can be.
//   - Without an IOMMU (a /dev/vfio/noiommu-N group, vfio's unsafe no-IOMMU
//     mode) the container pins memory with mlock and gives the device
//     physical addresses read from /proc/self/pagemap: DMA buffers are one
//     4 KiB page or one 2 MiB huge page, mapped memory is a page list
//     (MappedMemory.Pages4K); ErrPFNHidden when the kernel hides them.
//   - OpenPhys is the openiwarp card's driver.Phys over all of the above,
//     after checking the card's ID and VERSION registers (ErrNotCard).
//
// Errors are *Error values whose Kind is a sentinel (ErrNoIOMMU,
// ErrNotBoundToVFIO, ErrGroupNotViable, ErrMemlock, ErrBARNotMappable,
// ErrIOVAExhausted, ...) to match with errors.Is, and whose message says
// what was found on the host and how to fix it.
//
// The layer is tested against the real kernel VFIO code by test/vfio, which
// boots a Linux guest under QEMU with an emulated Intel IOMMU and QEMU's edu
// device. README.md in this directory is the guide for running on a board.
package vfio
