package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
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
	order, err := e.graph.g.Order()
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Dependency cycle", Detail: err.Error()}}
	}
	var diags hcl.Diagnostics
	for _, key := range order {
		if err := ctx.Err(); err != nil {
			return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Interrupted", Detail: err.Error()})
		}
		v := e.graph.vertices[key]
		if v.kind != vBlock {
			diags = append(diags, e.evalVertex(v)...)
			continue
		}
		if d := e.expand(v); d.HasErrors() {
			diags = append(diags, d...)
			continue
		}
		for _, in := range v.instances {
			diags = append(diags, e.planInstance(ctx, in)...)
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
	in.setValue(cty.UnknownVal(in.v.nodeKind.OutputType()))
	if diags.HasErrors() {
		return diags
	}
	if in.node == nil { // configuration waits on upstream values
		in.status, in.reason = StatusBlocked, e.blockedReason(in)
		return diags
	}
	if e.cache == nil {
		in.status = StatusWillRun
		return diags
	}
	id, ok, err := e.actionID(ctx, in)
	if err != nil {
		return append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot fingerprint inputs",
			Detail: err.Error(), Subject: in.v.block.DeclRange.Ptr()})
	}
	if !ok {
		in.status, in.reason = StatusBlocked, e.blockedReason(in)
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
	return diags
}

func (e *Engine) blockedReason(in *instance) string {
	var waits []string
	for _, up := range e.upstreamBlocks(in.v) {
		for _, ui := range up.instances {
			if ui.status == StatusWillRun || ui.status == StatusBlocked {
				waits = append(waits, ui.key())
			}
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
	for _, v := range e.graph.order {
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
