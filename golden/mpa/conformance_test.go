package mpa

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// conformance maps each MUST / MUST NOT of the MPA digest's checklist
// (shared/spec/mpa.md §5, RFC 5044 section numbers there) to the tests that
// prove it, or says why it does not apply to this package.
var conformance = []struct {
	req    string
	tests  string // space-separated test names in this package
	reason string // when tests is empty: why it is not this package's to test
}{
	{"R01", "", "out-of-order ULPDU passing is not offered: the deframer is in-order (§6 method 1)"},
	{"R02", "TestNegotiation", ""},
	{"R03", "TestRoundTripProperty TestPublishedVectors", ""},
	{"R04", "TestMULPDU", ""},
	{"R06", "TestMULPDU", ""},
	{"R07", "TestFramerRejectsBadLength", ""},
	{"R08", "TestRoundTripProperty", ""},
	{"R10", "TestRevisions", ""},
	{"R11", "TestPublishedVectors TestDerivedVectors", ""},
	{"R12", "TestDerivedVectors", ""},
	{"R13", "TestDeframerErrors", ""},
	{"R14", "TestPublishedVectors", ""},
	{"R15", "TestPublishedVectors TestMarkerLowBitsIgnored", ""},
	{"R16", "TestMarkerLowBitsIgnored", ""},
	{"R17", "TestNegotiation", ""},
	{"R18", "TestRoundTripProperty TestDerivedVectors", ""},
	{"R19", "TestRoundTripProperty TestPublishedVectors", ""},
	{"R20", "TestDerivedVectors TestDeframerErrors", ""},
	{"R21", "TestPublishedVectors TestFullOperationAfterStartup", ""},
	{"R22", "TestDerivedVectors TestRoundTripProperty", ""},
	{"R23", "TestDerivedVectors TestRoundTripProperty", ""},
	{"R24", "TestRoundTripProperty", ""},
	{"R25", "TestRoundTripProperty", ""},
	{"R26", "TestNegotiation", ""},
	{"R27", "TestNegotiation", ""},
	{"R29", "TestFullOperationAfterStartup", ""},
	{"R30", "TestNegotiation", ""},
	{"R31", "TestNegotiation", ""},
	{"R32", "TestDerivedVectors TestDeframerErrors", ""},
	{"R33", "TestPublishedVectors TestCRC32c", ""},
	{"R34", "TestPublishedVectors TestDerivedVectors", ""},
	{"R35", "TestEveryBitFlipDetected TestDeframerErrors", ""},
	{"R36", "TestMULPDU", ""},
	{"R37", "TestMULPDU", ""},
	{"R39", "TestMULPDU", ""},
	{"R40", "", "no dynamic MULPDU is offered: MULPDU is always the full-segment value, at least 128"},
	{"R43", "TestRoundTripProperty", ""},
	{"R44", "TestRoundTripProperty", ""},
	{"R45", "TestRoundTripProperty", ""},
	{"R46", "TestEveryBitFlipDetected", ""},
	{"R47", "TestRoundTripProperty", ""},
	{"R48", "TestRoundTripProperty TestDeframerMemoryBounded", ""},
	{"R49", "TestFullOperationAfterStartup", ""},
	{"R50", "", "binding a DDP endpoint is the engine's (golden/iwarp)"},
	{"R51", "TestStartupFrameVectors", ""},
	{"R52", "TestMalformedStartup", ""},
	{"R53", "TestNegotiation", ""},
	{"R54", "TestNegotiation", ""},
	{"R55", "TestNegotiation", ""},
	{"R56", "TestDeframerErrors", ""},
	{"R57", "TestStartupFrameVectors TestResFlagsNotChecked", ""},
	{"R58", "TestStartupFrameVectors TestRevisions", ""},
	{"R59", "TestMalformedStartup TestRevisions", ""},
	{"R60", "TestFullOperationAfterStartup TestRevZeroAllowsLargePrivateData", ""},
	{"R61", "TestMalformedStartup", ""},
	{"R62", "TestRevZeroAllowsLargePrivateData", ""},
	{"R63", "TestStartupFrameVectors TestNegotiation", ""},
	{"R64", "TestFullOperationAfterStartup", ""},
	{"R65", "TestMalformedStartup", ""},
	{"R67", "TestReject", ""},
	{"R69", "TestMalformedStartup", ""},
	{"R70", "TestMalformedStartup", ""},
	{"R71", "TestReject", ""},
	{"R73", "TestNegotiation", ""}, // Params.WaitFirstFPDU; the engine enforces it
	{"R74", "TestMalformedStartup", ""},
	{"R75", "TestFullOperationAfterStartup", ""},
	{"R76", "TestMalformedStartup", ""},
	{"R78", "TestMalformedStartup", ""},
	{"R82", "", "TCP's own recovery: the kernel's TCP carries the stream"},
	{"R84", "TestDeframerErrors TestMalformedStartup", ""},
	{"R87", "TestMalformedStartup", ""},
	{"R88", "TestDeframerErrors TestEveryBitFlipDetected", ""},
	{"R89", "TestDeframerErrors", ""},
	{"R90", "", "IPsec (RFC 3723) sits below TCP: deployments use the host kernel's IPsec; MPA runs unchanged above it"},
	{"R91", "", "no IKE in this package; see R90"},
	{"R92", "TestRevisions", ""},
}

// TestConformanceIndex keeps the index honest: every test it names exists.
func TestConformanceIndex(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	defined := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				defined[fd.Name.Name] = true
			}
		}
	}
	seen := map[string]bool{}
	for _, c := range conformance {
		require.False(t, seen[c.req], "%s listed twice", c.req)
		seen[c.req] = true
		require.True(t, c.tests != "" || c.reason != "", "%s has neither tests nor a reason", c.req)
		for _, name := range strings.Fields(c.tests) {
			require.True(t, defined[name], "%s names %s, which does not exist", c.req, name)
		}
	}
}
