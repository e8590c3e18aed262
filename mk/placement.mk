# DDP/RDMAP placement engine (hw/gen/placement.go, hw/rtl/placement_w*.{v,vhd},
# golden/cycle/placement.go, hw/sim/placement*_test.go, docs/placement.md).
# Its co-simulation (1M cycles per width) and GHDL runs are part of
# test-cosim (mk/hw.mk runs every hw/sim test); its throughput benchmark is
# part of bench-cosim. The targets below run the placement parts alone.

.PHONY: test-placement bench-placement synth-placement

# Co-simulation (Verilator, 1M cycles per width), GHDL vectors and the model's own tests.
test-placement:
	$(GO) test -count=1 -race -run Placement ./golden/cycle/ ./hw/gen/
	$(GO) test -count=1 -timeout 10m -v -run 'Placement' ./hw/sim/ | grep -E '^(---|ok|FAIL|PASS)|placement_w'

# Input beats per cycle at full speed with the 4096-entry table full.
bench-placement:
	$(GO) test -count=1 -run '^$$' -bench PlacementThroughput -benchtime 1000000x ./hw/sim/

# yosys synth_xilinx of both widths (4096-entry STag table, 4096-slot page
# list): LUTs, flip-flops and block RAMs, printed as the Markdown rows of
# docs/placement.md.
synth-placement:
	@mkdir -p $(HW_BUILD)/synth
	@set -e; for w in 64 512; do \
	  yosys -q -p "read_verilog hw/rtl/placement_w$$w.v; synth_xilinx -flatten -top placement_w$$w; tee -o $(HW_BUILD)/synth/placement_w$$w.stat stat" >$(HW_BUILD)/synth/placement_w$$w.log 2>&1; \
	  awk -v w=$$w '/ LUT[1-6] /{lut+=$$2} / FD[A-Z]+ /{ff+=$$2} / RAMB36E1 /{b36+=$$2} / RAMB18E1 /{b18+=$$2} / CARRY4 /{c+=$$2} \
	    END{printf "| placement_w%s | %d | %d | %d | %d | %d |\n", w, lut, ff, b36, b18, c}' $(HW_BUILD)/synth/placement_w$$w.stat; \
	done
