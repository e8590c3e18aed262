package ipoib

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/openiwarp/openiwarp/golden/ipoibcm"
	"github.com/openiwarp/openiwarp/host/verbs"
)

// Config is a link's configuration (the flags of cmd/ipoibcm).
type Config struct {
	Dev      string         // TUN interface name (%d: the kernel picks a number)
	Addrs    []netip.Prefix // overlay addresses of the TUN device
	Underlay netip.Addr     // our address on the underlay network
	UDPPort  int            // datagram channel (stands in for the UD QP)
	TCPPort  int            // reliable connections (stands in for the Service-ID)
	Flood    []netip.Addr   // where broadcast/multicast datagrams go (peers or a broadcast address)
	EPID     uint32         // endpoint ID: the UD QPN of our link-layer address (1..2^24-1)
	MTU      int            // TUN MTU
	RecvMTU  uint32         // Receive MTU we advertise on connections, header included (0: MTU+4)
	SIDMode  ipoibcm.SIDMode
	Policy   ipoibcm.Policy
	Idle     time.Duration // tear down connections idle this long
	NeighTTL time.Duration // address-resolution entry lifetime
	Depth    int           // receives posted per connection (credits granted)
	UDOnly   bool          // do not advertise or use RC: everything over the datagram channel
	Device   string        // verbs device (verbs.Open name)
	MaxConns int
	Verbose  bool // log resolution and connection events
	// ConnectTimeout bounds connection setup.
	ConnectTimeout time.Duration
	// AcceptDelay holds each incoming request before answering it (testing:
	// it makes requests cross).
	AcceptDelay time.Duration
}

// Validate checks the configuration and fills RecvMTU's default; its error
// names the setting that is wrong (ErrConfig).
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...)
	}
	if !c.Underlay.IsValid() {
		return bad("no underlay address")
	}
	c.Underlay = c.Underlay.Unmap()
	if c.EPID == 0 || c.EPID > ipoibcm.MaxQPN {
		return bad("endpoint ID %d outside [1, %d]", c.EPID, ipoibcm.MaxQPN)
	}
	if c.MTU < ipoibcm.MinMTUIPv4 || c.MTU > ipoibcm.MaxIPv4MTU {
		return bad("MTU %d outside [%d, %d]", c.MTU, ipoibcm.MinMTUIPv4, ipoibcm.MaxIPv4MTU)
	}
	if c.RecvMTU == 0 {
		c.RecvMTU = uint32(c.MTU + ipoibcm.HeaderLen)
	}
	if c.RecvMTU < ipoibcm.HeaderLen+ipoibcm.MinMTUIPv4 || c.RecvMTU > ipoibcm.MaxIPv4MTU+ipoibcm.HeaderLen {
		return bad("receive MTU %d outside [%d, %d]", c.RecvMTU, ipoibcm.HeaderLen+ipoibcm.MinMTUIPv4, ipoibcm.MaxIPv4MTU+ipoibcm.HeaderLen)
	}
	if c.Depth < ipoibcm.MinQueueDepth || c.Depth > 0xffff {
		return bad("queue depth %d outside [%d, 65535]", c.Depth, ipoibcm.MinQueueDepth)
	}
	return nil
}

// ErrConfig is wrapped by every error about a bad Config.
var ErrConfig = errors.New("ipoib: bad configuration")

const (
	udMTU         = ipoibcm.DefaultMTU // IP MTU of the datagram channel
	maxQueued     = 64                 // packets held per neighbour while resolving or connecting
	resolveTries  = 3
	resolveEvery  = time.Second
	tickInterval  = 200 * time.Millisecond
	maxPacketSize = 65535 + ipoibcm.HeaderLen
)

// neigh is an address-resolution entry: one IP address of a peer.
type neigh struct {
	la        ipoibcm.LinkAddr
	resolved  bool
	confirmed time.Time // last time the peer answered for this address
	probing   bool
	tries     int
	nextTry   time.Time
	queue     [][]byte
}

// counters are exported by -v logging and read by tests through the log.
type counters struct {
	tunIn, tunOut, dgIn, dgOut, rcIn, rcOut, dropped, tooBig, sqFull, noCredit atomic.Uint64
}

// Link is one IPoIB-CM interface over iWARP.
type Link struct {
	cfg  Config
	me   ipoibcm.LinkAddr
	v4   netip.Prefix // our IPv4 address and subnet, if any
	v6   netip.Prefix
	tun  *os.File
	udp  *net.UDPConn
	ln   *verbs.Listener
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup
	log  *log.Logger
	st   counters

	dev *verbs.Context // the card the connections run on
	pd  *verbs.PD

	mu      sync.Mutex
	neigh   map[netip.Addr]*neigh
	tb      *ipoibcm.Table
	conns   map[ipoibcm.ConnID]*rcConn
	pending map[ipoibcm.LinkAddr][][]byte // packets waiting for a connection, by peer (flags zeroed)
}

// New makes a link from cfg (validated here); Start brings it up.
func New(cfg Config, logger *log.Logger) (*Link, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	flags := uint8(ipoibcm.FlagRC)
	if cfg.UDOnly {
		flags = 0 // a UD-only node sends the flags octet as zero (RFC 4755 §3.1)
	}
	me, err := ipoibcm.NewUnderlayLinkAddr(flags, cfg.EPID, cfg.Underlay)
	if err != nil {
		return nil, err
	}
	tb, err := ipoibcm.NewTable(ipoibcm.TableConfig{Local: me, ReceiveMTU: cfg.RecvMTU, Policy: cfg.Policy, MaxConns: cfg.MaxConns})
	if err != nil {
		return nil, err
	}
	l := &Link{cfg: cfg, me: me, tb: tb, log: logger, neigh: map[netip.Addr]*neigh{},
		conns: map[ipoibcm.ConnID]*rcConn{}, pending: map[ipoibcm.LinkAddr][][]byte{}}
	for _, p := range cfg.Addrs {
		if p.Addr().Is4() && !l.v4.IsValid() {
			l.v4 = p
		} else if p.Addr().Is6() && !l.v6.IsValid() {
			l.v6 = p
		}
	}
	return l, nil
}

func (l *Link) debugf(format string, args ...any) {
	if l.cfg.Verbose {
		l.log.Printf(format, args...)
	}
}

// Start opens the TUN device, the datagram socket and the listener, and
// starts the link's goroutines.
func (l *Link) Start() error {
	tun, name, err := openTUN(l.cfg.Dev)
	if err != nil {
		return err
	}
	l.tun, l.cfg.Dev = tun, name
	var addrs []string
	for _, p := range l.cfg.Addrs {
		addrs = append(addrs, p.String())
	}
	if err := configureTUN(name, l.cfg.MTU, addrs); err != nil {
		tun.Close()
		return err
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_BROADCAST, 1)
		})
		return errors.Join(err, serr)
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp", netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(l.cfg.UDPPort)).String())
	if err != nil {
		tun.Close()
		return fmt.Errorf("datagram channel: %w", err)
	}
	l.udp = pc.(*net.UDPConn)
	_ = l.udp.SetReadBuffer(4 << 20)
	_ = l.udp.SetWriteBuffer(4 << 20)
	if !l.cfg.UDOnly {
		fail := func(err error) error {
			tun.Close()
			l.udp.Close()
			if l.dev != nil {
				l.dev.Close()
			}
			return err
		}
		if l.dev, err = verbs.Open(l.cfg.Device); err != nil {
			return fail(fmt.Errorf("opening device %q: %w", l.cfg.Device, err))
		}
		if l.pd, err = l.dev.AllocPD(); err != nil {
			return fail(err)
		}
		l.ln, err = verbs.Listen(netip.AddrPortFrom(l.cfg.Underlay, uint16(l.cfg.TCPPort)).String(),
			verbs.ListenConfig{StartupTimeout: l.cfg.ConnectTimeout, Backlog: 64})
		if err != nil {
			return fail(fmt.Errorf("connection listener: %w", err))
		}
	}
	l.ctx, l.stop = context.WithCancel(context.Background())
	l.log.Printf("%s up: link address %v, mtu %d, receive MTU %d, policy %v, service ID %v", name, l.me, l.cfg.MTU, l.cfg.RecvMTU, l.cfg.Policy, l.cfg.SIDMode)
	l.goRun(l.tunLoop)
	l.goRun(l.datagramLoop)
	l.goRun(l.tickLoop)
	if l.ln != nil {
		l.goRun(l.acceptLoop)
	}
	return nil
}

func (l *Link) goRun(f func()) {
	l.wg.Add(1)
	go func() { defer l.wg.Done(); f() }()
}

// close tears the interface down: every connection first (RFC 4755 §3.4:
// they SHOULD go with the interface), then the sockets and the device.
// Close stops the link: connections, listener, sockets and the device.
func (l *Link) Close() {
	l.stop()
	l.mu.Lock()
	ids := l.tb.CloseAll()
	l.mu.Unlock()
	l.closeConns(ids)
	if l.ln != nil {
		l.ln.Close()
	}
	l.udp.Close()
	l.tun.Close()
	l.wg.Wait()
	if l.dev != nil {
		l.dev.Close()
	}
}

// ---- transmit: packets from the local stack ----

// lent is a send frame the transmit loop reads a packet into, from the
// connection the previous packet went on: when this one goes there too, it
// is sent from where it was read, with no copy.
type lent struct {
	c     *rcConn
	slot  int
	frame []byte  // the whole frame: header room, then the read buffer
	used  bool    // the packet went as a Send from the frame
	next  *rcConn // the connection the packet went on, if any
}

// tunLoop reads packets from the stack. It reads into a frame of the last
// connection used (while that connection's MTU holds any packet of the
// interface), else into its own buffer.
func (l *Link) tunLoop() {
	buf := make([]byte, maxPacketSize)
	var guess *rcConn
	for {
		g := lent{}
		rb := buf
		if guess != nil {
			if fr, slot, ok := guess.lend(l.cfg.MTU); ok {
				g.c, g.slot, g.frame = guess, slot, fr
				rb = fr[ipoibcm.HeaderLen:]
			} else {
				guess = nil
			}
		}
		n, err := l.tun.Read(rb)
		if err != nil {
			if g.c != nil {
				g.c.unlend(g.slot)
			}
			if l.ctx.Err() == nil {
				l.log.Printf("reading %s: %v", l.cfg.Dev, err)
			}
			return
		}
		l.st.tunIn.Add(1)
		if n < len(rb) {
			l.output(rb[:n], &g)
		} else {
			// A frame holds one octet more than the interface MTU: a read
			// that fills it may have been cut short (the MTU was raised
			// under us). Drop it rather than send a truncated packet.
			l.st.dropped.Add(1)
			l.debugf("%s: packet of %d octets or more over the MTU %d", l.cfg.Dev, n, l.cfg.MTU)
		}
		if g.c != nil && !g.used {
			g.c.unlend(g.slot)
		}
		if g.next != nil {
			guess = g.next
		}
	}
}

// output routes one packet from the stack. pkt is only valid during the
// call; g, if not nil, is the frame pkt was read into.
func (l *Link) output(pkt []byte, g *lent) {
	info, err := parseIP(pkt)
	if err != nil {
		l.st.dropped.Add(1)
		return
	}
	if info.etherType == ipoibcm.EtherTypeIPv6 {
		if m, ok, _ := parseND(pkt); ok && m.typ == ndSolicit {
			// The stack's own solicitations (for unreachability checks) are
			// answered from our table; the daemon does resolution itself.
			return
		}
	}
	subnet := l.v4
	if isGroup(info.dst, subnet) {
		// RFC 4755 §2.1: multicast and broadcast always use the UD QP.
		l.sendSized(pkt, info, udMTU, datagramSink(l.floodDatagram))
		return
	}
	l.mu.Lock()
	n := l.neigh[info.dst]
	if n == nil || !n.resolved {
		if n == nil {
			n = &neigh{}
			l.neigh[info.dst] = n
		}
		if len(n.queue) < maxQueued {
			n.queue = append(n.queue, append([]byte(nil), pkt...))
		} else {
			l.st.dropped.Add(1)
		}
		first := n.tries == 0
		if first {
			n.tries, n.nextTry = 1, time.Now().Add(resolveEvery)
		}
		l.mu.Unlock()
		if first {
			l.solicit(info.dst)
		}
		return
	}
	la := n.la
	l.mu.Unlock()
	l.deliver(la, pkt, info, g)
}

// deliver sends a unicast packet to the peer la by the best path both ends
// share. g, if not nil, is the frame pkt was read into.
func (l *Link) deliver(la ipoibcm.LinkAddr, pkt []byte, info ipInfo, g *lent) {
	if l.cfg.UDOnly || !la.HasRC() {
		// The peer is UD-only (or we are): the datagram channel, UD MTU.
		to := la.Underlay()
		l.sendSized(pkt, info, udMTU, datagramSink(func(b []byte) error { return l.sendDatagram(to, b) }))
		return
	}
	l.mu.Lock()
	var c *rcConn
	if ci, ok := l.tb.SendConn(la); ok {
		c = l.conns[ci.ID]
		l.tb.Touch(ci.ID, time.Now())
	}
	if c == nil {
		key := la.WithoutFlags()
		q := l.pending[key]
		if len(q) < maxQueued {
			l.pending[key] = append(q, append([]byte(nil), pkt...))
		} else {
			l.st.dropped.Add(1)
		}
		connect := !l.tb.Connecting(la)
		var id ipoibcm.ConnID
		var err error
		if connect {
			id, _, err = l.tb.Connect(la, time.Now())
		}
		l.mu.Unlock()
		if connect {
			if err != nil {
				l.log.Printf("connect to %v: %v", la, err)
				return
			}
			l.goRun(func() { l.dial(la, id) })
		}
		return
	}
	l.mu.Unlock()
	if g != nil {
		g.next = c
		if g.c == c && len(pkt) <= c.mtu {
			// Read straight into c's frame: add the header in front.
			b := g.frame[:ipoibcm.HeaderLen+len(pkt)]
			ipoibcm.EncapHeader{EtherType: info.etherType}.Put(b)
			g.used = true
			if err := c.send(b, g.slot); err != nil {
				l.st.dropped.Add(1)
				l.debugf("send %v -> %v: %v", info.src, info.dst, err)
			}
			return
		}
	}
	l.sendSized(pkt, info, c.mtu, c)
}

// sink is where sendSized puts encapsulated packets: frame lends a buffer
// of n octets (and an id naming it), send transmits the buffer and owns it
// from then on, on error too. A connection lends its registered send frames
// (rcConn); the datagram channel lends pooled buffers (datagramSink).
type sink interface {
	frame(n int) (b []byte, id int, err error)
	send(b []byte, id int) error
}

// datagramSink sends through the datagram channel from pooled buffers.
type datagramSink func([]byte) error

func (s datagramSink) frame(n int) ([]byte, int, error) { return getFrame(n), 0, nil }

func (s datagramSink) send(b []byte, _ int) error {
	defer putFrame(b)
	return s(b)
}

// frames recycles the buffers datagrams are framed in: at tens of thousands
// of 64 KiB packets a second, fresh ones would keep the collector busy.
var frames = sync.Pool{New: func() any { b := make([]byte, 0, maxPacketSize); return &b }}

func getFrame(n int) []byte { return (*frames.Get().(*[]byte))[:n] }

// putFrame returns a buffer from getFrame; other buffers are left alone.
func putFrame(b []byte) {
	if cap(b) == maxPacketSize {
		b = b[:0]
		frames.Put(&b)
	}
}

// sendSized encapsulates pkt straight into a frame of s and sends it if it
// fits mtu; otherwise IPv4 without DF is fragmented and anything else gets
// the ICMP error that teaches the stack the per-destination MTU (RFC 4755
// §7.2).
func (l *Link) sendSized(pkt []byte, info ipInfo, mtu int, s sink) {
	emit := func(p []byte) error {
		b, id, err := s.frame(ipoibcm.HeaderLen + len(p))
		if err != nil {
			return err
		}
		ipoibcm.EncapHeader{EtherType: info.etherType}.Put(b)
		copy(b[ipoibcm.HeaderLen:], p)
		return s.send(b, id)
	}
	var err error
	switch {
	case len(pkt) <= mtu:
		err = emit(pkt)
	case info.etherType == ipoibcm.EtherTypeIPv4 && !info.df:
		err = fragment4(pkt, mtu, emit)
	default:
		// The error comes from the destination's address: the stack drops
		// packets that arrive with one of its own addresses as source.
		l.st.tooBig.Add(1)
		if icmp, e := tooBig(pkt, info, info.dst, mtu); e == nil {
			l.writeTUN(icmp)
		}
		return
	}
	if err != nil {
		l.st.dropped.Add(1)
		l.debugf("send %v -> %v: %v", info.src, info.dst, err)
	}
}

func (l *Link) writeTUN(pkt []byte) {
	if _, err := l.tun.Write(pkt); err != nil {
		l.st.dropped.Add(1)
		l.debugf("writing %s: %v", l.cfg.Dev, err)
		return
	}
	l.st.tunOut.Add(1)
}

// ---- the datagram channel (stands in for the UD QP, digest §13) ----

func (l *Link) sendDatagram(to netip.Addr, b []byte) error {
	_, err := l.udp.WriteToUDPAddrPort(b, netip.AddrPortFrom(to, uint16(l.cfg.UDPPort)))
	if err == nil {
		l.st.dgOut.Add(1)
	}
	return err
}

// floodDatagram sends b to every flood destination: broadcast and multicast
// replicated over the underlay.
func (l *Link) floodDatagram(b []byte) error {
	var errs []error
	for _, to := range l.cfg.Flood {
		errs = append(errs, l.sendDatagram(to, b))
	}
	return errors.Join(errs...)
}

// solicit sends an address-resolution request for dst over the datagram channel.
func (l *Link) solicit(dst netip.Addr) {
	var pkt []byte
	et := ipoibcm.EtherTypeARP
	switch {
	case dst.Is4() && l.v4.IsValid():
		a, err := ipoibcm.ARP{Op: ipoibcm.ARPRequest, SenderHW: l.me, SenderIP: l.v4.Addr(), TargetIP: dst}.Append(nil)
		if err != nil {
			return
		}
		pkt = a
	case dst.Is6() && l.v6.IsValid():
		pkt, et = buildNS(l.v6.Addr(), dst, l.me), ipoibcm.EtherTypeIPv6
	default:
		return
	}
	l.debugf("resolving %v", dst)
	_ = l.floodDatagram(append(ipoibcm.EncapHeader{EtherType: et}.Append(nil), pkt...))
}

func (l *Link) datagramLoop() {
	buf := make([]byte, 65536)
	for {
		n, from, err := l.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			if l.ctx.Err() == nil {
				l.log.Printf("datagram channel: %v", err)
			}
			return
		}
		if from.Addr().Unmap() == l.cfg.Underlay && int(from.Port()) == l.cfg.UDPPort {
			continue // our own flood, looped back
		}
		l.st.dgIn.Add(1)
		if err := l.inputDatagram(buf[:n], from.Addr().Unmap()); err != nil {
			l.st.dropped.Add(1)
			l.debugf("datagram from %v: %v", from, err)
		}
	}
}

func (l *Link) inputDatagram(b []byte, from netip.Addr) error {
	h, p, err := ipoibcm.ParseEncap(b, false)
	if err != nil {
		return err
	}
	if err := ipoibcm.CheckEtherType(h.EtherType, ipoibcm.ChannelDatagram); err != nil {
		return err
	}
	if h.EtherType == ipoibcm.EtherTypeARP {
		a, err := ipoibcm.ParseARP(p)
		if err != nil {
			return err
		}
		return l.handleARP(a, from)
	}
	return l.inputIP(h.EtherType, p, from)
}

// inputIP hands a unicast or group packet that arrived on any channel to the
// stack (RFC 4755 §7: unicast IP is accepted on every mode we support).
func (l *Link) inputIP(et uint16, p []byte, from netip.Addr) error {
	info, err := parseIP(p)
	if err != nil {
		return err
	}
	if info.etherType != et {
		return fmt.Errorf("EtherType %#04x carries an IPv%d packet", et, p[0]>>4)
	}
	if et == ipoibcm.EtherTypeIPv6 {
		m, ok, err := parseND(p)
		if err != nil {
			return err
		}
		if ok {
			return l.handleND(m, from)
		}
	}
	l.writeTUN(p)
	return nil
}

// checkSender refuses a resolution message whose link-layer address names
// another underlay host than the one it came from (an impostor, §8).
func checkSender(la ipoibcm.LinkAddr, from netip.Addr) error {
	if la.Underlay() != from {
		return fmt.Errorf("link-layer address %v does not belong to sender %v", la, from)
	}
	return nil
}

func (l *Link) handleARP(a ipoibcm.ARP, from netip.Addr) error {
	if err := checkSender(a.SenderHW, from); err != nil {
		return err
	}
	forUs := l.v4.IsValid() && a.TargetIP == l.v4.Addr()
	if forUs || l.known(a.SenderIP) {
		l.learn(a.SenderIP, a.SenderHW)
	}
	if a.Op == ipoibcm.ARPRequest && forUs {
		// RFC 4755 §7: address-resolution answers always go as UD, unicast.
		rep, err := ipoibcm.ARP{Op: ipoibcm.ARPReply, SenderHW: l.me, SenderIP: a.TargetIP, TargetHW: a.SenderHW, TargetIP: a.SenderIP}.Append(
			ipoibcm.EncapHeader{EtherType: ipoibcm.EtherTypeARP}.Append(nil))
		if err != nil {
			return err
		}
		return l.sendDatagram(a.SenderHW.Underlay(), rep)
	}
	return nil
}

func (l *Link) handleND(m ndMsg, from netip.Addr) error {
	if !m.hasLL {
		return nil
	}
	if err := checkSender(m.ll, from); err != nil {
		return err
	}
	switch m.typ {
	case ndSolicit:
		if !l.ownAddr(m.target) {
			return nil
		}
		if m.src.IsValid() && !m.src.IsUnspecified() {
			l.learn(m.src, m.ll)
		}
		na := buildNA(m.target, m.src, l.me)
		return l.sendDatagram(m.ll.Underlay(), append(ipoibcm.EncapHeader{EtherType: ipoibcm.EtherTypeIPv6}.Append(nil), na...))
	case ndAdvert:
		if l.known(m.target) {
			l.learn(m.target, m.ll)
		}
	}
	return nil
}

// ownAddr reports whether ip is configured on our interface (the kernel adds
// a link-local IPv6 address of its own, for one).
func (l *Link) ownAddr(ip netip.Addr) bool {
	ifi, err := net.InterfaceByName(l.cfg.Dev)
	if err != nil {
		return false
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if x, ok := netip.AddrFromSlice(n.IP); ok && x.Unmap() == ip {
				return true
			}
		}
	}
	return false
}

func (l *Link) known(ip netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.neigh[ip] != nil
}

// learn records ip -> la and sends what was waiting for it.
func (l *Link) learn(ip netip.Addr, la ipoibcm.LinkAddr) {
	l.mu.Lock()
	n := l.neigh[ip]
	if n == nil {
		n = &neigh{}
		l.neigh[ip] = n
	}
	if n.resolved && n.la != la {
		l.log.Printf("neighbour %v moved from %v to %v", ip, n.la, la)
	}
	n.la, n.resolved, n.confirmed, n.probing, n.tries = la, true, time.Now(), false, 0
	q := n.queue
	n.queue = nil
	l.mu.Unlock()
	if len(q) > 0 {
		l.debugf("resolved %v -> %v, sending %d queued", ip, la, len(q))
	}
	for _, p := range q {
		if info, err := parseIP(p); err == nil {
			l.deliver(la, p, info, nil)
		}
	}
}

// ---- timers: resolution retries, entry expiry, idle connections ----

func (l *Link) tickLoop() {
	t := time.NewTicker(tickInterval)
	defer t.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case now := <-t.C:
			l.tick(now)
		}
	}
}

func (l *Link) tick(now time.Time) {
	var resolve []netip.Addr
	var teardown []*rcConn
	l.mu.Lock()
	for ip, n := range l.neigh {
		switch {
		case !n.resolved && now.After(n.nextTry):
			if n.tries >= resolveTries {
				l.st.dropped.Add(uint64(len(n.queue)))
				delete(l.neigh, ip)
				continue
			}
			n.tries++
			n.nextTry = now.Add(resolveEvery)
			resolve = append(resolve, ip)
		case n.resolved && now.Sub(n.confirmed) > l.cfg.NeighTTL:
			// RFC 4755 §3.4: the connection MAY go when the entry expires,
			// unless another address still resolves to the same peer.
			delete(l.neigh, ip)
			if !l.peerStillKnown(n.la) {
				for _, id := range l.tb.Forget(n.la) {
					teardown = append(teardown, l.dropConnLocked(id))
				}
			}
		case n.resolved && now.Sub(n.confirmed) > l.cfg.NeighTTL/2 && !n.probing:
			n.probing = true // refresh before expiry while the entry is in use
			resolve = append(resolve, ip)
		}
	}
	for _, id := range l.tb.Idle(now, l.cfg.Idle) {
		l.debugf("connection %d idle for %v: tearing down", id, l.cfg.Idle)
		teardown = append(teardown, l.dropConnLocked(id))
	}
	l.mu.Unlock()
	for _, c := range teardown {
		if c != nil {
			c.close()
		}
	}
	for _, ip := range resolve {
		l.solicit(ip)
	}
}

func (l *Link) peerStillKnown(la ipoibcm.LinkAddr) bool {
	for _, n := range l.neigh {
		if n.resolved && n.la.Compare(la) == 0 {
			return true
		}
	}
	return false
}

// dropConnLocked removes id from the table and the map and returns the
// connection for the caller to close outside the lock.
func (l *Link) dropConnLocked(id ipoibcm.ConnID) *rcConn {
	l.tb.Close(id)
	c := l.conns[id]
	delete(l.conns, id)
	return c
}

// Stats are the link's counters.
type Stats struct {
	TUNIn       uint64 `json:"tun_in"`       // packets read from the interface
	TUNOut      uint64 `json:"tun_out"`      // packets written to the interface
	DatagramIn  uint64 `json:"datagram_in"`  // datagrams received on the channel that stands in for the UD QP
	DatagramOut uint64 `json:"datagram_out"` // datagrams sent on it
	ConnIn      uint64 `json:"conn_in"`      // IP packets received as Sends on connections
	ConnOut     uint64 `json:"conn_out"`     // IP packets sent as Sends on connections
	TooBig      uint64 `json:"too_big"`      // ICMP too-big messages generated
	Dropped     uint64 `json:"dropped"`      // packets dropped
	CreditWaits uint64 `json:"credit_waits"` // times a packet waited for a credit
	SQWaits     uint64 `json:"sq_waits"`     // times a packet waited for send-queue room
	Connections int    `json:"connections"`  // connections open now
}

// Stats reads the counters.
func (l *Link) Stats() Stats {
	l.mu.Lock()
	conns := len(l.conns)
	l.mu.Unlock()
	s := &l.st
	return Stats{s.tunIn.Load(), s.tunOut.Load(), s.dgIn.Load(), s.dgOut.Load(), s.rcIn.Load(), s.rcOut.Load(),
		s.tooBig.Load(), s.dropped.Load(), s.noCredit.Load(), s.sqFull.Load(), conns}
}
