// Package nodetest provides a small node kind for engine tests and
// benchmarks: it writes its value to a file, can fail or sleep on demand,
// and counts its runs.
package nodetest

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
)

// Kind is the "step" test kind. Runs counts the runs per address.
type Kind struct {
	mu   sync.Mutex
	runs map[string]int
	// Total counts all runs.
	Total atomic.Int64
	// NoFiles makes runs write no output file (for benchmarks).
	NoFiles bool
}

// New returns a fresh kind.
func New() *Kind { return &Kind{runs: map[string]int{}} }

// Name returns "step".
func (*Kind) Name() string { return "step" }

// Version returns "1".
func (*Kind) Version() string { return "1" }

// Spec: value (string), fail (bool), panic (bool), sleep_ms (number),
// inputs (any).
func (*Kind) Spec() hcldec.Spec {
	return hcldec.ObjectSpec{
		"value":    &hcldec.AttrSpec{Name: "value", Type: cty.String},
		"fail":     &hcldec.AttrSpec{Name: "fail", Type: cty.Bool},
		"panic":    &hcldec.AttrSpec{Name: "panic", Type: cty.Bool},
		"sleep_ms": &hcldec.AttrSpec{Name: "sleep_ms", Type: cty.Number},
		"inputs":   &hcldec.AttrSpec{Name: "inputs", Type: cty.DynamicPseudoType},
	}
}

// OutputType: value echoes the config; file is the written file.
func (*Kind) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{"value": cty.String, "file": cty.String})
}

type node struct {
	k       *Kind
	value   string
	fail    bool
	panics  bool
	sleepMS int
}

// Decode reads the config.
func (k *Kind) Decode(v cty.Value, decl nodes.Decl) (nodes.Node, hcl.Diagnostics) {
	n := &node{k: k}
	if a := v.GetAttr("value"); !a.IsNull() {
		n.value = a.AsString()
	}
	if a := v.GetAttr("fail"); !a.IsNull() {
		n.fail = a.True()
	}
	if a := v.GetAttr("panic"); !a.IsNull() {
		n.panics = a.True()
	}
	if a := v.GetAttr("sleep_ms"); !a.IsNull() {
		_ = gocty.FromCtyValue(a, &n.sleepMS)
	}
	return n, nil
}

// Runs returns how often addr ran.
func (k *Kind) Runs(addr string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.runs[addr]
}

func (n *node) Fingerprint(context.Context, io.Writer) error { return nil }

func (n *node) Run(ctx context.Context, env *nodes.Env) (cty.Value, error) {
	n.k.mu.Lock()
	n.k.runs[env.Addr.String()]++
	n.k.mu.Unlock()
	n.k.Total.Add(1)
	if n.sleepMS > 0 {
		select {
		case <-time.After(time.Duration(n.sleepMS) * time.Millisecond):
		case <-ctx.Done():
			return cty.NilVal, ctx.Err()
		}
	}
	if n.fail {
		return cty.NilVal, errors.New("step failed on purpose")
	}
	if n.panics {
		panic("step panicked on purpose")
	}
	file := ""
	if !n.k.NoFiles {
		file = filepath.Join(env.OutDir, "value.txt")
		if err := os.WriteFile(file, []byte(n.value), 0o666); err != nil {
			return cty.NilVal, err
		}
	}
	return cty.ObjectVal(map[string]cty.Value{"value": cty.StringVal(n.value), "file": cty.StringVal(file)}), nil
}
