# Host side: the driver's cards (host/driver: model, sim), the verbs API and
# connection manager (host/verbs), iwperf and the end-to-end demo.
# The pure-Go packages (model card, verbs suite on the model card, perf
# benchmarks against raw TCP) run in test-go and bench-go; the sim card's
# suite and benchmarks need the Verilated libraries and the cosim build tag.

.PHONY: test-host-sim bench-host-sim demo-host

# The verbs suite on the sim card (RTL in the loop, cycle-checked), 0 to 16 MiB;
# then the sim card's own RTL tests again under the race detector (the
# suite under -race takes a minute more on this machine).
test-host-sim: hw-sim-libs
	$(GO) test -tags cosim -count=1 -timeout 10m ./host/driver/sim/
	$(GO) test -race -tags cosim -count=1 -timeout 10m -run 'Placement|CheckSendWR|Mismatch' ./host/driver/sim/

# iwperf bandwidth on the sim card, in simulated operations per second.
bench-host-sim:
	@mkdir -p build
	$(GO) test -tags cosim -run '^$$' -bench . -benchtime 200x -timeout 20m ./host/driver/sim/ | tee build/bench-host-sim.txt

# Two endpoints over 127.0.0.1, on the model card then on the sim card:
# Write, Read and Send at several sizes, verified byte for byte.
demo-host:
	@mkdir -p build
	$(GO) build -o build/iwdemo ./cmd/iwdemo
	./build/iwdemo

TEST_TARGETS += test-host-sim
BENCH_TARGETS += bench-host-sim
