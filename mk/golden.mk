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
