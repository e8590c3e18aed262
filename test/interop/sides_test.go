package interop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func side(name string, d time.Duration, out Output, err error) Side {
	return Side{Name: name, Run: func(ctx context.Context) (Output, error) {
		select {
		case <-time.After(d):
			return out, err
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}}
}

func TestRunSidesStates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sides []Side
		want  []string
	}{
		{"both ok", []Side{side("a", 0, Output{}, nil), side("b", 10*time.Millisecond, Output{}, nil)}, []string{"ok", "ok"}},
		{"one fails, the other waits forever", []Side{side("a", time.Hour, Output{}, nil),
			side("b", 0, Output{}, errors.New("boom"))}, []string{"stalled", "failed"}},
		{"peer went away", []Side{side("a", 0, Output{Stderr: "server DISCONNECT EVENT...\n"}, errors.New("exit status 1")),
			side("b", 0, Output{}, nil)}, []string{"disconnected", "ok"}},
		{"nobody finishes", []Side{side("a", time.Hour, Output{}, nil), side("b", time.Hour, Output{}, nil)}, []string{"stalled", "stalled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := RunSides(context.Background(), 300*time.Millisecond, 50*time.Millisecond, tc.sides...)
			var got []string
			for _, r := range res {
				got = append(got, r.State)
			}
			require.Equal(t, tc.want, got)
			allOK := true
			for _, s := range tc.want {
				allOK = allOK && s == "ok"
			}
			if allOK {
				require.NoError(t, err)
				return
			}
			var se *SidesError
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.want[0] == "stalled" || tc.want[1] == "stalled", se.Stalled())
			for i, s := range tc.want {
				if s != "ok" {
					require.Contains(t, err.Error(), tc.sides[i].Name+" "+s)
				}
			}
		})
	}
}

// A run that outlives the deadline is bounded: RunSides returns soon after.
func TestRunSidesIsBounded(t *testing.T) {
	t0 := time.Now()
	_, err := RunSides(context.Background(), 100*time.Millisecond, time.Hour, side("a", time.Hour, Output{}, nil))
	require.Error(t, err)
	require.Less(t, time.Since(t0), 5*time.Second)
}

func TestVerifyRpingOutput(t *testing.T) {
	out := "server ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ\nserver ping data: rdma-ping-1: BCDEFGHIJKLMNOPQRSTUVWXYZ[\n"
	require.NoError(t, VerifyRpingOutput(out, "server ping data: ", 2, 40))
	require.ErrorContains(t, VerifyRpingOutput(out, "server ping data: ", 3, 40), "2 \"server ping data: \" lines, want 3")
	bad := "ping data: rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYz\n"
	require.ErrorContains(t, VerifyRpingOutput(bad, "ping data: ", 1, 40), "first difference at 38")
}

func TestRpingTeardownRace(t *testing.T) {
	race := Output{Stdout: "ping data: x\n", Stderr: "client DISCONNECT EVENT...\nrdma_get_cm_event: Bad file descriptor\n"}
	require.True(t, rpingTeardownRace(race))
	for _, o := range []Output{
		{Stderr: "rdma_get_cm_event: Bad file descriptor\n"},                                             // no disconnect first
		{Stderr: "client DISCONNECT EVENT...\nrdma_get_cm_event: Bad file descriptor\ndata mismatch!\n"}, // more after it
		{Stderr: "client DISCONNECT EVENT...\ncq completion failed status 5\n"},
	} {
		require.False(t, rpingTeardownRace(o), "%q", o.Stderr)
	}
}
