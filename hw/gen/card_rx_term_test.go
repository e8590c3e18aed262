package gen

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openiwarp/openiwarp/golden/rdmap"
	cs "github.com/openiwarp/openiwarp/host/driver/cardspec"
)

// TestKnownCauses: card_rx reads a Terminate's layout with the same
// table of named causes as golden/rdmap.ParseTerminate.
func TestKnownCauses(t *testing.T) {
	var want []uint64
	for _, c := range rdmap.Causes() {
		want = append(want, uint64(c))
	}
	require.Equal(t, want, cardKnownCauses)
}

// TestCardTxCodes: the WC_STATUS and EQE_TYPE values card_tx and card_rx
// write are the card spec's.
func TestCardTxCodes(t *testing.T) {
	require.EqualValues(t, cs.WCStatusRemAccessErr, cardTxStatRemAccess)
	require.EqualValues(t, cs.WCStatusRemOpErr, cardTxStatRemOp)
	require.EqualValues(t, cs.WCStatusFatalErr, cardTxStatFatal)
	require.EqualValues(t, cs.WCStatusWRFlushErr, cardTxStatFlush)
	require.EqualValues(t, cs.WCStatusLocProtErr, cardTxStatProt)
	require.EqualValues(t, cs.WCStatusMWBindErr, cardTxStatMWBind)
	require.EqualValues(t, cs.WCStatusLocQPOpErr, cardTxStatQPOp)
	require.EqualValues(t, cs.WCOpcodeBindMW, 5) // card_tx tells a bind's completion by its WC_OPCODE
	require.EqualValues(t, cs.WCStatusLocLenErr, cardRxStatLocLen)
	require.EqualValues(t, cs.EQETypeTermSent, cardTxEvTermSent)
	require.EqualValues(t, cs.EQETypeTermRecv, cardTxEvTermRecv)
	require.EqualValues(t, cs.EQETypeQPError, cardStatEvQPError)
	require.EqualValues(t, cs.EQETypeDMAFault, cardStatEvDMAFault)
	require.EqualValues(t, cs.QPErrHost, cardStatErrHost)
	require.EqualValues(t, cs.QPErrLLPLost, cardStatErrLLPLost)
	require.EqualValues(t, cs.QPErrBadDoorbell, cardStatErrBadDB)
	require.EqualValues(t, cs.QPErrStreamCut, cardStatErrStreamCut)
	require.EqualValues(t, cs.QPErrCQOverrun, cardStatErrCQOverrun)
	require.EqualValues(t, cs.QPErrDMA, cardTxErrDMA)
	require.EqualValues(t, cs.QPDBStreamRXFinShift, cardStreamRXFin)
	require.EqualValues(t, cs.QPDBStreamRXLostShift, cardStreamRXLost)
}
