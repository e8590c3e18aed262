package interop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openiwarp/openiwarp/test/guest"
)

// IwpingBinary builds cmd/iwping once per harness into Results/iwping.
func (h *Harness) IwpingBinary(ctx context.Context) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.iwping != "" {
		return h.iwping, nil
	}
	out := filepath.Join(h.Results, "iwping")
	// Static (no cgo, so no sim card): the same binary runs on the host and
	// in guests, whose images carry no dynamic loader for it.
	if err := buildTool(ctx, "./cmd/iwping", out, "CGO_ENABLED=0"); err != nil {
		return "", err
	}
	h.iwping = out
	return out, nil
}

// SimIwpingBinary builds iwping with cgo for the host alone: the build
// that offers the sim card (the driver over the Verilated card, which it
// loads from build/hw/sim).
func (h *Harness) SimIwpingBinary(ctx context.Context) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.iwpingSim != "" {
		return h.iwpingSim, nil
	}
	out := filepath.Join(h.Results, "iwping-sim")
	if err := buildTool(ctx, "./cmd/iwping", out, "CGO_ENABLED=1"); err != nil {
		return "", err
	}
	h.iwpingSim = out
	return out, nil
}

// hostIwping is the iwping binary for a host side run with args: the cgo
// build when they choose the sim card, the static one otherwise.
func (h *Harness) hostIwping(ctx context.Context, args []string) (string, error) {
	for i, a := range args {
		if a == "-card" && i+1 < len(args) && strings.HasPrefix(args[i+1], "sim") {
			return h.SimIwpingBinary(ctx)
		}
	}
	return h.IwpingBinary(ctx)
}

// buildTool builds one of the repository's commands (e.g. "./cmd/iwping")
// into out.
func buildTool(ctx context.Context, pkg, out string, env ...string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, guest.GoTool(), "build", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("interop: build %s: %w: %s", pkg, err, b)
	}
	return nil
}

// lockedBuffer is a bytes.Buffer safe for a writer and concurrent readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// HostProc is a program started inside the harness namespace.
type HostProc struct {
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan struct{}
	err            error
}

// StartHost starts bin inside the namespace; it is killed when ctx ends.
func (h *Harness) StartHost(ctx context.Context, bin string, args ...string) (*HostProc, error) {
	p := &HostProc{cmd: h.Net.Command(ctx, bin, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.WaitDelay = 2 * time.Second
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("interop: start %s: %w", bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Output is what the program printed so far.
func (p *HostProc) Output() Output {
	return Output{Stdout: p.stdout.String(), Stderr: p.stderr.String()}
}

// Kill ends the program (only this process) and waits for it.
func (p *HostProc) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Side waits for the started program as a scenario side.
func (p *HostProc) Side(name string) Side {
	return Side{Name: name, Run: func(ctx context.Context) (Output, error) {
		select {
		case <-p.done:
			return p.Output(), p.err
		case <-ctx.Done():
			p.Kill()
			return p.Output(), fmt.Errorf("%w (killed)", ctx.Err())
		}
	}}
}

// WaitListenNS waits until a host program listens on port in the namespace
// (read from the socket table, without connecting), or p exits.
func (h *Harness) WaitListenNS(ctx context.Context, p *HostProc, port int) error {
	for {
		out, err := h.Net.Command(ctx, "ss", "-ltnH", fmt.Sprintf("sport = :%d", port)).Output()
		if err == nil && strings.Contains(string(out), "LISTEN") {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("interop: host program exited before listening on %d: %v\n%s", port, p.err, p.Output())
		case <-ctx.Done():
			return fmt.Errorf("interop: nothing listens on host port %d: %w", port, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
