package ipoib

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/openiwarp/openiwarp/golden/ipoibcm"
	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
)

// RawPeer is a hand-driven iWARP peer used to misbehave towards a daemon:
// it speaks MPA and RDMAP correctly but breaks RFC 4755 and the credit rules
// on purpose.
type RawPeer struct {
	Conn   *net.TCPConn
	Params mpa.Params
	Hello  ipoibcm.Hello // what the daemon answered
	EP     *iwarp.Endpoint
	mr     *mem.MR
	cq     *iwarp.CQ
	recvs  int
}

// DialRaw connects from namespace ns to a daemon at to:port and runs the MPA
// exchange with private data pd. A reject returns an error matching
// mpa.ErrRejected with the daemon's answer in Hello.
func DialRaw(ns string, to netip.Addr, port int, pd []byte) (*RawPeer, error) {
	var nc net.Conn
	if err := In(ns, func() error {
		var err error
		nc, err = net.DialTimeout("tcp", netip.AddrPortFrom(to, uint16(port)).String(), 5*time.Second)
		return err
	}); err != nil {
		return nil, err
	}
	r := &RawPeer{Conn: nc.(*net.TCPConn)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	r.Params, err = mpa.Initiate(ctx, r.Conn, mpa.Config{PrivateData: pd})
	if h, perr := ipoibcm.ParseHello(r.Params.PeerPD); perr == nil {
		r.Hello = h
	}
	if err != nil {
		r.Conn.Close()
		return r, err
	}
	return r, nil
}

// Start runs an endpoint with recvs receive buffers of size octets posted
// before it reads (they are never posted again).
func (r *RawPeer) Start(recvs, size int) error {
	r.recvs = recvs
	pd := mem.NewTable().AllocPD()
	var err error
	if r.mr, err = pd.RegisterMR(make([]byte, recvs*size), 0, mem.LocalWrite, 0); err != nil {
		return err
	}
	r.cq = iwarp.NewCQ(4096)
	if r.EP, err = iwarp.New(r.Conn, r.Params, iwarp.Config{PD: pd, SendCQ: r.cq, RecvCQ: r.cq, SQDepth: 4096, RQDepth: max(recvs, 1)}); err != nil {
		return err
	}
	for i := 0; i < recvs; i++ {
		if err := r.EP.PostRecv(iwarp.RecvWR{ID: uint64(i), SGL: []iwarp.SGE{{Addr: uint64(i * size), Length: uint32(size), LKey: r.mr.STag}}}); err != nil {
			return err
		}
	}
	return nil
}

// Open does the initiator's part of the opening: a zero-length RDMA Write,
// then the daemon's ready.
func (r *RawPeer) Open() error {
	if err := r.EP.PostSend(iwarp.SendWR{Opcode: iwarp.WRWrite}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wc, err := r.cq.Wait(ctx)
	if err != nil {
		return err
	}
	if wc.Status != iwarp.WCSuccess || wc.Opcode != iwarp.WCRecv {
		return fmt.Errorf("waiting for ready: %v %v", wc.Opcode, wc.Status)
	}
	off := int(wc.ID) * (len(r.mr.Buf) / r.recvs)
	h, p, err := ipoibcm.ParseEncap(r.mr.Buf[off:off+int(wc.ByteLen)], true)
	if err != nil {
		return err
	}
	if c, err := ipoibcm.ParseControl(p); err != nil || h.EtherType != ipoibcm.EtherTypeCredit || c.Kind != ipoibcm.ControlReady {
		return fmt.Errorf("first message is not ready: %x", r.mr.Buf[off:off+int(wc.ByteLen)])
	}
	return nil
}

// Send posts one message.
func (r *RawPeer) Send(msg []byte) error {
	return r.EP.PostSend(iwarp.SendWR{Opcode: iwarp.WRSend, Inline: msg})
}

// WaitDone waits for the daemon to end the connection and returns why.
func (r *RawPeer) WaitDone(d time.Duration) (error, bool) {
	select {
	case <-r.EP.Done():
		return r.EP.Err(), true
	case <-time.After(d):
		return nil, false
	}
}

// Close closes the endpoint or, without one, the TCP connection.
func (r *RawPeer) Close() {
	if r.EP != nil {
		r.EP.Close()
		return
	}
	r.Conn.Close()
}

// HelloFor builds private data for a daemon with endpoint ID target.
func HelloFor(target uint32, epid uint32, recvMTU uint32, credits uint16, mode ipoibcm.SIDMode) []byte {
	sid, _ := ipoibcm.ServiceID(target, mode)
	b, _ := ipoibcm.Hello{PrivateData: ipoibcm.PrivateData{UDQPN: epid, ReceiveMTU: recvMTU},
		Extension: ipoibcm.Extension{Credits: credits, ServiceID: sid}}.Append(nil)
	return b
}

// IPv4Packet is an encapsulated IPv4 packet of total octets (header
// included) from src to dst with an unassigned protocol number, which the
// receiving stack drops.
func IPv4Packet(src, dst netip.Addr, total int) []byte {
	b := ipoibcm.EncapHeader{EtherType: ipoibcm.EtherTypeIPv4}.Append(nil)
	h := make([]byte, total)
	h[0], h[8], h[9] = 0x45, 64, 253 // RFC 3692 experimental protocol
	binary.BigEndian.PutUint16(h[2:], uint16(total))
	s, d := src.As4(), dst.As4()
	copy(h[12:], s[:])
	copy(h[16:], d[:])
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(h[10:], ^uint16(sum))
	return append(b, h...)
}

// SendDatagrams sends each payload as one UDP datagram from namespace ns to
// to:port (the daemon's datagram channel).
func SendDatagrams(ns string, to netip.Addr, port int, payloads ...[]byte) error {
	var c net.Conn
	if err := In(ns, func() error {
		var err error
		c, err = net.Dial("udp", netip.AddrPortFrom(to, uint16(port)).String())
		return err
	}); err != nil {
		return err
	}
	defer c.Close()
	for _, p := range payloads {
		if _, err := c.Write(p); err != nil {
			return err
		}
	}
	return nil
}
