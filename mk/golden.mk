# Golden model of DDP, RDMAP and the reference iWARP endpoint (golden/ddp,
# golden/rdmap, golden/iwarp). Their unit, end-to-end, hostile-peer and tshark
# tests run in test-go; the benchmarks (with raw-TCP baselines) in bench-go.

FUZZTIME ?= 30s
GOLDEN_FUZZ := golden/ddp:FuzzParse golden/rdmap:FuzzParse golden/rdmap:FuzzParseTerminate golden/iwarp:FuzzReceive

.PHONY: golden-fuzz
# Runs every golden DDP/RDMAP fuzz target for FUZZTIME each (not part of make test).
golden-fuzz:
	@set -e; for t in $(GOLDEN_FUZZ); do \
	  echo "fuzz $${t%%:*} $${t##*:} for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$${t##*:}$$" -fuzztime $(FUZZTIME) ./$${t%%:*}; \
	done

.PHONY: bench-iwarp
# The engine's (golden/iwarp) and iwperf's (host/verbs/perf, model card)
# bandwidth and 64-byte latency beside raw TCP on loopback measured in the
# same run, best of 3, as ratios (issues 3 and 7). bench-go runs the same
# benchmarks among all the others; this runs them alone.
bench-iwarp:
	@mkdir -p build
	$(GO) test -run '^$$' -bench . -count 3 -timeout 20m ./golden/iwarp ./host/verbs/perf | tee build/bench-iwarp.txt | $(GO) run ./internal/tools/benchratio
