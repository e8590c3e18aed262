package mem

import (
	"math/rand/v2"
	"testing"

	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckEveryFault(t *testing.T) {
	stag := MakeSTag(0x123456, 0x9A)
	base := Entry{Valid: true, Key: 0x9A, Kind: KindMR, PD: 1, Base: 0x1000, Length: 0x100, Access: RemoteWrite | RemoteRead | LocalWrite}
	ok := Request{STag: stag, PD: 1, QP: 7, TO: 0x1000, Len: 0x100, Use: UseRemoteWrite}
	mod := func(f func(*Entry, *Request)) (*Entry, Request) {
		e, r := base, ok
		f(&e, &r)
		return &e, r
	}
	for _, tc := range []struct {
		name  string
		f     func(*Entry, *Request)
		nilE  bool
		fault Fault
		write rdmap.Cause // cause for a placement
		read  rdmap.Cause // cause for a Read source
	}{
		{"ok", func(e *Entry, r *Request) {}, false, OK, 0, 0},
		{"no entry", func(e *Entry, r *Request) {}, true, InvalidSTag, rdmap.DDPInvalidSTag, rdmap.RDMAPInvalidSTag},
		{"invalidated", func(e *Entry, r *Request) { e.Valid = false }, false, InvalidSTag, rdmap.DDPInvalidSTag, rdmap.RDMAPInvalidSTag},
		{"key", func(e *Entry, r *Request) { e.Key++ }, false, InvalidSTag, rdmap.DDPInvalidSTag, rdmap.RDMAPInvalidSTag},
		{"other PD", func(e *Entry, r *Request) { r.PD = 2 }, false, NotAssociated, rdmap.DDPSTagNotAssociated, rdmap.RDMAPSTagNotAssociated},
		{"other stream", func(e *Entry, r *Request) { e.QP = 8 }, false, NotAssociated, rdmap.DDPSTagNotAssociated, rdmap.RDMAPSTagNotAssociated},
		{"rights", func(e *Entry, r *Request) { e.Access = LocalWrite }, false, AccessRights, rdmap.DDPInvalidSTag, rdmap.RDMAPAccessRights},
		{"wrap", func(e *Entry, r *Request) { r.TO = ^uint64(0) - 1; r.Len = 3 }, false, TOWrap, rdmap.DDPTOWrap, rdmap.RDMAPTOWrap},
		{"below base", func(e *Entry, r *Request) { r.TO = 0xFFF; r.Len = 1 }, false, BaseBounds, rdmap.DDPBaseBounds, rdmap.RDMAPBaseBounds},
		{"past end", func(e *Entry, r *Request) { r.Len = 0x101 }, false, BaseBounds, rdmap.DDPBaseBounds, rdmap.RDMAPBaseBounds},
		{"last byte", func(e *Entry, r *Request) { r.TO = 0x10FF; r.Len = 1 }, false, OK, 0, 0},
		{"zero length skips every check", func(e *Entry, r *Request) { e.Valid = false; r.Len = 0; r.TO = ^uint64(0) }, false, OK, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, r := mod(tc.f)
			if tc.nilE {
				e = nil
			}
			for _, u := range []Use{UseRemoteWrite, UseRemoteRead} {
				r.Use = u
				f := Check(e, r)
				require.Equal(t, tc.fault, f, "%v", u)
				if f != OK {
					want := tc.write
					if u == UseRemoteRead {
						want = tc.read
					}
					assert.Equal(t, want, f.Cause(u), "%v", u)
				}
			}
		})
	}
	// Rights per use.
	e, r := mod(func(e *Entry, r *Request) { e.Access = RemoteRead })
	r.Use = UseRemoteWrite
	assert.Equal(t, AccessRights, Check(e, r))
	r.Use = UseReadResponse
	assert.Equal(t, AccessRights, Check(e, r), "a Read sink needs LocalWrite")
	e.Access = LocalWrite
	assert.Equal(t, OK, Check(e, r))
	e.Kind = KindMW2
	e.QP = 7
	r.Use = UseLocalWrite
	assert.Equal(t, InvalidSTag, Check(e, r), "windows are not lkeys")
}

func TestCanInvalidate(t *testing.T) {
	s := MakeSTag(5, 1)
	e := Entry{Valid: true, Key: 1, Kind: KindMW2, PD: 1, QP: 3}
	assert.True(t, CanInvalidate(&e, s, 1, 3))
	assert.False(t, CanInvalidate(&e, s, 1, 4), "other stream")
	assert.False(t, CanInvalidate(&e, s, 2, 3), "other PD")
	assert.False(t, CanInvalidate(&e, MakeSTag(5, 2), 1, 3), "key")
	assert.False(t, CanInvalidate(nil, s, 1, 3))
	pdShared := Entry{Valid: true, Key: 1, Kind: KindMR, PD: 1}
	assert.False(t, CanInvalidate(&pdShared, s, 1, 3), "S7: PD-shared STag")
	mw1 := Entry{Valid: true, Key: 1, Kind: KindMW1, PD: 1, QP: 3}
	assert.False(t, CanInvalidate(&mw1, s, 1, 3))
}

func TestTableLifecycle(t *testing.T) {
	tab := NewTable()
	pd, pd2 := tab.AllocPD(), tab.AllocPD()
	buf := make([]byte, 64)
	mr, err := pd.RegisterMR(buf, 0x5000, RemoteWrite|RemoteRead|LocalWrite|Bind, 0)
	require.NoError(t, err)
	req := Request{STag: mr.STag, PD: pd.ID, QP: 1, TO: 0x5010, Use: UseRemoteWrite}
	assert.Equal(t, OK, tab.Place(req, []byte("abcd")))
	assert.Equal(t, "abcd", string(buf[16:20]))
	out, f := tab.Read(nil, Request{STag: mr.STag, PD: pd.ID, QP: 1, TO: 0x5011, Len: 2, Use: UseRemoteRead})
	assert.Equal(t, OK, f)
	assert.Equal(t, "bc", string(out))

	// S1: another PD's stream.
	req.PD = pd2.ID
	assert.Equal(t, NotAssociated, tab.Place(req, []byte("x")))
	req.PD = pd.ID

	// Windows: bind type 2 to QP 1, use from QP 2 (S2), remote invalidate.
	mw, err := pd.AllocMW(KindMW2)
	require.NoError(t, err)
	_, err = mw.Bind(mr, 0x5020, 8, RemoteWrite|LocalWrite, 1)
	assert.ErrorIs(t, err, ErrArgument, "LocalWrite is not a window right")
	ws, err := mw.Bind(mr, 0x5020, 8, RemoteWrite, 1)
	require.NoError(t, err)
	wreq := Request{STag: ws, PD: pd.ID, QP: 2, TO: 0x5020, Use: UseRemoteWrite}
	assert.Equal(t, NotAssociated, tab.Place(wreq, []byte("y")))
	wreq.QP = 1
	assert.Equal(t, OK, tab.Place(wreq, []byte("12345678")))
	assert.Equal(t, "12345678", string(buf[32:40]))
	assert.Equal(t, BaseBounds, tab.Place(wreq, []byte("123456789")))
	assert.ErrorIs(t, mr.Deregister(), ErrBusy)
	assert.False(t, tab.RemoteInvalidate(ws, pd.ID, 2))
	assert.True(t, tab.RemoteInvalidate(ws, pd.ID, 1))
	assert.Equal(t, InvalidSTag, tab.Place(wreq, []byte("z")))
	// Rebinding gives a new key; the old STag stays dead.
	ws2, err := mw.Bind(mr, 0x5020, 8, RemoteWrite, 1)
	require.NoError(t, err)
	assert.NotEqual(t, ws, ws2)
	assert.Equal(t, InvalidSTag, tab.Place(wreq, []byte("z")))
	require.NoError(t, mw.Dealloc())

	// S7: the PD-shared region cannot be invalidated remotely.
	assert.False(t, tab.RemoteInvalidate(mr.STag, pd.ID, 1))
	// S4: local invalidate, revalidate with a new key, deregister.
	old := mr.STag
	require.NoError(t, tab.Invalidate(old, pd.ID))
	assert.Equal(t, InvalidSTag, tab.Place(req, []byte("x")))
	ns, err := mr.Revalidate()
	require.NoError(t, err)
	assert.NotEqual(t, old, ns)
	req.STag = ns
	assert.Equal(t, OK, tab.Place(req, []byte("x")))
	require.NoError(t, mr.Deregister())
	assert.Equal(t, InvalidSTag, tab.Place(req, []byte("x")))
	assert.Error(t, mr.Deregister())
}

// TestPlaceNeverOutside is the S3 property: random entries and random
// accesses near every edge; a shadow copy of memory shows that nothing is
// written unless Check allows it, and never outside [TO, TO+len).
func TestPlaceNeverOutside(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	tab := NewTable()
	pds := []*PD{tab.AllocPD(), tab.AllocPD()}
	arena := make([]byte, 4096)
	shadow := make([]byte, len(arena))
	var mrs []*MR
	type placed struct {
		mr  *MR
		off int
	}
	offsets := map[STag]placed{}
	for i := 0; i < 8; i++ {
		off := r.IntN(3000)
		n := r.IntN(1000)
		addrs := []uint64{0, uint64(off), ^uint64(0) - uint64(n) - uint64(r.IntN(3))}
		mr, err := pds[i%2].RegisterMR(arena[off:off+n:off+n], addrs[r.IntN(3)], Access(r.IntN(16)), uint32(r.IntN(3)))
		if err != nil {
			continue
		}
		mrs = append(mrs, mr)
		offsets[mr.STag] = placed{mr, off}
	}
	edges := func(mr *MR) uint64 {
		switch r.IntN(5) {
		case 0:
			return mr.Addr
		case 1:
			return mr.Addr + uint64(len(mr.Buf))
		case 2:
			return mr.Addr - uint64(r.IntN(4))
		case 3:
			return ^uint64(0) - uint64(r.IntN(8))
		}
		return mr.Addr + uint64(r.IntN(len(mr.Buf)+1))
	}
	for i := 0; i < 20000; i++ {
		mr := mrs[r.IntN(len(mrs))]
		stag := mr.STag
		if r.IntN(10) == 0 {
			stag ^= STag(1 << r.IntN(32))
		}
		data := make([]byte, r.IntN(64))
		for j := range data {
			data[j] = byte(r.Uint32()) | 1
		}
		req := Request{STag: stag, PD: pds[r.IntN(2)].ID, QP: uint32(r.IntN(3)), TO: edges(mr), Use: UseRemoteWrite}
		e, _ := tab.Lookup(stag)
		want := Check(&e, Request{STag: stag, PD: req.PD, QP: req.QP, TO: req.TO, Len: uint64(len(data)), Use: UseRemoteWrite})
		if _, found := tab.Lookup(stag); !found {
			want = Check(nil, Request{STag: stag, Len: uint64(len(data)), Use: UseRemoteWrite})
		}
		f := tab.Place(req, data)
		require.Equal(t, want, f, "seed %d op %d", seed, i)
		if f == OK && len(data) > 0 {
			m := offsets[stag]
			require.NotNil(t, m.mr, "seed %d: placed through an STag that was never registered", seed)
			require.True(t, req.TO >= m.mr.Addr && req.TO+uint64(len(data)) <= m.mr.Addr+uint64(len(m.mr.Buf)), "seed %d: placed outside", seed)
			copy(shadow[m.off+int(req.TO-m.mr.Addr):], data)
		}
		require.Equal(t, shadow, arena, "seed %d op %d: memory differs from the shadow", seed, i)
	}
}

func TestSTagsUnpredictable(t *testing.T) {
	// S8: 10^5 registrations spread over the index space and all keys; no
	// arithmetic progression in consecutive indices.
	tab := NewTable()
	pd := tab.AllocPD()
	keys := map[uint8]int{}
	var idx []uint32
	for i := 0; i < 100000; i++ {
		mr, err := pd.RegisterMR(nil, 0, 0, 0)
		require.NoError(t, err)
		keys[mr.STag.Key()]++
		idx = append(idx, mr.STag.Index())
		require.NotZero(t, mr.STag.Index())
	}
	assert.Len(t, keys, 256, "every key value occurs")
	same := 0
	for i := 2; i < len(idx); i++ {
		if idx[i]-idx[i-1] == idx[i-1]-idx[i-2] {
			same++
		}
	}
	assert.Less(t, same, 10, "consecutive STags form no progression")
	var hi uint32
	for _, x := range idx {
		hi = max(hi, x)
	}
	assert.Greater(t, hi, uint32(1<<23), "indices spread over the 24-bit range")
}

// TestRevokeFencesPlacement is S6: placements race with Invalidate; once
// Invalidate has returned, no byte of the region ever changes again.
func TestRevokeFencesPlacement(t *testing.T) {
	for round := 0; round < 20; round++ {
		tab := NewTable()
		pd := tab.AllocPD()
		buf := make([]byte, 4096)
		mr, err := pd.RegisterMR(buf, 0, RemoteWrite, 0)
		require.NoError(t, err)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			data := make([]byte, 4096)
			for i := byte(1); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				for j := range data {
					data[j] = i
				}
				tab.Place(Request{STag: mr.STag, PD: pd.ID, TO: 0, Use: UseRemoteWrite}, data)
			}
		}()
		require.NoError(t, tab.Invalidate(mr.STag, pd.ID))
		tab.mu.RLock()
		snap := append([]byte(nil), buf...)
		tab.mu.RUnlock()
		for i := 0; i < 100; i++ {
			tab.mu.RLock()
			same := string(snap) == string(buf)
			tab.mu.RUnlock()
			require.True(t, same, "round %d: the region changed after Invalidate returned", round)
		}
		close(stop)
		<-done
	}
}

// TestView: View returns exactly the checked bytes of a local gather, in
// place (no copy), and refuses what Check refuses or any other use.
func TestView(t *testing.T) {
	tab := NewTable()
	pd := tab.AllocPD()
	buf := []byte("0123456789")
	mr, err := pd.RegisterMR(buf, 100, LocalWrite, 0)
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		req  Request
		want Fault
		got  string
	}{
		{"whole", Request{STag: mr.STag, PD: pd.ID, TO: 100, Len: 10, Use: UseLocalRead}, OK, "0123456789"},
		{"middle", Request{STag: mr.STag, PD: pd.ID, TO: 103, Len: 4, Use: UseLocalRead}, OK, "3456"},
		{"empty", Request{STag: mr.STag ^ 1, PD: pd.ID, TO: 0, Len: 0, Use: UseLocalRead}, OK, ""},
		{"past the end", Request{STag: mr.STag, PD: pd.ID, TO: 105, Len: 6, Use: UseLocalRead}, BaseBounds, ""},
		{"stale key", Request{STag: mr.STag ^ 1, PD: pd.ID, TO: 100, Len: 1, Use: UseLocalRead}, InvalidSTag, ""},
		{"other PD", Request{STag: mr.STag, PD: pd.ID + 1, TO: 100, Len: 1, Use: UseLocalRead}, NotAssociated, ""},
		{"a peer's Read", Request{STag: mr.STag, PD: pd.ID, TO: 100, Len: 1, Use: UseRemoteRead}, AccessRights, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, f := tab.View(c.req)
			require.Equal(t, c.want, f)
			require.Equal(t, c.got, string(p))
			if len(p) > 0 {
				require.Same(t, &buf[c.req.TO-100], &p[0], "a view, not a copy")
				require.Equal(t, len(p), cap(p), "no access past the view by append")
			}
		})
	}
}
