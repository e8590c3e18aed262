// Command ipoibcm runs an IP link over openiwarp reliable connections: IP
// over InfiniBand connected mode (RFC 4755) mapped onto iWARP.
//
// It creates a TUN interface, resolves neighbours with ARP and IPv6
// neighbour discovery over a UDP datagram channel on the underlay network
// (standing in for the UD QP), opens one iWARP connection per peer on demand
// with the RFC 4755 private data in the MPA Request/Reply, carries IPv4 and
// IPv6 packets with the 4-octet encapsulation header as RDMAP Sends within
// each connection's negotiated MTU, keeps a receive posted for every Send
// with credits, tears idle connections down, and sends broadcast and
// multicast over the datagram channel.
//
// Usage:
//
//	ipoibcm -underlay 198.18.0.1 -flood 198.18.0.255 -addr 198.19.0.1/24 [-addr fd00:4755::1/64]
//
// Exit status: 0 after a clean shutdown (SIGINT/SIGTERM), 1 on a runtime
// error, 2 on bad flags.
package main

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/openiwarp/openiwarp/golden/ipoibcm"
	"github.com/openiwarp/openiwarp/host/ipoib"
	"github.com/openiwarp/openiwarp/host/verbs"
	"github.com/openiwarp/openiwarp/internal/cli"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, strings.Split(v, ",")...); return nil }

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("ipoibcm", flag.ContinueOnError)
	var (
		cfg                   ipoib.Config
		addrs, flood          listFlag
		underlay, sid, policy string
		epid, recvMTU         uint
		statsEvery            time.Duration
		cpuProfile            string
		jsonOut               bool
	)
	fs.StringVar(&cfg.Dev, "dev", "ipcm%d", "TUN interface name (%d: the kernel picks a number)")
	fs.Var(&addrs, "addr", "overlay address/prefix of the interface (repeatable; IPv4 and IPv6)")
	fs.StringVar(&underlay, "underlay", "", "our address on the underlay network (required)")
	fs.Var(&flood, "flood", "underlay destinations for broadcast/multicast datagrams: peers or a broadcast address (repeatable)")
	fs.IntVar(&cfg.UDPPort, "udp-port", 4755, "UDP port of the datagram channel (stands in for the UD QP)")
	fs.IntVar(&cfg.TCPPort, "port", 4756, "TCP port of the reliable connections")
	fs.UintVar(&epid, "epid", 0, "24-bit endpoint ID: the UD QPN of our link-layer address (0: random)")
	fs.IntVar(&cfg.MTU, "mtu", 65520, "interface MTU")
	fs.UintVar(&recvMTU, "recv-mtu", 0, "Receive MTU advertised on connections, header included (0: mtu+4)")
	fs.StringVar(&sid, "sid", "ofed", "Service-ID form to send: ofed (0x10 prefix, as Linux) or literal-rfc (0x01); both are accepted")
	fs.StringVar(&policy, "policy", "strict", "crossing connections: strict (RFC 4755 §3.3) or compat (Linux-like)")
	fs.DurationVar(&cfg.Idle, "idle", 60*time.Second, "tear down connections idle this long")
	fs.DurationVar(&cfg.NeighTTL, "neigh-ttl", 5*time.Minute, "lifetime of an address-resolution entry")
	fs.IntVar(&cfg.Depth, "depth", 64, "receives posted per connection (the credits granted to the peer)")
	fs.StringVar(&cfg.Device, "device", "model", "verbs device the connections run on (in this build: "+strings.Join(verbs.Devices(), ", ")+")")
	fs.BoolVar(&cfg.UDOnly, "ud-only", false, "advertise no connected mode; send everything over the datagram channel")
	fs.IntVar(&cfg.MaxConns, "max-conns", ipoibcm.DefaultMaxConns, "cap on connections")
	fs.DurationVar(&cfg.ConnectTimeout, "connect-timeout", 5*time.Second, "bound on connection setup, and on each connection's MPA startup (a peer that stalls in it is dropped)")
	fs.DurationVar(&cfg.AcceptDelay, "accept-delay", 0, "hold each incoming connection request this long before answering (testing crossing requests)")
	fs.DurationVar(&statsEvery, "stats", 0, "log counters this often (0: only at exit)")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile to this file until shutdown")
	fs.BoolVar(&jsonOut, "json", false, "print the counters as one JSON object per line on stdout (at -stats and at exit)")
	fs.BoolVar(&cfg.Verbose, "v", false, "log resolution and connection events")
	if err := cli.Parse(fs, args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "ipoibcm: "+format+"\n", a...)
		fs.Usage()
		return 2
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q (ipoibcm takes only flags)", fs.Arg(0))
	}
	var err error
	if cfg.Underlay, err = netip.ParseAddr(underlay); err != nil {
		return bad("-underlay: %v", err)
	}
	cfg.Underlay = cfg.Underlay.Unmap()
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			return bad("-addr: %v", err)
		}
		cfg.Addrs = append(cfg.Addrs, p)
	}
	for _, a := range flood {
		ip, err := netip.ParseAddr(a)
		if err != nil {
			return bad("-flood: %v", err)
		}
		cfg.Flood = append(cfg.Flood, ip)
	}
	if epid == 0 {
		var b [4]byte
		_, _ = rand.Read(b[:])
		epid = uint(binary.BigEndian.Uint32(b[:])&ipoibcm.MaxQPN) | 1
	}
	if epid > ipoibcm.MaxQPN {
		return bad("-epid %d does not fit in 24 bits", epid)
	}
	cfg.EPID = uint32(epid)
	if recvMTU > 1<<31 {
		return bad("-recv-mtu %d is too big", recvMTU)
	}
	cfg.RecvMTU = uint32(recvMTU)
	switch sid {
	case "ofed":
		cfg.SIDMode = ipoibcm.SIDOFED
	case "literal-rfc":
		cfg.SIDMode = ipoibcm.SIDLiteral
	default:
		return bad("-sid %q: want ofed or literal-rfc", sid)
	}
	switch policy {
	case "strict":
		cfg.Policy = ipoibcm.PolicyStrict
	case "compat":
		cfg.Policy = ipoibcm.PolicyCompat
	default:
		return bad("-policy %q: want strict or compat", policy)
	}
	if err := cfg.Validate(); err != nil {
		return bad("%v", err)
	}

	logger := log.New(os.Stderr, "ipoibcm: ", log.Ltime|log.Lmicroseconds)
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			logger.Print(err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			logger.Print(err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	l, err := ipoib.New(cfg, logger)
	if err != nil {
		logger.Print(err)
		return 1
	}
	if err := l.Start(); err != nil {
		logger.Print(err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	var tick <-chan time.Time
	if statsEvery > 0 {
		t := time.NewTicker(statsEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case s := <-sig:
			logger.Printf("%v: shutting down", s)
			report(os.Stdout, l.Stats(), logger, jsonOut)
			l.Close()
			return 0
		case <-tick:
			report(os.Stdout, l.Stats(), logger, jsonOut)
		}
	}
}

// report prints the link's counters s: with -json as one line of JSON on
// stdout (keys in docs/json.md), else as a log line.
func report(stdout io.Writer, s ipoib.Stats, logger *log.Logger, jsonOut bool) {
	if jsonOut {
		_ = json.NewEncoder(stdout).Encode(s)
		return
	}
	logger.Printf("stats: tun in %d out %d, datagram in %d out %d, connected in %d out %d, too big %d, dropped %d, waits for credit %d, for send queue %d, connections %d",
		s.TUNIn, s.TUNOut, s.DatagramIn, s.DatagramOut, s.ConnIn, s.ConnOut, s.TooBig, s.Dropped, s.CreditWaits, s.SQWaits, s.Connections)
}
