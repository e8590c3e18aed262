# The VFIO layer of the host driver (host/driver/vfio), proved against a real
# Linux kernel: test/vfio boots QEMU guests with an emulated Intel IOMMU and
# QEMU's edu device (through test/guest) and runs the in-guest tests of
# test/vfio/edu there. The pure-Go unit tests of host/driver/vfio run in test-go.

.PHONY: test-vfio
test-vfio:
	@mkdir -p build
	$(GO) vet -tags vfioguest ./test/vfio/...
	$(GO) test -count=1 -timeout 10m -v -run TestVFIOInGuests ./test/vfio 2>&1 | tee build/vfio-test.log | grep -E '^(=== RUN|\s*--- |ok|FAIL|PASS)'; exit $${PIPESTATUS[0]}

TEST_TARGETS += test-vfio
