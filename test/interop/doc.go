// Package interop proves that openiwarp interoperates with the iWARP stack
// Linux users already run: soft-iWARP (siw) in the Debian 6.1 kernel, with
// rdma-core's rping and librdmacm examples, in QEMU guests (package
// test/guest).
//
// `make interop` (TestInterop) builds and caches the guest — Debian's
// kernel, siw compiled out of tree twice (stock, and with mpa_crc_required,
// a compile-time constant in 6.1), rdmacm-utils and ibverbs with their
// libraries — then creates a network namespace with a bridge (198.18.0.1/24)
// and boots guests on tap ports (198.18.0.2, .3). Each Scenario runs its
// host-side and guest-side programs in step (RunSides): the host side is
// cmd/iwping running in the namespace on an openiwarp card (the model card,
// or the all-RTL sim card: RTLScenarios), the guest side rping, rdma_server or
// rdma_client over siw0. Every byte of ping data is verified against rping's
// own pattern on both sides, every scenario's traffic is captured on the
// bridge and decoded twice, by tshark's iWARP dissectors and by cmd/iwdump,
// with the expected MPA revision, flags, RDMAP opcodes and CRC status
// (Expect). A failed scenario names the side that failed, stalled or was
// disconnected and keeps its capture, the guests' console logs and the
// sides' output under build/interop/<scenario>/; nothing waits past a
// bounded timeout, and the harness ends only the processes it started.
//
// TestInteropCardInSlot (also in `make interop`) puts the openiwarp card on
// the other side too: a third guest (198.18.0.4) has the card in a PCI slot
// (test/cardserve) and runs iwping on it through VFIO's no-IOMMU mode
// (-card pci:ADDR,irq=ADDR, host/driver/pcicard), client and server against
// the CRC-requiring siw's rping in guest A.
//
// The results make the interoperability matrix (Matrix, written to
// test/interop/MATRIX.md), which also documents the known siw defects the
// harness works around (KnownSiwDefects) and the openiwarp issues the
// scenarios exposed (OpenIssues).
package interop
