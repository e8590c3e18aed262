# Interoperability with real Linux peers in QEMU guests (test/guest, test/interop, cmd/iwping).
# The guest builder caches Debian packages, kernels, modules and initramfs images
# under /var/cache/openiwarp (override with OPENIWARP_CACHE).

DEBIAN_PACKAGES += qemu-system-x86 busybox-static kmod xz-utils tcpdump iproute2 \
	rdmacm-utils ibverbs-utils ibverbs-providers gcc make binutils

.PHONY: test-guest
# The shared QEMU guest builder: boots guests (network namespace, 9p, VT-d + edu).
test-guest:
	$(GO) test -race -count=1 -timeout 10m ./test/guest/...

TEST_TARGETS += test-guest

.PHONY: interop
# Linux soft-iWARP (siw) in QEMU guests against openiwarp; regenerates the matrix.
# TestInteropCardInSlot (matched too): iwping in a guest on the card in a PCI slot,
# the card's model and the Verilated card (RTL); RTLScenarios: iwping on the host's
# all-RTL sim card.
# Captures, console logs and reports: build/interop/<scenario>/.
interop:
	$(GO) test -race -count=1 -timeout 30m -v -run TestInterop ./test/interop -args -matrix $(CURDIR)/test/interop/MATRIX.md

# The harness's own tests: capture decoding (tshark, iwdump, committed captures), sides, checks.
.PHONY: test-interop-unit
test-interop-unit:
	$(GO) test -race -count=1 -skip '^TestInterop' ./test/interop

TEST_TARGETS += test-interop-unit interop
