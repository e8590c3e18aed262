# IP over connected mode (RFC 4755) on openiwarp reliable connections:
# cmd/ipoibcm and its namespace harness test/ipoib (needs root, /dev/net/tun).
DEBIAN_PACKAGES += iproute2 iputils-ping
TEST_TARGETS += test-ipoib
BENCH_TARGETS += bench-ipoib

.PHONY: test-ipoib bench-ipoib
test-ipoib:
	$(GO) test -race -count=1 -timeout 8m ./test/ipoib

# TCP across the link, across the TUN relay floor (test/ipoib/floor.go) and
# over the bare veth pair under both. IPOIB_BENCH_COUNT passes of `go test
# -count 1` rather than one -count pass, so that each pass measures the three
# back to back and load from other work on the machine hits them alike;
# benchratio keeps the best pass of each.
IPOIB_BENCH_COUNT ?= 3
bench-ipoib:
	@mkdir -p build
	@uptime | sed 's/^/# /' > build/bench-ipoib.txt
	for i in $$(seq $(IPOIB_BENCH_COUNT)); do \
		$(GO) test -run '^$$' -bench . -count 1 -timeout 15m ./test/ipoib || exit 1; \
	done | tee -a build/bench-ipoib.txt | $(GO) run ./internal/tools/benchratio
	@uptime | sed 's/^/# /' >> build/bench-ipoib.txt
