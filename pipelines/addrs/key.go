package addrs

import (
	"fmt"
	"strconv"

	"github.com/zclconf/go-cty/cty"
)

// InstanceKey distinguishes the instances of a block expanded with for_each
// (StringKey) or count (IntKey). NoKey marks a block without either.
type InstanceKey interface {
	instanceKeySigil()
	String() string
	// Value is the key as a cty value (each.key or count.index).
	Value() cty.Value
}

// NoKey is the key of a block that has neither for_each nor count.
var NoKey InstanceKey

// StringKey is the key of a for_each instance.
type StringKey string

// IntKey is the key of a count instance.
type IntKey int

func (StringKey) instanceKeySigil() {}
func (IntKey) instanceKeySigil()    {}

// String returns the key in index syntax, e.g. ["cnn"].
func (k StringKey) String() string { return fmt.Sprintf("[%s]", strconv.Quote(string(k))) }

// String returns the key in index syntax, e.g. [3].
func (k IntKey) String() string { return fmt.Sprintf("[%d]", int(k)) }

// Value returns the key as a cty string.
func (k StringKey) Value() cty.Value { return cty.StringVal(string(k)) }

// Value returns the key as a cty number.
func (k IntKey) Value() cty.Value { return cty.NumberIntVal(int64(k)) }

func keyString(k InstanceKey) string {
	if k == nil {
		return ""
	}
	return k.String()
}
