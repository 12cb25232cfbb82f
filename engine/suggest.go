package engine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/pipelines"
	"github.com/hashicorp/hcl/v2"
)

// suggestAttributes adds "Did you mean" to HCL's "Unsupported attribute"
// errors about block values, whose attribute names HCL does not suggest.
func (e *Engine) suggestAttributes(diags hcl.Diagnostics) hcl.Diagnostics {
	for _, d := range diags {
		if d.Summary != "Unsupported attribute" || strings.Contains(d.Detail, "Did you mean") {
			continue
		}
		var name string
		if _, err := fmt.Sscanf(d.Detail, "This object does not have an attribute named %q.", &name); err != nil {
			continue
		}
		seen := map[string]bool{}
		var candidates []string
		for _, k := range e.reg.Names() {
			kind, _ := e.reg.Kind(k)
			for attr := range kind.OutputType().AttributeTypes() {
				if !seen[attr] {
					seen[attr] = true
					candidates = append(candidates, attr)
				}
			}
		}
		sort.Strings(candidates)
		d.Detail += pipelines.DidYouMean(name, candidates)
	}
	return diags
}
