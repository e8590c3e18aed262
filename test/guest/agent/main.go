// Command agent runs inside a test/guest VM. It finds the virtio-serial port
// named wire.PortName, reads JSON-line requests from the host, runs the
// requested programs and streams their output and exit status back. It exits
// on a shutdown request; the guest's init then syncs and powers off.
//
// It is built statically (CGO_ENABLED=0) by the test/guest package and put
// into every initramfs; it is not meant to be run by hand.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openiwarp/openiwarp/test/guest/internal/wire"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "oiw-agent:", err)
		os.Exit(1)
	}
}

func findPort() (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		names, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err == nil && strings.TrimSpace(string(b)) == wire.PortName {
				return "/dev/" + filepath.Base(filepath.Dir(n)), nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "", fmt.Errorf("no virtio-serial port named %q", wire.PortName)
}

type agent struct {
	port  *os.File
	wmu   sync.Mutex
	enc   *json.Encoder
	pmu   sync.Mutex
	procs map[uint64]*os.Process
}

func (a *agent) send(ev wire.Event) {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if err := a.enc.Encode(ev); err != nil {
		fmt.Fprintln(os.Stderr, "oiw-agent: write:", err)
	}
}

func run() error {
	path, err := findPort()
	if err != nil {
		return err
	}
	port, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	a := &agent{port: port, enc: json.NewEncoder(port), procs: map[uint64]*os.Process{}}
	var uts syscall.Utsname
	_ = syscall.Uname(&uts)
	a.send(wire.Event{Ev: wire.EvReady, Kernel: utsString(uts.Release[:])})
	fmt.Println("oiw-agent: ready on", path)
	r := bufio.NewReaderSize(port, 1<<16)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var req wire.Request
			if jerr := json.Unmarshal(line, &req); jerr != nil {
				a.send(wire.Event{Ev: wire.EvError, Err: "bad request: " + jerr.Error()})
				continue
			}
			if req.Op == wire.OpShutdown {
				a.killAll()
				return nil
			}
			a.handle(req)
		}
		if errors.Is(err, io.EOF) {
			// The host side is not connected (yet or any more): wait for it.
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
}

func utsString(b []int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

func (a *agent) handle(req wire.Request) {
	switch req.Op {
	case wire.OpHello:
		var uts syscall.Utsname
		_ = syscall.Uname(&uts)
		a.send(wire.Event{ID: req.ID, Ev: wire.EvReady, Kernel: utsString(uts.Release[:])})
	case wire.OpStart:
		a.start(req)
	case wire.OpSignal:
		a.pmu.Lock()
		p := a.procs[req.ID]
		a.pmu.Unlock()
		if p == nil {
			a.send(wire.Event{ID: req.ID, Ev: wire.EvError, Err: "signal: no such process"})
			return
		}
		// Signal the whole process group so shell pipelines stop too.
		if err := syscall.Kill(-p.Pid, syscall.Signal(req.Signal)); err != nil {
			_ = p.Signal(syscall.Signal(req.Signal))
		}
	default:
		a.send(wire.Event{ID: req.ID, Ev: wire.EvError, Err: "unknown op " + req.Op})
	}
}

func (a *agent) start(req wire.Request) {
	if len(req.Argv) == 0 {
		a.send(wire.Event{ID: req.ID, Ev: wire.EvError, Err: "start: empty argv"})
		return
	}
	cmd := exec.Command(req.Argv[0], req.Argv[1:]...)
	cmd.Env = append(os.Environ(), req.Env...)
	cmd.Dir = req.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// stdout and stderr stay apart: a program's buffered stdout would
	// otherwise be cut by its unbuffered stderr.
	var prs, pws [2]*os.File
	for i := range prs {
		pr, pw, err := os.Pipe()
		if err != nil {
			a.send(wire.Event{ID: req.ID, Ev: wire.EvError, Err: "start: " + err.Error()})
			return
		}
		prs[i], pws[i] = pr, pw
	}
	closeAll := func(fs [2]*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	cmd.Stdout, cmd.Stderr = pws[0], pws[1]
	if err := cmd.Start(); err != nil {
		closeAll(prs)
		closeAll(pws)
		a.send(wire.Event{ID: req.ID, Ev: wire.EvError, Err: "start: " + err.Error()})
		return
	}
	closeAll(pws)
	a.pmu.Lock()
	a.procs[req.ID] = cmd.Process
	a.pmu.Unlock()
	a.send(wire.Event{ID: req.ID, Ev: wire.EvStarted, Pid: cmd.Process.Pid})
	go func() {
		var wg sync.WaitGroup
		for i, pr := range prs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 32<<10)
				for {
					n, err := pr.Read(buf)
					if n > 0 {
						a.send(wire.Event{ID: req.ID, Ev: wire.EvOut, Fd: i + 1, Data: append([]byte(nil), buf[:n]...)})
					}
					if err != nil {
						break
					}
				}
				pr.Close()
			}()
		}
		wg.Wait()
		ev := wire.Event{ID: req.ID, Ev: wire.EvExit}
		if err := cmd.Wait(); err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					ev.Code, ev.Signal = -1, int(ws.Signal())
				} else {
					ev.Code = ee.ExitCode()
				}
			} else {
				ev.Code, ev.Err = -1, err.Error()
			}
		}
		a.pmu.Lock()
		delete(a.procs, req.ID)
		a.pmu.Unlock()
		a.send(ev)
	}()
}

func (a *agent) killAll() {
	a.pmu.Lock()
	defer a.pmu.Unlock()
	for _, p := range a.procs {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}
