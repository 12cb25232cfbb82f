package engine

import (
	"context"
	"errors"

	"github.com/gatepipe/gatepipe/nodes"
	"sync"

	"fmt"
	"github.com/gatepipe/gatepipe/engine/dag"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Plan is what apply would do.
type Plan struct {
	Instances []PlannedInstance `json:"instances"`
}

// PlannedInstance is one instance in a plan.
type PlannedInstance struct {
	Addr     string     `json:"addr"`
	Kind     string     `json:"kind"`
	Status   PlanStatus `json:"status"`
	ActionID string     `json:"action_id,omitempty"`
	Replace  bool       `json:"replace,omitempty"`
	// Reason explains blocked instances.
	Reason string `json:"reason,omitempty"`
}

// Counts returns how many instances have each status.
func (p *Plan) Counts() map[PlanStatus]int {
	c := map[PlanStatus]int{}
	for _, in := range p.Instances {
		c[in.Status]++
	}
	return c
}

// Plan evaluates the configuration in dependency order, expanding
// for_each and count, and decides for every instance whether it is cached,
// will run, or is blocked on upstream work.
func (e *Engine) Plan(ctx context.Context) (*Plan, hcl.Diagnostics) {
	var mu sync.Mutex
	var diags hcl.Diagnostics
	// Vertices are planned in parallel in dependency order: a vertex is
	// evaluated only after everything it references is, and independent
	// cache lookups overlap. A vertex with errors stops its dependents,
	// so one mistake is reported once rather than cascading.
	results := e.graph.g.Walk(ctx, dag.WalkOptions{}, func(ctx context.Context, key string) error {
		v := e.graph.vertices[key]
		var d hcl.Diagnostics
		if v.kind != vBlock {
			d = e.evalVertex(v)
		} else if d = e.expand(v); !d.HasErrors() {
			for _, in := range v.instances {
				if err := ctx.Err(); err != nil {
					return err // Plan reports the interruption
				}
				d = append(d, e.planInstance(ctx, in)...)
			}
		}
		if len(d) > 0 {
			mu.Lock()
			diags = append(diags, d...)
			mu.Unlock()
		}
		if d.HasErrors() {
			return d
		}
		return nil
	})
	if err := ctx.Err(); err != nil {
		return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Interrupted", Detail: err.Error()})
	}
	for _, r := range results {
		if r.Status == dag.Failed && !diags.HasErrors() {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Planning failed", Detail: r.Err.Error()})
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return e.snapshot(), diags
}

func (e *Engine) planInstance(ctx context.Context, in *instance) hcl.Diagnostics {
	in.replace = e.replaces(in)
	diags := e.evalInstance(in)
	in.setValue(unknownOutput(in.v.nodeKind.OutputType()))
	if diags.HasErrors() {
		return diags
	}
	if in.node == nil { // configuration waits on upstream values
		in.status, in.reason = StatusBlocked, e.blockedReason(in)
		e.setPlannedValue(in)
		return diags
	}
	if e.cache == nil {
		in.status = StatusWillRun
		return diags
	}
	id, ok, err := e.actionID(ctx, in)
	var pe *pinError
	if errors.As(err, &pe) {
		// Its sources are tried again when it runs, and it fails alone.
		in.status, in.reason = StatusBlocked, "its sources could not be pinned: "+firstLine(pe.Error())
		e.setPlannedValue(in)
		return diags
	}
	if err != nil {
		return append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read the node's local inputs",
			Detail: err.Error(), Subject: in.v.block.DeclRange.Ptr()})
	}
	if !ok {
		in.status, in.reason = StatusBlocked, e.blockedReason(in)
		e.setPlannedValue(in)
		return diags
	}
	in.action = id
	if !in.replace {
		hit, err := e.lookupCache(in)
		if err == nil && hit {
			in.status = StatusCached
			return diags
		}
	}
	in.status = StatusWillRun
	e.setPlannedValue(in)
	return diags
}

// setPlannedValue gives an instance that has not run the value its kind
// can tell before it runs (nodes.Planner), so that the blocks referencing
// it are decoded, sized and costed at plan while they wait. A value that
// does not conform to the kind's output type is dropped.
func (e *Engine) setPlannedValue(in *instance) {
	p, ok := in.v.nodeKind.(nodes.Planner)
	if !ok || in.config == cty.NilVal {
		return
	}
	v := p.PlannedValue(in.config, in.node, e.decl(in))
	if v == cty.NilVal {
		return
	}
	conv, err := convert.Convert(v, in.v.nodeKind.OutputType())
	if err != nil {
		return
	}
	in.setPlanned(conv)
}

func (e *Engine) blockedReason(in *instance) string {
	var waits []string
	for _, ui := range e.upstreamInstances(in) {
		if ui.status == StatusWillRun || ui.status == StatusBlocked {
			waits = append(waits, ui.key())
		}
	}
	sort.Strings(waits)
	if len(waits) > 3 {
		waits = append(waits[:3], fmt.Sprintf("and %d more", len(waits)-3))
	}
	return "waits on " + strings.Join(waits, ", ")
}

func (e *Engine) snapshot() *Plan {
	p := &Plan{}
	for _, v := range e.orderedVertices() {
		for _, in := range v.instances {
			pi := PlannedInstance{Addr: in.key(), Kind: v.nodeKind.Name(), Status: in.status, Replace: in.replace, Reason: in.reason}
			if !in.action.IsZero() {
				pi.ActionID = in.action.String()
			}
			p.Instances = append(p.Instances, pi)
		}
	}
	return p
}

// Outputs returns the root module's output values known so far.
func (e *Engine) Outputs() map[string]cty.Value {
	out := map[string]cty.Value{}
	for name := range e.root.Pipeline.Outputs {
		out[name] = e.state.get("output." + name)
	}
	return out
}

// orderedVertices returns the vertices in stable dependency order.
func (e *Engine) orderedVertices() []*vertex {
	order, err := e.graph.g.Order()
	if err != nil {
		return e.graph.order
	}
	out := make([]*vertex, len(order))
	for i, k := range order {
		out[i] = e.graph.vertices[k]
	}
	return out
}

// ExportNode is one instance that will or may run, with what it needs and
// what it waits for: the input of export formats and batch systems.
type ExportNode struct {
	Addr      string          `json:"addr"`
	Kind      string          `json:"kind"`
	Status    PlanStatus      `json:"status"`
	ActionID  string          `json:"action_id,omitempty"`
	Resources nodes.Resources `json:"resources"`
	// After lists the exported nodes this one must follow.
	After []string `json:"after,omitempty"`
	// Protocol is a train node's protocol card (SPEC §5.9), or nil.
	Protocol any `json:"protocol,omitempty"`
}

// Export lists, in dependency order, every planned instance that will run
// or is blocked; cached ones are left out, as apply would not run them.
func (e *Engine) Export() []ExportNode {
	var out []ExportNode
	exported := map[string]bool{}
	for _, v := range e.orderedVertices() {
		for _, in := range v.instances {
			if in.status == StatusCached && !in.replace {
				continue
			}
			n := ExportNode{Addr: in.key(), Kind: v.nodeKind.Name(), Status: in.status, Resources: in.resources}
			if !in.action.IsZero() {
				n.ActionID = in.action.String()
			}
			if pc, ok := e.planNode(in).(nodes.ProtocolCarrier); ok {
				n.Protocol = pc.Protocol()
			}
			for _, ui := range e.upstreamInstances(in) {
				if exported[ui.key()] {
					n.After = append(n.After, ui.key())
				}
			}
			sort.Strings(n.After)
			exported[n.Addr] = true
			out = append(out, n)
		}
	}
	return out
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
