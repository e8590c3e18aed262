package cli_test

import (
	"flag"
	"fmt"

	"github.com/openiwarp/openiwarp/internal/cli"
)

// Flags after the operand parse as they do before it.
func ExampleParse() {
	fs := flag.NewFlagSet("iwdump", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	maxMem := fs.Int("max-mem", 1<<20, "bound")
	if err := cli.Parse(fs, []string{"capture.pcap", "-json", "-max-mem", "4096"}); err != nil {
		fmt.Println(err)
	}
	fmt.Println(fs.Args(), *asJSON, *maxMem)
	// Output: [capture.pcap] true 4096
}
