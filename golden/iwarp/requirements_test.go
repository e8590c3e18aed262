package iwarp

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openiwarp/openiwarp/internal/reqindex"
)

// requirements maps every numbered requirement of the DDP/RDMAP digest
// (shared/spec/ddp-rdmap.md §5) to the tests that check it, as
// "package.TestName", or to "n/a: why" where no test of these packages can
// apply. The digest's numbers are in testdata/requirements.txt.
var requirements = map[int][]string{
	1: {"iwarp.TestEveryOpcode"}, 2: {"rdmap.TestControlField", "ddp.TestTaggedLayout"},
	3: {"iwarp.TestSizes"}, 4: {"iwarp.TestHostilePeer"},
	5: {"n/a: a statement about undefined buffer content"},
	6: {"rdmap.TestControlField", "iwarp.TestTsharkDecodes"}, 7: {"rdmap.TestControlField"},
	8: {"ddp.TestUntaggedLayout", "rdmap.TestParseMessages", "iwarp.TestEveryOpcode"},
	9: {"rdmap.TestOpcodeTable", "iwarp.TestTsharkDecodes"}, 10: {"rdmap.TestOpcodeTable"},
	11: {"iwarp.TestCompletionOrder", "iwarp.TestSegmentationOnWire"},
	12: {"rdmap.TestControlField", "iwarp.TestRev0"}, 13: {"rdmap.TestControlField", "iwarp.TestIgnoredFields"},
	14: {"iwarp.TestSegmentationOnWire", "iwarp.TestIgnoredFields"},
	15: {"rdmap.TestOpcodeTable", "rdmap.TestParseMessages"}, 16: {"rdmap.TestReadRequest"},
	17: {"iwarp.TestReadResponsesInOrder", "iwarp.TestZeroLength"}, 18: {"iwarp.TestSizes"},
	19: {"rdmap.TestTerminateEncodeSizes"}, 20: {"rdmap.TestTerminateByteLayout"}, 21: {"rdmap.TestCauseTable"},
	22: {"rdmap.TestHeadersFig10", "iwarp.TestHostilePeer"},
	23: {"rdmap.TestTerminateByteLayout", "rdmap.FuzzParseTerminate"},
	24: {"iwarp.TestHostilePeer"}, 25: {"iwarp.TestHostilePeer"},
	26: {"iwarp.TestHostilePeer", "rdmap.TestTerminateSendInvalidateR", "iwarp.TestReadSourceRevoked"},
	27: {"rdmap.TestOpcodeTable", "iwarp.TestHostilePeer"}, 28: {"iwarp.TestEveryOpcode"},
	29: {"iwarp.TestManyConnections"},
	30: {"n/a: by construction, a SendWR names one remote buffer (RemoteAddr, RKey)"},
	31: {"iwarp.TestSizes", "iwarp.TestZeroLength"}, 32: {"iwarp.TestCompletionOrder"},
	33: {"rdmap.TestOpcodeTable"}, 34: {"iwarp.TestHostilePeer"}, 35: {"iwarp.TestEveryOpcode"},
	36: {"rdmap.TestOpcodeTable", "iwarp.TestTsharkDecodes"}, 37: {"iwarp.TestORD"},
	38: {"iwarp.TestReadResponsesInOrder"},
	39: {"n/a: by construction, a Read WR names one remote buffer and one sink SGE", "iwarp.TestPostChecks"},
	40: {"iwarp.TestReadResponsesInOrder"}, 41: {"iwarp.TestHostilePeer"}, 42: {"iwarp.TestZeroLength"},
	43: {"rdmap.TestOpcodeTable"}, 44: {"iwarp.TestHostilePeer"}, 45: {"iwarp.TestCompletionOrder"},
	46: {"iwarp.TestReadResponsesInOrder"}, 47: {"iwarp.TestReadResponseChecks"}, 48: {"iwarp.TestReadResponseChecks"},
	49: {"rdmap.TestOpcodeTable", "iwarp.TestHostilePeer"}, 50: {"iwarp.TestEveryOpcode"},
	51: {"iwarp.TestHostilePeer"}, 52: {"iwarp.TestManyConnections"}, 53: {"iwarp.TestSolicitedEvent"},
	54: {"rdmap.TestOpcodeTable", "iwarp.TestHostilePeer"}, 55: {"iwarp.TestManyConnections"},
	56: {"iwarp.TestSizes"}, 57: {"iwarp.TestEveryOpcode"}, 58: {"iwarp.TestEveryOpcode", "iwarp.TestHostilePeer"},
	59: {"rdmap.TestTerminateByteLayout"}, 60: {"iwarp.TestHostilePeer"}, 61: {"iwarp.TestHostilePeer"},
	62: {"iwarp.TestHostilePeer"}, 63: {"iwarp.TestReceiveTerminate"},
	64: {"iwarp.TestReceiveTerminate", "iwarp.TestHostilePeer"}, 65: {"iwarp.TestHostilePeer"},
	66: {"iwarp.TestReceiveTerminate"},
	67: {"n/a: MAY (placement order is free)"}, 68: {"n/a: MAY (undefined content before delivery)"},
	69: {"iwarp.TestManyConnections"}, 70: {"iwarp.TestORD"},
	71: {"iwarp.TestHostilePeer", "n/a: by construction, a Read Request is processed only once its single L=1 segment has passed every check"},
	72: {"iwarp.TestManyConnections"}, 73: {"iwarp.TestGracefulClose"},
	74: {"iwarp.TestCompletionOrder", "iwarp.TestManyConnections"}, 75: {"iwarp.TestManyConnections"},
	76: {"iwarp.TestReadResponsesInOrder"}, 77: {"n/a: MAY"}, 78: {"iwarp.TestCompletionOrder"},
	79: {"iwarp.TestReadResponsesInOrder"}, 80: {"n/a: by construction, the engine sends only RDMAP messages"},
	81: {"iwarp.TestHostilePeer"}, 82: {"iwarp.TestORD"}, 83: {"n/a: SHOULD; the defaults are equal (16/16)"},
	84: {"iwarp.TestORD"}, 85: {"iwarp.TestHostilePeer"}, 86: {"iwarp.TestConnectionLost"},
	87: {"iwarp.TestHostilePeer", "iwarp.TestHostileMPA"}, 88: {"iwarp.TestConnectionLost"},
	89: {"n/a: MAY"}, 90: {"iwarp.TestHostilePeer"}, 91: {"iwarp.TestHostilePeer"},
	92: {"iwarp.TestHostilePeer"}, 93: {"iwarp.TestHostilePeer"}, 94: {"iwarp.TestLocalProtectionError"},
	95: {"iwarp.TestLocalProtectionError"}, 96: {"iwarp.TestHostilePeer"}, 97: {"iwarp.TestHostilePeer"},
	98: {"iwarp.TestFirstErrorReported"}, 99: {"iwarp.TestHostilePeer"}, 100: {"iwarp.TestHostilePeer"},
	101: {"iwarp.TestHostilePeer"}, 102: {"iwarp.TestHostilePeer", "mem.TestCheckEveryFault"},
	103: {"n/a: umbrella for RFC 5042; see 104-123"},
	104: {"iwarp.TestHostilePeer", "mem.TestTableLifecycle"}, 105: {"mem.TestTableLifecycle"},
	106: {"mem.TestPlaceNeverOutside", "iwarp.TestHostileNoBytesOutside", "iwarp.FuzzReceive"},
	107: {"mem.TestTableLifecycle", "iwarp.TestMemoryWRs"}, 108: {"mem.TestCheckEveryFault", "mem.TestTableLifecycle"},
	109: {"mem.TestRevokeFencesPlacement"}, 110: {"iwarp.TestHostilePeer", "mem.TestCanInvalidate"},
	111: {"mem.TestSTagsUnpredictable"},
	112: {"n/a: CQ sharing policy belongs to the PRM (host/verbs)"}, 113: {"iwarp.TestCQOverflow"},
	114: {"iwarp.TestORD", "iwarp.TestHostilePeer"}, 115: {"n/a: no code loading path exists"},
	116: {"n/a: PRM (host/driver, host/verbs)"}, 117: {"n/a: PRM"}, 118: {"n/a: PRM"},
	119: {"n/a: PRM; RegisterMR takes the caller's own buffer"}, 120: {"n/a: PRM"}, 121: {"n/a: PRM"},
	122: {"iwarp.TestHostilePeer", "n/a: IRD slots are per endpoint"}, 123: {"n/a: no shared receive queue yet"},
	124: {"n/a: IPsec is a deployment requirement"}, 125: {"n/a: IPsec"}, 126: {"n/a: IPsec"}, 127: {"n/a: IPsec"},
	128: {"n/a: IPsec"}, 129: {"n/a: IPsec"}, 130: {"n/a: IPsec"}, 131: {"n/a: IPsec"}, 132: {"n/a: IPsec"},
	133: {"n/a: requirements on the LLP, met by golden/mpa over TCP"},
	134: {"ddp.TestControlByte"}, 135: {"iwarp.TestSegmentationOnWire"}, 136: {"iwarp.TestSegmentationOnWire"},
	137: {"iwarp.TestSegmentationOnWire"}, 138: {"iwarp.TestHostilePeer", "iwarp.TestSizes"},
	139: {"ddp.TestControlByte", "iwarp.TestIgnoredFields"}, 140: {"ddp.TestControlByte", "iwarp.TestHostilePeer"},
	141: {"iwarp.TestSegmentationOnWire"}, 142: {"iwarp.TestSegmentationOnWire"}, 143: {"n/a: MAY"},
	144: {"iwarp.TestHostilePeer"}, 145: {"iwarp.TestSegmentationOnWire", "iwarp.TestMSNWraps"}, 146: {"iwarp.TestSegmentationOnWire"},
	147: {"iwarp.TestSegmentationOnWire"}, 148: {"iwarp.TestSegmentationOnWire", "ddp.TestSegmentation"},
	149: {"iwarp.TestSizes"}, 150: {"iwarp.TestZeroLength", "ddp.TestSegmentation"},
	151: {"iwarp.TestManyConnections"}, 152: {"iwarp.TestSegmentationOnWire"}, 153: {"n/a: MAY"},
	154: {"iwarp.TestManyConnections"}, 155: {"iwarp.TestHostilePeer"}, 156: {"iwarp.TestSizes"},
	157: {"n/a: golden/mpa's startup exchange"}, 158: {"iwarp.TestGracefulClose"},
	159: {"n/a: over TCP no data can follow the peer's FIN"},
	160: {"n/a: NOT DONE: a peer's FIN ends the stream; half-closed operation is not offered"},
	161: {"iwarp.TestGracefulClose"}, 162: {"iwarp.TestConnectionLost", "iwarp.TestHostilePeer"},
	163: {"iwarp.TestConnectionLost"}, 164: {"iwarp.TestHostilePeer"},
	165: {"n/a: RDMAP, DDP's ULP, asks for the teardown after its Terminate"},
	166: {"iwarp.TestHostileMPA"}, 167: {"iwarp.TestHostilePeer"}, 168: {"iwarp.TestHostilePeer", "mem.TestCheckEveryFault"},
	169: {"iwarp.TestHostileNoBytesOutside"}, 170: {"iwarp.TestHostilePeer"}, 171: {"iwarp.TestFirstErrorReported"},
	172: {"iwarp.TestHostilePeer"}, 173: {"mem.TestTableLifecycle"}, 174: {"mem.TestTableLifecycle"},
	175: {"iwarp.TestHostilePeer"}, 176: {"mem.TestTableLifecycle", "iwarp.TestMemoryWRs"}, 177: {"iwarp.TestHostilePeer"},
	178: {"mem.TestTableLifecycle", "mem.TestRevokeFencesPlacement", "mem.TestPlaceNeverOutside"},
	179: {"n/a: PRM"}, 180: {"n/a: IPsec"},
	181: {"iwarp.TestHostileMPA"}, 182: {"n/a: golden/mpa (startup)"}, 183: {"iwarp.TestHostileMPA"},
	184: {"iwarp.TestHostileMPA"}, 185: {"n/a: MAY"}, 186: {"iwarp.TestSegmentationOnWire"},
}

// TestRequirementsTraced fails when a requirement of the digest
// (testdata/requirements.txt, taken from shared/spec/ddp-rdmap.md §5) has
// no entry, an entry is not a requirement of the digest, or an entry names
// a test that does not exist.
func TestRequirementsTraced(t *testing.T) {
	list, err := reqindex.Load(filepath.Join("testdata", "requirements.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{"iwarp": ".", "mem": "mem", "ddp": "../ddp", "rdmap": "../rdmap"}
	tests := map[string]bool{}
	for pkg, dir := range dirs {
		funcs, err := reqindex.Funcs(dir)
		if err != nil {
			t.Fatal(err)
		}
		for name := range funcs {
			tests[pkg+"."+name] = true
		}
	}
	entries := make([]string, 0, len(requirements))
	for n, refs := range requirements {
		entries = append(entries, strconv.Itoa(n))
		if len(refs) == 0 {
			t.Errorf("requirement %d has no test and no reason", n)
		}
		for _, r := range refs {
			if !strings.HasPrefix(r, "n/a: ") && !tests[r] {
				t.Errorf("requirement %d names %s, which does not exist", n, r)
			}
		}
	}
	for _, gap := range reqindex.Gaps(list, entries) {
		t.Error(gap)
	}
}
