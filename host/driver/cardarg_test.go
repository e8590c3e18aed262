package driver

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCardArg(t *testing.T) {
	widths := []int{64, 512}
	for _, c := range []struct {
		arg  string
		want CardArg
		bad  bool
	}{
		{arg: "", want: CardArg{}},
		{arg: "64", want: CardArg{Width: 64}},
		{arg: "512", want: CardArg{Width: 512}},
		{arg: "ring=4096", want: CardArg{RingLog: 12}},
		{arg: "512,ring=16777216", want: CardArg{Width: 512, RingLog: 24}},
		{arg: "128", bad: true},                // not a width of this card
		{arg: "wide", bad: true},               // not a number
		{arg: "ring=2048", bad: true},          // below the card's smallest ring
		{arg: "ring=33554432", bad: true},      // above its largest
		{arg: "ring=6000", bad: true},          // not a power of two
		{arg: "ring=", bad: true},              // no value
		{arg: "64,64", bad: true},              // a width only first
		{arg: "64,depth=3", bad: true},         // an unknown option
		{arg: "ring=8192,64", bad: true},       // a width after an option
		{arg: "ring=-4096", bad: true},         // negative
		{arg: "64,ring=8192,extra", bad: true}, // trailing junk
	} {
		got, err := ParseCardArg("sim", c.arg, widths)
		if c.bad {
			require.ErrorIs(t, err, ErrInvalid, "%q", c.arg)
			require.Contains(t, err.Error(), c.arg)
			continue
		}
		require.NoError(t, err, "%q", c.arg)
		require.Equal(t, c.want, got, "%q", c.arg)
	}
}
