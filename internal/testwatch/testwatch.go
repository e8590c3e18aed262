// Package testwatch gives tests watchdogs in place of time limits. A test
// step on a busy machine may take many times what it takes on a quiet one,
// so no test may fail because a short bound passed; but a test that is
// really stuck must say where. The helpers here wait as long as Patience
// (minutes), and when that passes they fail the test naming the step that
// was stuck, with the stack of every goroutine.
//
//	ctx := testwatch.Context(t, "connecting a to b")
//	verbs.Dial(ctx, addr, qp, cp)          // fails only if stuck for minutes
//	conn.SetReadDeadline(testwatch.Deadline())
//	testwatch.Until(t, "the endpoint to fail", func() bool { return ep.Err() != nil })
package testwatch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// DefaultPatience is how long a step may take before its watchdog calls it
// stuck, unless OPENIWARP_TEST_PATIENCE (a time.ParseDuration string) says
// otherwise. It is far above what any step takes on a loaded machine and
// below the 10-20 minute -timeout of the make targets, so a stuck step is
// reported by its watchdog, with its name, rather than by go test's panic.
const DefaultPatience = 5 * time.Minute

// Patience is the watchdogs' bound: DefaultPatience or
// $OPENIWARP_TEST_PATIENCE.
func Patience() time.Duration {
	if s := os.Getenv("OPENIWARP_TEST_PATIENCE"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			return d
		}
	}
	return DefaultPatience
}

// Deadline is now plus Patience, for net.Conn deadlines.
func Deadline() time.Time { return time.Now().Add(Patience()) }

// Stacks returns the stacks of every goroutine.
func Stacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Stuck fails t with a report that what did not finish within d, with
// every goroutine's stack.
func Stuck(t testing.TB, what string, d time.Duration) {
	t.Helper()
	t.Errorf("watchdog: %s: still not done after %v; goroutines:\n%s", what, d, Stacks())
}

// Context returns a context that ends after Patience (or when the test
// ends). If the Patience passes first, the test fails naming what, with
// every goroutine's stack, and whatever waits on the context returns
// context.DeadlineExceeded.
func Context(t testing.TB, what string) context.Context {
	return ContextFrom(t, context.Background(), what)
}

// ContextFrom is Context derived from parent.
func ContextFrom(t testing.TB, parent context.Context, what string) context.Context {
	t.Helper()
	ctx, end := StepFrom(t, parent, what)
	t.Cleanup(end)
	return ctx
}

// Step is Context for one step of a test: the watchdog is released by
// end (call it when the step is over, typically deferred) rather than at
// the end of the test, so that a loop of steps does not pile them up.
func Step(t testing.TB, what string) (ctx context.Context, end func()) {
	t.Helper()
	return StepFrom(t, context.Background(), what)
}

// StepFrom is Step derived from parent.
func StepFrom(t testing.TB, parent context.Context, what string) (ctx context.Context, end func()) {
	t.Helper()
	d := Patience()
	ctx, cancel := context.WithTimeout(parent, d)
	stuck := func() bool { return ctx.Err() == context.DeadlineExceeded && parent.Err() == nil }
	fired := make(chan struct{})
	// The function runs only when ctx ends before end is called: by its
	// deadline (stuck) or by the parent (not this watchdog's business).
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		if stuck() {
			Stuck(t, what, d)
		}
	})
	return ctx, func() {
		if stop() {
			// The function will not run; the deadline may still have
			// passed just now, its report not yet started.
			if stuck() {
				Stuck(t, what, d)
			}
		} else {
			<-fired // the report, if any, is made before the step ends
		}
		cancel()
	}
}

// Wait waits for a value (or the close) of ch and returns it; after
// Patience it fails the test naming what and returns ok false.
func Wait[T any](t testing.TB, ch <-chan T, what string) (v T, ok bool) {
	t.Helper()
	d := Patience()
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case v = <-ch:
		return v, true
	case <-tm.C:
		Stuck(t, what, d)
		return v, false
	}
}

// Until polls cond every millisecond or so until it holds; after Patience
// it fails the test naming what and returns false.
func Until(t testing.TB, what string, cond func() bool) bool {
	t.Helper()
	if Settle(cond) {
		return true
	}
	Stuck(t, what, Patience())
	return false
}

// Done is Wait for a channel that is closed when something ends.
func Done(t testing.TB, ch <-chan struct{}, what string) bool {
	t.Helper()
	_, ok := Wait(t, ch, what)
	return ok
}

// Settle polls cond until it holds or Patience passes, and returns
// whether it holds, without reporting: for callers that report the
// failure themselves (a goroutine leak with the leaked stacks, say).
func Settle(cond func() bool) bool {
	end := time.Now().Add(Patience())
	for pause := time.Millisecond; !cond(); pause = min(2*pause, 50*time.Millisecond) {
		if time.Now().After(end) {
			return cond()
		}
		time.Sleep(pause)
	}
	return true
}

// Usage is what the process holds: goroutines, open file descriptors and
// heap in use after a garbage collection.
type Usage struct {
	Goroutines int
	FDs        int    // entries of /proc/self/fd (-1 where there is none)
	Heap       uint64 // bytes of live heap (runtime.MemStats.HeapAlloc after GC)
}

func (u Usage) String() string {
	return fmt.Sprintf("%d goroutines, %d file descriptors, %.1f MiB heap", u.Goroutines, u.FDs, float64(u.Heap)/(1<<20))
}

// Measure takes the process's Usage, collecting garbage first.
func Measure() Usage {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds := -1
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		fds = len(ents) - 1 // ReadDir's own descriptor
	}
	return Usage{Goroutines: runtime.NumGoroutine(), FDs: fds, Heap: ms.HeapAlloc}
}

// Back waits (up to Patience) until the process's usage is back to base:
// no more goroutines or descriptors, and at most heapSlack more bytes of
// heap. It returns the last measurement and an error saying what grew,
// with the goroutines' stacks if they did.
func Back(base Usage, heapSlack uint64) (Usage, error) {
	var now Usage
	back := func() bool {
		now = Measure()
		return now.Goroutines <= base.Goroutines && now.FDs <= base.FDs && now.Heap <= base.Heap+heapSlack
	}
	if Settle(back) {
		return now, nil
	}
	msg := fmt.Sprintf("not back to the starting level: %v then, %v now (heap slack %.1f MiB)",
		base, now, float64(heapSlack)/(1<<20))
	if now.Goroutines > base.Goroutines {
		msg += "; goroutines:\n" + Stacks()
	}
	return now, errors.New(msg)
}
