package mpa

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/internal/reqindex"
)

// conformance maps every requirement of the MPA digest's checklist
// (shared/spec/mpa.md §5, RFC 5044 section numbers there; the IDs are in
// testdata/requirements.txt) to the tests that prove it, or says why it
// does not apply to this package.
var conformance = []struct {
	req    string
	tests  string // space-separated test names in this package
	reason string // when tests is empty: why it is not this package's to test
}{
	{"R01", "", "out-of-order ULPDU passing is not offered: the deframer is in-order (§6 method 1)"},
	{"R02", "TestNegotiation", ""},
	{"R03", "TestRoundTripProperty TestPublishedVectors", ""},
	{"R04", "TestMULPDU", ""},
	{"R05", "", "DDP's: golden/iwarp cuts every message into segments of at most MULPDU (iwarp.TestSegmentationOnWire)"},
	{"R06", "TestMULPDU", ""},
	{"R07", "TestFramerRejectsBadLength", ""},
	{"R08", "TestRoundTripProperty", ""},
	{"R09", "", "out-of-order passing is not offered (see R01)"},
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
	{"R28", "", "a rule for the administrator: Config.NoCRC is the switch, and only the deployment knows whether the path is protected as strongly"},
	{"R29", "TestFullOperationAfterStartup", ""},
	{"R30", "TestNegotiation", ""},
	{"R31", "TestNegotiation", ""},
	{"R32", "TestDerivedVectors TestDeframerErrors", ""},
	{"R33", "TestPublishedVectors TestCRC32c", ""},
	{"R34", "TestPublishedVectors TestDerivedVectors", ""},
	{"R35", "TestEveryBitFlipDetected TestDeframerErrors", ""},
	{"R36", "TestMULPDU", ""},
	{"R37", "TestMULPDU", ""},
	{"R38", "", "DDP's: golden/iwarp fills each segment up to MULPDU (iwarp.TestSegmentationOnWire)"},
	{"R39", "TestMULPDU", ""},
	{"R40", "", "no dynamic MULPDU is offered: MULPDU is always the full-segment value, at least 128"},
	{"R41", "TestMULPDU", ""},
	{"R42", "", "the kernel's TCP chooses segment boundaries; the engine hands it whole FPDUs, one write each"},
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
	{"R66", "TestReject", ""},
	{"R67", "TestReject", ""},
	{"R68", "TestNegotiation TestFullOperationAfterStartup", ""},
	{"R69", "TestMalformedStartup", ""},
	{"R70", "TestMalformedStartup", ""},
	{"R71", "TestReject", ""},
	{"R72", "TestFullOperationAfterStartup", ""},
	{"R73", "TestNegotiation", ""}, // Params.WaitFirstFPDU; the engine enforces it
	{"R74", "TestMalformedStartup", ""},
	{"R75", "TestFullOperationAfterStartup", ""},
	{"R76", "TestMalformedStartup", ""},
	{"R77", "TestMalformedStartup", ""}, // "nothing at all (responder/responder)" times out
	{"R78", "TestMalformedStartup", ""},
	{"R79", "TestMalformedStartup TestStartupContextCancel", ""},
	{"R80", "", "the ULP's: golden/iwarp and host/verbs bound their waits with contexts"},
	{"R81", "", "this stack speaks MPA from the first octet of the connection: no streaming mode comes before it"},
	{"R82", "", "TCP's own recovery: the kernel's TCP carries the stream"},
	{"R83", "TestDeframerErrors", ""}, // Deframer.End: nil at an FPDU boundary, code 1 inside one
	{"R84", "TestDeframerErrors TestMalformedStartup", ""},
	{"R85", "TestDeframerErrors", ""},
	{"R86", "TestDeframerErrors", ""}, // code 3 delivered; gaps cannot occur in an in-order deframer
	{"R87", "TestMalformedStartup", ""},
	{"R88", "TestDeframerErrors TestEveryBitFlipDetected", ""},
	{"R89", "TestDeframerErrors", ""},
	{"R90", "", "IPsec (RFC 3723) sits below TCP: deployments use the host kernel's IPsec; MPA runs unchanged above it"},
	{"R91", "", "no IKE in this package; see R90"},
	{"R92", "TestRevisions", ""},
}

// requirementCount is how many requirements the MPA digest's checklist
// numbers (R01 to R92): the list in testdata must have exactly these.
const requirementCount = 92

// TestConformanceIndex keeps the index honest: every requirement of the
// digest (testdata/requirements.txt, taken from shared/spec/mpa.md §5) has
// exactly one entry and every entry is a requirement, every entry has
// tests or a reason, and every test it names exists.
func TestConformanceIndex(t *testing.T) {
	list, err := reqindex.Load(filepath.Join("testdata", "requirements.txt"))
	require.NoError(t, err)
	require.Len(t, list, requirementCount, "testdata/requirements.txt")
	defined, err := reqindex.Funcs(".")
	require.NoError(t, err)
	var entries []string
	for _, c := range conformance {
		entries = append(entries, c.req)
		if c.tests == "" && c.reason == "" {
			t.Errorf("%s has neither tests nor a reason", c.req)
		}
		for _, name := range strings.Fields(c.tests) {
			if !defined[name] {
				t.Errorf("%s names %s, which does not exist", c.req, name)
			}
		}
	}
	for _, gap := range reqindex.Gaps(list, entries) {
		t.Error(gap)
	}
}
