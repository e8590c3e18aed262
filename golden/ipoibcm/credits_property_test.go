package ipoibcm

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const ready = ^uint32(0)

// simSide is one end of a simulated connection: its flow control, posted
// receives, data still to send, and the messages it has in flight (FIFO).
type simSide struct {
	fc       *FlowControl
	posted   int
	toSend   int
	inflight []uint32 // 0 = data, n>0 = credit update granting n, ready = ready
	got      int
	heard    bool // the initiator sends only once ready has arrived
}

// TestFlowControlProperty drives two ends with random interleavings of
// sending, delivery and updates, and checks the contract the scheme exists
// for: a Send never meets an empty receive queue, no grant is rejected, and
// every data message is eventually delivered (no deadlock).
func TestFlowControlProperty(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x4755))
	runs := 150
	if testing.Short() {
		runs = 30
	}
	for run := 0; run < runs; run++ {
		depth := [2]int{MinQueueDepth + rng.IntN(30), MinQueueDepth + rng.IntN(30)}
		var s [2]*simSide
		for i := range s {
			fc, err := NewFlowControl(depth[i], depth[1-i])
			require.NoError(t, err)
			s[i] = &simSide{fc: fc, posted: depth[i], toSend: rng.IntN(400)}
		}
		want := [2]int{s[1].toSend, s[0].toSend} // what each side must receive
		// Side 0 initiates with a zero-length Write, which flow control
		// does not see; side 1 answers with ready, and side 0 sends
		// nothing before it has arrived.
		_, err := s[1].fc.TakeReady()
		require.NoError(t, err)
		s[1].inflight, s[1].heard = []uint32{ready}, true
		for steps := 0; ; steps++ {
			require.Less(t, steps, 1_000_000, "seed %d run %d: no termination", seed, run)
			// Updates are sent as soon as they are due, as the daemon does.
			for _, me := range s {
				if !me.heard {
					continue
				}
				due := me.fc.UpdateDue()
				u, ok := me.fc.TakeUpdate()
				require.Equal(t, due, ok)
				if ok {
					me.inflight = append(me.inflight, u.Grant)
				}
			}
			var acts []func()
			for i := range s {
				me, peer := s[i], s[1-i]
				if me.heard && me.toSend > 0 && me.fc.Credits() >= 2 {
					acts = append(acts, func() {
						require.True(t, me.fc.TrySendData())
						me.toSend--
						me.inflight = append(me.inflight, 0)
					})
				}
				if len(me.inflight) > 0 {
					acts = append(acts, func() {
						m := me.inflight[0]
						me.inflight = me.inflight[1:]
						require.Positive(t, peer.posted, "seed %d run %d: Send met an empty receive queue", seed, run)
						peer.posted-- // consumed ...
						peer.posted++ // ... and reposted after processing
						require.NoError(t, peer.fc.Received(m == 0), "seed %d run %d", seed, run)
						peer.heard = true
						switch m {
						case 0:
							peer.got++
						case ready:
						default:
							require.NoError(t, peer.fc.Granted(Control{Kind: ControlGrant, Grant: m}), "seed %d run %d", seed, run)
						}
					})
				}
			}
			if len(acts) == 0 {
				break
			}
			acts[rng.IntN(len(acts))]()
		}
		require.Equal(t, want[0], s[0].got, "seed %d run %d depths %v: side 0 missing data (deadlock)", seed, run, depth)
		require.Equal(t, want[1], s[1].got, "seed %d run %d depths %v: side 1 missing data (deadlock)", seed, run, depth)
	}
}
