// Command iwdemo is openiwarp's end-to-end demonstration: two endpoints
// over TCP on 127.0.0.1, first on the model card (the card's driver over
// the card's Go model: rings, doorbells, stream bridge) and then on the
// sim card (the same driver over the Verilated card top, every DMA write
// checked against the card model). Each moves messages of several sizes
// (RDMA Write, RDMA Read and Send; on the sim card -sim-ops chooses among
// them), verifies every byte at the
// other end, and prints a results table, the RTL cycles run and the
// transactions checked. With -json, stdout carries one JSON document (keys in
// docs/json.md) and the RESULT line goes to stderr. Exit status: 0 all
// verified, 1 a transfer failed or differed, 2 bad usage.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/openiwarp/openiwarp/host/driver/simcard"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/internal/cli"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// Row is one line of the results table: one operation at one size,
// timed over Iterations runs after one untimed warm-up run, every run's
// bytes verified. Times are in nanoseconds; the bandwidth is the size
// over the median time.
type Row struct {
	Card       string  `json:"card"`
	Op         string  `json:"op"`
	Size       int     `json:"size_bytes"`
	Iterations int     `json:"iterations"`
	MedianNs   int64   `json:"median_ns"`
	MinNs      int64   `json:"min_ns"`
	MaxNs      int64   `json:"max_ns"`
	MBps       float64 `json:"median_mbps"`
	Verified   bool    `json:"verified"`
}

// output is the -json document (keys in docs/json.md).
type output struct {
	Rows          []Row  `json:"rows"`
	RTLCycles     uint64 `json:"rtl_cycles"`
	CheckedWrites uint64 `json:"rtl_writes_checked"`
	CheckedBytes  uint64 `json:"rtl_bytes_checked"`
	Mismatches    uint64 `json:"rtl_mismatches"`
}

// simOpsDefault are the operations the demo runs on the sim card: all four
// (RDMA Writes inline and gathered from an SGL, RDMA Reads answered by the
// peer card's responder, Sends into the peer's receive WQEs).
const simOpsDefault = "inline-write,write,read,send"

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("iwdemo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cards := fs.String("cards", "model,sim", "cards to run, in order")
	sizeList := fs.String("sizes", "1,64,480,4096,65536,1048576,4194304", "message sizes in bytes")
	iters := fs.Int("n", 7, "timed iterations per row (after one warm-up)")
	asJSON := fs.Bool("json", false, "print the rows as JSON")
	simOps := fs.String("sim-ops", simOpsDefault, "operations on the sim card: inline-write, write, read, send (comma-separated)")
	if err := cli.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *iters < 1 || *iters > 10000 {
		fmt.Fprintf(stderr, "iwdemo: -n %d: want 1 to 10000 iterations\n", *iters)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "iwdemo: unexpected argument %q (iwdemo takes only flags)\n", fs.Arg(0))
		return 2
	}
	var sizes []int
	for _, f := range strings.Split(*sizeList, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 0 || n > 64<<20 {
			fmt.Fprintf(stderr, "iwdemo: size %q: want 0 to %d bytes\n", f, 64<<20)
			return 2
		}
		sizes = append(sizes, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var rows []Row
	failed := false
	for _, card := range strings.Split(*cards, ",") {
		fmt.Fprintf(stderr, "iwdemo: %s card: connecting two endpoints over 127.0.0.1...\n", card)
		ops := "write,read,send"
		if card == "sim" || strings.HasPrefix(card, "sim:") {
			ops = *simOps
		}
		r, err := demo(ctx, card, strings.Split(ops, ","), sizes, *iters, stderr)
		rows = append(rows, r...)
		if err != nil {
			fmt.Fprintf(stderr, "iwdemo: %s card: %v\n", card, err)
			failed = true
		}
	}
	for _, r := range rows {
		failed = failed || !r.Verified
	}
	t := simcard.ProcessTotals()
	if *asJSON {
		json.NewEncoder(stdout).Encode(output{rows, t.Cycles, t.Checked, t.Bytes, t.Mismatches})
	} else {
		table(stdout, rows)
		if t.Cycles > 0 {
			fmt.Fprintf(stdout, "sim card: every byte of its rows moved by the Verilated iwcard (WQE fetch, payload, DDP and MPA framing, CRC32c, placement, CQEs, status records, events): %d RTL cycles, %d of its DMA writes checked against the card model (%d stream and payload bytes), %d mismatches. Not yet served by its RTL (the checker stops a QP there, naming the write the RTL left undone): DMA faults of CQEs, payload and receive ring accesses (a faulted status record or EQE stops the card, a faulted SQ or RQ read fails its QP, as in the model; docs/card-rtl.md).\n",
				t.Cycles, t.Checked, t.Bytes, t.Mismatches)
		}
	}
	result := stdout
	if *asJSON {
		result = stderr // stdout carries the JSON document alone
	}
	if failed {
		fmt.Fprintln(result, "RESULT: FAILED")
		return 1
	}
	fmt.Fprintln(result, "RESULT: every byte verified on every card")
	return 0
}

func table(w io.Writer, rows []Row) {
	line := strings.Repeat("-", 102)
	fmt.Fprintln(w, line)
	fmt.Fprintf(w, " %-6s %-19s %9s %6s %10s %10s %10s %12s  %s\n", "card", "operation", "size", "iters", "median", "min", "max", "bandwidth", "verified")
	fmt.Fprintln(w, line)
	for _, r := range rows {
		ok := "yes"
		if !r.Verified {
			ok = "NO"
		}
		fmt.Fprintf(w, " %-6s %-19s %9s %6d %10s %10s %10s %12s  %s\n", r.Card, r.Op, bytesUnit(r.Size), r.Iterations,
			timeUnit(r.MedianNs), timeUnit(r.MinNs), timeUnit(r.MaxNs), rateUnit(r.MBps), ok)
	}
	fmt.Fprintln(w, line)
	fmt.Fprintln(w, " median, min and max of the timed iterations of each row, after one warm-up; bandwidth at the median")
}

// bytesUnit writes a size in B, KiB or MiB, whichever reads best.
func bytesUnit(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// timeUnit writes a duration in ns, µs, ms or s with three significant digits.
func timeUnit(ns int64) string {
	v := float64(ns)
	for _, u := range []string{"ns", "µs", "ms"} {
		if v < 1000 {
			return sig3(v) + " " + u
		}
		v /= 1000
	}
	return sig3(v) + " s"
}

// rateUnit writes a bandwidth given in MB/s (10^6 bytes a second) in
// kB/s, MB/s or GB/s.
func rateUnit(mbps float64) string {
	switch {
	case mbps >= 1000:
		return sig3(mbps/1000) + " GB/s"
	case mbps >= 1:
		return sig3(mbps) + " MB/s"
	}
	return sig3(mbps*1000) + " kB/s"
}

// sig3 formats v with three significant digits (at least one decimal
// below 100), never in exponent form.
func sig3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// summarize fills a row's times and bandwidth from its timed runs.
func summarize(r *Row, runs []time.Duration) {
	sorted := slices.Clone(runs)
	slices.Sort(sorted)
	k := len(sorted)
	med := sorted[k/2]
	if k%2 == 0 {
		med = (sorted[k/2-1] + sorted[k/2]) / 2
	}
	r.Iterations = k
	r.MedianNs, r.MinNs, r.MaxNs = med.Nanoseconds(), sorted[0].Nanoseconds(), sorted[k-1].Nanoseconds()
	if med > 0 {
		r.MBps = float64(r.Size) / med.Seconds() / 1e6
	}
}

// side is one endpoint.
type side struct {
	dev *verbs.Context
	cq  *verbs.CQ
	qp  *verbs.QP
	mr  *verbs.MR
}

func open(card string, size int) (*side, error) {
	s := &side{}
	var err error
	if s.dev, err = verbs.Open(card); err != nil {
		return nil, err
	}
	pd, err := s.dev.AllocPD()
	if err == nil {
		s.cq, err = s.dev.CreateCQ(64)
	}
	if err == nil {
		s.qp, err = pd.CreateQP(verbs.QPInitAttr{SendCQ: s.cq, RecvCQ: s.cq})
	}
	if err == nil {
		s.mr, err = pd.RegMR(make([]byte, size), verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite)
	}
	if err != nil {
		s.dev.Close()
		return nil, err
	}
	return s, nil
}

func (s *side) expect(ctx context.Context, op verbs.WCOpcode) error {
	wc, err := s.cq.Wait(ctx)
	if err != nil {
		return err
	}
	if wc.Status != verbs.WCSuccess || wc.Opcode != op {
		return fmt.Errorf("%v completion with status %v (wanted %v), QP: %v", wc.Opcode, wc.Status, op, s.qp.Err())
	}
	return nil
}

func demo(ctx context.Context, card string, ops []string, sizes []int, iters int, stderr io.Writer) ([]Row, error) {
	maxSize := 1
	for _, n := range sizes {
		maxSize = max(maxSize, n)
	}
	a, err := open(card, maxSize)
	if err != nil {
		return nil, err
	}
	defer a.dev.Close()
	b, err := open(card, maxSize)
	if err != nil {
		return nil, err
	}
	defer b.dev.Close()
	ln, err := verbs.Listen("127.0.0.1:0", verbs.ListenConfig{})
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err == nil {
			err = req.Accept(b.qp, []byte("iwdemo responder"))
		}
		accepted <- err
	}()
	if err := verbs.Dial(ctx, ln.Addr().String(), a.qp, verbs.ConnParam{PrivateData: []byte("iwdemo initiator")}); err != nil {
		return nil, err
	}
	if err := <-accepted; err != nil {
		return nil, err
	}
	p := a.qp.Params()
	fmt.Fprintf(stderr, "iwdemo: %s card: connected %v -> %v, MPA Rev %d, CRC %v, MULPDU %d; %s\n",
		card, a.qp.LocalAddr(), a.qp.RemoteAddr(), p.Rev, p.CRC, a.qp.MULPDU(), a.dev.Info().Detail)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	fill := func(buf []byte) {
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
	}
	ab, bb := a.mr.Bytes(), b.mr.Bytes()
	// once moves n bytes by op and reports how long it took and whether
	// every byte arrived.
	once := func(op string, n int) (time.Duration, bool, error) {
		fill(ab[:n])
		fill(bb[:n])
		start := time.Now()
		var src, dst []byte
		var err error
		switch op {
		case "RDMA Write (inline)": // the payload in the WQE; placed once the responder's memory shows it
			src, dst = ab[:n], bb[:n]
			if err = a.qp.PostSend(verbs.SendWR{Opcode: verbs.WRRDMAWrite, Signaled: true, Inline: ab[:n], RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}); err == nil {
				err = a.expect(ctx, verbs.WCRDMAWrite)
			}
			for err == nil && !bytes.Equal(src, dst) {
				select {
				case <-ctx.Done():
					err = fmt.Errorf("the Write's bytes never arrived: %w", ctx.Err())
				case <-b.qp.Done():
					err = fmt.Errorf("the responder's QP ended: %w", b.qp.Err())
				case <-time.After(50 * time.Microsecond):
				}
			}
		case "RDMA Write": // then a Send: once it is delivered, the Write is placed (RFC 5040 §5.5)
			src, dst = ab[:n], bb[:n]
			if err = b.qp.PostRecv(verbs.RecvWR{ID: 1}); err == nil {
				err = a.qp.PostSend(verbs.SendWR{Opcode: verbs.WRRDMAWrite, SGL: []verbs.SGE{a.mr.SGE(0, n)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()},
					verbs.SendWR{Opcode: verbs.WRSend})
			}
			if err == nil {
				err = b.expect(ctx, verbs.WCRecv)
			}
		case "RDMA Read":
			src, dst = bb[:n], ab[:n]
			if err = a.qp.PostSend(verbs.SendWR{Opcode: verbs.WRRDMARead, Signaled: true, SGL: []verbs.SGE{a.mr.SGE(0, n)},
				RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}); err == nil {
				err = a.expect(ctx, verbs.WCRDMARead)
			}
		default:
			src, dst = ab[:n], bb[:n]
			if err = b.qp.PostRecv(verbs.RecvWR{ID: 2, SGL: []verbs.SGE{b.mr.SGE(0, n)}}); err == nil {
				err = a.qp.PostSend(verbs.SendWR{Opcode: verbs.WRSend, SGL: []verbs.SGE{a.mr.SGE(0, n)}})
			}
			if err == nil {
				err = b.expect(ctx, verbs.WCRecv)
			}
		}
		el := time.Since(start)
		return el, err == nil && bytes.Equal(src, dst), err
	}
	var rows []Row
	runs := make([]time.Duration, 0, iters)
	names := map[string]string{"write": "RDMA Write", "read": "RDMA Read", "send": "Send", "inline-write": "RDMA Write (inline)"}
	for _, n := range sizes {
		for _, o := range ops {
			op := names[o]
			if op == "" {
				return rows, fmt.Errorf("operation %q (want inline-write, write, read or send)", o)
			}
			if o == "inline-write" && n > a.dev.Info().MaxInline {
				continue // larger than a WQE holds
			}
			r := Row{Card: card, Op: op, Size: n, Verified: true}
			runs = runs[:0]
			for i := -1; i < iters; i++ { // i = -1: the warm-up
				el, ok, err := once(op, n)
				if err != nil {
					return rows, fmt.Errorf("%s of %d bytes: %w", op, n, err)
				}
				r.Verified = r.Verified && ok
				if i >= 0 {
					runs = append(runs, el)
				}
			}
			summarize(&r, runs)
			rows = append(rows, r)
		}
	}
	return rows, a.qp.Disconnect()
}
