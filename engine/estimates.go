package engine

import (
	"sort"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/zclconf/go-cty/cty"
)

// Estimate is what plan can tell of an instance that will run or waits
// to, before it runs: the runtime it got and the compute it will do.
type Estimate struct {
	Addr   string
	Status PlanStatus
	// Runtime is "go" or "torch" ("" for a block without one); Auto the
	// machine's answer when the block left it to runtime = "auto".
	Runtime   string
	Auto      *nodes.Acceleration
	Resources nodes.Resources
	// Work is the node's compute (nil when it cannot tell).
	Work *nodes.Work
	// After lists the estimated instances it waits on, directly or
	// through instances that are not estimated.
	After []string
	// Protocol is the node's protocol card in words ("" for none).
	Protocol string
}

// Estimates describes, in dependency order, every instance that will run
// or waits to whose node has a runtime or can estimate its work. An
// instance still waiting on upstream values is described from what is
// known of its configuration (planned values, unknowns as nulls), as plan
// prints it; nothing decoded this way ever runs. Call it after Plan.
func (e *Engine) Estimates() []Estimate {
	var out []Estimate
	estimated := map[string]bool{}
	for _, v := range e.orderedVertices() {
		for _, in := range v.instances {
			if in.status == StatusCached && !in.replace {
				continue
			}
			n := e.planNode(in)
			rc, isRuntime := n.(nodes.RuntimeChooser)
			we, isWork := n.(nodes.WorkEstimator)
			if !isRuntime && !isWork {
				continue
			}
			est := Estimate{Addr: in.key(), Status: in.status, Resources: in.resources}
			if in.node == nil {
				est.Resources = e.plannedResources(in, n)
			}
			if isRuntime {
				est.Runtime, est.Auto = rc.RuntimeChoice()
			}
			if pc, ok := n.(nodes.ProtocolCarrier); ok {
				est.Protocol = pc.ProtocolWords()
			}
			if isWork {
				w := we.EstimateWork(e.upstreamData(in))
				est.Work = &w
			}
			est.After = e.estimatedUpstream(in, estimated)
			estimated[est.Addr] = true
			out = append(out, est)
		}
	}
	return out
}

// planNode is in's node, or, while its configuration waits on upstream
// values, a node decoded from what is known of it (unknowns as nulls) for
// plan's descriptions; nil when even that does not decode.
func (e *Engine) planNode(in *instance) (n nodes.Node) {
	if in.node != nil {
		return in.node
	}
	pd, ok := in.v.nodeKind.(nodes.PlanDecoder)
	if !ok || !pd.DecodesWaiting() || in.config == cty.NilVal || in.config.IsNull() {
		return nil
	}
	defer func() {
		if recover() != nil { // a description is not worth a crash
			n = nil
		}
	}()
	d := e.decl(in)
	d.Reads = nil // nothing this decoding reads decides what runs
	n, diags := in.v.nodeKind.Decode(cty.UnknownAsNull(in.config), d)
	if diags.HasErrors() {
		return nil
	}
	return n
}

// plannedResources are the devices a waiting instance will ask for: its
// node's defaults, with the block's own resources where they are known.
func (e *Engine) plannedResources(in *instance, n nodes.Node) nodes.Resources {
	res, _ := e.evalResources(in, n, e.evalContext(in.v, in))
	return res
}

// upstreamData is the store the instance reads: the nearest upstream
// dataset's estimate, with its real split sizes and example shape where it
// has run (a cached store: ACDC's arrays, a CSV's columns, whose shape
// only the data tells).
func (e *Engine) upstreamData(in *instance) nodes.StoreEstimate {
	seen := map[string]bool{}
	queue := e.upstreamInstances(in)
	for len(queue) > 0 {
		ui := queue[0]
		queue = queue[1:]
		if seen[ui.key()] {
			continue
		}
		seen[ui.key()] = true
		if se, ok := ui.node.(nodes.StoreEstimator); ok {
			est := se.EstimateStore()
			if splits, ok := knownSplits(ui.getValue()); ok {
				est.Splits = splits
			}
			if shape, ok := knownShape(ui.getValue()); ok {
				est.Shape = shape
			}
			return est
		}
		queue = append(queue, e.upstreamInstances(ui)...)
	}
	return nodes.StoreEstimate{}
}

// knownSplits reads a dataset's value's splits (example counts) when it
// has run.
func knownSplits(v cty.Value) (map[string]int64, bool) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || !v.Type().IsObjectType() || !v.Type().HasAttribute("splits") {
		return nil, false
	}
	s := v.GetAttr("splits")
	if !s.IsWhollyKnown() || s.IsNull() || !s.CanIterateElements() {
		return nil, false
	}
	out := map[string]int64{}
	for k, c := range s.AsValueMap() {
		if c.Type() != cty.Number {
			return nil, false
		}
		n, _ := c.AsBigFloat().Int64()
		out[k] = n
	}
	return out, true
}

// knownShape reads a dataset's value's example shape when it has run.
func knownShape(v cty.Value) ([]int, bool) {
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() || !v.Type().IsObjectType() || !v.Type().HasAttribute("shape") {
		return nil, false
	}
	s := v.GetAttr("shape")
	if !s.IsWhollyKnown() || s.IsNull() || !s.CanIterateElements() || s.LengthInt() == 0 {
		return nil, false
	}
	var out []int
	for _, d := range s.AsValueSlice() {
		if d.Type() != cty.Number {
			return nil, false
		}
		n, _ := d.AsBigFloat().Int64()
		out = append(out, int(n))
	}
	return out, true
}

// estimatedUpstream lists the estimated instances in waits on, looking
// through the ones that are not estimated (datasets, configuration).
func (e *Engine) estimatedUpstream(in *instance, estimated map[string]bool) []string {
	seen := map[string]bool{}
	var out []string
	queue := e.upstreamInstances(in)
	for len(queue) > 0 {
		ui := queue[0]
		queue = queue[1:]
		if seen[ui.key()] || (ui.status == StatusCached && !ui.replace) {
			continue
		}
		seen[ui.key()] = true
		if estimated[ui.key()] {
			out = append(out, ui.key())
			continue
		}
		queue = append(queue, e.upstreamInstances(ui)...)
	}
	sort.Strings(out)
	return out
}
