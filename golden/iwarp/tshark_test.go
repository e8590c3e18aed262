package iwarp

import (
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/mpa"
	"github.com/openiwarp/openiwarp/golden/rdmap"
	"github.com/openiwarp/openiwarp/internal/pcapio"
	"github.com/openiwarp/openiwarp/internal/testwatch"
)

// recordedPair connects two endpoints over TCP on 127.0.0.1 with both
// directions recorded into a pcap file.
func recordedPair(t *testing.T, path string, o pairOpts) (a, b *side) {
	f, err := os.Create(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	w, err := pcapio.NewWriter(f, pcapio.LinkEthernet)
	require.NoError(t, err)
	ln := listen(t)
	ch := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		ch <- c
	}()
	cc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	sc := <-ch
	require.NotNil(t, sc)
	clock := time.Unix(1700000000, 0)
	rc, rs, err := pcapio.RecordPair(w, cc, sc, &pcapio.RecordOptions{
		Client: netip.MustParseAddrPort("198.18.0.1:40000"), Server: netip.MustParseAddrPort("198.18.0.2:4791"),
		ISN: [2]uint32{1000, 2000}, Clock: func() time.Time { clock = clock.Add(time.Millisecond); return clock }})
	require.NoError(t, err)
	ctx, end := testwatch.Step(t, "the recorded MPA startup")
	defer end()
	cfg := mpaConfig(o)
	type res struct {
		p   mpa.Params
		err error
	}
	rch := make(chan res, 1)
	go func() {
		p, err := mpa.Respond(ctx, rs, cfg)
		rch <- res{p, err}
	}()
	cp, err := mpa.Initiate(ctx, rc, cfg)
	require.NoError(t, err)
	r := <-rch
	require.NoError(t, r.err)
	return newSide(t, rc, cp, o), newSide(t, rs, r.p, o)
}

// TestTsharkDecodes records an exchange with every opcode and checks that
// tshark's iwarp_ddp_rdmap dissector decodes it with the opcodes expected.
func TestTsharkDecodes(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	require.NoError(t, err, "tshark is required (make tools installs it)")
	for _, markers := range []bool{false, true} {
		name := "plain"
		if markers {
			name = "markers"
		}
		t.Run(name, func(t *testing.T) {
			checkLeaks(t)
			path := filepath.Join(t.TempDir(), "iwarp.pcap")
			if d := os.Getenv("IWARP_PCAP_DIR"); d != "" {
				path = filepath.Join(d, "iwarp-"+name+".pcap")
			}
			// Rev 1: the Wireshark 4.0 MPA dissector does not know the RFC 6581 RTR.
			// Wireshark's MPA dissector finds markers only in FPDUs that start a
			// TCP segment, so with markers each FPDU gets its own write.
			a, b := recordedPair(t, path, pairOpts{rev: mpa.Rev1, markers: markers, cfg: Config{AlignFPDUs: markers}})
			src := []byte("0123456789abcdef")
			amr := a.reg(t, src, 0x1000, all)
			dst := make([]byte, 64)
			bmr := b.reg(t, dst, 0x2000, all|mem.Bind)
			rb := make([]byte, 256)
			rmr := b.reg(t, rb, 0, mem.LocalWrite)
			for i := 0; i < 4; i++ {
				require.NoError(t, b.ep.PostRecv(RecvWR{ID: uint64(i), SGL: []SGE{{Addr: uint64(i * 64), Length: 64, LKey: rmr.STag}}}))
			}
			var inv []mem.STag
			for i := 0; i < 2; i++ {
				mw, err := b.pd.AllocMW(mem.KindMW2)
				require.NoError(t, err)
				s, err := mw.Bind(bmr, 0x2000, 16, mem.RemoteWrite, b.ep.QPN())
				require.NoError(t, err)
				inv = append(inv, s)
			}
			back := make([]byte, 16)
			backMR := a.reg(t, back, 0, all)
			require.NoError(t, a.ep.PostSend(
				SendWR{ID: 1, Opcode: WRWrite, SGL: []SGE{{Addr: 0x1000, Length: 16, LKey: amr.STag}}, RemoteAddr: 0x2000, RKey: bmr.STag, Signaled: true},
				SendWR{ID: 2, Opcode: WRRead, SGL: []SGE{{Addr: 0, Length: 16, LKey: backMR.STag}}, RemoteAddr: 0x2000, RKey: bmr.STag, Signaled: true},
				SendWR{ID: 3, Opcode: WRSend, Inline: []byte("send"), Signaled: true},
				SendWR{ID: 4, Opcode: WRSendInvalidate, InvalidateSTag: inv[0], Inline: []byte("inv"), Signaled: true},
				SendWR{ID: 5, Opcode: WRSend, Solicited: true, Inline: []byte("se"), Signaled: true},
				SendWR{ID: 6, Opcode: WRSendInvalidate, Solicited: true, InvalidateSTag: inv[1], Inline: []byte("se-inv"), Signaled: true},
			))
			for id := uint64(1); id <= 6; id++ {
				require.Equal(t, WCSuccess, wait(t, a.scq).Status)
			}
			// A Write to an unknown STag: b answers with a Terminate.
			require.NoError(t, a.ep.PostSend(SendWR{ID: 7, Opcode: WRWrite, Inline: []byte("x"), RemoteAddr: 0, RKey: bmr.STag ^ 0x100}))
			<-a.ep.Done()
			<-b.ep.Done()
			var ee *Error
			require.ErrorAs(t, a.ep.Err(), &ee)
			assert.True(t, ee.Remote)
			assert.Equal(t, rdmap.DDPInvalidSTag, ee.Cause)

			out, err := exec.Command(tshark, "--disable-protocol", "rpcordma", "-r", path, "-T", "fields", "-E", "occurrence=a",
				"-e", "iwarp_rdma.opcode", "-e", "iwarp_rdma.term_layer", "-e", "iwarp_rdma.term_etype_ddp", "-e", "iwarp_rdma.term_errcode_ddp_tagged",
				"-Y", "iwarp_rdma").Output()
			require.NoError(t, err, "%s", out)
			var ops []string
			var termLine string
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				f := strings.Split(l, "\t")
				for _, op := range strings.Split(f[0], ",") {
					ops = append(ops, op)
					if op == "0x07" {
						termLine = l
					}
				}
			}
			// a's Write, Read Request and four Sends, b's Read Response (its
			// place among a's frames depends on timing), a's bad Write, and
			// last b's Terminate.
			want := []string{"0x00", "0x01", "0x03", "0x04", "0x05", "0x06", "0x02", "0x00", "0x07"}
			assert.ElementsMatch(t, want, ops, "tshark output:\n%s", out)
			assert.Equal(t, "0x07", ops[len(ops)-1])
			assert.Equal(t, "0x07\t0x01\t0x01\t0x00", termLine, "Terminate: DDP / Tagged Buffer / Invalid STag")
			// (The payloads are not RPC-over-RDMA: its heuristic is disabled.)
			// And the MPA layer: valid CRCs (tshark flags a bad one as an expert error).
			vout, err := exec.Command(tshark, "--disable-protocol", "rpcordma", "-r", path, "-V", "-Y", "iwarp_mpa").CombinedOutput()
			require.NoError(t, err)
			v := string(vout)
			has := func(sub string) bool { return strings.Contains(v, sub) }
			assert.True(t, has("Request frame header") && has("Reply frame header"), "MPA startup frames decoded")
			assert.True(t, has("(Good CRC32)"), "CRCs checked")
			assert.False(t, has("Bad CRC") || has("Malformed") || has("Expert Info (Error"), "tshark found an error")
			if markers {
				assert.True(t, has("FPDU back pointer"), "markers decoded")
			}
		})
	}
}
