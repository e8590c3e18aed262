package ipoib

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The TUN relay floor: the least any user-space IP link over a TUN device
// costs on this machine. It has the topology of the ipoibcm link (a TUN
// device with the same MTU in each of two namespaces, one TCP connection
// over the veth pair between them, one process per namespace) with nothing
// else: each packet read from the TUN device goes as a 2-octet length and
// the packet, in one write, over the TCP connection; the other end reads the
// stream through a large buffer and writes each packet to its TUN device.
// No encapsulation header, no framing, no CRC, no flow control, no
// neighbour resolution. It is a measurement floor for BenchmarkIPoIBCM
// (BenchmarkIPoIBCMFloor), not a link anyone should use: it carries one
// peer, drops nothing and checks nothing.
//
// The relay runs in the test binary itself: TestMain runs runRelay instead
// of the tests when relayEnv is set (see StartRelay).

const (
	relayEnv   = "IPOIB_TUNRELAY" // "listen|dial underlay:port prefix mtu"
	relayPort  = 4757
	relayReady = "tunrelay connected"
)

// StartFloor joins the first two nodes by the floor relay, with TUN MTU
// mtu, and returns the two relays once they are connected.
func (e *Env) StartFloor(mtu int) []*Daemon {
	e.t.Helper()
	a, z := e.Nodes[0], e.Nodes[1]
	ds := []*Daemon{e.StartRelay(a, true, a.Underlay, mtu)}
	ds = append(ds, e.StartRelay(z, false, a.Underlay, mtu))
	if !ds[0].WaitLog(relayReady, 30*time.Second) {
		e.t.Fatalf("the relay in %s: no connection from %s within 30 s\n%s", a.NS, z.NS, ds[0].Log())
	}
	return ds
}

// StartRelay runs the floor relay in nd's namespace with nd's underlay and
// IPv4 overlay address and TUN MTU mtu; listen chooses the side that
// accepts the underlay connection (start it first), peer is the address the
// dialling side connects to. It returns once a listening relay listens
// (it logs relayReady when its peer connects) or a dialling one is connected.
func (e *Env) StartRelay(nd *Node, listen bool, peer netip.Addr, mtu int) *Daemon {
	e.t.Helper()
	self, err := os.Executable()
	if err != nil {
		e.t.Fatal(err)
	}
	role, at := "dial", peer
	if listen {
		role, at = "listen", nd.Underlay
	}
	spec := fmt.Sprintf("%s %s %s/24 %d", role, netip.AddrPortFrom(at, relayPort), nd.V4, mtu)
	cmd := exec.Command("ip", "netns", "exec", nd.NS, self, "-test.run=^$")
	cmd.Env = append(os.Environ(), relayEnv+"="+spec)
	marker := "tunrelay listening"
	if !listen {
		marker = relayReady
	}
	return e.spawn(nd, cmd, marker)
}

// runRelay is the relay process: it returns the exit code.
func runRelay(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 4 || (f[0] != "listen" && f[0] != "dial") {
		fmt.Fprintf(os.Stderr, "tunrelay: %s=%q: want \"listen|dial addr:port prefix mtu\"\n", relayEnv, spec)
		return 2
	}
	mtu, err := strconv.Atoi(f[3])
	if err != nil || mtu < 68 || mtu > 65535 {
		fmt.Fprintf(os.Stderr, "tunrelay: MTU %q: want 68..65535\n", f[3])
		return 2
	}
	if err := relay(f[0] == "listen", f[1], f[2], mtu); err != nil {
		fmt.Fprintln(os.Stderr, "tunrelay:", err)
		return 1
	}
	return 0
}

func relay(listen bool, addr, prefix string, mtu int) error {
	tun, err := openRelayTUN(mtu, prefix)
	if err != nil {
		return err
	}
	var c net.Conn
	if listen {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		fmt.Println("tunrelay listening on", addr)
		c, err = ln.Accept()
		ln.Close()
		if err != nil {
			return err
		}
	} else if c, err = net.Dial("tcp", addr); err != nil {
		return err
	}
	fmt.Println(relayReady, "to", c.RemoteAddr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, unix.SIGTERM, unix.SIGINT)
	errc := make(chan error, 2)
	go func() { errc <- tunToStream(tun, c, mtu) }()
	go func() { errc <- streamToTUN(c, tun) }()
	select {
	case <-stop:
		return nil // the kernel removes the device with the process
	case err := <-errc:
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			// The other relay stopped first (the harness stops them in turn).
			fmt.Println("tunrelay: the peer closed the connection")
			return nil
		}
		return err
	}
}

// tunToStream sends each packet read from tun as a 2-octet length and the
// packet, in one write.
func tunToStream(tun *os.File, w io.Writer, mtu int) error {
	buf := make([]byte, 2+mtu+1)
	for {
		n, err := tun.Read(buf[2:])
		if err != nil {
			return fmt.Errorf("reading the TUN device: %w", err)
		}
		if n > mtu {
			return fmt.Errorf("packet of %d octets over the MTU %d", n, mtu)
		}
		binary.BigEndian.PutUint16(buf, uint16(n))
		if _, err := w.Write(buf[:2+n]); err != nil {
			return fmt.Errorf("sending: %w", err)
		}
	}
}

// streamToTUN writes each length-prefixed packet of r to tun.
func streamToTUN(r io.Reader, tun *os.File) error {
	br := bufio.NewReaderSize(r, 512<<10)
	pkt := make([]byte, 65535)
	for {
		var h [2]byte
		if _, err := io.ReadFull(br, h[:]); err != nil {
			return fmt.Errorf("receiving: %w", err)
		}
		p := pkt[:binary.BigEndian.Uint16(h[:])]
		if _, err := io.ReadFull(br, p); err != nil {
			return fmt.Errorf("receiving: %w", err)
		}
		if _, err := tun.Write(p); err != nil {
			return fmt.Errorf("writing the TUN device: %w", err)
		}
	}
}

// openRelayTUN makes the TUN device relay0 (IFF_TUN, IFF_NO_PI) with the
// MTU and the address, up. Its fd stays blocking: a read or write is one
// system call on the goroutine's own thread, with no poller in between.
func openRelayTUN(mtu int, prefix string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq("relay0")
	if err != nil {
		return nil, err
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("TUNSETIFF: %w", err)
	}
	for _, args := range [][]string{
		{"link", "set", "dev", "relay0", "mtu", strconv.Itoa(mtu)},
		{"addr", "add", prefix, "dev", "relay0"},
		{"link", "set", "dev", "relay0", "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return os.NewFile(uintptr(fd), "/dev/net/tun"), nil
}
