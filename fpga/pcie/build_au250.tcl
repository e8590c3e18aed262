# Vivado batch build (non-project mode) of the openiwarp card on an Alveo
# U250: fpga/pcie/iwcard_au250.v around the generated card
# (hw/rtl/iwcard_w512.v), the XDMA IP in AXI Bridge mode and an AXI
# Protocol Converter, constrained by fpga/constraints/au250.xdc.
#
#   vivado -mode batch -source fpga/pcie/build_au250.tcl [-tclargs OUTDIR]
#
# Run from the repository root. Fails (exit 1) when the card RTL is
# missing, when an IP cannot be generated, or when the routed design
# misses timing (WNS or WHS below zero): no bitstream is written then.
# NOT RUN IN CI: Vivado is not available where openiwarp is tested; the
# wrapper is linted with Verilator against stubs (make fpga-pcie-lint).

set part xcu250-figd2104-2L-e
set top iwcard_au250
set out [expr {[llength $argv] > 0 ? [lindex $argv 0] : "build/fpga/au250"}]
file mkdir $out/ip
set_part $part

foreach f {hw/rtl/iwcard_w512.v fpga/pcie/iwcard_au250.v fpga/pcie/irq_msi.v fpga/constraints/au250.xdc} {
    if {![file exists $f]} {
        puts "ERROR: $f is missing (run from the repository root; the card RTL comes from make hw-gen)"
        exit 1
    }
}

# XDMA: endpoint, AXI Bridge mode, Gen3 x16 at 8 GT/s, 512-bit AXI at 250
# MHz, BAR0 of 256 KiB onto AXI address 0 (the card's register port), the
# card's DMA onto PCIe addresses 1:1, 32 MSI vectors. Parameter names from
# Xilinx PG195 (customizing the subsystem, AXI Bridge mode).
create_ip -name xdma -vendor xilinx.com -library ip -module_name xdma_0 -dir $out/ip
set_property -dict [list \
    CONFIG.functional_mode {AXI_Bridge} \
    CONFIG.mode_selection {Advanced} \
    CONFIG.device_port_type {PCI_Express_Endpoint_device} \
    CONFIG.pcie_blk_locn {X1Y2} \
    CONFIG.select_quad {GTY_Quad_227} \
    CONFIG.pl_link_cap_max_link_width {X16} \
    CONFIG.pl_link_cap_max_link_speed {8.0_GT/s} \
    CONFIG.ref_clk_freq {100_MHz} \
    CONFIG.axi_data_width {512_bit} \
    CONFIG.axisten_freq {250} \
    CONFIG.axi_addr_width {64} \
    CONFIG.axi_id_width {4} \
    CONFIG.pf0_vendor_id {10EE} \
    CONFIG.pf0_device_id {1E1A} \
    CONFIG.pf0_class_code_base {02} \
    CONFIG.pf0_class_code_sub {00} \
    CONFIG.pf0_bar0_enabled {true} \
    CONFIG.pf0_bar0_64bit {true} \
    CONFIG.pf0_bar0_size {256} \
    CONFIG.pf0_bar0_scale {Kilobytes} \
    CONFIG.pciebar2axibar_0 {0x0000000000000000} \
    CONFIG.axibar_num {1} \
    CONFIG.axibar_0 {0x0000000000000000} \
    CONFIG.axibar_highaddr_0 {0xFFFFFFFFFFFFFFFF} \
    CONFIG.axibar2pciebar_0 {0x0000000000000000} \
    CONFIG.pf0_msi_enabled {true} \
    CONFIG.pf0_msix_enabled {false} \
    CONFIG.pf0_interrupt_pin {NONE} \
    CONFIG.MSI_Multiple_Message_Capable {32_vectors} \
] [get_ips xdma_0]

# BAR0 AXI4 -> AXI4-Lite (bursts split into single 32-bit accesses).
create_ip -name axi_protocol_converter -vendor xilinx.com -library ip -module_name axi_protocol_converter_0 -dir $out/ip
set_property -dict [list \
    CONFIG.SI_PROTOCOL {AXI4} \
    CONFIG.MI_PROTOCOL {AXI4LITE} \
    CONFIG.ADDR_WIDTH {64} \
    CONFIG.DATA_WIDTH {32} \
    CONFIG.ID_WIDTH {4} \
    CONFIG.TRANSLATION_MODE {2} \
] [get_ips axi_protocol_converter_0]

foreach ip {xdma_0 axi_protocol_converter_0} {
    if {[catch {generate_target all [get_ips $ip]; synth_ip [get_ips $ip]} err]} {
        puts "ERROR: generating $ip: $err"
        exit 1
    }
}

read_verilog [glob hw/rtl/*.v] fpga/pcie/iwcard_au250.v fpga/pcie/irq_msi.v
read_xdc fpga/constraints/au250.xdc

synth_design -top $top -part $part -flatten_hierarchy rebuilt
report_utilization -file $out/utilization_synth.rpt
opt_design
place_design
phys_opt_design
route_design
report_timing_summary -max_paths 20 -file $out/timing_summary.rpt
report_utilization -file $out/utilization.rpt
write_checkpoint -force $out/$top.dcp

set wns [get_property SLACK [get_timing_paths -max_paths 1 -nworst 1 -setup]]
set whs [get_property SLACK [get_timing_paths -max_paths 1 -nworst 1 -hold]]
if {$wns < 0 || $whs < 0} {
    puts "ERROR: timing not met (WNS $wns ns, WHS $whs ns; see $out/timing_summary.rpt): no bitstream written"
    exit 1
}
write_bitstream -force $out/$top.bit
puts "iwcard_au250: timing met (WNS $wns ns, WHS $whs ns); $out/$top.bit (load it over JTAG with the Vivado hardware manager)"
