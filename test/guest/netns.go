package guest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// NetPrefix starts the name of every network namespace this package creates:
// oiw-<creator pid>-<n>. Namespaces whose creator is gone are removed by the
// next NewNetwork.
const NetPrefix = "oiw-"

// Network is a network namespace with a bridge (BridgeAddr on Bridge) whose
// ports are tap devices for guests. Nothing in it is connected to any
// interface outside the namespace.
type Network struct {
	Name       string // namespace name (ip netns)
	Bridge     string // "br0", inside the namespace
	BridgeAddr string // e.g. 198.18.0.1/24
	mu         sync.Mutex
	taps       int
	closed     bool
}

var netSeq struct {
	sync.Mutex
	n int
}

// NewNetwork creates a namespace with loopback up and a bridge br0 holding
// bridgeCIDR ("" means 198.18.0.1/24, RFC 2544 benchmarking space). Close
// removes it.
func NewNetwork(ctx context.Context, bridgeCIDR string) (*Network, error) {
	if bridgeCIDR == "" {
		bridgeCIDR = "198.18.0.1/24"
	}
	reapStaleNetworks(ctx)
	netSeq.Lock()
	netSeq.n++
	name := fmt.Sprintf("%s%d-%d", NetPrefix, os.Getpid(), netSeq.n)
	netSeq.Unlock()
	n := &Network{Name: name, Bridge: "br0", BridgeAddr: bridgeCIDR}
	if _, err := runCmd(ctx, "", "ip", "netns", "add", name); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", n.Bridge, "type", "bridge", "stp_state", "0", "forward_delay", "0"},
		{"addr", "add", bridgeCIDR, "dev", n.Bridge},
		{"link", "set", n.Bridge, "up"},
	}
	for _, s := range steps {
		if _, err := runCmd(ctx, "", "ip", append([]string{"-n", name}, s...)...); err != nil {
			n.Close()
			return nil, err
		}
	}
	return n, nil
}

// reapStaleNetworks deletes oiw-<pid>-* namespaces whose creating process no
// longer exists (left behind by a killed test run).
func reapStaleNetworks(ctx context.Context) {
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), NetPrefix)
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			_, _ = runCmd(ctx, "", "ip", "netns", "del", e.Name())
		}
	}
}

// AddTap creates a tap device attached to the bridge and returns its name.
func (n *Network) AddTap(ctx context.Context) (string, error) {
	n.mu.Lock()
	name := fmt.Sprintf("tap%d", n.taps)
	n.taps++
	n.mu.Unlock()
	for _, s := range [][]string{
		{"tuntap", "add", "dev", name, "mode", "tap"},
		{"link", "set", name, "master", n.Bridge},
		{"link", "set", name, "up"},
	} {
		if _, err := runCmd(ctx, "", "ip", append([]string{"-n", n.Name}, s...)...); err != nil {
			return "", err
		}
	}
	return name, nil
}

// Command returns a command that runs inside the namespace (through
// `ip netns exec`, which execs the program: the process is the program).
// Like every process this package starts, it is killed if the test process
// dies (see childAttr).
func (n *Network) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
	cmd.SysProcAttr = childAttr()
	return cmd
}

// childAttr makes a child process get SIGKILL when the process that
// started it dies, so that a test killed by its timeout or a signal leaves
// no QEMU, tcpdump or peer program running (the signal survives the exec
// of ip netns exec: neither ip nor QEMU is set-user-ID).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// Do runs fn on an OS thread that has joined the namespace. Sockets created
// by fn (net.Dial, net.Listen) belong to the namespace for their whole life
// and may be used from any goroutine afterwards.
func (n *Network) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is left locked (and so destroyed) if it cannot be
		// moved back to the original namespace.
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("guest: netns: %w", err)
			return
		}
		defer orig.Close()
		target, err := os.Open(filepath.Join("/run/netns", n.Name))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("guest: netns %s: %w", n.Name, err)
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("guest: setns %s: %w", n.Name, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}

// Close deletes the namespace, and with it the bridge and the taps (once the
// QEMU processes holding them have ended: close VMs first).
func (n *Network) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	_, err := runCmd(context.Background(), "", "ip", "netns", "del", n.Name)
	return err
}
