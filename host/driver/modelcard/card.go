package modelcard

import (
	"errors"
	"fmt"

	"github.com/openiwarp/openiwarp/host/driver"
	"github.com/openiwarp/openiwarp/host/driver/rnic"
)

// Kind is the registry name of the card (the default card,
// driver.DefaultCard).
const Kind = "model"

func init() {
	driver.Register(Kind, func(name, arg string) (driver.Card, error) {
		a, err := driver.ParseCardArg(Kind, arg, []int{64, 128, 256, 512})
		if err != nil {
			return nil, err
		}
		return Open(name, a.Width, rnic.Options{StreamLog: a.RingLog})
	})
}

// Card is the driver over the card model; Close also stops the model.
type Card struct {
	*rnic.Card
	Phys *Phys
}

// Open starts a card model of the given data path width (0: 64 bits)
// and opens the driver over it.
func Open(name string, width int, opt rnic.Options) (*Card, error) {
	return OpenWith(name, Config{Width: width}, opt)
}

// OpenWith is Open with the model's Config.
func OpenWith(name string, cfg Config, opt rnic.Options) (*Card, error) {
	p, err := NewPhysWith(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", driver.ErrInvalid, err)
	}
	c, err := rnic.OpenBackend(p, name, Kind, opt)
	if err != nil {
		return nil, err
	}
	return &Card{Card: c, Phys: p}, nil
}

// Close closes the driver (its QPs flush and end), then the model.
func (c *Card) Close() error {
	return errors.Join(c.Card.Close(), c.Phys.Close())
}
