# Golden model of DDP, RDMAP and the reference iWARP endpoint (golden/ddp,
# golden/rdmap, golden/iwarp and its protocol core golden/iwarp/qp). Their
# unit, end-to-end, hostile-peer and tshark tests run in test-go; the
# benchmarks (with raw-TCP baselines) in bench-go.

FUZZTIME ?= 30s
GOLDEN_FUZZ := golden/ddp:FuzzParse golden/rdmap:FuzzParse golden/rdmap:FuzzParseTerminate golden/iwarp:FuzzReceive golden/iwarp/qp:FuzzReceive

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
# same run, best of 3, as ratios (issues 3 and 7). The three runs are whole
# passes one after another, not -count 3, so that a benchmark's best and its
# baseline's come from the same stretch of time: loopback TCP's own speed
# drifts by a third within minutes here. bench-go runs the same benchmarks
# among all the others; this runs them alone.
bench-iwarp:
	@mkdir -p build
	for i in 1 2 3; do $(GO) test -run '^$$' -bench . -count 1 -timeout 20m ./golden/iwarp ./host/verbs/perf || exit 1; done | tee build/bench-iwarp.txt | $(GO) run ./internal/tools/benchratio
