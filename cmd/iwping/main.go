// Command iwping is an rping-compatible RDMA ping over iWARP, built on
// openiwarp's engine. It speaks exactly what rdma-core's rping puts on the
// wire (package rping: buffer advertisements over Send, RDMA Read, RDMA
// Write, go-ahead Sends, one cycle after another), so it runs against a
// real rping on Linux soft-iWARP (siw) or any iWARP RNIC, in either role.
//
//	iwping -s [-vVd] [-S size] [-C count] [-a addr] [-p port] [-P]
//	iwping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]
//
// The rping flags mean what they mean for rping: -P is the persistent
// server (below) and -I the client's source address, the local address its
// TCP connection is made from (rdma_resolve_addr's source). Where rping
// ignores a flag that does not apply to its role (-P with -c, -I with -s),
// iwping refuses it as a usage error. iwping adds the iWARP connection
// parameters rping takes from the kernel:
//
//	-crc       ask for MPA CRC32c (C=1); without it CRC is on only if the peer asks
//	-markers   ask for MPA markers (M=1); siw refuses such a Request
//	-rev N     MPA revision to send (client) or accept at most (server): 1 or 2
//	-ird/-ord  RFC 6581 limits announced in MPA Rev 2 private data (rping: 1 and 1)
//	-example   instead of the ping loop, do the exchange of librdmacm's
//	           rdma_server/rdma_client examples (one 16-octet Send each way)
//	-card      the openiwarp card (host/verbs): "model" (the card's driver
//	           over the card's Go model, its stream bridged to a kernel TCP
//	           socket) or "sim" (the same driver over the Verilated card
//	           top, every DMA write checked against the card model;
//	           "sim:512" at 512 bits) or "pci:ADDR[,irq=ADDR]"
//	           (the card in a PCI slot, bound to vfio-pci, through the
//	           driver; irq= names the device whose MSI-X vectors are the
//	           card's, e.g. a QEMU guest's ivshmem-doorbell: see
//	           host/driver/pcicard)
//	-first-delay D  client: pause D between the MPA Reply and the first
//	           FPDU. Linux siw 6.1 as Responder can miss a Send that arrives
//	           while it is still moving the connection into RDMA mode; a
//	           real RNIC or a kernel initiator is slow enough never to hit it
//	-timeout   bound on the whole run (with -P: only if given)
//	-startup-timeout  bound on each connection's MPA startup, Request to
//	           Reply (default 5 s): a peer that stalls in it is dropped
//	-max-startups  server: connections in their MPA startup at once
//	           (default 64); more are closed at once. Every failed startup
//	           is reported on stderr ("iwping: MPA startup from ADDR
//	           failed: ...") and, with -P, does not stop the server
//	-json      print a JSON summary on stdout at the end
//
// Without -P the server serves one connection and exits, like rping. Exit
// status: 0 when every cycle verified (client -V) and the connection closed
// cleanly, 1 on any failure (the error says at which cycle and step), 2 on
// bad usage.
//
// With -P (rping -s -P) the server keeps accepting connections and serves
// each in its own goroutine, on its own card, with the same flags (-C and
// -S count per connection), until SIGINT or SIGTERM, or until -timeout
// ends if it is given; connections still running then are cut and
// reported. -v prints every connection's ping data, interleaved as rping's
// threads print it. A connection that fails is reported on stderr
// ("iwping: connection N from ADDR: ...") and does not stop the server;
// -d also reports those that end cleanly. With -json, stdout carries one
// line per connection as it ends: the JSON object of the one-connection
// summary on a single line, plus "conn", the connection's number in accept
// order from 1, and "error" if it failed. The exit status is 0 however the
// connections went, 1 only if the listener failed (the port is taken, say).
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
	"syscall"
	"time"

	"github.com/openiwarp/openiwarp/cmd/iwping/rping"
	_ "github.com/openiwarp/openiwarp/host/driver/pcicard" // the card in a PCI slot
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/internal/cli"
)

type options struct {
	server, client    bool
	persistent        bool // -P
	addr              string
	source            string // -I
	port              int
	count, size       int
	verbose, validate bool
	debug             bool
	crc, markers      bool
	rev, ird, ord     int
	example           bool
	firstDelay        time.Duration
	card              string
	timeout           time.Duration
	timeoutSet        bool // -timeout given (-P runs unbounded without it)
	startupTimeout    time.Duration
	maxStartups       int
	json              bool
	stdout, stderr    io.Writer
	listening         func(net.Addr) // test hook: called once the server listens
	ended             func(Summary)  // test hook: called once a -P connection is reported
}

// Summary is the -json output.
type Summary struct {
	// Conn numbers a persistent server's connections in accept order,
	// from 1 (-P only).
	Conn  int    `json:"conn,omitempty"`
	Role  string `json:"role"`
	Local string `json:"local,omitempty"`
	Peer  string `json:"peer,omitempty"`
	Card  string `json:"card"`
	// CardDetail says what runs where; CheckedCycles counts the RTL cycles
	// the sim card ran with its DMA writes checked against the card model
	// (driver.Info.CheckedCycles; 0 elsewhere).
	CardDetail    string        `json:"card_detail,omitempty"`
	CheckedCycles uint64        `json:"checked_cycles"`
	MPA           *MPASummary   `json:"mpa,omitempty"`
	Mode          string        `json:"mode"`
	Stats         rping.Stats   `json:"stats"`
	ElapsedMS     float64       `json:"elapsed_ms"`
	Error         string        `json:"error,omitempty"`
	elapsed       time.Duration `json:"-"`
}

// finish records the outcome and the elapsed time for the JSON output.
func (s *Summary) finish(err error) {
	if err != nil {
		s.Error = err.Error()
	}
	s.ElapsedMS = float64(s.elapsed.Microseconds()) / 1000
}

// MPASummary is what the MPA startup negotiated.
type MPASummary struct {
	Rev       int  `json:"rev"`
	CRC       bool `json:"crc"`
	TxMarkers bool `json:"tx_markers"`
	RxMarkers bool `json:"rx_markers"`
	PeerIRD   int  `json:"peer_ird"`
	PeerORD   int  `json:"peer_ord"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "iwping:", err)
		return 2
	}
	o.stdout, o.stderr = stdout, stderr
	if o.persistent {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := o.servePersistent(ctx); err != nil {
			fmt.Fprintln(stderr, "iwping:", err)
			return 1
		}
		return 0
	}
	sum, err := execute(context.Background(), o)
	if o.json {
		sum.finish(err)
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(sum)
	}
	if err != nil {
		fmt.Fprintln(stderr, "iwping:", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("iwping", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&o.server, "s", false, "server side")
	fs.BoolVar(&o.client, "c", false, "client side")
	fs.BoolVar(&o.persistent, "P", false, "server: persistent mode, serve connections concurrently until interrupted")
	fs.StringVar(&o.source, "I", "", "client: source address to bind to")
	fs.StringVar(&o.addr, "a", "", "address (server: to bind, default any; client: of the server)")
	fs.IntVar(&o.port, "p", rping.DefaultPort, "port")
	fs.IntVar(&o.count, "C", 0, "ping count (0: until interrupted or disconnected)")
	fs.IntVar(&o.size, "S", rping.DefaultSize, "ping data size")
	fs.BoolVar(&o.verbose, "v", false, "display ping data")
	fs.BoolVar(&o.validate, "V", false, "validate ping data")
	fs.BoolVar(&o.debug, "d", false, "debug output (MPA negotiation) on stderr")
	fs.BoolVar(&o.crc, "crc", false, "ask for MPA CRC (C=1)")
	fs.BoolVar(&o.markers, "markers", false, "ask for MPA markers (M=1)")
	fs.IntVar(&o.rev, "rev", 2, "MPA revision: 1 or 2")
	fs.IntVar(&o.ird, "ird", 1, "inbound RDMA Read limit (IRD) announced with MPA Rev 2")
	fs.IntVar(&o.ord, "ord", 1, "outbound RDMA Read limit (ORD) announced with MPA Rev 2")
	fs.DurationVar(&o.firstDelay, "first-delay", 0, "client: wait this long after the MPA Reply before the first FPDU (works around siw 6.1's race on a Send that follows its Reply at once)")
	fs.BoolVar(&o.example, "example", false, "librdmacm rdma_server/rdma_client exchange instead of the ping loop")
	fs.StringVar(&o.card, "card", "model", "openiwarp card: "+strings.Join(verbs.Devices(), ", "))
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "bound on the whole run (with -P: on the server's, only if given)")
	fs.DurationVar(&o.startupTimeout, "startup-timeout", verbs.DefaultStartupTimeout, "bound on each connection's MPA startup (Request to Reply)")
	fs.IntVar(&o.maxStartups, "max-startups", verbs.DefaultMaxStartups, "server: connections in their MPA startup at once; more are closed at once")
	fs.BoolVar(&o.json, "json", false, "print a JSON summary on stdout")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: iwping -s [-vVd] [-S size] [-C count] [-a addr] [-p port] [-P] [iWARP options]")
		fmt.Fprintln(stderr, "       iwping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port] [iWARP options]")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) { o.timeoutSet = o.timeoutSet || f.Name == "timeout" })
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.server == o.client:
		return nil, errors.New("exactly one of -s and -c is required")
	case o.client && o.addr == "":
		return nil, errors.New("-c needs -a (the server's address)")
	case o.persistent && !o.server:
		return nil, errors.New("-P applies to the server (-s)")
	case o.source != "" && !o.client:
		return nil, errors.New("-I applies to the client (-c)")
	case o.size < rping.MinSize || o.size > rping.MaxSize:
		return nil, fmt.Errorf("invalid size %d (valid range is %d to %d)", o.size, rping.MinSize, rping.MaxSize)
	case o.count < 0:
		return nil, fmt.Errorf("invalid count %d", o.count)
	case o.port <= 0 || o.port > 65535:
		return nil, fmt.Errorf("invalid port %d", o.port)
	case o.rev != 1 && o.rev != 2:
		return nil, fmt.Errorf("invalid MPA revision %d (1 or 2)", o.rev)
	case o.ird < 1 || o.ird > 0x3fff || o.ord < 1 || o.ord > 0x3fff:
		return nil, errors.New("-ird and -ord must be 1..16383")
	case o.timeout <= 0:
		return nil, fmt.Errorf("invalid timeout %v", o.timeout)
	case o.startupTimeout <= 0:
		return nil, fmt.Errorf("invalid startup timeout %v", o.startupTimeout)
	case o.maxStartups < 1:
		return nil, fmt.Errorf("invalid -max-startups %d (at least 1)", o.maxStartups)
	case !knownCard(o.card):
		return nil, fmt.Errorf("unknown card %q (available: %s)", o.card, strings.Join(verbs.Devices(), ", "))
	}
	return o, nil
}

// execute runs one connection: the client's, or the server's without -P.
func execute(ctx context.Context, o *options) (*Summary, error) {
	start := time.Now()
	sum := o.newSummary()
	defer func() { sum.elapsed = time.Since(start) }()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	ec, err := o.connect(ctx)
	if err != nil {
		return sum, err
	}
	defer ec.Close()
	return sum, o.converse(ctx, ec, sum)
}

// newSummary is the summary of a run before its connection exists.
func (o *options) newSummary() *Summary {
	sum := &Summary{Role: "client", Card: o.card, Mode: "rping"}
	if o.server {
		sum.Role = "server"
	}
	if o.example {
		sum.Mode = "rdma-example"
	}
	return sum
}

// converse runs what follows the connection on ec, the ping loop or the
// example exchange, and records the connection and its outcome in sum.
func (o *options) converse(ctx context.Context, ec *verbsConn, sum *Summary) (err error) {
	defer func() {
		info := ec.dev.Info()
		sum.CardDetail, sum.CheckedCycles = info.Detail, info.CheckedCycles
	}()
	local, peer := ec.addrs()
	sum.Local, sum.Peer = local.String(), peer.String()
	params := ec.qp.Params()
	sum.MPA = &MPASummary{Rev: int(params.Rev), CRC: params.CRC, TxMarkers: params.TxMarkers, RxMarkers: params.RxMarkers,
		PeerIRD: int(params.PeerIRD), PeerORD: int(params.PeerORD)}
	if o.debug {
		fmt.Fprintf(o.stderr, "iwping: MPA Rev %d with %s, CRC %v, markers tx %v rx %v, peer IRD %d ORD %d\n",
			params.Rev, sum.Peer, params.CRC, params.TxMarkers, params.RxMarkers, params.PeerIRD, params.PeerORD)
	}
	if o.client && o.firstDelay > 0 {
		select {
		case <-time.After(o.firstDelay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if o.example {
		err = o.runExample(ctx, ec)
		if err == nil {
			sum.Stats = rping.Stats{Sends: 1, Recvs: 1}
		}
		return err
	}
	ro := rping.Options{Count: o.count, Size: o.size, Validate: o.validate}
	if o.verbose {
		ro.Verbose = func(l string) { fmt.Fprintln(o.stdout, l) }
	}
	if o.server {
		sum.Stats, err = rping.Server(ctx, ec, ro, peerClosed)
	} else {
		sum.Stats, err = rping.Client(ctx, ec, ro)
	}
	return err
}

// knownCard accepts the linked backends, with an optional ":option" suffix
// ("sim:512").
func knownCard(name string) bool {
	base, _, _ := strings.Cut(name, ":")
	for _, d := range verbs.Devices() {
		if d == base {
			return true
		}
	}
	return false
}

// connect opens the card and connects its QP: Dial as the client, or
// Listen and accept one connection as the server (rping without -P).
func (o *options) connect(ctx context.Context) (*verbsConn, error) {
	addr := net.JoinHostPort(o.addr, strconv.Itoa(o.port))
	if o.client {
		cp := verbs.ConnParam{Rev: verbs.MPARevision(o.rev), NoCRC: !o.crc, Markers: o.markers, StartupTimeout: o.startupTimeout}
		if o.source != "" {
			// Port 0: the kernel picks one, as for rping's -I.
			src, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(o.source, "0"))
			if err != nil {
				return nil, fmt.Errorf("source address -I %s: %w", o.source, err)
			}
			cp.LocalAddr = src
		}
		c, err := newVerbsConn(o.card, o.ird, o.ord)
		if err != nil {
			return nil, err
		}
		if err := verbs.Dial(ctx, addr, c.qp, cp); err != nil {
			c.Close()
			return nil, fmt.Errorf("MPA startup with %s: %w", addr, err)
		}
		return c, nil
	}
	ln, err := o.listen(1)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	req, err := ln.Accept(ctx)
	if err != nil {
		return nil, fmt.Errorf("accept: %w", err)
	}
	return o.accept(req)
}

// listen listens on -a and -p with the server's MPA options; backlog is
// how many requests may wait for accept (0: verbs' default).
func (o *options) listen(backlog int) (*verbs.Listener, error) {
	cfg := verbs.ListenConfig{Markers: o.markers, NoCRC: !o.crc, MaxRev: verbs.MPARevision(o.rev),
		IRD: o.ird, ORD: o.ord, StartupTimeout: o.startupTimeout, Backlog: backlog, MaxStartups: o.maxStartups,
		OnStartupError: func(remote net.Addr, err error) {
			fmt.Fprintf(o.stderr, "iwping: MPA startup from %v failed: %v\n", remote, err)
		}}
	ln, err := verbs.Listen(net.JoinHostPort(o.addr, strconv.Itoa(o.port)), cfg)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	if o.listening != nil {
		o.listening(ln.Addr())
	}
	if o.debug {
		fmt.Fprintln(o.stderr, "iwping: listening on", ln.Addr())
	}
	return ln, nil
}

// accept opens a card for the connection request and accepts it on the
// card's QP (rping_setup_qp, then rdma_accept).
func (o *options) accept(req *verbs.ConnRequest) (*verbsConn, error) {
	c, err := newVerbsConn(o.card, o.ird, o.ord)
	if err != nil {
		_ = req.Reject(nil)
		return nil, err
	}
	if err := req.Accept(c.qp, nil); err != nil {
		c.Close()
		return nil, fmt.Errorf("MPA startup with %s: %w", req.RemoteAddr(), err)
	}
	return c, nil
}

// exampleLen is the message size of librdmacm's rdma_server/rdma_client.
const exampleLen = 16

// runExample does what librdmacm's rdma_client (client) or rdma_server
// (server) does after connecting: the client sends 16 octets and waits for
// 16 back; the server receives 16 and answers with 16. Both examples send
// their zero-initialised static buffers, so every octet must be zero.
func (o *options) runExample(ctx context.Context, c *verbsConn) error {
	msg := make([]byte, exampleLen)
	check := func(b []byte) error {
		if len(b) != exampleLen {
			return fmt.Errorf("example: received %d octets, want %d", len(b), exampleLen)
		}
		for i, v := range b {
			if v != 0 {
				return fmt.Errorf("example: octet %d is %#02x, want 0", i, v)
			}
		}
		return nil
	}
	if o.client {
		// The server answers and closes at once; our Send was handed to
		// TCP before its answer came, so it completes with success.
		if err := c.Send(ctx, msg); err != nil {
			return fmt.Errorf("example: send: %w", err)
		}
		b, err := c.Recv(ctx)
		if err != nil {
			return fmt.Errorf("example: receive: %w", err)
		}
		return check(b)
	}
	b, err := c.Recv(ctx)
	if err != nil {
		return fmt.Errorf("example: receive: %w", err)
	}
	if err := check(b); err != nil {
		return err
	}
	if err := c.Send(ctx, msg); err != nil {
		return fmt.Errorf("example: send: %w", err)
	}
	return nil
}
