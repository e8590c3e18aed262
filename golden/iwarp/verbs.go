package iwarp

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/openiwarp/openiwarp/golden/iwarp/qp"
)

// ErrCQOverflow is reported by a CQ that was full when a completion arrived.
var ErrCQOverflow = qp.ErrCQOverflow

// ErrCQDestroyed is returned by Wait once Destroy has been called.
var ErrCQDestroyed = errors.New("iwarp: completion queue destroyed")

// CQ is a completion queue shared by any number of endpoints.
type CQ struct {
	mu        sync.Mutex
	q         []Completion
	head, n   int
	overflow  bool
	destroyed bool
	// wake is closed and replaced when a completion arrives, if a waiter
	// took it since the last time (wakeUsed): most pushes find nobody
	// parked on it.
	wake      chan struct{}
	wakeUsed  bool
	armed     bool
	solicited bool
	events    chan struct{}
	// The endpoints that complete work here: with one alone (solo), a
	// waiter may run its receive path (Endpoint.driveRx); reader is the
	// endpoint whose socket a waiter is blocked in, kicked on a push, on
	// Destroy, and when kickCtx, the context of the last such waiter,
	// ends (one registration serves every Wait with that context).
	eps      int
	solo     *Endpoint
	reader   *Endpoint
	kickCtx  context.Context
	kickStop func() bool
}

// NewCQ returns a CQ holding up to depth completions.
func NewCQ(depth int) *CQ {
	if depth <= 0 {
		depth = 1
	}
	return &CQ{q: make([]Completion, depth), wake: make(chan struct{}), events: make(chan struct{}, 1)}
}

// attach counts ep in (delta 1) or out (-1) of the endpoints feeding cq.
func (cq *CQ) attach(ep *Endpoint, delta int) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	cq.eps += delta
	switch {
	case delta > 0 && cq.eps == 1:
		cq.solo = ep
	case delta < 0 && cq.solo == ep, cq.eps != 1:
		cq.solo = nil // one left after several: which one is not known here
	}
}

// wakeLocked wakes the waiters parked on cq and the one blocked in a
// socket. Called with mu held.
func (cq *CQ) wakeLocked() {
	if cq.wakeUsed {
		close(cq.wake)
		cq.wake, cq.wakeUsed = make(chan struct{}), false
	}
	if cq.reader != nil {
		cq.reader.kick()
	}
}

// nudge wakes the waiters without a completion, so that one of them takes
// over the receive path the receive goroutine left.
func (cq *CQ) nudge() {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	cq.wakeLocked()
}

// Destroy makes every Wait, current or later, return ErrCQDestroyed.
// Completions still arrive and can be polled.
func (cq *CQ) Destroy() {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	cq.destroyed = true
	cq.wakeLocked()
	if cq.kickStop != nil {
		cq.kickStop()
		cq.kickCtx, cq.kickStop = nil, nil
	}
}

// push adds a completion; false if the CQ is full (it is then in error
// and stays so: RFC 5040 §8.1.1 #10 confines the damage to its own QPs).
func (cq *CQ) push(c Completion, solicited bool) bool {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.n == len(cq.q) || cq.overflow {
		cq.overflow = true
		return false
	}
	cq.q[(cq.head+cq.n)%len(cq.q)] = c
	cq.n++
	cq.wakeLocked()
	if cq.armed && (!cq.solicited || solicited || c.Status != WCSuccess) {
		cq.armed = false
		select {
		case cq.events <- struct{}{}:
		default:
		}
	}
	return true
}

// Poll moves up to len(wc) completions into wc and returns how many.
func (cq *CQ) Poll(wc []Completion) int {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.pollLocked(wc)
}

func (cq *CQ) pollLocked(wc []Completion) int {
	k := 0
	for k < len(wc) && cq.n > 0 {
		wc[k] = cq.q[cq.head]
		cq.head = (cq.head + 1) % len(cq.q)
		cq.n--
		k++
	}
	return k
}

// Wait returns the next completion, waiting until one arrives, ctx ends
// or the CQ is destroyed. When one endpoint alone feeds the CQ, the
// waiter runs that endpoint's receive path itself (see Endpoint.driveRx).
func (cq *CQ) Wait(ctx context.Context) (Completion, error) {
	var wc [1]Completion
	var driven *Endpoint // the endpoint whose receive path this waiter wants
	// release gives up the want. Another waiter that found the receive
	// path busy waits on its CQ: it takes over now (the receive goroutine
	// stays aside while waiters want the path). With none, the receive
	// goroutine comes back at once, so that what needs no application (a
	// Read Request, say) is served while the application does not wait.
	release := func() {
		if driven == nil {
			return
		}
		if driven.rxWanted.Add(-1) > 0 {
			driven.nudgeCQs()
		} else {
			driven.resumeRx()
		}
		driven = nil
	}
	defer release()
	for {
		cq.mu.Lock()
		if cq.pollLocked(wc[:]) == 1 {
			cq.mu.Unlock()
			return wc[0], nil
		}
		over, gone, solo := cq.overflow, cq.destroyed, cq.solo
		cq.mu.Unlock()
		switch {
		case over:
			return Completion{}, ErrCQOverflow
		case gone:
			return Completion{}, ErrCQDestroyed
		case ctx.Err() != nil:
			return Completion{}, fmt.Errorf("iwarp: waiting for a completion: %w", ctx.Err())
		}
		if solo != nil && solo.worthDriving(cq) {
			if driven != solo {
				release()
				driven = solo
				driven.rxWanted.Add(1)
			}
			if driven.driveRx(cq, ctx) {
				continue
			}
		} else {
			release()
			if solo != nil {
				solo.serveRx()
			}
		}
		cq.mu.Lock()
		if cq.n > 0 || cq.overflow || cq.destroyed {
			cq.mu.Unlock()
			continue
		}
		wake := cq.wake
		cq.wakeUsed = true
		cq.mu.Unlock()
		// Whoever held the receive path nudges the CQs after letting it
		// go; one that let go before this waiter took wake would nudge
		// nobody, and the waiter would park still wanting the path, which
		// also keeps the receive goroutine aside: try it once more now
		// that no nudge can be missed.
		if driven != nil && driven.driveRx(cq, ctx) {
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return Completion{}, fmt.Errorf("iwarp: waiting for a completion: %w", ctx.Err())
		}
	}
}

// watchLocked makes sure that the end of ctx kicks the waiter blocked in
// a socket for cq. Called with mu held.
func (cq *CQ) watchLocked(ctx context.Context) {
	if ctx.Done() == nil || ctx == cq.kickCtx {
		return
	}
	if cq.kickStop != nil {
		cq.kickStop()
	}
	cq.kickCtx = ctx
	cq.kickStop = context.AfterFunc(ctx, func() {
		cq.mu.Lock()
		defer cq.mu.Unlock()
		if cq.reader != nil {
			cq.reader.kick()
		}
	})
}

// Overflowed reports whether a completion was lost to a full queue.
func (cq *CQ) Overflowed() bool {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.overflow
}

// Arm requests one event on Events for the next completion, or with
// solicitedOnly for the next Send with Solicited Event or error completion
// (ibv_req_notify_cq).
func (cq *CQ) Arm(solicitedOnly bool) {
	cq.mu.Lock()
	cq.armed, cq.solicited = true, solicitedOnly
	cq.mu.Unlock()
}

// Events delivers one value per armed notification.
func (cq *CQ) Events() <-chan struct{} { return cq.events }
