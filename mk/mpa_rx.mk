# mpa_rx synthesis: resources of the shipped blocks (their ULPDU buffer in
# block RAM) and logic depth of 16-beat-buffer builds (generic synthesis maps
# memories to flip-flops, far too slow at the shipped size), as Markdown rows.
# Columns: module, Xilinx LUTs, FFs, RAMB36E1, RAMB18E1, LUT6 depth,
# iCE40 LUT4s, FFs, SB_RAM40_4K, LUT4 depth.

.PHONY: synth-mpa-rx
MPA_RX_SYNTH := $(HW_BUILD)/synth/mpa_rx

synth-mpa-rx:
	@mkdir -p $(MPA_RX_SYNTH)/probe
	@$(GO) run ./cmd/iwgen -mpa-rx-probe 16 -rtl $(MPA_RX_SYNTH)/probe
	@set -e; for w in 64 512; do m=mpa_rx_w$$w; o=$(MPA_RX_SYNTH)/$$m; \
	  echo "synth-mpa-rx: $$m (a few minutes each)" >&2; \
	  yosys -q -p "read_verilog hw/rtl/$$m.v; synth_xilinx -flatten -top $$m; tee -o $$o.xilinx.stat stat" >$$o.xilinx.log 2>&1; \
	  yosys -q -p "read_verilog hw/rtl/$$m.v; synth_ice40 -top $$m; tee -o $$o.ice40.stat stat" >$$o.ice40.log 2>&1; \
	  for k in 6 4; do yosys -q -p "read_verilog $(MPA_RX_SYNTH)/probe/$$m.v; synth -flatten -top $$m; abc -lut $$k; tee -o $$o.lut$$k.ltp ltp -noff" >$$o.lut$$k.log 2>&1; done; \
	  x=$$(awk '/ LUT[1-6] /{l+=$$2} / FD[A-Z]+ /{f+=$$2} / RAMB36E1 /{b+=$$2} / RAMB18E1 /{h+=$$2} END{printf "%d | %d | %d | %d", l, f, b, h}' $$o.xilinx.stat); \
	  i=$$(awk '/ SB_LUT4 /{l+=$$2} / SB_DFF[A-Z]* /{f+=$$2} / SB_RAM40_4K /{b+=$$2} END{printf "%d | %d | %d", l, f, b}' $$o.ice40.stat); \
	  d6=$$(sed -n 's/.*(length=\([0-9]*\)).*/\1/p' $$o.lut6.ltp); d4=$$(sed -n 's/.*(length=\([0-9]*\)).*/\1/p' $$o.lut4.ltp); \
	  echo "| \`$$m\` | $$x | $$((d6-1)) | $$i | $$((d4-1)) |"; \
	done
