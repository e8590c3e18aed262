package gen

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/mpa"
)

func TestCardSpecValid(t *testing.T) {
	m, layouts, enums, err := CardSpec()
	require.NoError(t, err)
	assert.Equal(t, uint32(CardPlacementBase), m.Windows[0].Base)
	byName := map[string]*Layout{}
	for _, l := range layouts {
		byName[l.Name] = l
	}
	// The owner bit is the last bit of CQEs and EQEs: written last, read first.
	for _, n := range []string{"CQE", "EQE"} {
		l := byName[n]
		assert.Equal(t, l.Size*8-1, l.Field("OWNER").Bit(), n)
	}
	// Every field that names an enum names one that exists and fits.
	es := map[string]*Enum{}
	for _, e := range enums {
		es[e.Name] = e
	}
	for _, l := range layouts {
		for _, f := range l.Fields {
			if f.Enum != "" {
				require.Contains(t, es, f.Enum, "%s.%s", l.Name, f.Name)
				assert.LessOrEqual(t, es[f.Enum].Width, f.Width, "%s.%s", l.Name, f.Name)
			}
		}
	}
	assert.Equal(t, CardMaxSGE, (CardMaxWQEBBs*CardBB-CardWQEHdr)/CardSGE)
	// card_cmd's MULPDU range is the golden library's.
	assert.Equal(t, mpa.MinMULPDU, cardMinMULPDU)
	assert.Equal(t, mpa.MaxULPDULength, MPARxMaxULPDU)
}

func TestLayoutValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    []LayoutField
		err  string
	}{
		{"ok", []LayoutField{{Name: "A", Off: 0, Width: 8}, {Name: "B", Off: 0, Lo: 8, Width: 24}, {Name: "C", Off: 8, Width: 64}}, ""},
		{"overlap", []LayoutField{{Name: "A", Off: 0, Width: 8}, {Name: "B", Off: 0, Lo: 7, Width: 2}}, "overlaps"},
		{"crosses word", []LayoutField{{Name: "A", Off: 0, Lo: 30, Width: 4}}, "bits 30+4"},
		{"misaligned 64", []LayoutField{{Name: "A", Off: 4, Width: 64}}, "bits 0+64"},
		{"past end", []LayoutField{{Name: "A", Off: 16, Width: 32}}, "bits 0+32"},
		{"odd width", []LayoutField{{Name: "A", Off: 0, Width: 40}}, "bits 0+40"},
		{"twice", []LayoutField{{Name: "A", Off: 0, Width: 8}, {Name: "A", Off: 4, Width: 8}}, "two fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Layout{Name: "T", Size: 16, Fields: tc.f}
			err := l.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestRegMapSpans(t *testing.T) {
	inner := &RegMap{Name: "inner", AddrBits: 4, Regs: []Reg{{Name: "A", Offset: 0}}}
	for _, tc := range []struct {
		name string
		m    *RegMap
		err  string
	}{
		{"ok", &RegMap{Name: "m", AddrBits: 8, Regs: []Reg{{Name: "R", Offset: 0}},
			Windows: []RegWindow{{Name: "W", Base: 0x10, Map: inner}},
			Arrays:  []RegArray{{Name: "AR", Base: 0x20, Stride: 8, Count: 4, Regs: []Reg{{Name: "X", Offset: 4}}}}}, ""},
		{"window over register", &RegMap{Name: "m", AddrBits: 8, Regs: []Reg{{Name: "R", Offset: 0x14}},
			Windows: []RegWindow{{Name: "W", Base: 0x10, Map: inner}}}, "overlaps"},
		{"array past space", &RegMap{Name: "m", AddrBits: 8,
			Arrays: []RegArray{{Name: "AR", Base: 0x80, Stride: 8, Count: 32, Regs: []Reg{{Name: "X", Offset: 0}}}}}, "past its 8-bit"},
		{"register past stride", &RegMap{Name: "m", AddrBits: 8,
			Arrays: []RegArray{{Name: "AR", Base: 0, Stride: 8, Count: 2, Regs: []Reg{{Name: "X", Offset: 8}}}}}, "past the stride"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.err)
		})
	}
}

func TestCardNames(t *testing.T) {
	for in, want := range map[string]string{"QP_SQ_BASE_LO": "QPSQBaseLo", "QPSTAT": "QPStat", "INV_STAG": "InvSTag",
		"RKEY": "RKey", "WR_ID": "WRID", "NSGE": "NSGE", "CQ_DB": "CQDB"} {
		assert.Equal(t, want, cardName(in), in)
	}
	assert.Equal(t, "MAX_QP", strings.ToUpper(snake("MaxQP")))
	assert.Equal(t, "MIN_RING_LOG", strings.ToUpper(snake("MinRingLog")))
}
