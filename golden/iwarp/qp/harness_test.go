package qp_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/iwarp/mem"
	"github.com/openiwarp/openiwarp/golden/iwarp/qp"
	"github.com/openiwarp/openiwarp/golden/rdmap"
)

// cqs records a QP's completions; full makes the next one overflow.
type cqs struct {
	send, recv []qp.Completion
	solicited  []bool
	limit      int // 0: unlimited; else the most completions held
}

func (c *cqs) room() bool { return c.limit == 0 || len(c.send)+len(c.recv) < c.limit }

func (c *cqs) CompleteSend(wc qp.Completion) bool {
	if !c.room() {
		return false
	}
	c.send = append(c.send, wc)
	return true
}

func (c *cqs) CompleteRecv(wc qp.Completion, se bool) bool {
	if !c.room() {
		return false
	}
	c.recv = append(c.recv, wc)
	c.solicited = append(c.solicited, se)
	return true
}

// node is one QP with its memory and CQs, and what its transmitter has
// emitted: pending (not yet handed over) and wire (written, not yet
// delivered to the peer).
type node struct {
	q       *qp.QP
	tab     *mem.Table
	pd      *mem.PD
	cq      *cqs
	pending [][]byte
	wire    [][]byte
	term    []byte // the Terminate sent, if any
	exited  bool
}

// newNode returns a QP (MULPDU 1024, version 1) whose Config mod may change.
func newNode(t testing.TB, mod func(*qp.Config)) *node {
	tab := mem.NewTable()
	n := &node{tab: tab, pd: tab.AllocPD(), cq: &cqs{}}
	cfg := qp.Config{Memory: tab, Completer: n.cq, PD: n.pd.ID, QPN: 7, Version: 1, MULPDU: 1024}
	if mod != nil {
		mod(&cfg)
	}
	q, err := qp.New(cfg)
	require.NoError(t, err)
	n.q = q
	return n
}

func (n *node) reg(t testing.TB, buf []byte, addr uint64, acc mem.Access) *mem.MR {
	mr, err := n.pd.RegisterMR(buf, addr, acc, 0)
	require.NoError(t, err)
	return mr
}

// ulpdu joins a segment's header and payload.
func ulpdu(s qp.Segment) []byte {
	b := append([]byte(nil), s.Header...)
	for _, p := range s.Payload {
		b = append(b, p...)
	}
	return b
}

// flush hands what is pending to the wire, as an endpoint's write does.
func (n *node) flush() {
	if !n.q.HandOver() {
		n.pending = nil
		return
	}
	n.wire = append(n.wire, n.pending...)
	n.pending = nil
	n.q.Written(false)
}

// step runs one transmitter job and reports whether there was one.
func (n *node) step() bool {
	switch j := n.q.Peek(); j.Kind {
	case qp.JobWR, qp.JobReadResponse:
		if s, ok := n.q.Next(); ok {
			n.pending = append(n.pending, ulpdu(s))
		}
	case qp.JobFlush:
		n.flush()
	case qp.JobTerminate:
		n.pending = nil
		n.flush()
		n.term = n.q.TakeTerminate()
		n.wire = append(n.wire, n.term)
		n.exited = true
		return false
	case qp.JobExit:
		if len(n.pending) > 0 {
			n.flush()
			return true
		}
		n.exited = true
		return false
	default:
		if len(n.pending) > 0 {
			n.flush()
			return true
		}
		return false
	}
	return true
}

// run runs the transmitter until it has nothing to do.
func (n *node) run() {
	for n.step() {
	}
}

// deliver feeds up to k of a's written ULPDUs to b (k < 0: all).
func deliver(a, b *node, k int) {
	for k != 0 && len(a.wire) > 0 {
		u := a.wire[0]
		a.wire = a.wire[1:]
		b.q.Receive(u)
		k--
	}
}

// sent parses the ULPDUs n has written.
func sent(t testing.TB, n *node) []rdmap.Message {
	var out []rdmap.Message
	for _, u := range n.wire {
		m, err := rdmap.Parse(u)
		require.NoError(t, err)
		out = append(out, m)
	}
	return out
}
