// Package cli holds what openiwarp's commands share on their command
// lines: flags accepted before or after operands, as tcpdump, tshark and
// most tools accept them ("iwdump capture.pcap -json" works like
// "iwdump -json capture.pcap").
package cli

import (
	"flag"
	"strings"
)

// Parse parses args with fs as fs.Parse does, except that flags may come
// before, between or after the operands: every flag is parsed, and
// fs.Args() holds the operands in their order. "--" ends the flags: what
// follows it is operands, even if it starts with "-". A lone "-" is an
// operand (stdin, by convention). A flag that takes a value ("-n 5") takes
// the next argument as it, whatever that looks like; a boolean flag takes
// none ("-json file" is -json then the operand file; "-crc=false" sets it
// false). Errors are fs.Parse's, reported as fs's ErrorHandling says
// (flag.ErrHelp for -h and -help).
func Parse(fs *flag.FlagSet, args []string) error {
	flags, operands, complete := split(fs, args)
	if !complete {
		return fs.Parse(flags) // reports the flag its value is missing from
	}
	return fs.Parse(append(append(flags, "--"), operands...))
}

// split separates args into flags (with their values) and operands;
// complete is false when the last flag lacks its value.
func split(fs *flag.FlagSet, args []string) (flags, operands []string, complete bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return flags, append(operands, args[i+1:]...), true
		}
		if len(a) < 2 || a[0] != '-' {
			operands = append(operands, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimPrefix(a[1:], "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil || isBool(f) {
			continue // an unknown flag is fs.Parse's to report
		}
		if i+1 == len(args) {
			return flags, operands, false
		}
		i++
		flags = append(flags, args[i])
	}
	return flags, operands, true
}

// isBool is whether f takes no value, as the flag package decides it.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
