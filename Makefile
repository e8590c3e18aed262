# openiwarp build, test and tools.
# Each area of the tree adds its own targets in mk/<area>.mk; they append to
# TEST_TARGETS, BENCH_TARGETS and DEBIAN_PACKAGES so that `make test`,
# `make bench` and `make tools` cover everything.

SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -ec
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go

# Debian packages every part of the project may need (installed only where missing).
DEBIAN_PACKAGES := verilator ghdl yosys nextpnr-ice40 fpga-icestorm tshark g++ make
TEST_TARGETS :=
BENCH_TARGETS :=

.PHONY: all tools lint test test-go test-loaded bench bench-go demo clean
all: lint test

include $(sort $(wildcard mk/*.mk))

tools:
	@scripts/install-tools.sh $(DEBIAN_PACKAGES)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Pure-Go packages run with the race detector. The cgo co-simulation (hw/sim) and
# the harnesses under test/ (QEMU guests, namespaces) run from their own targets.
GO_PURE_PKGS = $(shell $(GO) list ./... | grep -v -e '/hw/sim' -e '/test/')
test-go:
	$(GO) test -race -count=1 -timeout 20m $(GO_PURE_PKGS)

test: tools lint test-go $(TEST_TARGETS)
	@echo "make test: all suites passed"

# The pure-Go suite, the co-simulation and the sim card's verbs suite with a
# busy loop on every core beside them (scripts/with-cpu-hog.sh): no test may
# depend on a quiet machine. Tests wait with watchdogs (internal/testwatch)
# that fail only after minutes, naming what was stuck.
LOADED_TARGETS = test-go test-cosim test-host-sim
test-loaded:
	scripts/with-cpu-hog.sh $(MAKE) --no-print-directory $(LOADED_TARGETS)

# Benchmarks run three times; benchratio keeps the best run of each and
# prints it beside its baseline from the same run (see internal/tools/benchratio).
BENCH_PKGS = $(GO_PURE_PKGS)
bench-go:
	@mkdir -p build
	$(GO) test -run '^$$' -bench . -benchmem -count 3 -timeout 30m $(BENCH_PKGS) | tee build/bench-go.txt | $(GO) run ./internal/tools/benchratio

bench: tools bench-go $(BENCH_TARGETS)
	@$(MAKE) --no-print-directory bench-charts

# An SVG chart per benchmark family (bandwidth, round trips, co-simulation
# speed) from the benchmark outputs under build/, the newest last so that
# its runs win; docs/bench/ holds the copies the README shows. BENCH_NOTE
# is a second title line on every chart (the conditions of the runs).
BENCH_NOTE ?=
.PHONY: bench-charts
bench-charts:
	@ls build/bench-*.txt >/dev/null 2>&1 || { echo "bench-charts: no build/bench-*.txt; run make bench (or a bench-* target) first"; exit 1; }
	$(GO) run ./internal/tools/benchratio -quiet -svg build/bench -note "$(BENCH_NOTE)" $$(ls -tr build/bench-*.txt)

clean:
	rm -rf build
