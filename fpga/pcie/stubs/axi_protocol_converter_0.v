// Port-accurate stub of axi_protocol_converter_0, the Xilinx AXI Protocol
// Converter as fpga/pcie/build_au250.tcl configures it: AXI4 slave (4-bit
// IDs, 64-bit addresses, 512-bit data) to AXI4-Lite master (32-bit data).
// Written from the port tables of Xilinx PG039 (AXI Protocol Converter);
// the data width conversion is the converter's too (SI 512 bits, MI 32 bits
// through its AXI4-Lite downsizing). For Verilator lint of the wrapper
// only: no behaviour, outputs tie to 0.
/* verilator lint_off UNUSEDSIGNAL */
module axi_protocol_converter_0 (
    input  wire         aclk,
    input  wire         aresetn,
    input  wire [3:0]   s_axi_awid,
    input  wire [63:0]  s_axi_awaddr,
    input  wire [7:0]   s_axi_awlen,
    input  wire [2:0]   s_axi_awsize,
    input  wire [1:0]   s_axi_awburst,
    input  wire         s_axi_awlock,
    input  wire [3:0]   s_axi_awcache,
    input  wire [2:0]   s_axi_awprot,
    input  wire [3:0]   s_axi_awregion,
    input  wire [3:0]   s_axi_awqos,
    input  wire         s_axi_awvalid,
    output wire         s_axi_awready,
    input  wire [511:0] s_axi_wdata,
    input  wire [63:0]  s_axi_wstrb,
    input  wire         s_axi_wlast,
    input  wire         s_axi_wvalid,
    output wire         s_axi_wready,
    output wire [3:0]   s_axi_bid,
    output wire [1:0]   s_axi_bresp,
    output wire         s_axi_bvalid,
    input  wire         s_axi_bready,
    input  wire [3:0]   s_axi_arid,
    input  wire [63:0]  s_axi_araddr,
    input  wire [7:0]   s_axi_arlen,
    input  wire [2:0]   s_axi_arsize,
    input  wire [1:0]   s_axi_arburst,
    input  wire         s_axi_arlock,
    input  wire [3:0]   s_axi_arcache,
    input  wire [2:0]   s_axi_arprot,
    input  wire [3:0]   s_axi_arregion,
    input  wire [3:0]   s_axi_arqos,
    input  wire         s_axi_arvalid,
    output wire         s_axi_arready,
    output wire [3:0]   s_axi_rid,
    output wire [511:0] s_axi_rdata,
    output wire [1:0]   s_axi_rresp,
    output wire         s_axi_rlast,
    output wire         s_axi_rvalid,
    input  wire         s_axi_rready,
    output wire [63:0]  m_axi_awaddr,
    output wire [2:0]   m_axi_awprot,
    output wire         m_axi_awvalid,
    input  wire         m_axi_awready,
    output wire [31:0]  m_axi_wdata,
    output wire [3:0]   m_axi_wstrb,
    output wire         m_axi_wvalid,
    input  wire         m_axi_wready,
    input  wire [1:0]   m_axi_bresp,
    input  wire         m_axi_bvalid,
    output wire         m_axi_bready,
    output wire [63:0]  m_axi_araddr,
    output wire [2:0]   m_axi_arprot,
    output wire         m_axi_arvalid,
    input  wire         m_axi_arready,
    input  wire [31:0]  m_axi_rdata,
    input  wire [1:0]   m_axi_rresp,
    input  wire         m_axi_rvalid,
    output wire         m_axi_rready
);
    assign {s_axi_awready, s_axi_wready, s_axi_bid, s_axi_bresp, s_axi_bvalid} = 0;
    assign {s_axi_arready, s_axi_rid, s_axi_rdata, s_axi_rresp, s_axi_rlast, s_axi_rvalid} = 0;
    assign {m_axi_awaddr, m_axi_awprot, m_axi_awvalid, m_axi_wdata, m_axi_wstrb, m_axi_wvalid, m_axi_bready} = 0;
    assign {m_axi_araddr, m_axi_arprot, m_axi_arvalid, m_axi_rready} = 0;
endmodule
/* verilator lint_on UNUSEDSIGNAL */
