// Package model is the golden protocol engine (golden/iwarp) behind the
// driver.Card interface: the baseline the benchmarks compare the
// openiwarp card with (host/verbs/perf registers it as "golden" in its
// test binary), and nothing else. It is not registered as a card:
// "model" is the openiwarp card's driver over the card's Go model
// (host/driver/modelcard).
//
// Each attached QP is an iwarp.Endpoint reading and writing the
// connection's socket directly (the stream bridge costs no copy), its
// STag table is a mem.Table, and its registers are a small register file
// of identification, object counts and a scratch register (see Reg*).
package model

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/host/driver"
)

// Limits of the model card.
const (
	MaxCQE    = 1 << 20
	MaxQPWR   = 1 << 16
	MaxSGE    = 32
	MaxInline = 64 << 10
	MaxRd     = 1024
)

// Kind and Detail are what Info reports.
const (
	Kind   = "golden"
	Detail = "golden/iwarp engine in Go, kernel TCP stream bridge"
)

// Card is the model card.
type Card struct {
	name string
	tab  *mem.Table
	regs regFile
	dma  dmaSpace

	events  chan driver.Event
	dropped atomic.Uint64

	mu     sync.Mutex
	closed bool
	qps    map[*iwarp.Endpoint]struct{}
	nMR    int
	nCQ    int
	wg     sync.WaitGroup // one per live QP watcher
}

// New returns a model card. name is what Info reports.
func New(name string) *Card {
	c := &Card{name: name, tab: mem.NewTable(), events: make(chan driver.Event, 256), qps: map[*iwarp.Endpoint]struct{}{}}
	c.regs.card = c
	c.dma.next = dmaBase
	c.dma.card = c
	return c
}

// Info describes the card.
func (c *Card) Info() driver.Info {
	return driver.Info{Name: c.name, Kind: Kind, Detail: Detail,
		MaxCQE: MaxCQE, MaxQPWR: MaxQPWR, MaxSGE: MaxSGE, MaxInline: MaxInline,
		MaxORD: MaxRd, MaxIRD: MaxRd, DroppedEvents: c.dropped.Load()}
}

// Table is the card's STag table (every PD of the card is in it).
func (c *Card) Table() *mem.Table { return c.tab }

// Regs is the card's register file.
func (c *Card) Regs() driver.Regs { return &c.regs }

// DMA is the card's DMA space.
func (c *Card) DMA() driver.DMA { return &c.dma }

// Events delivers asynchronous events.
func (c *Card) Events() <-chan driver.Event { return c.events }

func (c *Card) post(e driver.Event) {
	select {
	case c.events <- e:
	default:
		c.dropped.Add(1)
	}
}

func (c *Card) live() error {
	if c.closed {
		return fmt.Errorf("%w: card %s", driver.ErrClosed, c.name)
	}
	return nil
}

// AllocPD creates a protection domain.
func (c *Card) AllocPD() (*mem.PD, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.live(); err != nil {
		return nil, err
	}
	return c.tab.AllocPD(), nil
}

func (c *Card) ownPD(pd *mem.PD) error {
	if pd == nil || pd.Table() != c.tab {
		return fmt.Errorf("%w: protection domain is not one of card %s", driver.ErrInvalid, c.name)
	}
	return nil
}

// RegisterMR registers buf in pd.
func (c *Card) RegisterMR(pd *mem.PD, buf []byte, addr uint64, access mem.Access, qp uint32) (*mem.MR, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.live(); err != nil {
		return nil, err
	}
	if err := c.ownPD(pd); err != nil {
		return nil, err
	}
	mr, err := pd.RegisterMR(buf, addr, access, qp)
	if err != nil {
		return nil, fmt.Errorf("driver/model: registering %d bytes at %#x: %w", len(buf), addr, err)
	}
	c.nMR++
	return mr, nil
}

// DeregisterMR removes a region.
func (c *Card) DeregisterMR(mr *mem.MR) error {
	if mr == nil || c.ownPD(mr.PD) != nil {
		return fmt.Errorf("%w: memory region is not one of card %s", driver.ErrInvalid, c.name)
	}
	if err := mr.Deregister(); err != nil {
		return fmt.Errorf("driver/model: deregistering %v: %w", mr.STag, err)
	}
	c.mu.Lock()
	c.nMR--
	c.mu.Unlock()
	return nil
}

// CQ is a completion queue of the model card.
type CQ struct {
	*iwarp.CQ
	depth int
	card  *Card
}

// Notify delivers armed notifications.
func (q *CQ) Notify() <-chan struct{} { return q.CQ.Events() }

// Depth is the number of entries.
func (q *CQ) Depth() int { return q.depth }

// Wait returns the next completion.
func (q *CQ) Wait(ctx context.Context) (iwarp.Completion, error) { return q.CQ.Wait(ctx) }

// CreateCQ creates a completion queue.
func (c *Card) CreateCQ(depth int) (driver.CQ, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.live(); err != nil {
		return nil, err
	}
	if depth < 1 || depth > MaxCQE {
		return nil, fmt.Errorf("%w: CQ depth %d (1 to %d)", driver.ErrInvalid, depth, MaxCQE)
	}
	c.nCQ++
	return &CQ{CQ: iwarp.NewCQ(depth), depth: depth, card: c}, nil
}

// Attach creates a QP on conn.
func (c *Card) Attach(conn net.Conn, p mpa.Params, cfg driver.QPConfig) (driver.QP, error) {
	scq, ok1 := cfg.SendCQ.(*CQ)
	rcq, ok2 := cfg.RecvCQ.(*CQ)
	if !ok1 || !ok2 || scq.card != c || rcq.card != c {
		return nil, fmt.Errorf("%w: the QP's CQs must be CQs of card %s", driver.ErrInvalid, c.name)
	}
	if err := c.ownPD(cfg.PD); err != nil {
		return nil, err
	}
	for _, v := range []struct {
		what   string
		n, max int
	}{{"send queue depth", cfg.SQDepth, MaxQPWR}, {"receive queue depth", cfg.RQDepth, MaxQPWR},
		{"ORD", cfg.ORD, MaxRd}, {"IRD", cfg.IRD, MaxRd}} {
		if v.n < 0 || v.n > v.max {
			return nil, fmt.Errorf("%w: %s %d (0 to %d)", driver.ErrInvalid, v.what, v.n, v.max)
		}
	}
	c.mu.Lock()
	if err := c.live(); err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.wg.Add(1) // before unlocking, so that Close waits for this QP
	c.mu.Unlock()

	icfg := iwarp.Config{PD: cfg.PD, SendCQ: scq.CQ, RecvCQ: rcq.CQ, SQDepth: cfg.SQDepth, RQDepth: cfg.RQDepth,
		ORD: cfg.ORD, IRD: cfg.IRD, MULPDU: cfg.MULPDU, Recv: cfg.Recv}
	q, err := iwarp.New(conn, p, icfg)
	if err != nil {
		c.wg.Done()
		return nil, fmt.Errorf("driver/%s: attaching a QP: %w", Kind, err)
	}
	c.mu.Lock()
	c.qps[q] = struct{}{}
	closed := c.closed // Close ran while the QP was being made: it did not see it
	c.mu.Unlock()
	go c.watch(q)
	if closed {
		q.Close()
		return nil, fmt.Errorf("%w: card %s closed while a QP was attached", driver.ErrClosed, c.name)
	}
	return q, nil
}

// watch reports the end of q's stream and releases what it held.
func (c *Card) watch(q *iwarp.Endpoint) {
	defer c.wg.Done()
	<-q.Done()
	c.mu.Lock()
	delete(c.qps, q)
	c.mu.Unlock()
	err := q.Err()
	ev := driver.Event{Type: driver.EventQPClosed, QPN: q.QPN(), Err: err}
	if !errors.Is(err, iwarp.ErrClosed) {
		ev.Type = driver.EventQPFatal
	}
	c.post(ev)
}

// Close closes every QP, then the card.
func (c *Card) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	qps := make([]*iwarp.Endpoint, 0, len(c.qps))
	for q := range c.qps {
		qps = append(qps, q)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, q := range qps {
		wg.Add(1)
		go func() { defer wg.Done(); q.Close() }()
	}
	wg.Wait()
	c.wg.Wait()
	return nil
}
