# Host side: the driver's cards (host/driver: model, sim), the verbs API and
# connection manager (host/verbs), iwperf and the end-to-end demo.
# The pure-Go packages (the driver over the card model, the verbs suite on
# it, perf benchmarks against raw TCP and the golden engine) run in test-go and bench-go; the sim card's
# suite and benchmarks need the Verilated libraries and the cosim build tag.

.PHONY: test-host-sim test-load bench-host-sim bench-host demo-host

# The verbs suite on the sim card (RTL in the loop, cycle-checked), 0 to 16 MiB;
# then the sim card's own RTL tests again under the race detector (the
# suite under -race takes a minute more on this machine).
test-host-sim: hw-sim-libs
	$(GO) test -tags cosim -count=1 -timeout 10m ./host/driver/sim/
	$(GO) test -race -tags cosim -count=1 -timeout 10m -run 'Placement|CheckSendWR|Mismatch' ./host/driver/sim/

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
	$(GO) test -tags cosim -run '^$$' -bench . -benchtime 200x -timeout 20m ./host/driver/sim/ | tee build/bench-host-sim.txt

# The card's driver over the card model ("model") against the golden
# engine, in the same run: bandwidth (goal: at least 0.9 of the engine's)
# and the 64-byte Send round trip (goal: at most 1.2 times the engine's);
# then the host CPU per message of Write and Send at 64 KiB and 1 MiB
# without the card model's own, against raw TCP (goal: at most 1.15
# times), with benchratio's ratios.
bench-host:
	@mkdir -p build
	$(GO) test -run '^$$' -bench '^Benchmark(Card|HostCPU)' -count 3 -timeout 20m ./host/verbs/perf | tee build/bench-host.txt | $(GO) run ./internal/tools/benchratio

# Two endpoints over 127.0.0.1, on the model card then on the sim card:
# Write, Read and Send at several sizes, verified byte for byte.
demo-host:
	@mkdir -p build
	$(GO) build -o build/iwdemo ./cmd/iwdemo
	./build/iwdemo

TEST_TARGETS += test-host-sim test-load
BENCH_TARGETS += bench-host-sim bench-host
