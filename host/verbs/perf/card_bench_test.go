package perf_test

import (
	"fmt"
	"testing"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/model"
	"github.com/openiwarp/openiwarp/host/verbs/perf"
)

// The golden engine behind driver.Card, registered in this test binary
// only: the reference the card's benchmarks are measured against.
func init() {
	driver.Register("golden", func(name, arg string) (driver.Card, error) {
		if arg != "" {
			return nil, fmt.Errorf("%w: the golden card takes no argument", driver.ErrInvalid)
		}
		return model.New(name), nil
	})
}

// The card's benchmarks: the same iwperf runs on the "model" card (the
// driver, its rings, doorbells and stream bridge over the card model) and,
// as their Baselines, on the golden engine, in the same run. Goals (issue
// 16): bandwidth at least 0.9 of the golden engine's, a 64-byte round trip
// at most 1.2 times its own.

var cardBWSizes = []int{64 << 10, 1 << 20}

func BenchmarkCardWriteBW(b *testing.B)         { cardBW(b, "model", perf.Write) }
func BenchmarkCardWriteBWBaseline(b *testing.B) { cardBW(b, "golden", perf.Write) }
func BenchmarkCardSendBW(b *testing.B)          { cardBW(b, "model", perf.Send) }
func BenchmarkCardSendBWBaseline(b *testing.B)  { cardBW(b, "golden", perf.Send) }
func BenchmarkCardSendLat(b *testing.B)         { cardLat(b, "model") }
func BenchmarkCardSendLatBaseline(b *testing.B) { cardLat(b, "golden") }

func cardBW(b *testing.B, device string, test perf.Test) {
	addr := startServer(b, device)
	for _, n := range cardBWSizes {
		b.Run(sizeName(n), func(b *testing.B) {
			benchRunOn(b, device, addr, perf.Spec{Test: test, Mode: perf.BW, Size: n, TxDepth: 128})
		})
	}
}

func cardLat(b *testing.B, device string) {
	addr := startServer(b, device)
	b.Run(sizeName(64), func(b *testing.B) {
		benchRunOn(b, device, addr, perf.Spec{Test: perf.Send, Mode: perf.Lat, Size: 64, TxDepth: 1, Inline: perf.DefaultLatInline})
	})
}
