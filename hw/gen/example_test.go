package gen_test

import (
	"fmt"
	"math/big"
	"os"

	"github.com/openiwarp/openiwarp/hw/gen"
)

// A block is a Go function that builds a module; the emitters print it.
func Example() {
	m := gen.NewModule("counter", "", "Counts enabled cycles.")
	m.Clock()
	m.ResetPort()
	en := m.Input("en", 1, "count this cycle")
	q := m.RegDecl("count", 4, "")
	m.Drive(q, big.NewInt(0), gen.Add(q, gen.C(4, 1)), en)
	m.Assign(m.Output("value", 4, ""), q)
	if err := gen.WriteVerilog(os.Stdout, m); err != nil {
		fmt.Println(err)
	}
	// Output:
	// // counter
	// //
	// // Counts enabled cycles.
	//
	// `resetall
	// `default_nettype none
	//
	// module counter (
	//     input  wire           clk,               // clock, rising edge
	//     input  wire           rst,               // synchronous reset, active high
	//     input  wire           en,                // count this cycle
	//     output wire [3:0]     value
	// );
	//
	//     reg  [3:0]     count;
	//
	//     assign value = count;
	//
	//     always @(posedge clk) begin
	//         if (rst) begin
	//             count <= 4'h0;
	//         end else if (en) begin
	//             count <= count + 4'h1;
	//         end
	//     end
	//
	// endmodule
	//
	// `resetall
}
