package stagtab

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
)

// The whole sequence of a contiguous entry, register by register, with the
// offsets and bit positions of docs/regmap.md written out by hand.
func TestAppendWritesContiguous(t *testing.T) {
	e := mem.Entry{Valid: true, Key: 0xa5, PD: 7, QP: 0x1234, Base: 0x1_0000_2000, Length: 0x3_0000_0040,
		Access: mem.RemoteWrite | mem.LocalWrite}
	got := AppendWrites(nil, 0x00abcd, e, Contiguous(0xdead_beef_0000_1008), 99)
	want := []Write{
		{0x00, 0x00abcd},    // STAG_INDEX
		{0x04, 0x8000_05a5}, // STAG_CTRL: valid, access 0b0101, key 0xa5, not paged
		{0x08, 7},           // STAG_PD
		{0x0c, 0x1234},      // STAG_QP
		{0x10, 0x0000_2000}, // STAG_BASE_LO
		{0x14, 1},           // STAG_BASE_HI
		{0x18, 0x40},        // STAG_LEN_LO
		{0x1c, 3},           // STAG_LEN_HI
		{0x20, 0x0000_1008}, // STAG_ADDR_LO
		{0x24, 0xdead_beef}, // STAG_ADDR_HI
		{0x28, 0},           // STAG_PBL: not paged, slot ignored
		{0x2c, 0},           // STAG_COMMIT
	}
	assert.Equal(t, want, got)
}

// A paged entry: its page-list slots first, then the entry pointing at them.
func TestAppendWritesPaged(t *testing.T) {
	e := mem.Entry{Valid: true, Key: 1, PD: 2, Base: 0x10, Length: 0x1000, Access: mem.RemoteWrite}
	got := AppendWrites(nil, 5, e, Paged(0xff0, []uint64{0x12_3456_7000, 0x8000}), 0x0ffe)
	want := []Write{
		{0x40, 0x0ffe}, {0x44, 0x3456_7000}, {0x48, 0x12}, {0x4c, 0}, // slot 0xffe: page 0x12_3456_7000
		{0x40, 0x0fff}, {0x44, 0x8000}, {0x48, 0}, {0x4c, 0}, // slot 0xfff: page 0x8000
		{0x00, 5}, {0x04, 0x8001_0401}, {0x08, 2}, {0x0c, 0}, {0x10, 0x10}, {0x14, 0}, {0x18, 0x1000}, {0x1c, 0},
		{0x20, 0xff0}, {0x24, 0}, {0x28, 0x0ffe}, {0x2c, 0},
	}
	assert.Equal(t, want, got)
}

// Each field reaches its register and only its bits.
func TestAppendWritesFields(t *testing.T) {
	base := mem.Entry{}
	reg := func(ws []Write, off uint32) uint32 {
		for _, w := range ws {
			if w.Off == off {
				return w.Val
			}
		}
		t.Fatalf("no write at %#x", off)
		return 0
	}
	for _, c := range []struct {
		name  string
		index uint32
		e     func(*mem.Entry)
		tr    Translation
		slot  uint32
		off   uint32
		want  uint32
	}{
		{"index", 0xfedcba, nil, Translation{}, 0, 0x00, 0xfedcba},
		{"index above 24 bits", 0x1fedcba, nil, Translation{}, 0, 0x00, 0xfedcba},
		{"key", 0, func(e *mem.Entry) { e.Key = 0xff }, Translation{}, 0, 0x04, 0xff},
		{"access local write", 0, func(e *mem.Entry) { e.Access = mem.LocalWrite }, Translation{}, 0, 0x04, 1 << 8},
		{"access remote read", 0, func(e *mem.Entry) { e.Access = mem.RemoteRead }, Translation{}, 0, 0x04, 1 << 9},
		{"access remote write", 0, func(e *mem.Entry) { e.Access = mem.RemoteWrite }, Translation{}, 0, 0x04, 1 << 10},
		{"access bind", 0, func(e *mem.Entry) { e.Access = mem.Bind }, Translation{}, 0, 0x04, 1 << 11},
		{"paged", 0, nil, Paged(0, nil), 0, 0x04, 1 << 16},
		{"valid", 0, func(e *mem.Entry) { e.Valid = true }, Translation{}, 0, 0x04, 1 << 31},
		{"kind is not stored", 0, func(e *mem.Entry) { e.Kind = mem.KindMW2 }, Translation{}, 0, 0x04, 0},
		{"pd", 0, func(e *mem.Entry) { e.PD = 0xffff_fffe }, Translation{}, 0, 0x08, 0xffff_fffe},
		{"qp", 0, func(e *mem.Entry) { e.QP = 0x8000_0001 }, Translation{}, 0, 0x0c, 0x8000_0001},
		{"base lo", 0, func(e *mem.Entry) { e.Base = 0x1_2345_6789 }, Translation{}, 0, 0x10, 0x2345_6789},
		{"base hi", 0, func(e *mem.Entry) { e.Base = 0x1_2345_6789 }, Translation{}, 0, 0x14, 1},
		{"length lo", 0, func(e *mem.Entry) { e.Length = 0xffff_ffff_0000_0001 }, Translation{}, 0, 0x18, 1},
		{"length hi", 0, func(e *mem.Entry) { e.Length = 0xffff_ffff_0000_0001 }, Translation{}, 0, 0x1c, 0xffff_ffff},
		{"contiguous addr lo", 0, nil, Contiguous(0xaaaa_bbbb_cccc_dddd), 0, 0x20, 0xcccc_dddd},
		{"contiguous addr hi", 0, nil, Contiguous(0xaaaa_bbbb_cccc_dddd), 0, 0x24, 0xaaaa_bbbb},
		{"paged offset", 0, nil, Paged(0xfff, nil), 0, 0x20, 0xfff},
		{"pbl slot", 0, nil, Paged(0, nil), 0xbeef, 0x28, 0xbeef},
		{"pbl slot above 16 bits", 0, nil, Paged(0, nil), 0x1beef, 0x28, 0xbeef},
		{"contiguous has no slot", 0, nil, Contiguous(0), 0xbeef, 0x28, 0},
		{"commit value", 0, nil, Translation{}, 0, 0x2c, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := base
			if c.e != nil {
				c.e(&e)
			}
			ws := AppendWrites(nil, c.index, e, c.tr, c.slot)
			require.Len(t, ws, 12)
			assert.Equal(t, uint32(0x2c), ws[len(ws)-1].Off, "the commit comes last")
			assert.Equal(t, c.want, reg(ws, c.off))
		})
	}
}

func TestAppendPageFields(t *testing.T) {
	for _, c := range []struct {
		name   string
		page   uint64
		slot   uint32
		lo, hi uint32
	}{
		{"low page", 0x1000, 0, 0x1000, 0},
		{"bits 31:12", 0xffff_f000, 3, 0xffff_f000, 0},
		{"bits 63:32", 0xffff_ffff_0000_0000, 0xffff, 0, 0xffff_ffff},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := AppendWrites(nil, 0, mem.Entry{Length: 1}, Paged(0, []uint64{c.page}), c.slot)
			assert.Equal(t, []Write{{0x40, c.slot}, {0x44, c.lo}, {0x48, c.hi}, {0x4c, 0}}, ws[:4])
		})
	}
}

func TestAppendInvalidate(t *testing.T) {
	assert.Equal(t, []Write{{0x30, 0x000123}}, AppendInvalidate(nil, 0x123))
	assert.Equal(t, []Write{{0x30, 0xffffff}}, AppendInvalidate(nil, 0xffffff))
}

func TestValidate(t *testing.T) {
	ok := mem.Entry{Valid: true, Base: 0x1000, Length: 100}
	for _, c := range []struct {
		name  string
		index uint32
		e     mem.Entry
		tr    Translation
		err   error
	}{
		{"contiguous", 15, ok, Contiguous(0x1234), nil},
		{"paged one page", 0, ok, Paged(0xf9c, []uint64{0x5000}), nil},
		{"paged spills into a second page", 0, ok, Paged(0xf9d, []uint64{0x5000, 0x9000}), nil},
		{"zero length, no pages", 0, mem.Entry{}, Paged(0, nil), nil},
		{"top of the tagged space", 0, mem.Entry{Base: math.MaxUint64 - 9, Length: 9}, Contiguous(0), nil},
		{"index at the depth", 16, ok, Contiguous(0), ErrIndex},
		{"index far beyond", 1 << 24, ok, Contiguous(0), ErrIndex},
		{"access wider than 4 bits", 0, mem.Entry{Access: 0x10}, Contiguous(0), ErrField},
		{"tagged range wraps", 0, mem.Entry{Base: math.MaxUint64 - 9, Length: 10}, Contiguous(0), ErrLength},
		{"host range wraps", 0, ok, Contiguous(math.MaxUint64 - 98), ErrLength},
		{"contiguous with pages", 0, ok, Translation{Addr: 0, Pages: []uint64{0}}, ErrField},
		{"paged offset a page", 0, ok, Paged(PageSize, []uint64{0}), ErrField},
		{"too few pages", 0, ok, Paged(0xf9d, []uint64{0x5000}), ErrField},
		{"too many pages", 0, ok, Paged(0, []uint64{0x5000, 0x6000}), ErrField},
		{"misaligned page", 0, ok, Paged(0xf9d, []uint64{0x5000, 0x9800}), ErrMisaligned},
		{"longer than the page list", 0, mem.Entry{Length: 8*PageSize + 1}, Paged(0, make([]uint64, 9)), ErrLength},
		{"paged length wraps", 0, mem.Entry{Length: math.MaxUint64}, Paged(1, nil), ErrLength},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Validate(c.index, c.e, c.tr, 16, 8)
			if c.err == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, c.err)
			for _, other := range []error{ErrIndex, ErrField, ErrLength, ErrMisaligned, ErrPageListFull} {
				if other != c.err {
					assert.False(t, errors.Is(err, other), "%v is also %v", err, other)
				}
			}
		})
	}
}

func TestPagesFor(t *testing.T) {
	for _, c := range []struct{ off, n, want uint64 }{
		{0, 0, 0}, {0, 1, 1}, {0, 4096, 1}, {0, 4097, 2}, {4095, 1, 1}, {4095, 2, 2}, {100, 8192, 3},
		{1, math.MaxUint64, 1 << 52},
	} {
		assert.Equal(t, c.want, PagesFor(c.off, c.n), "offset %d, %d bytes", c.off, c.n)
	}
}

func TestTranslate(t *testing.T) {
	e := mem.Entry{Base: 0x1000, Length: 0x2000}
	cont := Contiguous(0xa000_0003)
	paged := Paged(0x800, []uint64{0x7000, 0x3000, 0x9000})
	for _, c := range []struct {
		name string
		tr   Translation
		to   uint64
		want uint64
		ok   bool
	}{
		{"contiguous first byte", cont, 0x1000, 0xa000_0003, true},
		{"contiguous last byte", cont, 0x2fff, 0xa000_2002, true},
		{"contiguous below", cont, 0xfff, 0, false},
		{"contiguous past the end", cont, 0x3000, 0, false},
		{"paged first byte", paged, 0x1000, 0x7800, true},
		{"paged end of first page", paged, 0x17ff, 0x7fff, true},
		{"paged second page", paged, 0x1800, 0x3000, true},
		{"paged third page", paged, 0x2800, 0x9000, true},
		{"paged last byte", paged, 0x2fff, 0x97ff, true},
		{"paged past the end", paged, 0x3000, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Translate(e, c.tr, c.to)
			assert.Equal(t, c.ok, ok)
			assert.Equal(t, c.want, got)
		})
	}
}

// The decoder holds staging values across commits and acts only on commands.
func TestDecoder(t *testing.T) {
	var d Decoder
	for _, w := range AppendWrites(nil, 3, mem.Entry{Valid: true, Key: 9, PD: 1, Length: 5, Access: mem.RemoteRead}, Contiguous(0x40), 0) {
		c := d.Write(w.Off, w.Val)
		if w.Off != 0x2c {
			assert.Equal(t, CmdNone, c.Kind, "%v", w)
			continue
		}
		assert.Equal(t, Command{Kind: CmdCommit, Index: 3, Entry: mem.Entry{Valid: true, Key: 9, PD: 1, Length: 5, Access: mem.RemoteRead}, Addr: 0x40}, c)
	}
	// A second commit with one field changed keeps the rest.
	d.Write(0x00, 4)
	c := d.Write(0x2c, 0xffff_ffff)
	assert.Equal(t, uint32(4), c.Index)
	assert.Equal(t, uint64(0x40), c.Addr)
	assert.Equal(t, Command{Kind: CmdInvalidate, Index: 0xffffff}, d.Write(0x30, 0xffff_ffff))
	d.Write(0x40, 0x1_0007)
	d.Write(0x44, 0xffff_ffff)
	d.Write(0x48, 0x1)
	assert.Equal(t, Command{Kind: CmdPage, Slot: 7, Addr: 0x1_ffff_f000}, d.Write(0x4c, 0))
	assert.Equal(t, Command{}, d.Write(0x2e, 0), "misaligned")
	assert.Equal(t, Command{}, d.Write(0x100, 0), "outside the block")
}
