package interop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Side is one party of a scenario (the guest's rping, the host's iwping...):
// Run must return when ctx ends.
type Side struct {
	Name string
	Run  func(ctx context.Context) (out Output, err error)
}

// Output is what a side printed.
type Output struct {
	Stdout, Stderr string
}

// String is both streams, stdout first.
func (o Output) String() string { return o.Stdout + o.Stderr }

// SideResult is how one side ended.
type SideResult struct {
	Name    string
	Err     error
	Output  Output
	Elapsed time.Duration
	// State is "ok", "failed", "stalled" (still running at the deadline)
	// or "disconnected" (the peer closed under it).
	State string
}

// SidesError says which side of a scenario stalled, failed or was
// disconnected.
type SidesError struct {
	Results []SideResult
}

func (e *SidesError) Error() string {
	var b strings.Builder
	for _, r := range e.Results {
		if r.State == "ok" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s after %s", r.Name, r.State, r.Elapsed.Round(time.Millisecond))
		if r.Err != nil {
			fmt.Fprintf(&b, ": %s", firstLine(r.Err.Error()))
		}
		if tail := lastLines(r.Output.Stderr, 2); tail != "" {
			fmt.Fprintf(&b, " [stderr: %s]", strings.ReplaceAll(tail, "\n", " / "))
		}
	}
	return "interop: " + b.String()
}

// Stalled reports whether a side was still running at the deadline.
func (e *SidesError) Stalled() bool {
	for _, r := range e.Results {
		if r.State == "stalled" {
			return true
		}
	}
	return false
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// disconnectMarks are what the programs print when the peer went away.
var disconnectMarks = []string{"DISCONNECT EVENT", "connection reset", "broken pipe", "EOF", "LLP closed"}

// RunSides runs the sides concurrently and waits for all of them, at most
// timeout. When one side fails, the others get grace to finish before they
// are cancelled. The error is a *SidesError naming every side that did not
// end well.
func RunSides(ctx context.Context, timeout, grace time.Duration, sides ...Side) ([]SideResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res := make([]SideResult, len(sides))
	failed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	for i, s := range sides {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := s.Run(sctx)
			r := SideResult{Name: s.Name, Err: err, Output: out, Elapsed: time.Since(start), State: "ok"}
			if err != nil {
				r.State = "failed"
				switch {
				case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
					// Still running at the deadline, or still running
					// grace after the other side had failed.
					r.State = "stalled"
				default:
					for _, m := range disconnectMarks {
						if strings.Contains(out.String(), m) || strings.Contains(err.Error(), m) {
							r.State = "disconnected"
						}
					}
				}
				once.Do(func() { close(failed) })
			}
			res[i] = r
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-failed:
		select {
		case <-done:
		case <-time.After(grace):
			scancel()
			<-done
		}
	}
	for _, r := range res {
		if r.State != "ok" {
			return res, &SidesError{Results: res}
		}
	}
	return res, nil
}

// gracePeriod is how long the other sides may still finish after one failed.
const gracePeriod = 10 * time.Second

// timeoutOf is the time left before ctx's deadline (or a minute).
func timeoutOf(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return time.Minute
}
