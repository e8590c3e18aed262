package cli

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type parsed struct {
	JSON, CRC bool
	N         int
	Name      string
	D         time.Duration
	Args      []string
}

func parse(args ...string) (parsed, error) {
	var p parsed
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&p.JSON, "json", false, "")
	fs.BoolVar(&p.CRC, "crc", true, "")
	fs.IntVar(&p.N, "n", 0, "")
	fs.StringVar(&p.Name, "name", "", "")
	fs.DurationVar(&p.D, "d", 0, "")
	err := Parse(fs, args)
	p.Args = fs.Args()
	if len(p.Args) == 0 {
		p.Args = nil
	}
	return p, err
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want parsed
	}{
		{"none", nil, parsed{CRC: true}},
		{"flags first", []string{"-json", "f"}, parsed{JSON: true, CRC: true, Args: []string{"f"}}},
		{"flags after", []string{"f", "-json"}, parsed{JSON: true, CRC: true, Args: []string{"f"}}},
		{"interleaved", []string{"a", "-n", "5", "b", "--json", "c"}, parsed{JSON: true, CRC: true, N: 5, Args: []string{"a", "b", "c"}}},
		{"value with =", []string{"f", "-n=7", "-name=x=y"}, parsed{CRC: true, N: 7, Name: "x=y", Args: []string{"f"}}},
		{"bool =false after", []string{"f", "-crc=false"}, parsed{Args: []string{"f"}}},
		{"bool takes no value", []string{"-json", "false"}, parsed{JSON: true, CRC: true, Args: []string{"false"}}},
		{"value that looks like a flag", []string{"f", "-name", "-json"}, parsed{CRC: true, Name: "-json", Args: []string{"f"}}},
		{"value that is --", []string{"-name", "--", "f"}, parsed{CRC: true, Name: "--", Args: []string{"f"}}},
		{"stdin operand", []string{"-", "-json"}, parsed{JSON: true, CRC: true, Args: []string{"-"}}},
		{"-- ends flags", []string{"a", "--", "-json", "-n"}, parsed{CRC: true, Args: []string{"a", "-json", "-n"}}},
		{"flags then --", []string{"-d", "2s", "--", "-"}, parsed{CRC: true, D: 2 * time.Second, Args: []string{"-"}}},
		{"empty operand", []string{"", "-json"}, parsed{JSON: true, CRC: true, Args: []string{""}}},
		{"operand order kept", []string{"z", "-json", "y", "x"}, parsed{JSON: true, CRC: true, Args: []string{"z", "y", "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(tc.args...)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag after operand", []string{"f", "-nope"}, "flag provided but not defined: -nope"},
		{"missing value at the end", []string{"f", "-n"}, "flag needs an argument: -n"},
		{"missing value, no operands", []string{"-name"}, "flag needs an argument: -name"},
		{"bad value after operand", []string{"f", "-n", "x"}, `invalid value "x" for flag -n`},
		{"bad syntax", []string{"f", "---n"}, "bad flag syntax: ---n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(tc.args...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := parse("f", "-h")
	assert.ErrorIs(t, err, flag.ErrHelp)
}
