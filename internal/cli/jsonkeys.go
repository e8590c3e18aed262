package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"unsafe"
)

// MapKey is the key JSONKeysOf gives the one entry it puts in a map: in
// its result, "metrics.key" stands for any key of map "metrics".
const MapKey = "key"

// snakeCase is the form of every key in openiwarp's JSON output
// (docs/json.md).
var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// ErrKeyCase is a JSON key that is not snake_case.
var ErrKeyCase = errors.New("cli: JSON key is not snake_case")

// JSONKeys lists, sorted and once each, the key paths of every JSON value
// in data (one value, or several in a row as JSON lines): "a" for a
// top-level key, "a.b" for a key of a's object, "a[].b" for a key of the
// objects in array a. A key that is not snake_case is an ErrKeyCase error
// naming its path, so that a test pinning a tool's keys also holds it to
// the convention.
func JSONKeys(data []byte) ([]string, error) {
	seen := map[string]bool{}
	var bad []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				if !snakeCase.MatchString(k) {
					bad = append(bad, p)
				}
				seen[p] = true
				walk(p, e)
			}
		case []any:
			for _, e := range v {
				walk(prefix+"[]", e)
			}
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	n := 0
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("cli: JSON value %d: %w", n+1, err)
		}
		n++
		walk("", v)
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(bad) > 0 {
		sort.Strings(bad)
		return keys, fmt.Errorf("%w: %s", ErrKeyCase, strings.Join(bad, ", "))
	}
	return keys, nil
}

// JSONKeysOf lists the keys a value of v's type can carry in JSON, those
// tagged omitempty included: it marshals a value of that type with every
// exported field set (non-zero numbers, non-empty strings, true, one
// element per slice, pointers to such values, one entry keyed MapKey per
// map with string keys, whose keys are data rather than names) and returns
// its JSONKeys.
func JSONKeysOf(v any) ([]string, error) {
	t := reflect.TypeOf(v)
	if t == nil {
		return nil, errors.New("cli: JSONKeysOf(nil)")
	}
	full := reflect.New(t).Elem()
	fill(full, 0)
	data, err := json.Marshal(full.Interface())
	if err != nil {
		return nil, fmt.Errorf("cli: marshalling a filled %s: %w", t, err)
	}
	return JSONKeys(data)
}

// fill sets v, and everything it holds, to non-zero values; depth stops a
// type that contains itself.
// v must be settable (fields of a value made by reflect.New are).
func fill(v reflect.Value, depth int) {
	if depth > 8 || !v.CanSet() {
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.String:
		v.SetString("x")
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String {
			m := reflect.MakeMapWithSize(v.Type(), 1)
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, depth+1)
			m.SetMapIndex(reflect.ValueOf(MapKey).Convert(v.Type().Key()), e)
			v.Set(m)
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if sf := v.Type().Field(i); sf.Anonymous && !sf.IsExported() && f.Kind() == reflect.Struct {
				// An embedded struct of an unexported type: JSON still
				// encodes its exported fields, which reflect reaches only
				// through its address.
				f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
			}
			fill(f, depth+1)
		}
	}
}
