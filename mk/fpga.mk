# FPGA builds (fpga/, docs/fpga.md): the iCE40 board self-test and its
# bitstream, the PCIe board wrapper of the card for Xilinx boards.

# The self-test top instantiates other generated modules: its co-simulation
# library depends on them (mk/hw.mk's rule passes -y hw/rtl), and GHDL
# analyses the VHDL of tops after everything else.
SELFTEST_TOP := selftest_hx8k
SELFTEST_SUBS := mpa_tx_w64 mpa_rx_w64_b16 uart_tx_d104
HW_TOPS_VHD := hw/rtl/$(SELFTEST_TOP).vhd
$(HW_SIM)/lib$(SELFTEST_TOP).so $(HW_SIM)/trace/lib$(SELFTEST_TOP).so: $(SELFTEST_SUBS:%=hw/rtl/%.v)

.PHONY: test-selftest
# The self-test top in co-simulation: its UART report against the Go model
# (fpga/selftest), and the UART transmitter against golden/cycle.UARTTx.
test-selftest:
	$(GO) test -count=1 -timeout 10m -run 'Selftest|UARTTx' ./hw/sim/ ./fpga/...

TEST_TARGETS += test-selftest
