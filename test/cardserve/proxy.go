package cardserve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// The x-pci-proxy-dev wire protocol of QEMU 7.2 (hw/remote/mpqemu-link.c,
// include/hw/remote/mpqemu-link.h): host byte order (x86-64 little-endian),
// native struct layout. Every message is a 16-byte header (int32 cmd, 4
// bytes of padding, uint64 size) followed by exactly size payload bytes;
// file descriptors ride as SCM_RIGHTS on the header's bytes.
const (
	cmdSyncSysmem = 0
	cmdRet        = 1
	cmdCfgWrite   = 2
	cmdCfgRead    = 3
	cmdBARWrite   = 4
	cmdBARRead    = 5
	cmdSetIRQFD   = 6
	cmdDevReset   = 7

	hdrSize     = 16
	maxFDs      = 8           // REMOTE_MAX_FDS
	syncSysmemN = 3 * 8 * 8   // gpas[8], sizes[8], offsets[8]
	maxPayload  = syncSysmemN // the largest message QEMU sends
	cfgMsgSize  = 12          // PciConfDataMsg{u32 addr; u32 val; i32 len}
	barMsgSize  = 24          // BarAccessMsg{u64 addr; u64 val; u32 size; bool memory; pad}
)

// ErrProtocol: QEMU's side of the proxy socket sent something this
// package does not understand (an unknown command, a payload of the wrong
// size). The connection ends, as QEMU's own remote ends it.
var ErrProtocol = errors.New("cardserve: x-pci-proxy-dev protocol error")

var cmdNames = [...]string{"SYNC_SYSMEM", "RET", "PCI_CFGWRITE", "PCI_CFGREAD", "BAR_WRITE", "BAR_READ", "SET_IRQFD", "DEVICE_RESET"}

func cmdName(c int32) string {
	if c >= 0 && int(c) < len(cmdNames) {
		return cmdNames[c]
	}
	return fmt.Sprintf("command %d", c)
}

// message is one message from QEMU.
type message struct {
	cmd     int32
	payload []byte
	files   []*os.File // received descriptors; the receiver closes them
}

func (m *message) closeFiles() {
	for _, f := range m.files {
		f.Close()
	}
	m.files = nil
}

// link is one proxy socket.
type link struct {
	c   *net.UnixConn
	hdr [hdrSize]byte
	oob []byte
	buf [maxPayload]byte
	out [hdrSize + 8]byte
}

func newLink(c *net.UnixConn) *link {
	return &link{c: c, oob: make([]byte, unix.CmsgSpace(maxFDs*4))}
}

// recv reads one message. io.EOF: QEMU closed the socket between messages.
func (l *link) recv() (message, error) {
	var m message
	got := 0
	for got < hdrSize {
		n, oobn, _, _, err := l.c.ReadMsgUnix(l.hdr[got:], l.oob)
		if oobn > 0 {
			fs, perr := parseRights(l.oob[:oobn])
			m.files = append(m.files, fs...)
			if perr != nil {
				m.closeFiles()
				return m, perr
			}
		}
		if err != nil || n == 0 {
			m.closeFiles()
			if got == 0 && (err == nil || errors.Is(err, io.EOF)) {
				return m, io.EOF
			}
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return m, fmt.Errorf("%w: reading a message header: %w", ErrProtocol, err)
		}
		got += n
	}
	m.cmd = int32(binary.LittleEndian.Uint32(l.hdr[0:]))
	size := binary.LittleEndian.Uint64(l.hdr[8:])
	if size > maxPayload {
		m.closeFiles()
		return m, fmt.Errorf("%w: %s with a %d-byte payload (at most %d)", ErrProtocol, cmdName(m.cmd), size, maxPayload)
	}
	m.payload = l.buf[:size]
	if _, err := io.ReadFull(l.c, m.payload); err != nil {
		m.closeFiles()
		return m, fmt.Errorf("%w: reading the %d-byte payload of %s: %w", ErrProtocol, size, cmdName(m.cmd), err)
	}
	return m, nil
}

// ret replies to the message being served with value v.
func (l *link) ret(v uint64) error {
	binary.LittleEndian.PutUint32(l.out[0:], cmdRet)
	binary.LittleEndian.PutUint64(l.out[8:], 8)
	binary.LittleEndian.PutUint64(l.out[16:], v)
	if _, err := l.c.Write(l.out[:]); err != nil {
		return fmt.Errorf("cardserve: replying to QEMU: %w", err)
	}
	return nil
}

// parseRights turns SCM_RIGHTS control messages into files.
func parseRights(oob []byte) ([]*os.File, error) {
	cms, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("%w: control message: %w", ErrProtocol, err)
	}
	var fs []*os.File
	for _, cm := range cms {
		fds, err := unix.ParseUnixRights(&cm)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			fs = append(fs, os.NewFile(uintptr(fd), "qemu-fd"))
		}
	}
	return fs, nil
}

// needSize checks a payload's size.
func needSize(m message, n int) error {
	if len(m.payload) != n {
		return fmt.Errorf("%w: %s with a %d-byte payload, want %d", ErrProtocol, cmdName(m.cmd), len(m.payload), n)
	}
	return nil
}

// ProxySocket makes the socketpair of an x-pci-proxy-dev: qemu is the end
// to hand QEMU (as an inherited descriptor, -device
// x-pci-proxy-dev,fd=N), ours the end to pass to ServeProxy. The caller
// closes qemu once QEMU has started.
func ProxySocket() (qemu *os.File, ours *net.UnixConn, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("cardserve: socketpair: %w", err)
	}
	qemu = os.NewFile(uintptr(fds[0]), "x-pci-proxy-dev")
	f := os.NewFile(uintptr(fds[1]), "cardserve")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		qemu.Close()
		return nil, nil, fmt.Errorf("cardserve: proxy socket: %w", err)
	}
	return qemu, c.(*net.UnixConn), nil
}
