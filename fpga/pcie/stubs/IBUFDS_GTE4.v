// Port-accurate stub of IBUFDS_GTE4, the UltraScale+ GT reference clock
// input buffer (Xilinx UG974, UltraScale Architecture Libraries Guide), for
// a lint of the wrapper (Verilator) only: O follows I, ODIV2 ties to 0 (the
// primitive divides by two).
/* verilator lint_off UNUSEDSIGNAL */
/* verilator lint_off UNUSEDPARAM */
module IBUFDS_GTE4 #(
    parameter [1:0] REFCLK_HROW_CK_SEL = 2'b00,
    parameter       REFCLK_EN_TX_PATH = 1'b0,
    parameter [1:0] REFCLK_ICNTL_RX = 2'b00
) (
    input  wire I,
    input  wire IB,
    input  wire CEB,
    output wire O,
    output wire ODIV2
);
    assign O = I;
    assign ODIV2 = 1'b0;
endmodule
/* verilator lint_on UNUSEDPARAM */
/* verilator lint_on UNUSEDSIGNAL */
