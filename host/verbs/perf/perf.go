// Package perf measures RDMA Write, Read and Send bandwidth and latency
// between two openiwarp endpoints, the way perftest (ib_write_bw,
// ib_read_lat, ...) does. cmd/iwperf is its command line; the benchmarks
// of this package use it to compare the model card with raw TCP.
//
// A client connects to a server with verbs.Dial and says what it wants in
// the MPA private data (Spec, JSON); the server answers with its buffer's
// address and rkey in the Reply's private data, then plays its part:
// nothing for Write and Read bandwidth (one Send at the end says the client
// is done), receives with credits for Send bandwidth, and the echo of
// every message for latency.
package perf

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
)

// Test is the operation measured.
type Test string

// Tests.
const (
	Write Test = "write"
	Read  Test = "read"
	Send  Test = "send"
)

// Mode is what is measured.
type Mode string

// Modes.
const (
	BW  Mode = "bw"  // bandwidth: a window of TxDepth operations in flight
	Lat Mode = "lat" // latency: one operation at a time
)

// ErrSpec is wrapped by errors about a bad Spec.
var ErrSpec = errors.New("perf: bad test specification")

// Spec is what the client asks the server for (the MPA private data).
type Spec struct {
	Test    Test `json:"test"`
	Mode    Mode `json:"mode"`
	Size    int  `json:"size"`
	Iters   int  `json:"iters"`
	TxDepth int  `json:"depth"`
	// Inline: messages up to this size are posted inline (IBV_SEND_INLINE;
	// perftest's -I, whose latency tests default to 236 bytes).
	Inline int    `json:"inline,omitempty"`
	Addr   uint64 `json:"addr,omitempty"` // the client's buffer (Write latency: the server writes back)
	RKey   uint32 `json:"rkey,omitempty"`
}

// MaxSize is the largest message.
const MaxSize = 1 << 30

// Check validates a spec.
func (s *Spec) Check() error {
	switch {
	case s.Test != Write && s.Test != Read && s.Test != Send:
		return fmt.Errorf("%w: test %q (write, read or send)", ErrSpec, s.Test)
	case s.Mode != BW && s.Mode != Lat:
		return fmt.Errorf("%w: mode %q (bw or lat)", ErrSpec, s.Mode)
	case s.Size < 0 || s.Size > MaxSize:
		return fmt.Errorf("%w: size %d (0 to %d)", ErrSpec, s.Size, MaxSize)
	case s.Iters < 1:
		return fmt.Errorf("%w: %d iterations", ErrSpec, s.Iters)
	case s.Inline < 0 || s.Inline > 64<<10:
		return fmt.Errorf("%w: inline size %d (0 to 65536)", ErrSpec, s.Inline)
	case s.TxDepth < 1 || s.TxDepth > 4096:
		return fmt.Errorf("%w: queue depth %d (1 to 4096)", ErrSpec, s.TxDepth)
	}
	return nil
}

func (s *Spec) marshal() []byte { b, _ := json.Marshal(s); return b }

func parseSpec(b []byte) (Spec, error) {
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("%w: private data is not a perf spec: %v", ErrSpec, err)
	}
	return s, s.Check()
}

// reply is the server's answer (the MPA Reply's private data).
type reply struct {
	Addr uint64 `json:"addr"`
	RKey uint32 `json:"rkey"`
}

// Result is one measurement.
type Result struct {
	Spec
	Device  string        `json:"device"`
	QPs     int           `json:"qps"`
	MULPDU  int           `json:"mulpdu"`
	MPA     string        `json:"mpa"` // the negotiated MPA options
	Local   string        `json:"local"`
	Remote  string        `json:"remote"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Bandwidth (Mode BW), in MB/s of 10^6 bytes as perftest prints them.
	PeakMBps float64 `json:"bw_peak_mbps,omitempty"`
	AvgMBps  float64 `json:"bw_avg_mbps,omitempty"`
	MsgRate  float64 `json:"msg_rate_mpps,omitempty"`
	// Latency (Mode Lat), in microseconds: half the round trip for Write
	// and Send (ping-pong), the whole Read for Read, as perftest does.
	Lat *Latency `json:"latency,omitempty"`

	marks []mark // bandwidth progress over time, for RunQPs
}

// Latency summarises latency samples, in microseconds (its JSON keys end
// in _us).
type Latency struct {
	Min     float64 `json:"min_us"`
	Max     float64 `json:"max_us"`
	Typical float64 `json:"typical_us"` // the median
	Avg     float64 `json:"avg_us"`
	Stdev   float64 `json:"stdev_us"`
	P99     float64 `json:"p99_us"`
	P999    float64 `json:"p999_us"`
}

func summarise(samples []time.Duration, half bool) *Latency {
	us := make([]float64, len(samples))
	for i, d := range samples {
		us[i] = float64(d.Nanoseconds()) / 1e3
		if half {
			us[i] /= 2
		}
	}
	sort.Float64s(us)
	var sum, sq float64
	for _, v := range us {
		sum += v
	}
	avg := sum / float64(len(us))
	for _, v := range us {
		sq += (v - avg) * (v - avg)
	}
	pct := func(p float64) float64 { return us[min(len(us)-1, int(math.Ceil(p*float64(len(us))))-1)] }
	return &Latency{Min: us[0], Max: us[len(us)-1], Typical: us[len(us)/2], Avg: avg,
		Stdev: math.Sqrt(sq / float64(len(us))), P99: pct(0.99), P999: pct(0.999)}
}

// DefaultLatInline is perftest's inline size for latency tests.
const DefaultLatInline = 236
