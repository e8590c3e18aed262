package driver

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// CardArg is what a software card's name may say after its kind:
// "sim:512", "model:ring=16384", "sim:64,ring=8192".
type CardArg struct {
	Width   int // data path width in bits, 0 when not given
	RingLog int // log2 of each QP's stream ring bytes, 0 when not given
}

// ParseCardArg parses arg, the part of a card name after "kind:": an
// optional data path width, one of widths, then comma-separated options;
// "ring=N" sets each QP's transmit and receive stream ring to N bytes, a
// power of two from 4096 to 16 MiB (cardspec's MinRingLog..MaxRingLog).
func ParseCardArg(kind, arg string, widths []int) (CardArg, error) {
	var a CardArg
	if arg == "" {
		return a, nil
	}
	for i, f := range strings.Split(arg, ",") {
		key, val, isOpt := strings.Cut(f, "=")
		switch {
		case !isOpt && i == 0:
			w, err := strconv.Atoi(f)
			if err != nil || !slices.Contains(widths, w) {
				return a, fmt.Errorf("%w: %s card argument %q: the data path width %q is not one of %v bits", ErrInvalid, kind, arg, f, widths)
			}
			a.Width = w
		case isOpt && key == "ring":
			n, err := strconv.ParseUint(val, 10, 32)
			if err != nil || n < 1<<12 || n > 1<<24 || n&(n-1) != 0 {
				return a, fmt.Errorf("%w: %s card argument %q: ring=%s is not a power of two from 4096 to 16777216 bytes", ErrInvalid, kind, arg, val)
			}
			a.RingLog = bits.TrailingZeros64(n)
		default:
			return a, fmt.Errorf("%w: %s card argument %q: %q is neither a width (first) nor ring=BYTES", ErrInvalid, kind, arg, f)
		}
	}
	return a, nil
}
