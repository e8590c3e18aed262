// Package ipoib is the end-to-end harness of cmd/ipoibcm: it creates network
// namespaces joined by an underlay network in 198.18.0.0/15, runs one
// ipoibcm daemon per namespace, and drives traffic across the TUN links
// (198.19.0.0/24, fd00:4755::/64) from sockets opened inside the
// namespaces. It needs root and /dev/net/tun.
package ipoib

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Node is one namespace with its underlay and overlay addresses.
type Node struct {
	NS       string
	Underlay netip.Addr
	V4, V6   netip.Addr
	EPID     int
	daemon   *Daemon
}

// Env is a set of namespaces on one underlay network.
type Env struct {
	t     testing.TB
	Nodes []*Node
	hub   string // namespace holding the bridge ("" for a direct veth pair)
	bin   string
}

var envSeq atomic.Int32

// daemonBuild is one build of cmd/ipoibcm.
type daemonBuild struct {
	once sync.Once
	path string
	err  error
}

// Tests run the daemon built with the race detector, so a data race in it
// fails the test (the daemon exits 66 and its log shows the race);
// benchmarks run a plain build.
var testBin, benchBin daemonBuild

// removeBuilds deletes the daemon builds; TestMain calls it at exit.
func removeBuilds() {
	for _, b := range []*daemonBuild{&testBin, &benchBin} {
		if b.path != "" {
			os.RemoveAll(filepath.Dir(b.path))
		}
	}
}

func daemonBinary(t testing.TB) string {
	_, bench := t.(*testing.B)
	b := &testBin
	if bench {
		b = &benchBin
	}
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "ipoibcm-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "ipoibcm")
		args := []string{"build", "-o", b.path}
		if !bench {
			args = append(args, "-race")
		}
		// go test puts its toolchain's bin directory first in PATH.
		out, err := exec.Command("go", append(args, "github.com/openiwarp/openiwarp/cmd/ipoibcm")...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("building cmd/ipoibcm: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Require fails the test unless it can create namespaces and TUN devices.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root, network namespaces and /dev/net/tun; not run with -short")
	}
	if os.Geteuid() != 0 {
		t.Fatal("the ipoibcm harness needs root (network namespaces, TUN devices)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Fatalf("the ipoibcm harness needs /dev/net/tun: %v", err)
	}
	for _, tool := range []string{"ip", "ping"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not installed (make tools installs iproute2 and iputils-ping): %v", tool, err)
		}
	}
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// NewEnv creates n namespaces. Two are joined by one veth pair; more hang off
// a bridge in a hub namespace. Everything is removed at cleanup.
func NewEnv(t testing.TB, n int) *Env {
	t.Helper()
	Require(t)
	e := &Env{t: t, bin: daemonBinary(t)}
	tag := fmt.Sprintf("ipcm%d-%d", os.Getpid()%100000, envSeq.Add(1))
	t.Cleanup(e.destroy)
	for i := 0; i < n; i++ {
		nd := &Node{NS: fmt.Sprintf("%s-%d", tag, i),
			Underlay: netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}),
			V4:       netip.AddrFrom4([4]byte{198, 19, 0, byte(i + 1)}),
			V6:       netip.MustParseAddr(fmt.Sprintf("fd00:4755::%d", i+1)),
			EPID:     0x100 + i}
		e.Nodes = append(e.Nodes, nd)
		run(t, "ip", "netns", "add", nd.NS)
		run(t, "ip", "-n", nd.NS, "link", "set", "lo", "up")
	}
	if n == 2 {
		a, b := e.Nodes[0], e.Nodes[1]
		run(t, "ip", "link", "add", "ul0", "netns", a.NS, "type", "veth", "peer", "name", "ul0", "netns", b.NS)
	} else {
		e.hub = tag + "-hub"
		run(t, "ip", "netns", "add", e.hub)
		run(t, "ip", "-n", e.hub, "link", "add", "br0", "type", "bridge")
		run(t, "ip", "-n", e.hub, "link", "set", "br0", "up")
		for i, nd := range e.Nodes {
			port := fmt.Sprintf("p%d", i)
			run(t, "ip", "link", "add", port, "netns", e.hub, "type", "veth", "peer", "name", "ul0", "netns", nd.NS)
			run(t, "ip", "-n", e.hub, "link", "set", port, "master", "br0", "up")
		}
	}
	for _, nd := range e.Nodes {
		run(t, "ip", "-n", nd.NS, "addr", "add", nd.Underlay.String()+"/24", "dev", "ul0")
		run(t, "ip", "-n", nd.NS, "link", "set", "ul0", "up")
	}
	return e
}

func (e *Env) destroy() {
	for _, nd := range e.Nodes {
		if nd.daemon != nil {
			// A daemon that does not exit 0 (a data race exits 66) fails the test.
			if err := nd.daemon.Stop(); err != nil {
				e.t.Errorf("the daemon in %s: %v\n%s", nd.NS, err, nd.daemon.Log())
			}
		}
	}
	for _, nd := range e.Nodes {
		_ = exec.Command("ip", "netns", "del", nd.NS).Run()
	}
	if e.hub != "" {
		_ = exec.Command("ip", "netns", "del", e.hub).Run()
	}
}

// Daemon is a running ipoibcm.
type Daemon struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  bytes.Buffer
	up   chan struct{}
	done chan struct{}
	err  error
}

// Start runs ipoibcm in nd's namespace with the standard addresses and
// extra flags, and waits until its interface is up.
func (e *Env) Start(nd *Node, extra ...string) *Daemon {
	e.t.Helper()
	args := []string{"netns", "exec", nd.NS, e.bin, "-dev", "ipcm0", "-underlay", nd.Underlay.String(),
		"-flood", "198.18.0.255", "-addr", nd.V4.String() + "/24", "-addr", nd.V6.String() + "/64",
		"-epid", fmt.Sprint(nd.EPID), "-v"}
	return e.spawn(nd, exec.Command("ip", append(args, extra...)...), " up: link address")
}

// spawn starts cmd as nd's daemon and waits until it logs a line holding ready.
func (e *Env) spawn(nd *Node, cmd *exec.Cmd, ready string) *Daemon {
	e.t.Helper()
	d := &Daemon{cmd: cmd, up: make(chan struct{}), done: make(chan struct{})}
	pr, pw, err := os.Pipe()
	if err != nil {
		e.t.Fatal(err)
	}
	d.cmd.Stderr, d.cmd.Stdout = pw, pw
	if err := d.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	pw.Close()
	go func() {
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			d.mu.Lock()
			d.log.WriteString(line + "\n")
			d.mu.Unlock()
			if strings.Contains(line, ready) {
				once.Do(func() { close(d.up) })
			}
		}
	}()
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	nd.daemon = d
	e.t.Cleanup(func() {
		if e.t.Failed() {
			e.t.Logf("log of the daemon in %s:\n%s", nd.NS, d.Log())
		}
	})
	select {
	case <-d.up:
	case <-d.done:
		e.t.Fatalf("the daemon in %s exited: %v\n%s\n%s", nd.NS, d.err, cmd, d.Log())
	case <-time.After(10 * time.Second):
		e.t.Fatalf("the daemon in %s did not log %q within 10 s\n%s", nd.NS, ready, d.Log())
	}
	return d
}

// Log returns everything the daemon printed so far.
func (d *Daemon) Log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// WaitLog waits until the log contains s.
func (d *Daemon) WaitLog(s string, timeout time.Duration) bool {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(d.Log(), s) {
			return true
		}
	}
	return false
}

// WaitLine waits until one line of the log contains every one of subs.
func (d *Daemon) WaitLine(timeout time.Duration, subs ...string) bool {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
	lines:
		for _, line := range strings.Split(d.Log(), "\n") {
			for _, s := range subs {
				if !strings.Contains(line, s) {
					continue lines
				}
			}
			return true
		}
	}
	return false
}

// Stop sends SIGTERM and waits for a clean exit.
func (d *Daemon) Stop() error {
	select {
	case <-d.done:
		return d.err
	default:
	}
	_ = d.cmd.Process.Signal(unix.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(15 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
		return errors.New("the daemon did not stop within 15 s")
	}
	return d.err
}

// In runs fn on an OS thread switched into nd's network namespace. Sockets
// fn creates belong to that namespace and may be used from any goroutine
// afterwards. The thread is never returned to the scheduler: it exits with
// the goroutine, so no other goroutine ever runs in the namespace.
func In(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// Exec runs a command in nd's namespace and returns its combined output.
func (nd *Node) Exec(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", nd.NS, name}, args...)...).CombinedOutput()
	return string(out), err
}

// Ping runs ping in nd's namespace; extra are ping flags before the target.
func (nd *Node) Ping(target string, extra ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return nd.Exec(ctx, "ping", append(append([]string{"-n", "-c", "3", "-i", "0.2", "-W", "3"}, extra...), target)...)
}

// CPUTime is the processor time (user plus system) the daemon has used so
// far, from /proc (the daemon is `ip netns exec`, which execs it in place).
func (d *Daemon) CPUTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("daemon CPU time: %w", err)
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("daemon CPU time: unreadable /proc stat %q", b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("daemon CPU time: short /proc stat %q", b)
	}
	var utime, stime int64
	if _, err := fmt.Sscan(f[11], &utime); err != nil {
		return 0, fmt.Errorf("daemon CPU time: utime %q: %w", f[11], err)
	}
	if _, err := fmt.Sscan(f[12], &stime); err != nil {
		return 0, fmt.Errorf("daemon CPU time: stime %q: %w", f[12], err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTicks = 100
