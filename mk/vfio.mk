# The VFIO layer of the host driver (host/driver/vfio), proved against a real
# Linux kernel: test/vfio boots QEMU guests with an emulated Intel IOMMU and
# QEMU's edu device (through test/guest) and runs the in-guest tests of
# test/vfio/edu there (about 20 s). The pure-Go unit tests of host/driver/vfio
# run in test-go. The card in a PCI slot: test/cardserve's unit tests
# (a fake QEMU over a socketpair, the driver over it), then TestCardInSlot
# boots a guest with four cards served by test/cardserve and runs the card's
# driver there through VFIO's no-IOMMU mode, the verbs suite included
# (127-153 s more); two more slots hold the Verilated card (cardserve.RTL,
# checked by the card model; hw-sim-libs builds its library), which runs
# what the all-RTL card serves today (about 3.5 min more). The full log
# goes to build/vfio-test.log, the guests' consoles to build/vfio/.

# What the guests need (test/guest boots them): QEMU with VT-d and edu, busybox,
# kmod for module dependencies, xz to unpack the kernel.
DEBIAN_PACKAGES += qemu-system-x86 busybox-static kmod xz-utils

.PHONY: test-vfio
test-vfio: hw-sim-libs
	@mkdir -p build
	$(GO) vet -tags vfioguest ./test/vfio/...
	$(GO) test -race -count=1 -timeout 10m ./test/cardserve/...
	@rc=0; $(GO) test -count=1 -timeout 20m -v -run 'TestVFIOInGuests|TestCardInSlot' ./test/vfio >build/vfio-test.log 2>&1 || rc=$$?; \
	  grep -E '^\s*--- |^(ok|FAIL|PASS)|figure:' build/vfio-test.log | sed 's/^\s*//'; \
	  if [ $$rc -ne 0 ]; then echo "--- test-vfio failed; end of build/vfio-test.log:"; tail -80 build/vfio-test.log; fi; exit $$rc

TEST_TARGETS += test-vfio
