# Host side: the driver's cards (host/driver: model, sim), the verbs API and
# connection manager (host/verbs), iwperf and the end-to-end demo.
# The pure-Go packages (the driver over the card model, the verbs suite on
# it and through the sim card's checker, perf benchmarks against raw TCP
# and the golden engine) run in test-go and bench-go; the sim card over the
# Verilated iwcard needs the Verilated libraries and the cosim build tag.

.PHONY: test-host-sim test-host-sim-suite test-load bench-host-sim bench-host demo-host

# The verbs suite's cases the all-RTL card serves: all 18.
SIM_SUITE_SERVED := Write|Read|Send|SendWithInvalidate|SolicitedEvent|ScatterGather|PostCopiesWR|Unsignaled|Inline|ReadFence|MPAOptions|PrivateDataAndReject|ManyQPs|RemoteAccessError|FlushOnDisconnect|BadUse|TerminateBeforeFIN|MemoryWindows

# The sim card (the driver over the Verilated iwcard, every DMA write
# checked against the card model): each operation at 64 and 512 bits is
# served with its bytes verified or ends its QP with a typed mismatch
# naming what the RTL did not do, never hangs; then the verbs suite's
# served cases, 16 QPs at once, at 64 bits to 1 MiB and at 512 bits to
# 16 MiB (about 5 minutes together; 16 MiB at 64 bits adds about 4 more:
# make test-host-sim-suite).
test-host-sim: hw-sim-libs
	@mkdir -p build
	@rc=0; $(GO) test -tags cosim -count=1 -timeout 30m -run 'TestRTL' -v ./host/driver/simcard/ >build/host-sim-test.log 2>&1 || rc=$$?; \
	if [ $$rc -ne 0 ]; then cat build/host-sim-test.log; else grep -E '^ *(--- |ok)|RTL:|served' build/host-sim-test.log; fi; exit $$rc
	@set -e; for w in 64 512; do rc=0; \
	  $(GO) test -tags cosim -count=1 -timeout 30m -run 'TestSuiteSim/^($(SIM_SUITE_SERVED))$$' -v ./host/driver/simcard/ -sim.width=$$w -sim.max=$$(( w == 64 ? 1<<20 : 16<<20 )) >build/host-sim-suite-$$w.log 2>&1 || rc=$$?; \
	  echo "verbs suite on the sim card at $$w bits:"; grep -E '^ *--- [A-Z]+: TestSuiteSim(/[A-Za-z]+)? |RTL:' build/host-sim-suite-$$w.log; \
	  if [ $$rc -ne 0 ]; then echo "--- failed; end of build/host-sim-suite-$$w.log:"; tail -80 build/host-sim-suite-$$w.log; exit $$rc; fi; done

# The whole verbs suite on the sim card at one width, 0 B to 16 MiB, 16 QPs
# at once (W=512 for the wide card; MAX=bytes for a smaller largest
# message), verbose.
test-host-sim-suite: hw-sim-libs
	$(GO) test -tags cosim -count=1 -timeout 60m -run 'TestSuiteSim' -v ./host/driver/simcard/ -sim.width=$(or $(W),64) -sim.max=$(or $(MAX),16777216)

# Load and churn at full scale on the model card, without the race detector
# (it allows 8128 live goroutines; 1,000 QP pairs take 8,000): 1,000 QPs at
# once moving verified data both ways, 10,000 connection setups and
# teardowns against one server with goroutines, descriptors and heap back
# to their level, and a server serving good clients among misbehaving ones.
# test-go runs the same tests under -race at a quarter and a tenth of the
# scale. Figures in docs/reliability.md.
test-load:
	$(GO) test -count=1 -timeout 20m -run 'TestThousandQPs|TestChurn|TestServerSurvives' -v ./host/verbs/

# iwperf bandwidth on the sim card, in simulated operations per second.
bench-host-sim:
	@mkdir -p build
	$(GO) test -tags cosim -run '^$$' -bench . -benchtime 200x -timeout 20m ./host/driver/simcard/ | tee build/bench-host-sim.txt

# The card's driver over the card model ("model") against the golden
# engine, in the same run: bandwidth (goal: at least 0.9 of the engine's)
# and the 64-byte Send round trip (goal: at most 1.2 times the engine's);
# then the host CPU per message of Write and Send at 64 KiB and 1 MiB
# without the card model's own, against raw TCP (goal: at most 1.15
# times), with benchratio's ratios. Three whole passes one after another,
# not -count 3, as bench-iwarp: each benchmark's best and its baseline's
# then come from the same stretch of time on a shared machine.
bench-host:
	@mkdir -p build
	for i in 1 2 3; do $(GO) test -run '^$$' -bench '^Benchmark(Card|HostCPU)' -count 1 -timeout 20m ./host/verbs/perf || exit 1; done | tee build/bench-host.txt | $(GO) run ./internal/tools/benchratio

# Two endpoints over 127.0.0.1, on the model card then on the sim card:
# Write, Read and Send at several sizes, verified byte for byte. The sim
# card runs what its RTL serves (RDMA Writes inline and from SGLs, Sends,
# at 64 bits; to 64 KiB, a few seconds a row); where the RTL stops,
# the card model's checker ends the QP and says what the RTL left undone,
# which iwdemo prints with its exit status 1: make goes on (the leading -),
# since that is the RTL's state, not the demo's failure.
demo-host:
	@mkdir -p build
	$(GO) build -o build/iwdemo ./cmd/iwdemo
	./build/iwdemo -cards model
	@echo "== the sim card: the same driver over the Verilated iwcard_w64, every DMA write checked against the card model"
	./build/iwdemo -cards sim -sizes 1,64,4096,65536 -n 3

TEST_TARGETS += test-host-sim test-load
BENCH_TARGETS += bench-host-sim bench-host
