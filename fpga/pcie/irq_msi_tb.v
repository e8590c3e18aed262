// Self-checking test bench of irq_msi, built as a binary by Verilator and
// run by make fpga-pcie-lint: random interrupt pulses on random vectors, a bridge
// that grants after random delays and disables MSI now and then. It mirrors
// the pending bits and checks every cycle that a request names a pending
// vector, the lowest one when it starts, holds steady until granted, never
// starts while MSI is disabled, and that everything raised is sent once the
// pulses stop. Ends with "PASS" or $fatal.
`timescale 1ns/1ns
`default_nettype none

module irq_msi_tb;
    localparam VEC_W = 5;
    localparam N = 1 << VEC_W;
    reg clk = 1'b0, rst = 1'b1;
    reg irq_valid = 1'b0, msi_enable = 1'b0, msi_grant = 1'b0;
    reg [VEC_W-1:0] irq_vector = 0;
    wire msi_request;
    wire [VEC_W-1:0] msi_vector;

    irq_msi #(.VEC_W(VEC_W)) dut (
        .clk(clk), .rst(rst), .irq_valid(irq_valid), .irq_vector(irq_vector),
        .msi_enable(msi_enable), .msi_request(msi_request), .msi_vector(msi_vector), .msi_grant(msi_grant)
    );

    always #5 clk = ~clk;

    reg [N-1:0] shadow = 0;
    reg prev_req = 1'b0, prev_grant = 1'b0, prev_en = 1'b0;
    reg [VEC_W-1:0] prev_vec = 0;
    integer cycle = 0, sent = 0, raised = 0;
    reg [N-1:0] shadow_before = 0;
    reg quiet = 1'b0;

    function [VEC_W-1:0] lowest(input [N-1:0] p);
        integer j;
        begin
            lowest = 0;
            for (j = N - 1; j >= 0; j = j - 1) if (p[j]) lowest = j[VEC_W-1:0];
        end
    endfunction

    // Checks, on the values before each clock edge.
    always @(posedge clk) begin
        cycle <= cycle + 1;
        if (!rst) begin
            if (msi_request && !prev_req) begin
                if (!prev_en) $fatal(1, "cycle %0d: request started with MSI disabled", cycle);
                if (!shadow[msi_vector]) $fatal(1, "cycle %0d: request for vector %0d, not pending", cycle, msi_vector);
            end
            if (msi_request && prev_req && !prev_grant && msi_vector != prev_vec)
                $fatal(1, "cycle %0d: vector changed from %0d to %0d while requested", cycle, prev_vec, msi_vector);
            if (msi_request && msi_grant) begin
                if (!shadow[msi_vector]) $fatal(1, "cycle %0d: grant of vector %0d, not pending", cycle, msi_vector);
                sent = sent + 1;
            end
            shadow <= (shadow & ~((msi_request && msi_grant) ? ({{(N-1){1'b0}}, 1'b1} << msi_vector) : {N{1'b0}}))
                    | (irq_valid ? ({{(N-1){1'b0}}, 1'b1} << irq_vector) : {N{1'b0}});
        end
        prev_req <= msi_request;
        prev_grant <= msi_grant;
        prev_en <= msi_enable;
        prev_vec <= msi_vector;
    end

    // A request that starts names the lowest pending vector.
    always @(posedge clk) begin
        if (!rst && !msi_request && msi_enable && |shadow) begin
            #1;
            if (!msi_request) $fatal(1, "cycle %0d: vectors pending, MSI enabled, no request", cycle);
            if (msi_vector != lowest(shadow_before)) $fatal(1, "cycle %0d: requested %0d, lowest pending %0d", cycle, msi_vector, lowest(shadow_before));
        end
    end
    always @(negedge clk) shadow_before = shadow;

    // Stimulus, away from the clock edge.
    always @(negedge clk) begin
        irq_valid <= !quiet && ($urandom % 8 == 0);
        irq_vector <= ($urandom % 3 == 0) ? VEC_W'($urandom % N) : VEC_W'($urandom % 4);
        msi_grant <= msi_request && ($urandom % 3 == 0);
        if (!quiet && $urandom % 500 == 0) msi_enable <= !msi_enable;
        if (quiet) msi_enable <= 1'b1;
    end
    always @(posedge clk) if (!rst && irq_valid) raised = raised + 1;

    initial begin
        void'($urandom(1));
        repeat (4) @(negedge clk);
        rst = 1'b0;
        msi_enable = 1'b1;
        repeat (200000) @(negedge clk);
        quiet = 1'b1;
        repeat (2000) @(negedge clk);
        if (shadow != 0 || msi_request) $fatal(1, "pending %h, request %b after the pulses stopped", shadow, msi_request);
        if (sent < raised / 4) $fatal(1, "only %0d MSIs for %0d pulses", sent, raised);
        $display("PASS: %0d cycles, %0d interrupt pulses, %0d MSIs", cycle, raised, sent);
        $finish;
    end
endmodule

`default_nettype wire
