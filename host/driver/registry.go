package driver

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Opener opens a card of one backend. arg is what followed the backend's
// name and a colon in the name given to Open ("0000:03:00.0" for
// "vfio:0000:03:00.0"), or "" when there was none.
type Opener func(name, arg string) (Card, error)

var (
	regMu    sync.RWMutex
	backends = map[string]Opener{}
)

// DefaultCard is the backend Open uses for the empty name.
const DefaultCard = "model"

// Register makes a backend available under kind. It is meant to be called
// from the backend package's init; registering a kind twice panics, as
// database/sql.Register does, since it is a programming error.
func Register(kind string, open Opener) {
	regMu.Lock()
	defer regMu.Unlock()
	if open == nil || kind == "" || strings.Contains(kind, ":") {
		panic(fmt.Sprintf("driver: Register(%q): need a name without ':' and an opener", kind))
	}
	if _, dup := backends[kind]; dup {
		panic("driver: Register called twice for " + kind)
	}
	backends[kind] = open
}

// Kinds lists the registered backends, sorted.
func Kinds() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	k := make([]string, 0, len(backends))
	for n := range backends {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

// Open opens the card called name: "model", "sim", "vfio:0000:03:00.0";
// the part before the first colon picks the backend. "" opens DefaultCard.
func Open(name string) (Card, error) {
	if name == "" {
		name = DefaultCard
	}
	kind, arg, _ := strings.Cut(name, ":")
	regMu.RLock()
	open := backends[kind]
	regMu.RUnlock()
	if open == nil {
		return nil, fmt.Errorf("%w %q (registered: %s; the sim card needs an import of host/driver/simcard)",
			ErrUnknownCard, name, strings.Join(Kinds(), ", "))
	}
	c, err := open(name, arg)
	if err != nil {
		return nil, fmt.Errorf("driver: opening card %q: %w", name, err)
	}
	return c, nil
}
