// irq_msi: the card's interrupt pulses to a PCIe bridge's MSI request/grant
// handshake (fpga/pcie/iwcard_au250.v). Each irq_valid pulse sets its
// vector's pending bit; one pending vector at a time, the lowest number
// first, is requested (msi_request with msi_vector, held steady) until the
// bridge grants it, which clears that bit. A vector raised again while
// pending is sent once (the card's IRQ_MODERATION already spaces them);
// raised again after its grant, it is sent again. Nothing is requested
// while the host has MSI disabled; pending bits wait for it.
// fpga/pcie/irq_msi_tb.v checks it (make fpga-pcie-lint runs it).

`default_nettype none

module irq_msi #(
    parameter VEC_W = 5
) (
    input  wire             clk,
    input  wire             rst,
    input  wire             irq_valid,
    input  wire [VEC_W-1:0] irq_vector,
    input  wire             msi_enable,
    output wire             msi_request,
    output wire [VEC_W-1:0] msi_vector,
    input  wire             msi_grant
);
    localparam N = 1 << VEC_W;
    reg  [N-1:0]     pending;
    reg              busy;
    reg  [VEC_W-1:0] cur;
    reg  [VEC_W-1:0] lowest;
    integer i;
    always @(*) begin
        lowest = {VEC_W{1'b0}};
        for (i = N - 1; i >= 0; i = i - 1) begin
            if (pending[i]) lowest = i[VEC_W-1:0];
        end
    end
    wire [N-1:0] one = {{(N-1){1'b0}}, 1'b1};
    wire [N-1:0] raise = irq_valid ? (one << irq_vector) : {N{1'b0}};
    wire [N-1:0] taken = (busy && msi_grant) ? (one << cur) : {N{1'b0}};
    always @(posedge clk) begin
        if (rst) begin
            pending <= {N{1'b0}};
            busy <= 1'b0;
            cur <= {VEC_W{1'b0}};
        end else begin
            pending <= (pending & ~taken) | raise;
            if (busy && msi_grant) begin
                busy <= 1'b0;
            end else if (!busy && msi_enable && |pending) begin
                busy <= 1'b1;
                cur <= lowest;
            end
        end
    end
    assign msi_request = busy;
    assign msi_vector = cur;
endmodule

`default_nettype wire
