package guest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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
	// A 64 MiB kernel buffer: under TCG a guest can burst faster than
	// tcpdump is scheduled, and a dropped packet fails the capture check.
	args := append([]string{"-i", iface, "-U", "--immediate-mode", "-B", "65536", "-s", "0", "-Z", "root", "-w", path}, filter...)
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

// Stop ends the capture and waits for it. tcpdump drops what it has not
// yet taken from the kernel when it is interrupted, so Stop first waits
// (at most 10 s) until the file has stopped growing for 1.5 s, then sends
// SIGINT (tcpdump flushes and exits), and kills it after 10 s. The quiet
// spell is longer than a TCP teardown's gaps under TCG: with 500 ms, a
// FIN or last ACK from a slow guest once came during the SIGINT and was
// counted by the filter but never written (12 of 13 packets).
func (c *Capture) Stop() error {
	select {
	case <-c.done:
		return nil
	default:
	}
	last, stable := int64(-1), 0
	for deadline := time.Now().Add(10 * time.Second); stable < 15 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		size := int64(-1)
		if st, err := os.Stat(c.Path); err == nil {
			size = st.Size()
		}
		if size == last {
			stable++
		} else {
			last, stable = size, 0
		}
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("guest: tcpdump did not stop on SIGINT: %w", ErrCaptureIncomplete)
	}
	return c.checkStats()
}

// ErrCaptureIncomplete means tcpdump saw packets it did not write.
var ErrCaptureIncomplete = errors.New("guest: capture incomplete")

// checkStats compares tcpdump's closing counts: "N packets captured",
// "M packets received by filter", "K packets dropped by kernel".
func (c *Capture) checkStats() error {
	var captured, received, dropped int64 = -1, -1, -1
	for _, l := range strings.Split(c.stderr.String(), "\n") {
		var n int64
		var what string
		if _, err := fmt.Sscanf(l, "%d packets %s", &n, &what); err != nil {
			continue
		}
		switch {
		case what == "captured":
			captured = n
		case what == "received" && strings.Contains(l, "by filter"):
			received = n
		case what == "dropped" && strings.Contains(l, "by kernel"):
			dropped = n
		}
	}
	if captured < 0 || received < 0 {
		return fmt.Errorf("%w: no statistics from tcpdump: %s", ErrCaptureIncomplete, c.stderr.String())
	}
	if captured < received || dropped > 0 {
		return fmt.Errorf("%w: tcpdump wrote %d of %d packets (%d dropped by the kernel)", ErrCaptureIncomplete, captured, received, dropped)
	}
	return nil
}
