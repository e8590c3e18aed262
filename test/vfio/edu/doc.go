// Package edu holds the tests of host/driver/vfio that run inside a Linux
// guest against QEMU's edu device behind the emulated Intel IOMMU. They are
// built only with the vfioguest build tag, as a static test binary
// (CGO_ENABLED=0 go test -c -tags vfioguest), by the harness in test/vfio,
// which boots the guests and runs them there: outside such a guest there is
// no edu device and nothing for them to test.
//
// Each test name starts with the guest scenario it belongs to: TestEdu* and
// TestNVMe* run in the main guest (VT-d with interrupt remapping, edu and
// QEMU's NVMe controller on the root bus; the NVMe tests cover MSI-X and
// device reset, which edu lacks),
// TestNoIOMMU in a guest without an IOMMU, TestNoIOMMUMode in one without
// an IOMMU whose vfio has the no-IOMMU mode (DMA at physical addresses),
// TestNoIntremap in one whose VT-d
// lacks interrupt remapping, TestNotViable in one where edu shares its IOMMU
// group with a device bound to a host driver.
package edu
