package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/pipelines"
	"github.com/zclconf/go-cty/cty"
)

// Result is what the cache holds for one planned instance, for `show`.
type Result struct {
	Addr   string
	Kind   string
	Status PlanStatus
	// Reason explains a blocked instance.
	Reason   string
	ActionID string
	// The rest is set only when the instance is cached.
	OutputID string
	Dir      string
	Manifest *cache.Manifest
	Value    cty.Value
	Type     cty.Type
}

// ErrNoInstance is returned by Result for an address the pipeline does
// not have.
var ErrNoInstance = errors.New("no such instance")

// Result returns what is known of the instance at addr after Plan or
// Apply: its status and, once it is in the cache, its output directory,
// manifest and value.
func (e *Engine) Result(addr string) (*Result, error) {
	var names []string
	for _, v := range e.orderedVertices() {
		for _, in := range v.instances {
			names = append(names, in.key())
			if in.key() != addr {
				continue
			}
			r := &Result{Addr: addr, Kind: v.nodeKind.Name(), Status: in.status, Reason: in.reason, Type: v.nodeKind.OutputType()}
			if !in.action.IsZero() {
				r.ActionID = in.action.String()
			}
			if e.cache == nil || (in.output.IsZero() && in.status != StatusCached) {
				return r, nil
			}
			m, dir, err := e.cachedOutput(in)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", addr, err)
			}
			r.Status = StatusCached
			r.OutputID, r.Dir, r.Manifest, r.Value = in.output.String(), dir, m, in.getValue()
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w %q%s", ErrNoInstance, addr, instanceHint(addr, names))
}

// cachedOutput finds the instance's output as apply does: through its
// action's index entry, which carries a copy of the manifest, so that a
// damaged manifest beside the object does not make show fail on an entry
// apply serves. An instance with no action, or whose entry now names
// another output, is looked up by its output ID. It sets in.output when
// the plan did not.
func (e *Engine) cachedOutput(in *instance) (*cache.Manifest, string, error) {
	if !in.action.IsZero() {
		entry, m, dir, err := e.cache.GetOutput(in.action)
		switch {
		case err == nil && (in.output.IsZero() || entry.Output == in.output):
			in.output = entry.Output
			return m, dir, nil
		case in.output.IsZero():
			return nil, "", err
		}
	}
	return e.cache.Output(in.output)
}

// instanceHint suggests instances for a wrong address: those of the block
// it names (command.train for command.train["cnn"]) or of the block whose
// name is closest to it.
func instanceHint(addr string, names []string) string {
	base := func(a string) string {
		if i := strings.IndexByte(a, '['); i >= 0 {
			return a[:i]
		}
		return a
	}
	byBase := map[string][]string{}
	var bases []string
	for _, n := range names {
		b := base(n)
		if _, ok := byBase[b]; !ok {
			bases = append(bases, b)
		}
		byBase[b] = append(byBase[b], n)
	}
	b := base(addr)
	if _, ok := byBase[b]; !ok {
		b = pipelines.NameSuggestion(b, bases)
	}
	insts := byBase[b]
	switch {
	case len(insts) == 0:
		return ""
	case len(insts) == 1:
		return fmt.Sprintf(". Did you mean %q?", insts[0])
	case len(insts) > 5:
		insts = append(insts[:5], "...")
	}
	return fmt.Sprintf(". Did you mean one of %s?", strings.Join(insts, ", "))
}
