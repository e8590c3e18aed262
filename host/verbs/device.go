package verbs

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/openiwarp/openiwarp/golden/iwarp"
	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/host/driver"
	_ "github.com/openiwarp/openiwarp/host/driver/modelcard" // the default card: the driver over the card model
)

// Devices lists the card backends linked into the program ("model",
// and "sim" when host/driver/simcard is imported).
func Devices() []string { return driver.Kinds() }

// Context is an open device (ibv_context).
type Context struct {
	card   driver.Card
	closed atomic.Bool
}

// Open opens the device called name ("" or "model", "sim",
// "vfio:0000:03:00.0"), as ibv_open_device does.
func Open(name string) (*Context, error) {
	c, err := driver.Open(name)
	if err != nil {
		return nil, fmt.Errorf("verbs: %w", err)
	}
	return &Context{card: c}, nil
}

// Card is the driver's card under this context.
func (c *Context) Card() driver.Card { return c.card }

// Info describes the device (ibv_query_device).
func (c *Context) Info() driver.Info { return c.card.Info() }

// Events delivers the device's asynchronous events (ibv_get_async_event).
func (c *Context) Events() <-chan driver.Event { return c.card.Events() }

func (c *Context) live(what string) error {
	if c.closed.Load() {
		return fmt.Errorf("%w: %s on a closed device", ErrClosed, what)
	}
	return nil
}

// Close closes the device: its connected QPs disconnect (outstanding work
// completes with WCWRFlushErr) and every object of it stops working.
func (c *Context) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.card.Close()
}

// PD is a protection domain (ibv_pd).
type PD struct {
	ctx    *Context
	pd     *mem.PD
	closed atomic.Bool
}

// AllocPD allocates a protection domain (ibv_alloc_pd).
func (c *Context) AllocPD() (*PD, error) {
	if err := c.live("AllocPD"); err != nil {
		return nil, err
	}
	pd, err := c.card.AllocPD()
	if err != nil {
		return nil, fmt.Errorf("verbs: AllocPD: %w", err)
	}
	return &PD{ctx: c, pd: pd}, nil
}

func (pd *PD) live(what string) error {
	if pd == nil {
		return fmt.Errorf("%w: %s on a nil PD", ErrInvalid, what)
	}
	if pd.closed.Load() {
		return fmt.Errorf("%w: %s on a deallocated PD", ErrClosed, what)
	}
	return pd.ctx.live(what)
}

// Dealloc releases the PD (ibv_dealloc_pd). Regions and QPs created in it
// keep working until they are themselves released; no new ones can be made.
func (pd *PD) Dealloc() error {
	if err := pd.live("Dealloc"); err != nil {
		return err
	}
	pd.closed.Store(true)
	return nil
}

// MR is a memory region (ibv_mr) over a Go byte slice. Its STag is both
// lkey and rkey; addresses are virtual addresses, as in libibverbs: Addr
// is the address of Bytes()[0].
type MR struct {
	pd     *PD
	mr     *mem.MR
	closed atomic.Bool
}

// RegMR registers buf with the given access rights (ibv_reg_mr). The card
// places into buf and reads from it until Dereg returns, so buf must stay
// alive and untouched by the program while operations use it.
func (pd *PD) RegMR(buf []byte, access Access) (*MR, error) { return pd.regMR(buf, access, 0) }

func (pd *PD) regMR(buf []byte, access Access, qpn uint32) (*MR, error) {
	if err := pd.live("RegMR"); err != nil {
		return nil, err
	}
	var addr uint64
	if len(buf) > 0 {
		addr = uint64(uintptr(unsafe.Pointer(&buf[0])))
	}
	mr, err := pd.ctx.card.RegisterMR(pd.pd, buf, addr, access, qpn)
	if err != nil {
		return nil, fmt.Errorf("verbs: RegMR: %w", err)
	}
	return &MR{pd: pd, mr: mr}, nil
}

// LKey is the key that names the region in local SGEs.
func (mr *MR) LKey() STag { return mr.mr.STag }

// RKey is the key a peer uses to Write to or Read from the region.
func (mr *MR) RKey() STag { return mr.mr.STag }

// Addr is the address of the region's first byte.
func (mr *MR) Addr() uint64 { return mr.mr.Addr }

// Len is the region's length.
func (mr *MR) Len() int { return len(mr.mr.Buf) }

// Bytes is the registered memory.
func (mr *MR) Bytes() []byte { return mr.mr.Buf }

// SGE returns the SGE for n bytes at offset off of the region. Bounds are
// checked when the work request is posted.
func (mr *MR) SGE(off, n int) SGE {
	return SGE{Addr: mr.mr.Addr + uint64(off), Length: uint32(n), LKey: mr.mr.STag}
}

// Dereg deregisters the region (ibv_dereg_mr): once it returns, the card
// no longer touches the memory, and work using its keys fails.
func (mr *MR) Dereg() error {
	if mr.closed.Swap(true) {
		return fmt.Errorf("%w: MR %v deregistered twice", ErrClosed, mr.mr.STag)
	}
	if err := mr.pd.ctx.card.DeregisterMR(mr.mr); err != nil {
		return fmt.Errorf("verbs: Dereg: %w", err)
	}
	return nil
}

// CQ is a completion queue (ibv_cq).
type CQ struct {
	ctx    *Context
	cq     driver.CQ
	life   context.Context
	kill   context.CancelFunc
	closed atomic.Bool
}

// CreateCQ creates a completion queue of depth entries (ibv_create_cq).
func (c *Context) CreateCQ(depth int) (*CQ, error) {
	if err := c.live("CreateCQ"); err != nil {
		return nil, err
	}
	cq, err := c.card.CreateCQ(depth)
	if err != nil {
		return nil, fmt.Errorf("verbs: CreateCQ: %w", err)
	}
	q := &CQ{ctx: c, cq: cq}
	q.life, q.kill = context.WithCancel(context.Background())
	return q, nil
}

func (cq *CQ) live(what string) error {
	if cq == nil {
		return fmt.Errorf("%w: %s on a nil CQ", ErrInvalid, what)
	}
	if cq.closed.Load() {
		return fmt.Errorf("%w: %s on a destroyed CQ", ErrClosed, what)
	}
	return cq.ctx.live(what)
}

// Poll moves up to len(wc) completions into wc and returns how many
// (ibv_poll_cq). Once the queue has lost a completion because it was full,
// Poll returns what is left and then iwarp.ErrCQOverflow; once a card's
// CQ is in error (a CQE it could not write, a corrupted one), what is
// left and then that error.
func (cq *CQ) Poll(wc []WC) (int, error) {
	if err := cq.live("Poll"); err != nil {
		return 0, err
	}
	n := cq.cq.Poll(wc)
	if n == 0 && cq.cq.Overflowed() {
		return 0, fmt.Errorf("verbs: CQ overrun (depth %d): %w", cq.cq.Depth(), iwarp.ErrCQOverflow)
	}
	if e, ok := cq.cq.(interface{ Err() error }); ok && n == 0 {
		if err := e.Err(); err != nil {
			return 0, fmt.Errorf("verbs: CQ in error: %w", err)
		}
	}
	return n, nil
}

// Wait returns the next completion, blocking until one arrives, ctx ends
// (the error then wraps ctx.Err()), or the CQ is destroyed (ErrClosed).
func (cq *CQ) Wait(ctx context.Context) (WC, error) {
	if err := cq.live("Wait"); err != nil {
		return WC{}, err
	}
	wctx := cq.life // a context that never ends: only Destroy ends the wait
	if _, ok := cq.cq.(destroyer); ok {
		wctx = ctx // the card's CQ ends its waits itself on Destroy
	} else if ctx.Done() != nil {
		var wc [1]WC
		if cq.cq.Poll(wc[:]) == 1 { // fast path: no context plumbing
			return wc[0], nil
		}
		var cancel context.CancelFunc
		wctx, cancel = context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(cq.life, cancel)
		defer stop()
	}
	w, err := cq.cq.Wait(wctx)
	if err != nil {
		switch {
		case cq.closed.Load() && ctx.Err() == nil, errors.Is(err, iwarp.ErrCQDestroyed):
			return WC{}, fmt.Errorf("%w: CQ destroyed while waiting", ErrClosed)
		case errors.Is(err, iwarp.ErrCQOverflow):
			return WC{}, fmt.Errorf("verbs: CQ overrun (depth %d): %w", cq.cq.Depth(), err)
		}
		return WC{}, fmt.Errorf("verbs: CQ wait: %w", err)
	}
	return w, nil
}

// ReqNotify arms the CQ: one value arrives on Notify for the next
// completion, or with solicitedOnly for the next solicited or error
// completion (ibv_req_notify_cq).
func (cq *CQ) ReqNotify(solicitedOnly bool) error {
	if err := cq.live("ReqNotify"); err != nil {
		return err
	}
	cq.cq.Arm(solicitedOnly)
	return nil
}

// Notify is the CQ's completion channel (ibv_get_cq_event).
func (cq *CQ) Notify() <-chan struct{} { return cq.cq.Notify() }

// Depth is the number of entries.
func (cq *CQ) Depth() int { return cq.cq.Depth() }

// Destroy destroys the CQ (ibv_destroy_cq); waiters return ErrClosed.
func (cq *CQ) Destroy() error {
	if cq.closed.Swap(true) {
		return fmt.Errorf("%w: CQ destroyed twice", ErrClosed)
	}
	cq.kill()
	if d, ok := cq.cq.(destroyer); ok {
		d.Destroy()
	}
	return nil
}

// destroyer is a card CQ that can end its own waits (iwarp.CQ.Destroy):
// Wait then needs no context of its own to learn of Destroy.
type destroyer interface{ Destroy() }

// MW is a memory window (ibv_mw): a remote-access view of part of a
// region, bound by a WRBindMW work request.
type MW struct {
	pd *PD
	mw *mem.MW
}

// mwAllocator is a card that allocates windows itself (its STag table has
// a depth of its own).
type mwAllocator interface {
	AllocMW(pd *mem.PD, typ mem.Kind) (*mem.MW, error)
}

// AllocMW allocates an unbound memory window (ibv_alloc_mw): of type 2
// (bound to the stream of the QP that binds it) or type 1.
func (pd *PD) AllocMW(type2 bool) (*MW, error) {
	if err := pd.live("AllocMW"); err != nil {
		return nil, err
	}
	typ := mem.KindMW1
	if type2 {
		typ = mem.KindMW2
	}
	var mw *mem.MW
	var err error
	if a, ok := pd.ctx.card.(mwAllocator); ok {
		mw, err = a.AllocMW(pd.pd, typ)
	} else {
		mw, err = pd.pd.AllocMW(typ)
	}
	if err != nil {
		return nil, fmt.Errorf("verbs: AllocMW: %w", err)
	}
	return &MW{pd: pd, mw: mw}, nil
}

// RKey is the window's current STag (it changes with every bind).
func (mw *MW) RKey() STag { return mw.mw.STag }

// Bind is the MWBind of a WRBindMW work request that binds the window to
// length bytes of mr from tagged offset addr with the given remote rights.
func (mw *MW) Bind(mr *MR, addr, length uint64, access Access) *MWBind {
	return &MWBind{MW: mw.mw, MR: mr.mr, Addr: addr, Length: length, Access: access}
}

// Dealloc frees the window (ibv_dealloc_mw).
func (mw *MW) Dealloc() error {
	if err := mw.mw.Dealloc(); err != nil {
		return fmt.Errorf("verbs: DeallocMW: %w", err)
	}
	return nil
}
