// Port-accurate stub of xdma_0, the DMA/Bridge Subsystem for PCI Express
// (XDMA) as fpga/pcie/build_au250.tcl configures it: AXI Bridge mode,
// endpoint, Gen3 x16, 512-bit AXI, 4-bit AXI IDs, 64-bit addresses, MSI.
// Written from the port tables of Xilinx PG195 (DMA/Bridge Subsystem for
// PCI Express, AXI Bridge mode) and PG194 (AXI Bridge for PCI Express
// Gen3: AXI master, AXI slave, MSI interrupt interface). For Verilator lint
// of the wrapper only: it has no behaviour (outputs tie to 0), and Vivado
// uses the real IP. If Vivado's generated xdma_0 stub differs, the build
// script's synthesis fails on the port that changed.
/* verilator lint_off UNUSEDSIGNAL */
module xdma_0 (
    input  wire         sys_clk,
    input  wire         sys_clk_gt,
    input  wire         sys_rst_n,
    output wire [15:0]  pci_exp_txp,
    output wire [15:0]  pci_exp_txn,
    input  wire [15:0]  pci_exp_rxp,
    input  wire [15:0]  pci_exp_rxn,
    output wire         axi_aclk,
    output wire         axi_aresetn,
    output wire         user_lnk_up,
    // AXI4 master (PCIe BARs to AXI)
    output wire [3:0]   m_axib_awid,
    output wire [63:0]  m_axib_awaddr,
    output wire [7:0]   m_axib_awlen,
    output wire [2:0]   m_axib_awsize,
    output wire [1:0]   m_axib_awburst,
    output wire [2:0]   m_axib_awprot,
    output wire         m_axib_awvalid,
    input  wire         m_axib_awready,
    output wire         m_axib_awlock,
    output wire [3:0]   m_axib_awcache,
    output wire [511:0] m_axib_wdata,
    output wire [63:0]  m_axib_wstrb,
    output wire         m_axib_wlast,
    output wire         m_axib_wvalid,
    input  wire         m_axib_wready,
    input  wire [3:0]   m_axib_bid,
    input  wire [1:0]   m_axib_bresp,
    input  wire         m_axib_bvalid,
    output wire         m_axib_bready,
    output wire [3:0]   m_axib_arid,
    output wire [63:0]  m_axib_araddr,
    output wire [7:0]   m_axib_arlen,
    output wire [2:0]   m_axib_arsize,
    output wire [1:0]   m_axib_arburst,
    output wire [2:0]   m_axib_arprot,
    output wire         m_axib_arvalid,
    input  wire         m_axib_arready,
    output wire         m_axib_arlock,
    output wire [3:0]   m_axib_arcache,
    input  wire [3:0]   m_axib_rid,
    input  wire [511:0] m_axib_rdata,
    input  wire [1:0]   m_axib_rresp,
    input  wire         m_axib_rlast,
    input  wire         m_axib_rvalid,
    output wire         m_axib_rready,
    // AXI4 slave (AXI to PCIe: the card's DMA)
    input  wire [3:0]   s_axib_awid,
    input  wire [63:0]  s_axib_awaddr,
    input  wire [3:0]   s_axib_awregion,
    input  wire [7:0]   s_axib_awlen,
    input  wire [2:0]   s_axib_awsize,
    input  wire [1:0]   s_axib_awburst,
    input  wire         s_axib_awvalid,
    output wire         s_axib_awready,
    input  wire [511:0] s_axib_wdata,
    input  wire [63:0]  s_axib_wstrb,
    input  wire         s_axib_wlast,
    input  wire         s_axib_wvalid,
    output wire         s_axib_wready,
    output wire [3:0]   s_axib_bid,
    output wire [1:0]   s_axib_bresp,
    output wire         s_axib_bvalid,
    input  wire         s_axib_bready,
    input  wire [3:0]   s_axib_arid,
    input  wire [63:0]  s_axib_araddr,
    input  wire [3:0]   s_axib_arregion,
    input  wire [7:0]   s_axib_arlen,
    input  wire [2:0]   s_axib_arsize,
    input  wire [1:0]   s_axib_arburst,
    input  wire         s_axib_arvalid,
    output wire         s_axib_arready,
    output wire [3:0]   s_axib_rid,
    output wire [511:0] s_axib_rdata,
    output wire [1:0]   s_axib_rresp,
    output wire         s_axib_rlast,
    output wire         s_axib_rvalid,
    input  wire         s_axib_rready,
    // Legacy/MSI interrupt interface
    input  wire         intx_msi_request,
    output wire         intx_msi_grant,
    output wire         msi_enable,
    output wire [2:0]   msi_vector_width,
    input  wire [4:0]   msi_vector_num
);
    assign {pci_exp_txp, pci_exp_txn, axi_aclk, axi_aresetn, user_lnk_up} = 0;
    assign {m_axib_awid, m_axib_awaddr, m_axib_awlen, m_axib_awsize, m_axib_awburst, m_axib_awprot, m_axib_awvalid,
            m_axib_awlock, m_axib_awcache, m_axib_wdata, m_axib_wstrb, m_axib_wlast, m_axib_wvalid, m_axib_bready} = 0;
    assign {m_axib_arid, m_axib_araddr, m_axib_arlen, m_axib_arsize, m_axib_arburst, m_axib_arprot, m_axib_arvalid,
            m_axib_arlock, m_axib_arcache, m_axib_rready} = 0;
    assign {s_axib_awready, s_axib_wready, s_axib_bid, s_axib_bresp, s_axib_bvalid} = 0;
    assign {s_axib_arready, s_axib_rid, s_axib_rdata, s_axib_rresp, s_axib_rlast, s_axib_rvalid} = 0;
    assign {intx_msi_grant, msi_enable, msi_vector_width} = 0;
endmodule
/* verilator lint_on UNUSEDSIGNAL */
