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
	@set -e; for f in $(HW_RTL_V); do verilator --lint-only -Wall $$f; done
	@set -e; for f in $(HW_RTL_VHD); do ghdl -a --std=08 --workdir=$(HW_BUILD)/lint $$f; done
	@echo "hw-lint: $(words $(HW_RTL_V)) Verilog and $(words $(HW_RTL_VHD)) VHDL files clean"

TEST_TARGETS += hw-regen-check hw-lint
