package cardserve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"

	"golang.org/x/sys/unix"
)

// The ivshmem server protocol (QEMU docs/specs/ivshmem-spec.rst): the
// server sends 8-byte little-endian integers, each optionally carrying one
// descriptor. On connect: the protocol version (0), the client's ID, -1
// with the shared memory's descriptor, then, for each peer, its ID once per
// vector, each with the eventfd that rings that vector of that peer. The
// client's own ID with eventfds gives it the eventfds it is interrupted on:
// QEMU's ivshmem-doorbell turns a write to its eventfd v into its MSI-X
// vector v (under TCG too: a main-loop handler, not an irqfd).

// ErrNoGuest: the card raised an interrupt while no ivshmem-doorbell
// device was connected (or for a vector beyond those it set up).
var ErrNoGuest = errors.New("cardserve: no ivshmem guest to interrupt")

// ivshmemSHM is the size of the shared memory ivshmem-doorbell shows as
// its BAR2 (unused: the card's memory is the guest's RAM).
const ivshmemSHM = 64 << 10

// guestID is the ID given to the (only) ivshmem client.
const guestID = 0

// ivshmemPeer is the connected guest's interrupt eventfds.
type ivshmemPeer struct {
	mu  sync.Mutex
	fds []int // the guest's eventfds, one per vector; nil: no guest
}

func (p *ivshmemPeer) raise(v int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v < 0 || v >= len(p.fds) {
		return fmt.Errorf("%w: vector %d (%d set up)", ErrNoGuest, v, len(p.fds))
	}
	var one [8]byte
	binary.LittleEndian.PutUint64(one[:], 1)
	if _, err := unix.Write(p.fds[v], one[:]); err != nil && !errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("cardserve: raising vector %d: %w", v, err)
	}
	return nil
}

func (p *ivshmemPeer) set(fds []int) {
	p.mu.Lock()
	old := p.fds
	p.fds = fds
	p.mu.Unlock()
	for _, fd := range old {
		unix.Close(fd)
	}
}

func (p *ivshmemPeer) drop() { p.set(nil) }

// ServeIVShmem is the ivshmem server on l (QEMU's ivshmem-doorbell
// connects to it as a chardev socket client; l must be listening before
// QEMU starts, which waits for the shared memory while it creates the
// device). It serves one guest at a time, each for as long as its
// connection lasts, until l is closed (it then returns nil).
func (s *Server) ServeIVShmem(l *net.UnixListener) error {
	for {
		c, err := l.AcceptUnix()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cardserve: ivshmem server: %w", err)
		}
		if err := s.ivshmemClient(c); err != nil {
			s.report(err)
		}
	}
}

// ivshmemClient sets one guest up and waits until it goes away.
func (s *Server) ivshmemClient(c *net.UnixConn) error {
	defer c.Close()
	shm, err := unix.MemfdCreate("cardserve-ivshmem", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("cardserve: ivshmem shared memory: %w", err)
	}
	defer unix.Close(shm)
	if err := unix.Ftruncate(shm, ivshmemSHM); err != nil {
		return fmt.Errorf("cardserve: ivshmem shared memory: %w", err)
	}
	fds := make([]int, 0, s.cfg.Vectors)
	keep := false
	defer func() {
		if !keep {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}
	}()
	for range s.cfg.Vectors {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			return fmt.Errorf("cardserve: ivshmem eventfd: %w", err)
		}
		fds = append(fds, fd)
	}
	send := func(v int64, fd int) error {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		var oob []byte
		if fd >= 0 {
			oob = unix.UnixRights(fd)
		}
		if _, _, err := c.WriteMsgUnix(b[:], oob, nil); err != nil {
			return fmt.Errorf("cardserve: ivshmem server: sending %d: %w", v, err)
		}
		return nil
	}
	if err := send(0, -1); err != nil { // protocol version
		return err
	}
	if err := send(guestID, -1); err != nil {
		return err
	}
	if err := send(-1, shm); err != nil {
		return err
	}
	for _, fd := range fds {
		if err := send(guestID, fd); err != nil {
			return err
		}
	}
	keep = true
	s.irq.set(fds)
	// The client never sends; a read returns when it goes away.
	var b [1]byte
	for {
		if _, err := c.Read(b[:]); err != nil {
			break
		}
	}
	s.irq.mu.Lock()
	mine := len(s.irq.fds) > 0 && s.irq.fds[0] == fds[0]
	s.irq.mu.Unlock()
	if mine {
		s.irq.drop()
	}
	return nil
}
