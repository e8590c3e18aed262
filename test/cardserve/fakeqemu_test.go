package cardserve_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/test/cardserve"
)

// fakeQEMU is QEMU's side of an x-pci-proxy-dev and of an ivshmem-doorbell,
// as QEMU 7.2 speaks them, over the sockets the Server serves: guest RAM
// is a memfd shared with the Server in two regions (below 4 GiB and above
// it, as on a q35 machine), accesses are messages answered one at a time.
type fakeQEMU struct {
	t   testing.TB
	mu  sync.Mutex
	c   *net.UnixConn
	ram []byte       // the memfd, mapped
	fd  *os.File     // the memfd
	reg [2][2]uint64 // {gpa, size} of each region; region i is at file offset i*size
	bar uint64       // BAR0's bus address
	irq []*os.File   // the guest's ivshmem eventfds
}

const (
	fakeBAR   = 0xfebc0000
	fakeHigh  = 1 << 32
	fakeRAMMB = 64
)

// newFakeQEMU starts s on a socketpair (and its ivshmem server, unless
// noIRQ), shares 64 MiB of RAM with it and programs BAR0, as firmware does.
func newFakeQEMU(t testing.TB, s *cardserve.Server, noIRQ bool) *fakeQEMU {
	theirs, ours, err := cardserve.ProxySocket()
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.ServeProxy(ours) }()
	c, err := net.FileConn(theirs)
	require.NoError(t, err)
	theirs.Close()
	q := &fakeQEMU{t: t, c: c.(*net.UnixConn)}
	t.Cleanup(func() {
		q.c.Close()
		require.NoError(t, <-served, "ServeProxy")
		ours.Close()
	})
	mfd, err := unix.MemfdCreate("fake-guest-ram", unix.MFD_CLOEXEC)
	require.NoError(t, err)
	q.fd = os.NewFile(uintptr(mfd), "guest-ram")
	half := uint64(fakeRAMMB << 20 / 2)
	require.NoError(t, q.fd.Truncate(int64(2*half)))
	q.ram, err = unix.Mmap(mfd, 0, int(2*half), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Munmap(q.ram); q.fd.Close() })
	q.reg = [2][2]uint64{{0, half}, {fakeHigh, half}}
	q.syncSysmem()
	if !noIRQ {
		q.irq = ivshmemClient(t, s)
	}
	q.cfgWrite(0x10, fakeBAR, 4)
	q.cfgWrite(0x04, 0x06, 2) // memory space, bus master
	q.bar = fakeBAR
	return q
}

// gpa is the guest-physical address of q.ram[off].
func (q *fakeQEMU) gpa(off uint64) uint64 {
	r := q.reg[off/q.reg[0][1]]
	return r[0] + off%q.reg[0][1]
}

// send writes one message (16-byte header, payload, descriptors).
func (q *fakeQEMU) send(cmd int32, payload []byte, fds ...int) {
	b := make([]byte, 16+len(payload))
	binary.LittleEndian.PutUint32(b, uint32(cmd))
	binary.LittleEndian.PutUint64(b[8:], uint64(len(payload)))
	copy(b[16:], payload)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	_, _, err := q.c.WriteMsgUnix(b, oob, nil)
	require.NoError(q.t, err)
}

// call sends a request and waits for its RET.
func (q *fakeQEMU) call(cmd int32, payload []byte) uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.send(cmd, payload)
	var r [24]byte
	_, err := ioReadFull(q.c, r[:])
	require.NoError(q.t, err)
	require.EqualValues(q.t, 1, binary.LittleEndian.Uint32(r[:]), "reply command")
	require.EqualValues(q.t, 8, binary.LittleEndian.Uint64(r[8:]), "reply size")
	return binary.LittleEndian.Uint64(r[16:])
}

func ioReadFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (q *fakeQEMU) syncSysmem() {
	p := make([]byte, 192)
	for i, r := range q.reg {
		binary.LittleEndian.PutUint64(p[8*i:], r[0])
		binary.LittleEndian.PutUint64(p[64+8*i:], r[1])
		binary.LittleEndian.PutUint64(p[128+8*i:], uint64(i)*r[1])
	}
	fd := int(q.fd.Fd())
	q.mu.Lock()
	q.send(0, p, fd, fd)
	q.mu.Unlock()
}

func cfgMsg(addr, val uint32, n int32) []byte {
	p := make([]byte, 12)
	binary.LittleEndian.PutUint32(p, addr)
	binary.LittleEndian.PutUint32(p[4:], val)
	binary.LittleEndian.PutUint32(p[8:], uint32(n))
	return p
}

func (q *fakeQEMU) cfgRead(addr uint32, n int32) uint32 { return uint32(q.call(3, cfgMsg(addr, 0, n))) }
func (q *fakeQEMU) cfgWrite(addr, v uint32, n int32)    { q.call(2, cfgMsg(addr, v, n)) }

func barMsg(addr, val uint64, n uint32) []byte {
	p := make([]byte, 24)
	binary.LittleEndian.PutUint64(p, addr)
	binary.LittleEndian.PutUint64(p[8:], val)
	binary.LittleEndian.PutUint32(p[16:], n)
	p[20] = 1 // memory
	return p
}

func (q *fakeQEMU) barRead(off uint32, n uint32) uint64 {
	return q.call(5, barMsg(q.bar+uint64(off), 0, n))
}
func (q *fakeQEMU) barWrite(off uint32, v uint64, n uint32) {
	q.call(4, barMsg(q.bar+uint64(off), v, n))
}

// ivshmemClient connects to s's ivshmem server as ivshmem-doorbell does
// and returns the guest's eventfds after checking the setup messages.
func ivshmemClient(t testing.TB, s *cardserve.Server) []*os.File {
	path := filepath.Join(t.TempDir(), "ivshmem.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.ServeIVShmem(l) }()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	t.Cleanup(func() {
		c.Close()
		l.Close()
		require.NoError(t, <-done)
	})
	recv := func() (int64, *os.File) {
		var b [8]byte
		oob := make([]byte, unix.CmsgSpace(4))
		n, oobn, _, _, err := c.ReadMsgUnix(b[:], oob)
		require.NoError(t, err)
		require.Equal(t, 8, n)
		var f *os.File
		if oobn > 0 {
			cms, err := unix.ParseSocketControlMessage(oob[:oobn])
			require.NoError(t, err)
			fds, err := unix.ParseUnixRights(&cms[0])
			require.NoError(t, err)
			f = os.NewFile(uintptr(fds[0]), "ivshmem")
		}
		return int64(binary.LittleEndian.Uint64(b[:])), f
	}
	v, f := recv()
	require.Zero(t, v, "protocol version")
	require.Nil(t, f)
	id, f := recv()
	require.Nil(t, f)
	v, shm := recv()
	require.EqualValues(t, -1, v)
	require.NotNil(t, shm)
	st, err := shm.Stat()
	require.NoError(t, err)
	require.True(t, st.Size() > 0 && st.Size()&(st.Size()-1) == 0, "shared memory of %d bytes: a power of two", st.Size())
	shm.Close()
	var irq []*os.File
	for range 1 {
		v, f := recv()
		require.Equal(t, id, v, "the guest's own eventfds")
		require.NotNil(t, f)
		irq = append(irq, f)
	}
	return irq
}

// waitIRQ waits until the card raised vector v.
func (q *fakeQEMU) waitIRQ(ctx context.Context, v int) error {
	if v >= len(q.irq) {
		return fmt.Errorf("%w: vector %d", driver.ErrInvalid, v)
	}
	fd := int(q.irq[v].Fd())
	for {
		var b [8]byte
		if _, err := unix.Read(fd, b[:]); err == nil {
			return nil
		} else if !errors.Is(err, unix.EAGAIN) {
			return err
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, 20); err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
