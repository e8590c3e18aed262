package qp

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSQEntryCopiesEveryField guards newSQEntry, which copies a SendWR
// field by field (so that the caller's slices do not escape): a field
// added to SendWR and not to it would otherwise be dropped silently.
func TestSQEntryCopiesEveryField(t *testing.T) {
	var wr SendWR
	v := reflect.ValueOf(&wr).Elem()
	for i := 0; i < v.NumField(); i++ {
		switch f := v.Field(i); f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(uint64(i + 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			// SGL and Inline, set one at a time below
		default:
			t.Fatalf("SendWR.%s: kind %v not covered by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	wr.Bind.Length = 7
	var q QP
	for _, data := range []func(*SendWR){
		func(w *SendWR) { w.SGL = []SGE{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}} },
		func(w *SendWR) { w.Inline = []byte("short") },
		func(w *SendWR) { w.Inline = make([]byte, ownInline+1) },
	} {
		w := wr
		data(&w)
		e := q.newSQEntry(&w)
		require.True(t, reflect.DeepEqual(w, e.wr), "posted %+v\nentry  %+v", w, e.wr)
		require.NotSame(t, w.Bind, e.wr.Bind, "the bind is copied")
		if len(w.SGL) > 0 {
			require.NotSame(t, &w.SGL[0], &e.wr.SGL[0], "the SGL is copied")
		}
		if len(w.Inline) > 0 {
			require.NotSame(t, &w.Inline[0], &e.wr.Inline[0], "the inline data is copied")
		}
		q.sqFree = append(q.sqFree, e) // the next one reuses it
	}
}
