package mem

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// CanInvalidate is the check for a remote invalidation (Send with
// Invalidate): the STag must be valid and belong to this stream alone. A
// PD-scoped STag is shared by every stream of the PD, and RFC 5040 §8.1.1
// #7 forbids a peer to invalidate it; type 1 windows never are.
func CanInvalidate(e *Entry, stag STag, pd, qp uint32) bool {
	return e != nil && e.Valid && e.Key == stag.Key() && e.PD == pd && e.QP != 0 && e.QP == qp && e.Kind != KindMW1
}

// Errors of the table's management API.
var (
	ErrBusy     = errors.New("mem: region has bound windows")
	ErrArgument = errors.New("mem: invalid argument")
	ErrFull     = errors.New("mem: STag table full")
	ErrState    = errors.New("mem: object is in the wrong state")
)

const maxIndex = 1<<24 - 1

type slot struct {
	Entry
	buf    []byte // memory for [Base, Base+Length)
	parent *slot  // a window's region
	bound  int    // windows bound on a region
}

// Table is an STag table with the memory behind each entry. It is safe for
// concurrent use: placements hold the read lock while they copy, so
// revocation (Invalidate, Deregister, Bind) waits for them and no
// placement starts after it returns.
type Table struct {
	mu    sync.RWMutex
	slots map[uint32]*slot
	pds   atomic.Uint32
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{slots: make(map[uint32]*slot)} }

// PD is a protection domain.
type PD struct {
	ID    uint32
	table *Table
}

// AllocPD creates a protection domain.
func (t *Table) AllocPD() *PD { return &PD{ID: t.pds.Add(1), table: t} }

// Table returns the PD's table.
func (pd *PD) Table() *Table { return pd.table }

// alloc picks an unpredictable free index and key (RFC 5040 §8.1.1 #8).
// Index 0 is never used, so STag 0 is never valid. Called with mu held.
func (t *Table) alloc(s *slot) (STag, error) {
	if len(t.slots) >= maxIndex/2 {
		return 0, ErrFull
	}
	for {
		idx := rand.Uint32N(maxIndex) + 1
		if _, used := t.slots[idx]; !used {
			t.slots[idx] = s
			s.Key = uint8(rand.Uint32())
			return MakeSTag(idx, s.Key), nil
		}
	}
}

// newKey picks a random key other than old, so a stale STag never matches.
func newKey(old uint8) uint8 { return old + 1 + uint8(rand.UintN(255)) }

// MR is a registered memory region. Its STag serves as both lkey and rkey.
type MR struct {
	STag   STag
	PD     *PD
	Addr   uint64 // tagged offset of Buf[0]: a virtual address, or 0 for a zero-based region
	Buf    []byte
	Access Access
	QP     uint32 // stream association, 0 for PD scope
}

// RegisterMR registers buf in the PD. addr is the tagged offset of buf[0]
// (VA-based or zero-based regions are both legal). qp, if not zero, scopes
// the STag to one stream; only such STags can be invalidated remotely.
func (pd *PD) RegisterMR(buf []byte, addr uint64, access Access, qp uint32) (*MR, error) {
	if addr+uint64(len(buf)) < addr {
		return nil, fmt.Errorf("%w: region at %#x of %d bytes wraps", ErrArgument, addr, len(buf))
	}
	t := pd.table
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &slot{Entry: Entry{Valid: true, Kind: KindMR, PD: pd.ID, QP: qp, Base: addr, Length: uint64(len(buf)), Access: access}, buf: buf}
	stag, err := t.alloc(s)
	if err != nil {
		return nil, err
	}
	return &MR{STag: stag, PD: pd, Addr: addr, Buf: buf, Access: access, QP: qp}, nil
}

// Deregister removes the region; it fails with ErrBusy while windows are bound.
func (mr *MR) Deregister() error {
	t := mr.PD.table
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slots[mr.STag.Index()]
	if s == nil || s.Kind != KindMR {
		return fmt.Errorf("%w: %v is not registered", ErrState, mr.STag)
	}
	if s.bound > 0 {
		return fmt.Errorf("%w: %v has %d", ErrBusy, mr.STag, s.bound)
	}
	delete(t.slots, mr.STag.Index())
	return nil
}

// Revalidate makes an invalidated region valid again under a new key (the
// fast-register model) and returns the new STag.
func (mr *MR) Revalidate() (STag, error) {
	t := mr.PD.table
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slots[mr.STag.Index()]
	if s == nil || s.Kind != KindMR || s.Valid {
		return 0, fmt.Errorf("%w: %v is not an invalidated region", ErrState, mr.STag)
	}
	key := newKey(s.Key)
	s.Key, s.Valid = key, true
	mr.STag = MakeSTag(mr.STag.Index(), key)
	return mr.STag, nil
}

// MW is a memory window.
type MW struct {
	STag STag // index fixed at allocation; the key changes on every bind
	PD   *PD
	Type Kind // KindMW1 or KindMW2
}

// AllocMW allocates an unbound window of the given type.
func (pd *PD) AllocMW(typ Kind) (*MW, error) {
	if typ != KindMW1 && typ != KindMW2 {
		return nil, fmt.Errorf("%w: window type %v", ErrArgument, typ)
	}
	t := pd.table
	t.mu.Lock()
	defer t.mu.Unlock()
	s := &slot{Entry: Entry{Kind: typ, PD: pd.ID}}
	stag, err := t.alloc(s)
	if err != nil {
		return nil, err
	}
	return &MW{STag: stag, PD: pd, Type: typ}, nil
}

// Bind binds the window to [addr, addr+length) of mr with the given remote
// rights, and for a type 2 window to stream qp. The rights must be a
// subset of the region's and the region must allow Bind. It returns the
// window's new STag (a fresh key).
func (mw *MW) Bind(mr *MR, addr, length uint64, access Access, qp uint32) (STag, error) {
	t := mw.PD.table
	t.mu.Lock()
	defer t.mu.Unlock()
	s, p := t.slots[mw.STag.Index()], t.slots[mr.STag.Index()]
	switch {
	case s == nil || p == nil || !p.Valid || p.Kind != KindMR:
		return 0, fmt.Errorf("%w: window or region not valid", ErrState)
	case p.PD != mw.PD.ID:
		return 0, fmt.Errorf("%w: region in another PD", ErrArgument)
	case p.Access&Bind == 0 || access&^(RemoteRead|RemoteWrite) != 0 || access&^p.Access != 0:
		return 0, fmt.Errorf("%w: rights %v not allowed by region rights %v", ErrArgument, access, p.Access)
	case addr < p.Base || addr+length < addr || addr+length > p.Base+p.Length:
		return 0, fmt.Errorf("%w: window [%#x,+%d) outside region", ErrArgument, addr, length)
	case mw.Type == KindMW2 && qp == 0:
		return 0, fmt.Errorf("%w: a type 2 window needs a QP", ErrArgument)
	}
	if s.parent != nil {
		s.parent.bound--
	}
	if mw.Type == KindMW1 {
		qp = 0
	}
	off := addr - p.Base
	s.Entry = Entry{Valid: true, Key: newKey(s.Key), Kind: mw.Type, PD: mw.PD.ID, QP: qp, Base: addr, Length: length, Access: access}
	s.buf, s.parent = p.buf[off:off+length:off+length], p
	p.bound++
	mw.STag = MakeSTag(mw.STag.Index(), s.Key)
	return mw.STag, nil
}

// Dealloc frees the window.
func (mw *MW) Dealloc() error {
	t := mw.PD.table
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slots[mw.STag.Index()]
	if s == nil {
		return fmt.Errorf("%w: %v not allocated", ErrState, mw.STag)
	}
	if s.parent != nil && s.Valid {
		s.parent.bound--
	}
	delete(t.slots, mw.STag.Index())
	return nil
}

// invalidate marks the entry invalid. Called with mu held.
func (s *slot) invalidate() {
	if s.parent != nil && s.Valid {
		s.parent.bound--
	}
	s.Valid = false
}

// Invalidate is a local invalidation (the ULP's Local Invalidate WR): the
// STag stops working for every stream until it is revalidated or rebound.
func (t *Table) Invalidate(stag STag, pd uint32) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slots[stag.Index()]
	if s == nil || !s.Valid || s.Key != stag.Key() || s.PD != pd {
		return fmt.Errorf("%w: %v is not valid in PD %d", ErrState, stag, pd)
	}
	s.invalidate()
	return nil
}

// RemoteInvalidate performs a peer's invalidation (Send with Invalidate)
// arriving on stream qp of PD pd. It reports false, changing nothing, if
// CanInvalidate refuses it.
func (t *Table) RemoteInvalidate(stag STag, pd, qp uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slots[stag.Index()]
	if s == nil || !CanInvalidate(&s.Entry, stag, pd, qp) {
		return false
	}
	s.invalidate()
	return true
}

// Lookup returns a copy of the entry at stag's index.
func (t *Table) Lookup(stag STag) (Entry, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := t.slots[stag.Index()]
	if s == nil {
		return Entry{}, false
	}
	return s.Entry, true
}

// check runs Check on the entry at req.STag. Called with mu held.
func (t *Table) check(req Request) (*slot, Fault) {
	s := t.slots[req.STag.Index()]
	var e *Entry
	if s != nil {
		e = &s.Entry
	}
	return s, Check(e, req)
}

// Place checks req (Len is len(data)) and, only if it passes, copies data
// to the memory at req.TO.
func (t *Table) Place(req Request, data []byte) Fault {
	req.Len = uint64(len(data))
	if req.Len == 0 {
		return OK
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	s, f := t.check(req)
	if f == OK {
		copy(s.buf[req.TO-s.Base:], data)
	}
	return f
}

// PlaceTagged is Place for a tagged DDP segment: the table needs only its
// payload, not the whole segment (ulpdu), which a hardware placement
// engine standing in for the table parses itself.
func (t *Table) PlaceTagged(req Request, ulpdu, payload []byte) Fault {
	return t.Place(req, payload)
}

// Read checks req and, only if it passes, appends the req.Len bytes at
// req.TO to dst.
func (t *Table) Read(dst []byte, req Request) ([]byte, Fault) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	p, f := t.view(req)
	return append(dst, p...), f
}

// view returns the req.Len bytes at req.TO if req passes Check. Called
// with mu held.
func (t *Table) view(req Request) ([]byte, Fault) {
	if req.Len == 0 {
		return nil, OK
	}
	s, f := t.check(req)
	if f != OK {
		return nil, f
	}
	off := req.TO - s.Base
	return s.buf[off : off+req.Len : off+req.Len], OK
}

// View checks req and, only if it passes, returns the req.Len bytes at
// req.TO without copying them. The caller reads them after the table's
// lock is released, so View is only for a local gather (UseLocalRead)
// whose work request is outstanding: verbs forbid the ULP to change or
// deregister such a buffer until the WR completes. A peer's RDMA Read
// copies with Read instead, so that a revocation is never raced; View
// refuses any other use with AccessRights.
func (t *Table) View(req Request) ([]byte, Fault) {
	if req.Use != UseLocalRead {
		return nil, AccessRights
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.view(req)
}

// Verify runs Check on req without touching memory.
func (t *Table) Verify(req Request) Fault {
	t.mu.RLock()
	defer t.mu.RUnlock()
	_, f := t.check(req)
	return f
}
