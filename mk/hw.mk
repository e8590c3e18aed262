# Hardware: the HDL generator (hw/gen, cmd/iwgen), the generated RTL (hw/rtl),
# Verilator/GHDL co-simulation (hw/sim, golden/cycle) and synthesis (fpga/).

HW_BUILD := build/hw
HW_RTL_V := $(wildcard hw/rtl/*.v)
HW_RTL_VHD := $(wildcard hw/rtl/*.vhd)

.PHONY: hw-gen hw-regen-check hw-lint

# Regenerate hw/rtl and hw/sim/ports from the Go generators.
hw-gen:
	$(GO) run ./cmd/iwgen

# Fails when the committed RTL differs from what the generators produce.
hw-regen-check:
	$(GO) run ./cmd/iwgen -check

# Verilator -Wall lint of every Verilog file, GHDL analysis of every VHDL file.
hw-lint:
	@mkdir -p $(HW_BUILD)/lint
	@set -e; for f in $(HW_RTL_V); do verilator --lint-only -Wall -y hw/rtl $$f; done
	@set -e; for f in $(filter-out $(HW_LINT_VHD_LAST),$(HW_RTL_VHD)) $(HW_LINT_VHD_LAST); do ghdl -a --std=08 --workdir=$(HW_BUILD)/lint $$f; done
	@echo "hw-lint: $(words $(HW_RTL_V)) Verilog and $(words $(HW_RTL_VHD)) VHDL files clean"

TEST_TARGETS += hw-regen-check hw-lint

# Co-simulation libraries: each Verilated block with the generic wrapper
# hw/sim/cxx/block.cpp, as a shared object hw/sim loads with dlopen. The
# trace/ variants add --trace (VCD) and are built only when a test needs a
# waveform. C++ at -O3 for the data-path blocks and the card's top; the
# card's engines (card_*) at Verilator's default -Os. Until the IR printed
# one-hot decodes as shifts (29 Nov) the card's C++ was megabytes of
# straight-line code a cycle, which -O3 unrolled past the instruction
# cache: -Os ran iwcard_w64 2.4-3 times faster then. With a third less
# code, -O3 runs it 5-18% faster than -Os (BenchmarkCardCosim, alternating
# builds, 64 and 512 bits).
HW_SIM := $(HW_BUILD)/sim
VERILATOR_ROOT_DIR := $(shell verilator --getenv VERILATOR_ROOT 2>/dev/null)
HW_SIM_OPT = $(if $(filter card_%,$*),-Os,-O3)
HW_SIM_CXXFLAGS := -O3 -march=native -fPIC -std=c++17 -fvisibility=hidden -Wl,-Bsymbolic -Wl,--no-undefined -I$(VERILATOR_ROOT_DIR)/include -I$(VERILATOR_ROOT_DIR)/include/vltstd
# $(call HW_VERILATE_SO,<extra verilator flags>,<extra g++ flags>,<runtime objects>): builds $@ in a
# private directory and renames it into place, so that concurrent builds of
# the same block (two test runs at once) cannot trip over each other.
HW_VERILATE_SO = set -e; d=$$(mktemp -d $(HW_SIM)/obj/$*.XXXXXX); \
	verilator --cc -O3 --x-assign fast --x-initial fast --noassert -Wall -y hw/rtl $(1) --Mdir $$d --build -j 2 hw/rtl/$*.v \
	  -CFLAGS "-fPIC $(HW_SIM_OPT) -march=native" -MAKEFLAGS "OPT_FAST=$(HW_SIM_OPT) OPT_SLOW=-O2 OPT_GLOBAL=$(HW_SIM_OPT)" >$$d.log 2>&1 || { cat $$d.log; rm -rf $$d $$d.log; exit 1; }; \
	g++ $(HW_SIM_CXXFLAGS) $(2) -shared -I$$d -include V$*.h -include hw/sim/ports/$*.h \
	  -o $$d.so hw/sim/cxx/block.cpp $$d/V$*__ALL.a $(3) -lpthread; \
	sed -n 's|^[^:]*:|$@:|p' $$d/V$*__ver.d > $@.d; \
	grep -o 'hw/rtl/[^ ]*\.v' $$d/V$*__ver.d | sort -u | sed 's|$$|:|' >> $@.d; \
	mv -f $$d.so $@; rm -rf $$d $$d.log

# Verilator's runtime, compiled once for all blocks (and once more with VCD support).
HW_VL_RT := verilated verilated_threads
$(HW_SIM)/rt/%.o: | $(HW_SIM)/rt
	g++ $(HW_SIM_CXXFLAGS) -DVM_TRACE=0 -c -o $@.$$$$ $(VERILATOR_ROOT_DIR)/include/$*.cpp && mv -f $@.$$$$ $@
$(HW_SIM)/trace/rt/%.o: | $(HW_SIM)/trace/rt
	g++ $(HW_SIM_CXXFLAGS) -DVM_TRACE=1 -c -o $@.$$$$ $(VERILATOR_ROOT_DIR)/include/$*.cpp && mv -f $@.$$$$ $@
$(HW_SIM)/rt $(HW_SIM)/trace/rt $(HW_SIM)/obj:
	mkdir -p $@
HW_RT_OBJS := $(HW_VL_RT:%=$(HW_SIM)/rt/%.o)
HW_RT_TRACE_OBJS := $(HW_VL_RT:%=$(HW_SIM)/trace/rt/%.o) $(HW_SIM)/trace/rt/verilated_vcd_c.o
# The runtime objects are kept (not deleted as intermediates), or every
# library would look stale and be rebuilt on the next run.
.SECONDARY: $(HW_RT_OBJS) $(HW_RT_TRACE_OBJS)
# Each library also depends on the RTL of the blocks it instantiates (card_tx
# on ddp_tx, mpa_tx, dma_rd...): Verilator's dependency list, kept beside it,
# with an empty rule per RTL file (as gcc -MP writes) so that a file the
# generator no longer writes makes its users stale, not the build fail.
-include $(wildcard $(HW_SIM)/lib*.so.d $(HW_SIM)/trace/lib*.so.d)

$(HW_SIM)/lib%.so: hw/rtl/%.v hw/sim/ports/%.h hw/sim/cxx/block.cpp $(HW_RT_OBJS) | $(HW_SIM)/obj
	@echo "verilate $* -> $@"
	@$(call HW_VERILATE_SO,,-DVM_TRACE=0,$(HW_RT_OBJS))

$(HW_SIM)/trace/lib%.so: hw/rtl/%.v hw/sim/ports/%.h hw/sim/cxx/block.cpp $(HW_RT_TRACE_OBJS) | $(HW_SIM)/obj
	@echo "verilate --trace $* -> $@"
	@$(call HW_VERILATE_SO,--trace,-DVM_TRACE=1,$(HW_RT_TRACE_OBJS))

# Every block's library, built by make before the tests that load them:
# on a loaded machine the Verilator builds take many minutes, which must
# not count against a go test -timeout (hw/sim would build them on first
# use otherwise, and does for a test run by hand).
# They build one per core (a sub-make with -j, whatever the caller's -j):
# on a fresh clone that halves the wait of make test on 2 cores.
HW_SIM_LIBS := $(patsubst hw/sim/ports/%.h,$(HW_SIM)/lib%.so,$(wildcard hw/sim/ports/*.h))
.PHONY: hw-sim-libs hw-sim-libs-each
hw-sim-libs:
	@$(MAKE) --no-print-directory -j$$(nproc) hw-sim-libs-each
hw-sim-libs-each: $(HW_SIM_LIBS)
	@:

.PHONY: test-cosim
# Verilator co-simulation of every block against its golden/cycle model.
test-cosim: hw-sim-libs
	$(GO) test -count=1 -timeout 20m ./hw/sim/...

TEST_TARGETS += test-cosim

.PHONY: bench-cosim
# Co-simulation speed (cycles/s, every output checked every cycle), each
# block's steady-state throughput (beats/cycle at full speed) and the card
# engines' message rates; the output goes to build/bench-cosim.txt for
# make bench-charts. COSIM_BENCHTIME shortens it (200000x: about a tenth
# of the time, noisier figures).
COSIM_BENCHTIME ?= 2000000x
bench-cosim:
	@mkdir -p build
	$(GO) test -count=1 -run '^$$' -bench 'Cosim|Throughput|MessageRate' -benchtime $(COSIM_BENCHTIME) ./hw/sim/ | tee build/bench-cosim.txt

BENCH_TARGETS += bench-cosim

.PHONY: synth
# yosys (synth_xilinx, synth_ice40) resource and logic-depth table of every
# block at 64 and 512 bits (card_cmd has no data path: one row), and nextpnr-ice40 Fmax of each one that fits an
# HX8K, written into hw/README.md. Rows are cached in build/hw/synth under a
# hash of the RTL and the flow: a rerun measures only the blocks that changed. The whole
# table takes two to three hours of one core (synth_xilinx and the depth runs
# of the 512-bit card engines and top dominate; the blocks up to card_rx took
# an hour beside other work on 29 Nov); fpga/synth runs as many modules at
# once as there are cores (-j), each yosys on one core.
SYNTH_BLOCKS := crc32c mpa_tx mpa_rx ddp_tx placement dma_rd dma_wr card_regs card_tx card_rx card_cq axi_rd_mux_m4 axi_wr_mux_m4 card_stat iwcard
hw_comma := ,
hw_empty :=
hw_space := $(hw_empty) $(hw_empty)
SYNTH_MODULES := $(subst $(hw_space),$(hw_comma),$(strip $(foreach b,$(SYNTH_BLOCKS),$(b)_w64 $(b)_w512) card_cmd))
synth:
	$(GO) run ./fpga/synth -modules $(SYNTH_MODULES) -pnr auto

# Registers of one module at or above a LUT6 depth, and their paths:
# make synth-levels M=mpa_tx_w512 MIN=8
M ?= mpa_rx_w64
MIN ?= 9
.PHONY: synth-levels
synth-levels:
	$(GO) run ./fpga/synth -levels $(M) -min $(MIN)

DEBIAN_PACKAGES += verilator ghdl yosys nextpnr-ice40 g++ make

# VHDL files that instantiate other entities are analysed after the rest,
# test benches last (GHDL needs an entity analysed before its instance).
HW_VHD_WITH_INST := $(sort $(HW_TOPS_VHD) $(shell grep -l 'entity work\.' hw/rtl/*.vhd))
HW_VHD_TB := $(wildcard hw/rtl/*_tb_*.vhd)
HW_LINT_VHD_LAST := $(filter-out $(HW_VHD_TB),$(HW_VHD_WITH_INST)) $(filter $(HW_VHD_TB),$(HW_VHD_WITH_INST))
