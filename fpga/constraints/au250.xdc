# Xilinx Alveo U250 (xcu250-figd2104-2L-e): the pins fpga/pcie/iwcard_au250.v
# uses. Sources: Xilinx UG1289 (Alveo U200 and U250 Data Center Accelerator
# Cards User Guide: PCIe edge on GTY quads 224-227, 100 MHz edge reference
# clock, PERST# on a 1.2 V bank), the board files Vivado ships for the card
# (XilinxBoardStore au250 part0_pins), and Corundum's AU250 target as a
# second reading. The PCIe lanes themselves are placed by the XDMA IP from
# its PCIe block and quad selection (build_au250.tcl: X1Y2, GTY quad 227),
# so they are not constrained here.

set_property CFGBVS GND [current_design]
set_property CONFIG_VOLTAGE 1.8 [current_design]
set_property BITSTREAM.GENERAL.COMPRESS TRUE [current_design]

# PCIe edge: reference clock (quad 227's REFCLK0) and PERST#.
set_property PACKAGE_PIN AM11 [get_ports pcie_refclk_p]
set_property PACKAGE_PIN AM10 [get_ports pcie_refclk_n]
create_clock -name pcie_refclk -period 10.000 [get_ports pcie_refclk_p]
set_property PACKAGE_PIN BD21 [get_ports pcie_perst_n]
set_property IOSTANDARD LVCMOS12 [get_ports pcie_perst_n]
set_property PULLUP true [get_ports pcie_perst_n]
set_false_path -from [get_ports pcie_perst_n]
