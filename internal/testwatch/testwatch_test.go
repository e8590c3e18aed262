package testwatch

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB that keeps what Errorf reports.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}
func (r *recorder) reports() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

func TestContextReportsWhatWasStuck(t *testing.T) {
	t.Setenv("OPENIWARP_TEST_PATIENCE", "20ms")
	r := &recorder{TB: t}
	ctx := Context(r, "the peer's answer")
	<-ctx.Done()
	require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
	r.end()
	got := r.reports()
	require.Len(t, got, 1)
	require.Contains(t, got[0], "watchdog: the peer's answer: still not done after 20ms")
	require.Contains(t, got[0], "goroutine ")
}

func TestContextQuietWhenDoneInTime(t *testing.T) {
	r := &recorder{TB: t}
	ctx := Context(r, "nothing")
	require.NoError(t, ctx.Err())
	r.end()
	require.ErrorIs(t, ctx.Err(), context.Canceled)
	require.Empty(t, r.reports())
}

func TestContextFromParentCancelIsNotStuck(t *testing.T) {
	t.Setenv("OPENIWARP_TEST_PATIENCE", "20ms")
	r := &recorder{TB: t}
	parent, cancel := context.WithCancel(context.Background())
	ctx := ContextFrom(r, parent, "child")
	cancel()
	<-ctx.Done()
	time.Sleep(40 * time.Millisecond)
	r.end()
	require.Empty(t, r.reports())
}

func TestWaitUntilDone(t *testing.T) {
	t.Setenv("OPENIWARP_TEST_PATIENCE", "20ms")
	r := &recorder{TB: t}
	ch := make(chan int, 1)
	ch <- 7
	v, ok := Wait(r, ch, "a value")
	require.True(t, ok)
	require.Equal(t, 7, v)
	_, ok = Wait(r, make(chan int), "a value that never comes")
	require.False(t, ok)
	require.False(t, Done(r, make(chan struct{}), "a close that never comes"))
	n := 0
	require.True(t, Until(r, "three polls", func() bool { n++; return n == 3 }))
	require.False(t, Until(r, "a condition that never holds", func() bool { return false }))
	got := r.reports()
	require.Len(t, got, 3)
	require.Contains(t, got[0], "a value that never comes")
	require.Contains(t, got[1], "a close that never comes")
	require.Contains(t, got[2], "a condition that never holds")
}

func TestPatience(t *testing.T) {
	t.Setenv("OPENIWARP_TEST_PATIENCE", "")
	require.Equal(t, DefaultPatience, Patience())
	t.Setenv("OPENIWARP_TEST_PATIENCE", "90s")
	require.Equal(t, 90*time.Second, Patience())
	t.Setenv("OPENIWARP_TEST_PATIENCE", "bogus")
	require.Equal(t, DefaultPatience, Patience())
	require.WithinDuration(t, time.Now().Add(DefaultPatience), Deadline(), time.Minute)
}

func TestStepReleasedByEnd(t *testing.T) {
	t.Setenv("OPENIWARP_TEST_PATIENCE", "30ms")
	r := &recorder{TB: t}
	ctx, end := Step(r, "a quick step")
	end()
	require.ErrorIs(t, ctx.Err(), context.Canceled)
	time.Sleep(60 * time.Millisecond)
	require.Empty(t, r.reports())
	require.Empty(t, r.cleanups, "a step leaves nothing for the test's end")
	ctx, end = Step(r, "a stuck step")
	<-ctx.Done()
	end()
	require.Len(t, r.reports(), 1)
	require.Contains(t, r.reports()[0], "a stuck step")
}

func TestUsageBack(t *testing.T) {
	base := Measure()
	require.Positive(t, base.Goroutines)
	require.Positive(t, base.FDs)
	require.Positive(t, base.Heap)
	f, err := os.Open("/proc/self/status")
	require.NoError(t, err)
	stop := make(chan struct{})
	go func() { <-stop }()
	require.Equal(t, base.FDs+1, Measure().FDs)
	require.Equal(t, base.Goroutines+1, Measure().Goroutines)
	t.Setenv("OPENIWARP_TEST_PATIENCE", "50ms")
	now, err := Back(base, 1<<20)
	require.Error(t, err)
	require.Contains(t, err.Error(), "not back to the starting level")
	require.Contains(t, err.Error(), "goroutines:")
	require.Greater(t, now.FDs, base.FDs)
	f.Close()
	close(stop)
	t.Setenv("OPENIWARP_TEST_PATIENCE", "")
	_, err = Back(base, 1<<20)
	require.NoError(t, err)
	require.Contains(t, base.String(), "file descriptors")
}
