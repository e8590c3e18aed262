# IP over connected mode (RFC 4755) on openiwarp reliable connections:
# cmd/ipoibcm and its namespace harness test/ipoib (needs root, /dev/net/tun).
DEBIAN_PACKAGES += iproute2 iputils-ping
TEST_TARGETS += test-ipoib
BENCH_TARGETS += bench-ipoib

.PHONY: test-ipoib bench-ipoib
test-ipoib:
	$(GO) test -race -count=1 -timeout 8m ./test/ipoib

# TCP across the link against TCP over the bare veth pair under it, same run.
bench-ipoib:
	@mkdir -p build
	$(GO) test -run '^$$' -bench . -count 3 -timeout 15m ./test/ipoib | tee build/bench-ipoib.txt | $(GO) run ./internal/tools/benchratio
