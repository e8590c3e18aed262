// Command iwperf measures RDMA Write, Read and Send bandwidth and latency
// between two openiwarp endpoints over TCP, in the manner of perftest's
// ib_write_bw, ib_read_lat and friends, on any card (model, sim, ...).
//
// Run a server, then a client that names it:
//
//	iwperf                                   # server on :18515, model card
//	iwperf -test write -s 65536 127.0.0.1    # RDMA Write bandwidth
//	iwperf -test send -mode lat -s 64 127.0.0.1
//	iwperf -d sim -test write -s 256 -I 256 127.0.0.1   # the Verilated card
//
// Flags may come before or after the server's address (iwperf 127.0.0.1
// -test read). The client prints perftest's table (or JSON with -json,
// keys in docs/json.md); progress goes
// to stderr on long runs. Exit status: 0 success, 1 a run failed, 2 bad
// usage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	_ "github.com/openiwarp/openiwarp/host/driver/simcard" // the sim card
	_ "github.com/openiwarp/openiwarp/host/driver/vfio"    // boards: vfio:<PCI address>
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/host/verbs/perf"
	"github.com/openiwarp/openiwarp/internal/cli"
)

const defaultPort = 18515 // perftest's

type options struct {
	device, test, mode, size string
	all                      bool
	iters, depth, port       int
	inline, qps              int
	json, quiet              bool
	markers, noCRC           bool
	rev                      int
	bind                     string
	startupTimeout           time.Duration
	maxStartups              int
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("iwperf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: iwperf [flags]            (server)\n       iwperf [flags] <server>   (client)\n\nflags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.device, "d", "model", "card: model, sim, sim:<width>, vfio:<PCI address>")
	fs.StringVar(&o.test, "test", "write", "operation: write, read or send")
	fs.StringVar(&o.mode, "mode", "bw", "measure bandwidth (bw) or latency (lat)")
	fs.StringVar(&o.size, "s", "65536", "message size in bytes (suffixes K, M)")
	fs.BoolVar(&o.all, "a", false, "run sizes 2 to 8M in powers of two")
	fs.IntVar(&o.iters, "n", 0, "iterations (default 5000 for bw, 1000 for lat)")
	fs.IntVar(&o.depth, "depth", 128, "operations in flight (bw), per QP")
	fs.IntVar(&o.qps, "qp", 1, "connections (QPs) run at once on one card (bw)")
	fs.IntVar(&o.inline, "I", -1, "post messages up to this size inline (default 236 for lat, 0 for bw)")
	fs.IntVar(&o.port, "p", defaultPort, "TCP port")
	fs.StringVar(&o.bind, "bind", "", "server: address to listen on (default all)")
	fs.BoolVar(&o.json, "json", false, "print results as JSON")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress on stderr")
	fs.BoolVar(&o.markers, "markers", false, "ask for MPA markers")
	fs.BoolVar(&o.noCRC, "nocrc", false, "offer to run without CRC32c")
	fs.IntVar(&o.rev, "rev", 1, "MPA revision the client sends (0, 1, 2)")
	fs.DurationVar(&o.startupTimeout, "startup-timeout", verbs.DefaultStartupTimeout, "bound on each connection's MPA startup (Request to Reply)")
	fs.IntVar(&o.maxStartups, "max-startups", verbs.DefaultMaxStartups, "server: connections in their MPA startup at once; more are closed at once")
	if err := cli.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "iwperf: "+format+"\n", a...)
		fs.Usage()
		return 2
	}
	if fs.NArg() > 1 {
		return usage("one server address at most, got %q", fs.Args())
	}
	if o.startupTimeout <= 0 || o.maxStartups < 1 {
		return usage("-startup-timeout must be positive and -max-startups at least 1")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if fs.NArg() == 0 {
		return server(ctx, o, stderr)
	}
	specs, err := o.specs()
	if err != nil {
		return usage("%v", err)
	}
	host := fs.Arg(0)
	if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, strconv.Itoa(o.port))
	}
	return client(ctx, o, host, specs, stdout, stderr)
}

func parseSize(s string) (int, error) {
	mul := 1
	switch {
	case strings.HasSuffix(s, "K"), strings.HasSuffix(s, "k"):
		mul, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mul, s = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a number of bytes (K and M suffixes allowed)", s)
	}
	return n * mul, nil
}

func (o *options) specs() ([]perf.Spec, error) {
	base := perf.Spec{Test: perf.Test(o.test), Mode: perf.Mode(o.mode), Iters: o.iters, TxDepth: o.depth, Inline: o.inline}
	if base.Inline < 0 {
		base.Inline = 0
		if base.Mode == perf.Lat {
			base.Inline = perf.DefaultLatInline
		}
	}
	if base.Iters == 0 {
		base.Iters = 5000
		if base.Mode == perf.Lat {
			base.Iters = 1000
		}
	}
	var sizes []int
	if o.all {
		for n := 2; n <= 8<<20; n *= 2 {
			sizes = append(sizes, n)
		}
	} else {
		n, err := parseSize(o.size)
		if err != nil {
			return nil, err
		}
		sizes = []int{n}
	}
	if o.qps < 1 || o.qps > 1024 || o.qps > 1 && base.Mode != perf.BW {
		return nil, fmt.Errorf("-qp %d: 1 to 1024, and more than one only with -mode bw", o.qps)
	}
	var out []perf.Spec
	for _, n := range sizes {
		s := base
		s.Size = n
		if err := s.Check(); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func server(ctx context.Context, o options, stderr io.Writer) int {
	lc := perf.ListenConfig()
	lc.Markers, lc.NoCRC = o.markers, o.noCRC
	lc.StartupTimeout, lc.MaxStartups = o.startupTimeout, o.maxStartups
	lc.OnStartupError = func(remote net.Addr, err error) {
		if !errors.Is(err, verbs.ErrRejected) { // a rejected spec is reported by perf.Serve
			fmt.Fprintf(stderr, "iwperf: MPA startup from %v failed: %v\n", remote, err)
		}
	}
	ln, err := verbs.Listen(net.JoinHostPort(o.bind, strconv.Itoa(o.port)), lc)
	if err != nil {
		fmt.Fprintln(stderr, "iwperf:", err)
		return 1
	}
	defer ln.Close()
	fmt.Fprintf(stderr, "iwperf server: card %s, waiting for clients on %v (Ctrl-C ends)\n", o.device, ln.Addr())
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, " "+format+"\n", a...) }
	if err := perf.Serve(ctx, ln, o.device, logf); err != nil {
		fmt.Fprintln(stderr, "iwperf:", err)
		return 1
	}
	return 0
}

const rule = "---------------------------------------------------------------------------------------"

var testNames = map[perf.Test]string{perf.Write: "RDMA_Write", perf.Read: "RDMA_Read", perf.Send: "Send"}

func client(ctx context.Context, o options, addr string, specs []perf.Spec, stdout, stderr io.Writer) int {
	c := &perf.Client{Device: o.device, Conn: verbs.ConnParam{Markers: o.markers, NoCRC: o.noCRC, Rev: verbs.MPARevision(o.rev), StartupTimeout: o.startupTimeout}}
	tty := false
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		tty = true
	}
	var results []perf.Result
	for i, s := range specs {
		start := time.Now()
		lastLine := time.Time{}
		if !o.quiet {
			c.Progress = func(done, total int) {
				el := time.Since(start)
				if el < time.Second {
					return
				}
				if tty {
					fmt.Fprintf(stderr, "\r %d bytes: %d/%d iterations (%.0f%%), %.1fs ", s.Size, done, total, 100*float64(done)/float64(total), el.Seconds())
				} else if time.Since(lastLine) > 2*time.Second {
					lastLine = time.Now()
					fmt.Fprintf(stderr, " %d bytes: %d/%d iterations (%.0f%%), %.1fs\n", s.Size, done, total, 100*float64(done)/float64(total), el.Seconds())
				}
			}
		}
		r, err := c.RunQPs(ctx, addr, s, o.qps)
		if tty && !o.quiet && time.Since(start) > time.Second {
			fmt.Fprint(stderr, "\r\033[K")
		}
		if err != nil {
			fmt.Fprintf(stderr, "iwperf: %s %s of %d bytes: %v\n", s.Test, s.Mode, s.Size, err)
			return 1
		}
		if !o.json {
			if i == 0 {
				header(stdout, o, r)
			}
			row(stdout, r)
		}
		results = append(results, r)
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(output{results})
		return 0
	}
	fmt.Fprintln(stdout, rule)
	return 0
}

// output is the -json document (keys in docs/json.md).
type output struct {
	Results []perf.Result `json:"results"`
}

func header(w io.Writer, o options, r perf.Result) {
	fmt.Fprintln(w, rule)
	title := fmt.Sprintf("%s %s Test", testNames[r.Test], map[perf.Mode]string{perf.BW: "BW", perf.Lat: "Latency"}[r.Mode])
	fmt.Fprintf(w, "%*s\n", 44+len(title)/2, title)
	fmt.Fprintf(w, " Card           : %-16s Transport type : iWARP over TCP\n", r.Device)
	fmt.Fprintf(w, " Number of qps  : %-16d Connection     : %s -> %s\n", r.QPs, r.Local, r.Remote)
	fmt.Fprintf(w, " TX depth       : %-16d MPA            : %s\n", r.TxDepth, r.MPA)
	fmt.Fprintf(w, " MULPDU         : %-16s Inline data    : %d[B]\n", fmt.Sprintf("%d[B]", r.MULPDU), r.Inline)
	fmt.Fprintln(w, rule)
	if r.Mode == perf.BW {
		fmt.Fprintln(w, " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]")
	} else {
		fmt.Fprintln(w, " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]")
	}
}

func row(w io.Writer, r perf.Result) {
	if r.Mode == perf.BW {
		fmt.Fprintf(w, " %-10d %-14d %-18.2f %-20.2f %.6f\n", r.Size, r.Iters, r.PeakMBps, r.AvgMBps, r.MsgRate)
		return
	}
	l := r.Lat
	fmt.Fprintf(w, " %-6d %-14d %-14.2f %-12.2f %-18.2f %-14.2f %-15.2f %-22.2f %.2f\n",
		r.Size, r.Iters, l.Min, l.Max, l.Typical, l.Avg, l.Stdev, l.P99, l.P999)
}
