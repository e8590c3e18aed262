package vfio

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// IRQType is a PCI interrupt mechanism.
type IRQType int

const (
	INTx IRQType = irqIndexINTx // the legacy pin; one vector, level-triggered
	MSI  IRQType = irqIndexMSI  // message-signalled, up to 32 vectors
	MSIX IRQType = irqIndexMSIX // MSI-X, up to 2048 vectors
)

func (t IRQType) String() string {
	switch t {
	case INTx:
		return "INTx"
	case MSI:
		return "MSI"
	case MSIX:
		return "MSI-X"
	}
	return fmt.Sprintf("IRQType(%d)", int(t))
}

// Interrupt reports that a vector fired Count times since it was last
// reported (the eventfd counter coalesces interrupts nobody has read yet).
type Interrupt struct {
	Vector int
	Count  uint64
}

// Interrupts is a set of vectors of one IRQ type, each delivered by the
// kernel to an eventfd that this package waits on with the Go runtime's
// poller (no thread blocked per vector, no poll() to restart on EINTR).
// Interrupts arrive on C, or on the handler given to EnableInterruptsFunc.
type Interrupts struct {
	d       *Device
	typ     IRQType
	info    IRQInfo
	files   []*os.File
	c       chan Interrupt
	handler func(Interrupt)
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
	err     error
	// disable tells the device to stop signalling (SET_IRQS with count 0).
	disable func() error
}

// IRQInfo reports the device's interrupts of type t (Count 0: none).
func (d *Device) IRQInfo(t IRQType) (IRQInfo, error) {
	op := "IRQ info " + t.String()
	if err := d.check(op); err != nil {
		return IRQInfo{}, err
	}
	if t < INTx || t > MSIX || uint32(t) >= d.info.NumIRQs {
		return IRQInfo{}, newErr(op, d.String(), ErrNotSupported, fmt.Sprintf("the device has %d IRQ indexes", d.info.NumIRQs), nil)
	}
	b := encodeIRQInfo(uint32(t))
	if err := ioctlBuf(d.fd, ioctlDeviceIRQInfo, b); err != nil {
		return IRQInfo{}, newErr(op, d.String(), ErrNotSupported, "VFIO_DEVICE_GET_IRQ_INFO", err)
	}
	return parseIRQInfo(b)
}

// EnableInterrupts routes n vectors of type t to eventfds and returns them;
// read them from C. INTx is automasked: after handling one, call Unmask.
// Only one interrupt type can be enabled on a device at a time.
func (d *Device) EnableInterrupts(t IRQType, n int) (*Interrupts, error) {
	return d.enableInterrupts(t, n, nil)
}

// EnableInterruptsFunc is EnableInterrupts with a handler instead of a
// channel: fn is called for each Interrupt, on one goroutine per vector.
// fn must not call Close of the same Interrupts (Close waits for it).
func (d *Device) EnableInterruptsFunc(t IRQType, n int, fn func(Interrupt)) (*Interrupts, error) {
	if fn == nil {
		return nil, newErr("enable "+t.String(), d.String(), ErrOutOfRange, "nil handler", nil)
	}
	return d.enableInterrupts(t, n, fn)
}

func (d *Device) enableInterrupts(t IRQType, n int, fn func(Interrupt)) (*Interrupts, error) {
	op := fmt.Sprintf("enable %d %s vectors", n, t)
	info, err := d.IRQInfo(t)
	if err != nil {
		return nil, err
	}
	if info.Count == 0 || !info.Eventfd() {
		return nil, newErr(op, d.String(), ErrNotSupported, fmt.Sprintf("the device has no %s interrupts", t), nil)
	}
	if n <= 0 || uint32(n) > info.Count {
		return nil, newErr(op, d.String(), ErrOutOfRange, fmt.Sprintf("the device offers 1 to %d %s vectors", info.Count, t), nil)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, newErr(op, d.String(), ErrClosed, "", nil)
	}
	if d.irqs != nil {
		return nil, newErr(op, d.String(), ErrNotSupported, fmt.Sprintf("%s interrupts are enabled already: close them first (one type at a time)", d.irqs.typ), nil)
	}
	it := &Interrupts{d: d, typ: t, info: info, handler: fn, done: make(chan struct{})}
	if fn == nil {
		it.c = make(chan Interrupt, n)
	}
	fds := make([]int32, n)
	for i := range fds {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			it.closeFiles()
			return nil, newErr(op, d.String(), ErrNotSupported, "eventfd", err)
		}
		fds[i] = int32(fd)
		it.files = append(it.files, os.NewFile(uintptr(fd), fmt.Sprintf("vfio-%s-%s-%d", d, t, i)))
	}
	req := encodeIRQSet(irqSetDataEventfd|irqSetActionTrigger, uint32(t), 0, uint32(n), fds)
	if err := ioctlBuf(d.fd, ioctlDeviceSetIRQs, req); err != nil {
		it.closeFiles()
		return nil, newErr(op, d.String(), ErrNotSupported, "VFIO_DEVICE_SET_IRQS", err)
	}
	it.disable = func() error {
		req := encodeIRQSet(irqSetDataNone|irqSetActionTrigger, uint32(t), 0, 0, nil)
		if err := ioctlBuf(d.fd, ioctlDeviceSetIRQs, req); err != nil {
			return newErr("disable "+t.String(), d.String(), ErrNotSupported, "VFIO_DEVICE_SET_IRQS", err)
		}
		return nil
	}
	it.start()
	d.irqs = it
	return it, nil
}

// start runs one delivery goroutine per vector.
func (it *Interrupts) start() {
	for i, f := range it.files {
		it.wg.Add(1)
		go it.wait(i, f)
	}
}

// wait delivers the interrupts of one vector until Close.
func (it *Interrupts) wait(vector int, f *os.File) {
	defer it.wg.Done()
	var buf [8]byte
	for {
		if _, err := f.Read(buf[:]); err != nil {
			return // closed
		}
		ev := Interrupt{Vector: vector, Count: binary.NativeEndian.Uint64(buf[:])}
		if it.handler != nil {
			it.handler(ev)
			continue
		}
		select {
		case it.c <- ev:
		case <-it.done:
			return
		}
	}
}

// C delivers the interrupts (nil if a handler was given). It is closed by
// Close.
func (it *Interrupts) C() <-chan Interrupt { return it.c }

// Type and Info describe the interrupts enabled.
func (it *Interrupts) Type() IRQType { return it.typ }
func (it *Interrupts) Info() IRQInfo { return it.info }
func (it *Interrupts) Vectors() int  { return len(it.files) }

// Unmask re-enables an automasked interrupt (INTx) once the device's cause
// has been acknowledged; until then it cannot fire again.
func (it *Interrupts) Unmask() error {
	return it.setFlags("unmask", irqSetDataNone|irqSetActionUnmask)
}

// Mask masks a maskable interrupt (INTx).
func (it *Interrupts) Mask() error {
	return it.setFlags("mask", irqSetDataNone|irqSetActionMask)
}

func (it *Interrupts) setFlags(what string, flags uint32) error {
	op := what + " " + it.typ.String()
	if !it.info.Maskable() {
		return newErr(op, it.d.String(), ErrNotSupported, it.typ.String()+" is not maskable through VFIO", nil)
	}
	select {
	case <-it.done:
		return newErr(op, it.d.String(), ErrClosed, "", nil)
	default:
	}
	req := encodeIRQSet(flags, uint32(it.typ), 0, 1, nil)
	if err := ioctlBuf(it.d.fd, ioctlDeviceSetIRQs, req); err != nil {
		return newErr(op, it.d.String(), ErrNotSupported, "VFIO_DEVICE_SET_IRQS", err)
	}
	return nil
}

// Close disables the interrupts in the device, stops delivery and closes C.
func (it *Interrupts) Close() error {
	it.once.Do(func() {
		it.err = it.disable()
		close(it.done)
		it.closeFiles()
		it.wg.Wait()
		if it.c != nil {
			close(it.c)
		}
		it.d.mu.Lock()
		if it.d.irqs == it {
			it.d.irqs = nil
		}
		it.d.mu.Unlock()
	})
	return it.err
}

func (it *Interrupts) closeFiles() {
	for _, f := range it.files {
		f.Close()
	}
}
