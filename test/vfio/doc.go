// Package vfio is the harness that proves host/driver/vfio against the real
// Linux VFIO code: it builds the tests of ./edu as a static binary, boots
// Linux guests under QEMU (through test/guest) with an emulated Intel IOMMU
// and QEMU's edu device (one guest without it, with vfio.ko rebuilt for
// the no-IOMMU mode), and runs the binary inside them. Run it with
// `make test-vfio` (root, QEMU and the Debian packages of test/guest).
package vfio
