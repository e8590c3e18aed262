// Package cardserve serves the openiwarp card to a QEMU 7.2 guest as a PCI
// device, so that the card's one driver (host/driver/rnic over
// host/driver/vfio) meets it through a real Linux kernel's VFIO.
//
// Two QEMU devices make the slot (the measured facts are in
// ../shared/notes/qemu-card-device.md):
//
//   - x-pci-proxy-dev, whose other end is a socket this package serves
//     (ServeProxy): the whole 256-byte PCI configuration header (the card's
//     IDs from host/driver/cardspec, one 32-bit non-prefetchable BAR0 of
//     the card's BAR size, no capabilities, no INTx), every BAR0 access of
//     the guest's vCPUs trapping synchronously into the card (a read returns
//     only once the card has answered it, so read side effects are exact),
//     the guest's RAM received as memfd file descriptors (SYNC_SYSMEM) and
//     mapped here, so that the card's DMA reaches guest-physical addresses
//     (a DMA outside guest RAM is refused: the card sees an error response
//     and the refusal is counted and reported), and DEVICE_RESET (a fresh
//     card, as from power-on).
//   - ivshmem-doorbell, for which this package is the ivshmem server
//     (ServeIVShmem): QEMU's proxy device cannot raise interrupts under TCG,
//     ivshmem can, so the card's interrupt vector v becomes a write to the
//     guest's eventfd v, which QEMU turns into MSI-X vector v of the ivshmem
//     device. The guest driver takes the card's interrupts there
//     (vfio.PhysOptions.Interrupts).
//
// What is served sits behind Card: a register bus (Read32 and Write32 that
// complete the access before they return), Step to advance the card's own
// work, and the Host callbacks (DMA reads and writes, interrupts) the card
// is created with. Two cards are served: the card's transaction-level
// golden model (host/driver/cardmodel, Model), and the Verilated card top
// iwcard_w64/512 (RTL: Read32 and Write32 clock the AXI4-Lite port until
// the response, Step clocks a batch of cycles), with the model beside it
// checking every DMA write (host/driver/cardcheck, the check the sim card
// runs). RTL needs cgo and the library make hw-sim-libs builds.
//
// cmd/cardserve is the command around this package; test/vfio boots a guest
// with the card in a slot and runs the driver there.
package cardserve
