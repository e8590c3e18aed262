package ipoibcm

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openiwarp/openiwarp/internal/reqindex"
)

// conformance maps every numbered requirement of the digest's §12 to the
// tests that show it. Names with a slash are in test/ipoib (the end-to-end
// harness: two to four namespaces running cmd/ipoibcm); the others are in
// this package. The digest's numbers are in testdata/requirements.txt.
var conformance = map[int][]string{
	1:  {"ipoib/TestPeers"},                                                  // UD always there: UD-only peer d
	2:  {"TestReq22Encapsulation", "TestReq23To28MTU", "TestLinkAddrLayout"}, // RFC 4391 formats
	3:  {"ipoib/TestPingAndTCP", "TestReq22Encapsulation"},                   // broadcast and multicast over the datagram channel
	4:  {"ipoib/TestPingAndTCP"},                                             // one datagram channel plus connections
	5:  {"TestReq12RecordOfConnections"},                                     // no sending before the connection is up
	6:  {"TestReq06ReservedFlagBits"},                                        //
	7:  {"TestReq07BothModes"},                                               //
	8:  {"TestReq08UDOnlySendsZeroFlags", "ipoib/TestPeers"},                 // -ud-only node
	9:  {"TestReq09And21QPNIsServiceIDInput"},                                //
	10: {"TestReq10ARPCarriesFlags"},                                         //
	11: {"ipoib/TestPeers"},                                                  // a UD-only node talks to RC nodes without connecting
	12: {"TestReq12RecordOfConnections"},                                     //
	13: {"TestReq13RepeatedAndCappedConnections", "TestRequestSupersedes"},   //
	14: {"TestReq14To31PrivateData", "TestHelloExtension"},                   //
	15: {"TestReq14To31PrivateData", "ipoib/TestPeers"},                      // REJ carries the UD QPN
	16: {"TestReq16ResolveCrossing", "TestReq16CrossingStrictBothOrders", "TestCrossingCompat", "ipoib/TestCrossingAndIdle", "ipoib/TestCrossingCompat"},
	17: {"TestReq17And18Teardown", "ipoib/TestPeers"},            // CloseAll; daemons stop cleanly
	18: {"TestReq17And18Teardown", "ipoib/TestCrossingAndIdle"},  // expiry and idle policies
	19: {"TestReq19And20ServiceID"},                              //
	20: {"TestReq19And20ServiceID"},                              //
	21: {"TestReq09And21QPNIsServiceIDInput", "ipoib/TestPeers"}, // wrong Service-ID rejected
	22: {"TestReq22Encapsulation"},                               //
	23: {"TestReq23To28MTU", "ipoib/TestPeers"},                  // tiny Receive MTU rejected
	24: {"TestReq23To28MTU"},                                     //
	25: {"TestReq23To28MTU", "ipoib/TestPeers"},                  // 9004 against 65524
	26: {"TestReq14To31PrivateData"},                             //
	27: {"TestReq23To28MTU", "ipoib/TestPeers"},                  //
	28: {"TestReq23To28MTU", "ipoib/TestPeers"},                  //
	29: {"TestReq14To31PrivateData"},                             //
	30: {"TestReq14To31PrivateData"},                             //
	31: {"TestReq14To31PrivateData"},                             //
	32: {"ipoib/TestPeers", "ipoib/TestPingAndTCP"},              // UD with d, RC with the others
	33: {"ipoib/TestPeers"},                                      // unicast received on both channels
	34: {"ipoib/TestPingAndTCP"},                                 //
	35: {"TestReq22Encapsulation", "ipoib/TestPingAndTCP"},       // ARP never on a connection; ARP/ND answered over UD
	36: {"TestReq23To28MTU"},                                     // informational; over iWARP, retransmission is the underlay TCP's (digest §13)
	37: {"ipoib/TestPeers"},                                      // ICMP too-big into the route cache
	38: {"TestReq06ReservedFlagBits", "TestReq14To31PrivateData", "TestReq19And20ServiceID", "TestReq22Encapsulation"},
}

// TestConformanceIndex fails when a requirement of the digest
// (testdata/requirements.txt, taken from shared/spec/ipoib-cm.md §12) has
// no entry, an entry is not a requirement of the digest, or a named test
// does not exist.
func TestConformanceIndex(t *testing.T) {
	list, err := reqindex.Load(filepath.Join("testdata", "requirements.txt"))
	if err != nil {
		t.Fatal(err)
	}
	here, err := reqindex.Funcs(".")
	if err != nil {
		t.Fatal(err)
	}
	harness, err := reqindex.Funcs(filepath.Join("..", "..", "test", "ipoib"))
	if err != nil {
		t.Fatal(err)
	}
	entries := make([]string, 0, len(conformance))
	for req, tests := range conformance {
		entries = append(entries, strconv.Itoa(req))
		if len(tests) == 0 {
			t.Errorf("requirement %d has no test", req)
		}
		for _, name := range tests {
			if h, ok := strings.CutPrefix(name, "ipoib/"); ok {
				if !harness[h] {
					t.Errorf("requirement %d: test/ipoib has no %s", req, h)
				}
			} else if !here[name] {
				t.Errorf("requirement %d: no %s in this package", req, name)
			}
		}
	}
	for _, gap := range reqindex.Gaps(list, entries) {
		t.Error(gap)
	}
}
