package guest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openiwarp/openiwarp/test/guest/internal/wire"
)

// Config says how to boot a guest.
type Config struct {
	Kernel *Kernel
	Initrd string // from Image.Build
	// MemoryMiB defaults to 512, CPUs to 1.
	MemoryMiB int
	CPUs      int
	// Machine defaults to "q35".
	Machine string
	// Devices are extra -device values, e.g. "intel-iommu,intremap=on", "edu".
	// Order matters to QEMU (the IOMMU must come before other devices).
	Devices []string
	// QEMUArgs are appended to QEMU's command line as they are.
	QEMUArgs []string
	// ExtraFiles are inherited by QEMU as descriptors 3, 4, ... (e.g. the
	// socket of an x-pci-proxy-dev,fd=3).
	ExtraFiles []*os.File
	// Append is extra kernel command line, e.g. "intel_iommu=on".
	Append []string
	// Share is a host directory mounted read-write at /mnt/host (9p).
	Share string
	// Net, if set, gives the guest a virtio NIC on a new tap port of Net's
	// bridge, with Addr (CIDR, e.g. 198.18.0.2/24) on eth0. QEMU then runs
	// inside Net's namespace.
	Net  *Network
	Addr string
	// ConsoleLog is the file the serial console is written to. "" means
	// console.log in the VM's temporary directory, which Close removes: set
	// it to keep the log of a failed run.
	ConsoleLog string
	// ConsoleOut, if set, also receives the console as it is written.
	ConsoleOut io.Writer
	// BootTimeout bounds QEMU start to agent ready (default 90 s).
	BootTimeout time.Duration
}

// VM is a running guest.
type VM struct {
	Dir        string // temporary directory (agent socket; console.log by default)
	ConsoleLog string // path of the console log
	Kernel     string // guest's uname -r, reported by the agent
	Tap        string // tap device on the bridge ("" without Net)

	cmd    *exec.Cmd
	exited chan struct{}
	exitEr error
	conn   net.Conn
	wmu    sync.Mutex
	mu     sync.Mutex
	nextID uint64
	procs  map[uint64]*Proc
	ready  chan string
	dead   chan struct{} // closed when the agent connection ends
}

// BootError is returned when a guest does not come up; Console holds the
// last lines of its console.
type BootError struct {
	Stage    string
	Console  string
	Err      error
	Attempts int // boots tried: 2 when a kernel panic was retried
}

func (e *BootError) Error() string {
	return fmt.Sprintf("guest: boot failed (%s): %v\n--- console (last lines) ---\n%s", e.Stage, e.Err, e.Console)
}
func (e *BootError) Unwrap() error { return e.Err }

// ErrVMExited means QEMU ended while the host still waited on the guest.
var ErrVMExited = errors.New("guest: QEMU exited")

var macSeq struct {
	sync.Mutex
	n int
}

// Boot starts QEMU (TCG, multi-threaded, -cpu max; the vmlinux through PVH)
// and waits until the guest agent answers. On error nothing is left running.
//
// A boot whose guest kernel panicked before its agent answered is tried
// once more, and says so on stderr with the first console: under TCG on a
// loaded host the kernel's early checks can fail (seen here: "timer doesn't
// work through Interrupt-remapped IO-APIC"), a setup step known to be
// flaky. Any other failure, and a second panic, is returned as it is.
func Boot(ctx context.Context, cfg Config) (*VM, error) {
	vm, err := bootOnce(ctx, cfg)
	be := (*BootError)(nil)
	if !errors.As(err, &be) {
		return vm, err
	}
	be.Attempts = 1
	if ctx.Err() != nil || !strings.Contains(be.Console, "Kernel panic") {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "guest: the guest kernel panicked while booting (known to happen under TCG on a loaded host); booting it once more. The first console:\n%s\n", be.Console)
	vm, err = bootOnce(ctx, cfg)
	if errors.As(err, &be) {
		be.Attempts = 2
	}
	return vm, err
}

// bootOnce is one boot attempt of Boot.
func bootOnce(ctx context.Context, cfg Config) (vm *VM, err error) {
	if cfg.Kernel == nil || cfg.Initrd == "" {
		return nil, errors.New("guest: Config needs Kernel and Initrd")
	}
	if cfg.MemoryMiB == 0 {
		cfg.MemoryMiB = 512
	}
	if cfg.CPUs == 0 {
		cfg.CPUs = 1
	}
	if cfg.Machine == "" {
		cfg.Machine = "q35"
	}
	if cfg.BootTimeout == 0 {
		cfg.BootTimeout = 90 * time.Second
	}
	reapStaleVMDirs()
	dir, err := os.MkdirTemp("", fmt.Sprintf("oiw-vm-%d-", os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("guest: %w", err)
	}
	vm = &VM{Dir: dir, ConsoleLog: cfg.ConsoleLog, exited: make(chan struct{}),
		procs: map[uint64]*Proc{}, ready: make(chan string, 1), dead: make(chan struct{})}
	if vm.ConsoleLog == "" {
		vm.ConsoleLog = filepath.Join(dir, "console.log")
	}
	// The VM is captured now: a failed boot returns (nil, err), and the
	// cleanup must still reach the QEMU it started.
	defer func(started *VM) {
		if err != nil {
			started.Close()
		}
	}(vm)
	sock := filepath.Join(dir, "agent.sock")
	kargs := []string{"console=ttyS0", "panic=-1", "oops=panic", "loglevel=4", "rdinit=/init"}
	args := []string{
		"-accel", "tcg,thread=multi", "-cpu", "max", "-machine", cfg.Machine,
		"-m", fmt.Sprint(cfg.MemoryMiB), "-smp", fmt.Sprint(cfg.CPUs),
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		"-chardev", "stdio,id=con,signal=off", "-serial", "chardev:con",
		"-kernel", cfg.Kernel.Vmlinux, "-initrd", cfg.Initrd,
	}
	// The caller's devices come first: QEMU wants an IOMMU created before
	// the devices behind it.
	for _, d := range cfg.Devices {
		args = append(args, "-device", d)
	}
	args = append(args, "-chardev", "socket,id=agent,path="+sock+",server=on,wait=off",
		"-device", "virtio-serial-pci", "-device", "virtserialport,chardev=agent,name="+wire.PortName)
	if cfg.Share != "" {
		args = append(args, "-virtfs", "local,path="+cfg.Share+",mount_tag=hostshare,security_model=none,id=hostshare")
		kargs = append(kargs, "oiw.share=hostshare")
	}
	if cfg.Net != nil {
		tap, err := cfg.Net.AddTap(ctx)
		if err != nil {
			return nil, err
		}
		vm.Tap = tap
		macSeq.Lock()
		macSeq.n++
		mac := fmt.Sprintf("52:54:00:%02x:%02x:%02x", os.Getpid()>>8&0xff, os.Getpid()&0xff, macSeq.n&0xff)
		macSeq.Unlock()
		args = append(args, "-netdev", "tap,id=n0,ifname="+tap+",script=no,downscript=no",
			"-device", "virtio-net-pci,netdev=n0,mac="+mac)
		if cfg.Addr != "" {
			kargs = append(kargs, "oiw.addr="+cfg.Addr)
		}
	}
	kargs = append(kargs, cfg.Append...)
	args = append(args, "-append", strings.Join(kargs, " "))
	args = append(args, cfg.QEMUArgs...)

	logf, err := os.Create(vm.ConsoleLog)
	if err != nil {
		return nil, fmt.Errorf("guest: console log: %w", err)
	}
	var out io.Writer = logf
	if cfg.ConsoleOut != nil {
		out = io.MultiWriter(logf, cfg.ConsoleOut)
	}
	fmt.Fprintf(logf, "# qemu-system-x86_64 %s\n", strings.Join(args, " "))
	if cfg.Net != nil {
		vm.cmd = cfg.Net.Command(context.Background(), "qemu-system-x86_64", args...)
	} else {
		vm.cmd = exec.Command("qemu-system-x86_64", args...)
		vm.cmd.SysProcAttr = childAttr()
	}
	vm.cmd.Stdout, vm.cmd.Stderr = out, out
	vm.cmd.ExtraFiles = cfg.ExtraFiles
	if err := vm.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("guest: start qemu: %w", err)
	}
	go func() {
		vm.exitEr = vm.cmd.Wait()
		logf.Close()
		close(vm.exited)
	}()

	bctx, cancel := context.WithTimeout(ctx, cfg.BootTimeout)
	defer cancel()
	if err := vm.connect(bctx, sock); err != nil {
		return nil, &BootError{Stage: "agent socket", Console: vm.consoleTail(40), Err: err}
	}
	select {
	case vm.Kernel = <-vm.ready:
	case <-vm.exited:
		return nil, &BootError{Stage: "waiting for agent", Console: vm.consoleTail(40), Err: fmt.Errorf("%w: %v", ErrVMExited, vm.exitEr)}
	case <-bctx.Done():
		return nil, &BootError{Stage: "waiting for agent", Console: vm.consoleTail(40), Err: bctx.Err()}
	}
	return vm, nil
}

// reapStaleVMDirs removes oiw-vm-<pid>-* directories whose process is gone
// (left by a test that was killed).
func reapStaleVMDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "oiw-vm-*-*"))
	for _, d := range dirs {
		pidStr, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), "oiw-vm-"), "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = os.RemoveAll(d)
		}
	}
}

func (vm *VM) connect(ctx context.Context, sock string) error {
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			vm.conn = c
			go vm.readLoop()
			return vm.send(wire.Request{Op: wire.OpHello})
		}
		select {
		case <-vm.exited:
			return fmt.Errorf("%w: %v", ErrVMExited, vm.exitEr)
		case <-ctx.Done():
			return fmt.Errorf("guest: connect %s: %w", sock, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (vm *VM) send(r wire.Request) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("guest: %w", err)
	}
	vm.wmu.Lock()
	defer vm.wmu.Unlock()
	if _, err := vm.conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("guest: agent write: %w", err)
	}
	return nil
}

func (vm *VM) readLoop() {
	defer close(vm.dead)
	r := bufio.NewReaderSize(vm.conn, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var ev wire.Event
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		if ev.Ev == wire.EvReady {
			select {
			case vm.ready <- ev.Kernel:
			default:
			}
			continue
		}
		vm.mu.Lock()
		p := vm.procs[ev.ID]
		vm.mu.Unlock()
		if p != nil {
			p.event(ev)
		}
	}
}

// consoleTail returns the last n lines of the console log.
func (vm *VM) consoleTail(n int) string {
	b, _ := os.ReadFile(vm.ConsoleLog)
	return lastLines(string(b), n)
}

// ConsoleTail returns the last n lines of the guest's console.
func (vm *VM) ConsoleTail(n int) string { return vm.consoleTail(n) }

// Proc is a program running in the guest.
type Proc struct {
	Argv []string
	vm   *VM
	id   uint64
	tee  io.Writer

	mu      sync.Mutex
	cond    chan struct{} // closed and replaced on every event
	out     bytes.Buffer
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	started bool
	done    bool
	res     Result
}

// Result is how a guest program ended.
type Result struct {
	Code   int    // exit status; -1 if killed by a signal or not started
	Signal int    // the signal that killed it, or 0
	Output []byte // stdout and stderr in arrival order
	Stdout []byte
	Stderr []byte
	Err    string // why it could not run (not started, agent error)
}

// ExitError is returned by Run and Wait when a program did not exit 0.
type ExitError struct {
	Argv []string
	Result
}

func (e *ExitError) Error() string {
	why := fmt.Sprintf("exit status %d", e.Code)
	switch {
	case e.Err != "":
		why = e.Err
	case e.Signal != 0:
		why = fmt.Sprintf("killed by signal %d", e.Signal)
	}
	return fmt.Sprintf("guest: %s: %s\n%s", strings.Join(e.Argv, " "), why, lastLines(string(e.Output), 20))
}

// StartOptions are optional settings for Start.
type StartOptions struct {
	Env []string
	Dir string
	// Tee receives the program's output as it arrives (e.g. a test log).
	Tee io.Writer
}

// Start runs argv in the guest (in its own process group) without waiting.
func (vm *VM) Start(argv []string, opt StartOptions) (*Proc, error) {
	vm.mu.Lock()
	vm.nextID++
	p := &Proc{Argv: argv, vm: vm, id: vm.nextID, tee: opt.Tee, cond: make(chan struct{})}
	vm.procs[p.id] = p
	vm.mu.Unlock()
	if err := vm.send(wire.Request{ID: p.id, Op: wire.OpStart, Argv: argv, Env: opt.Env, Dir: opt.Dir}); err != nil {
		return nil, err
	}
	return p, nil
}

// Run runs argv in the guest and waits for it; a non-zero exit is an
// *ExitError. ctx bounds the wait: on expiry the program is killed.
func (vm *VM) Run(ctx context.Context, argv ...string) (Result, error) {
	p, err := vm.Start(argv, StartOptions{})
	if err != nil {
		return Result{Code: -1}, err
	}
	return p.Wait(ctx)
}

// Shell runs a busybox sh command line in the guest (see Run).
func (vm *VM) Shell(ctx context.Context, script string) (Result, error) {
	return vm.Run(ctx, "/bin/sh", "-c", script)
}

func (p *Proc) event(ev wire.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Ev {
	case wire.EvStarted:
		p.started = true
	case wire.EvOut:
		p.out.Write(ev.Data)
		if ev.Fd == 2 {
			p.stderr.Write(ev.Data)
		} else {
			p.stdout.Write(ev.Data)
		}
		if p.tee != nil {
			_, _ = p.tee.Write(ev.Data)
		}
	case wire.EvExit:
		p.done = true
		p.res.Code, p.res.Signal, p.res.Err = ev.Code, ev.Signal, ev.Err
	case wire.EvError:
		p.done = true
		p.res.Code, p.res.Err = -1, ev.Err
	}
	close(p.cond)
	p.cond = make(chan struct{})
}

// Output returns what the program printed so far.
func (p *Proc) Output() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]byte(nil), p.out.Bytes()...)
}

// Exited reports whether the program has ended.
func (p *Proc) Exited() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// waitFor blocks until cond (checked under p.mu) holds, ctx ends or the VM
// goes away.
func (p *Proc) waitFor(ctx context.Context, cond func() bool) error {
	for {
		p.mu.Lock()
		ok, ch := cond(), p.cond
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-p.vm.dead:
			return fmt.Errorf("%w (agent connection lost)", ErrVMExited)
		}
	}
}

// WaitOutput waits until the program's output contains s. It fails if the
// program exits first or ctx ends.
func (p *Proc) WaitOutput(ctx context.Context, s string) error {
	err := p.waitFor(ctx, func() bool { return bytes.Contains(p.out.Bytes(), []byte(s)) || p.done })
	if err != nil {
		return fmt.Errorf("guest: waiting for %q from %s: %w", s, p.Argv[0], err)
	}
	if !bytes.Contains(p.Output(), []byte(s)) {
		return fmt.Errorf("guest: %s exited before printing %q", p.Argv[0], s)
	}
	return nil
}

// Wait waits for the program to end. If ctx ends first the program is
// killed (SIGKILL to its process group) and the error wraps ctx.Err().
func (p *Proc) Wait(ctx context.Context) (Result, error) {
	if err := p.waitFor(ctx, func() bool { return p.done }); err != nil {
		_ = p.Signal(syscall.SIGKILL)
		kctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = p.waitFor(kctx, func() bool { return p.done })
		cancel()
		res := p.result()
		return res, fmt.Errorf("guest: %s: %w\n%s", strings.Join(p.Argv, " "), err, lastLines(string(res.Output), 20))
	}
	res := p.result()
	p.vm.mu.Lock()
	delete(p.vm.procs, p.id)
	p.vm.mu.Unlock()
	if res.Code != 0 || res.Err != "" {
		return res, &ExitError{Argv: p.Argv, Result: res}
	}
	return res, nil
}

func (p *Proc) result() Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	res := p.res
	res.Output = bytes.Clone(p.out.Bytes())
	res.Stdout = bytes.Clone(p.stdout.Bytes())
	res.Stderr = bytes.Clone(p.stderr.Bytes())
	return res
}

// Signal sends sig to the program's process group.
func (p *Proc) Signal(sig syscall.Signal) error {
	return p.vm.send(wire.Request{ID: p.id, Op: wire.OpSignal, Signal: int(sig)})
}

// Shutdown asks the guest to power off and waits (bounded by ctx) for QEMU
// to exit; it kills QEMU if the guest does not comply.
func (vm *VM) Shutdown(ctx context.Context) error {
	err := vm.send(wire.Request{Op: wire.OpShutdown})
	select {
	case <-vm.exited:
	case <-ctx.Done():
		err = fmt.Errorf("guest: shutdown: %w", ctx.Err())
	case <-time.After(30 * time.Second):
		err = errors.New("guest: shutdown: guest did not power off in 30 s")
	}
	vm.Close()
	return err
}

// Exited is closed when QEMU has ended.
func (vm *VM) Exited() <-chan struct{} { return vm.exited }

// Close kills QEMU if it still runs and removes the VM's temporary
// directory (and the console log if Config.ConsoleLog was "").
func (vm *VM) Close() {
	if vm.cmd != nil && vm.cmd.Process != nil {
		select {
		case <-vm.exited:
		default:
			_ = vm.cmd.Process.Kill()
			<-vm.exited
		}
	}
	if vm.conn != nil {
		vm.conn.Close()
	}
	_ = os.RemoveAll(vm.Dir)
}
