package guest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Capture is a running packet capture (tcpdump) inside a Network.
type Capture struct {
	Path   string
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	stderr strings.Builder
}

// Capture starts tcpdump on iface (default: the bridge, which sees every
// guest's traffic and the namespace's own) writing a pcap file to path, with
// an optional BPF filter. It returns once tcpdump is listening.
func (n *Network) Capture(ctx context.Context, iface, path string, filter ...string) (*Capture, error) {
	if iface == "" {
		iface = n.Bridge
	}
	args := append([]string{"-i", iface, "-U", "--immediate-mode", "-s", "0", "-Z", "root", "-w", path}, filter...)
	c := &Capture{Path: path, cmd: n.Command(context.Background(), "tcpdump", args...), done: make(chan struct{})}
	pr, err := c.cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("guest: capture: %w", err)
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("guest: start tcpdump: %w", err)
	}
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			c.stderr.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "listening on") {
				once = true
				close(listening)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	select {
	case <-listening:
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("guest: tcpdump exited: %v: %s", c.err, c.stderr.String())
	case <-ctx.Done():
		_ = c.cmd.Process.Kill()
		<-c.done
		return nil, fmt.Errorf("guest: tcpdump did not start: %w", ctx.Err())
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		return nil, fmt.Errorf("guest: tcpdump did not start in 20 s: %s", c.stderr.String())
	}
}

// Stop ends the capture (SIGINT, so tcpdump flushes the file) and waits for
// it, killing it after 10 s.
func (c *Capture) Stop() error {
	select {
	case <-c.done:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	return nil
}
