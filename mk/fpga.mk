# FPGA builds (fpga/, docs/fpga.md): the iCE40 board self-test and its
# bitstream, the PCIe board wrapper of the card for Xilinx boards.

# The self-test top instantiates other generated modules: its co-simulation
# library depends on them (mk/hw.mk's rule passes -y hw/rtl), and GHDL
# analyses the VHDL of tops after everything else.
HW_TOPS_VHD := hw/rtl/selftest_hx8k.vhd hw/rtl/selftest_tx_hx8k.vhd
$(HW_SIM)/libselftest_hx8k.so $(HW_SIM)/trace/libselftest_hx8k.so: hw/rtl/mpa_tx_w64.v hw/rtl/mpa_rx_w64_b16.v hw/rtl/uart_tx_d104.v
$(HW_SIM)/libselftest_tx_hx8k.so $(HW_SIM)/trace/libselftest_tx_hx8k.so: hw/rtl/mpa_tx_w64.v hw/rtl/crc32c_w64.v hw/rtl/uart_tx_d104.v

.PHONY: test-selftest
# The self-test tops in co-simulation: their UART reports against the Go
# model (fpga/selftest), and the UART transmitter against
# golden/cycle.UARTTx. make test runs them in test-cosim (every hw/sim
# test) and the model's tests in test-go; this target runs them alone.
test-selftest:
	$(GO) test -count=1 -timeout 30m -v -run 'Selftest|UARTTx' ./hw/sim/ | grep -E '^(---|ok|FAIL|PASS)|cycles'
	$(GO) test -count=1 ./fpga/...

# The iCE40 board bitstream (fpga/bitstream): yosys, nextpnr-ice40 against
# fpga/constraints/<board>.pcf at the board's clock (the build fails, and
# writes no bitstream, when the timing report misses it), icepack. Not in
# TEST_TARGETS: it takes 10 to 15 minutes of CPU on this machine (docs/fpga.md).
BOARD ?= hx8k
.PHONY: bitstream program fpga-pcie-lint fpga-pcie-test
bitstream:
	$(GO) run ./fpga/bitstream -board $(BOARD)

# Loads the bitstream into the board's configuration flash with iceprog;
# says so when no board is attached.
program:
	$(GO) run ./fpga/bitstream -board $(BOARD) -program

# The PCIe wrapper of the card for the Alveo U250 (fpga/pcie) under
# Verilator -Wall, against port-accurate stubs of the vendor IP and the
# generated card top (hw/rtl/iwcard_w512.v) with the AXI ID remappers
# between it and the bridge (docs/fpga.md). The Vivado build
# (fpga/pcie/build_au250.tcl) is not run here.
FPGA_PCIE_SRC = fpga/pcie/iwcard_au250.v fpga/pcie/irq_msi.v \
  fpga/pcie/stubs/xdma_0.v fpga/pcie/stubs/axi_protocol_converter_0.v fpga/pcie/stubs/IBUFDS_GTE4.v
fpga-pcie-lint:
	verilator --lint-only -Wall --top-module iwcard_au250 $(FPGA_PCIE_SRC) -y hw/rtl
	@echo "fpga-pcie-lint: fpga/pcie/iwcard_au250.v clean around the generated hw/rtl/iwcard_w512.v"

# The wrapper's own logic, the interrupt serialiser, in a self-checking
# test bench (random pulses, grants and MSI enable; fpga/pcie/irq_msi_tb.v).
fpga-pcie-test:
	@rm -rf build/fpga/irq_msi_tb && mkdir -p build/fpga
	verilator --binary --timing --top-module irq_msi_tb --Mdir build/fpga/irq_msi_tb -o irq_msi_tb \
	  fpga/pcie/irq_msi_tb.v fpga/pcie/irq_msi.v >build/fpga/irq_msi_tb.log 2>&1 || { cat build/fpga/irq_msi_tb.log; exit 1; }
	build/fpga/irq_msi_tb/irq_msi_tb >build/fpga/irq_msi_tb.out 2>&1 || { cat build/fpga/irq_msi_tb.out; exit 1; }
	@grep '^PASS' build/fpga/irq_msi_tb.out || { cat build/fpga/irq_msi_tb.out; exit 1; }

TEST_TARGETS += fpga-pcie-lint fpga-pcie-test
DEBIAN_PACKAGES += yosys nextpnr-ice40 fpga-icestorm verilator
