package pipelines

import (
	"fmt"
	"sort"

	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/hashicorp/hcl/v2"
)

// languageBlocks are the block types every pipeline accepts regardless of
// the registered node kinds, with their label counts.
var languageBlocks = map[string]int{
	"gatepipe": 0,
	"variable": 1,
	"locals":   0,
	"output":   1,
	"module":   1,
}

func (l *Loader) fileSchema(body hcl.Body) *hcl.BodySchema {
	schema := &hcl.BodySchema{}
	for name, labels := range languageBlocks {
		names := make([]string, labels)
		for i := range names {
			names[i] = "name"
		}
		schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: name, LabelNames: names})
	}
	for kind := range l.kinds {
		// Labels are checked in decodeNodeBlock for a clearer message.
		schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: kind, LabelNames: []string{"name"}})
	}
	sort.Slice(schema.Blocks, func(i, j int) bool { return schema.Blocks[i].Type < schema.Blocks[j].Type })
	return schema
}

// decodeFile decodes the top-level blocks of one file into pl.
func (l *Loader) decodeFile(pl *Pipeline, body hcl.Body) hcl.Diagnostics {
	var diags hcl.Diagnostics
	content, contentDiags := body.Content(l.fileSchema(body))
	diags = append(diags, l.improveBlockDiags(contentDiags)...)

	for _, block := range content.Blocks {
		switch block.Type {
		case "gatepipe":
			s, d := decodeSettingsBlock(block)
			diags = append(diags, d...)
			if pl.Settings != nil {
				diags = append(diags, duplicateDiag("gatepipe", "", pl.Settings.DeclRange, block.DefRange))
				continue
			}
			pl.Settings = s
		case "variable":
			v, d := decodeVariableBlock(block)
			diags = append(diags, d...)
			if prev, ok := pl.Variables[v.Name]; ok {
				diags = append(diags, duplicateDiag("variable", v.Name, prev.DeclRange, block.DefRange))
				continue
			}
			pl.Variables[v.Name] = v
		case "locals":
			locals, d := decodeLocalsBlock(block)
			diags = append(diags, d...)
			for _, lv := range locals {
				if prev, ok := pl.Locals[lv.Name]; ok {
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Duplicate local value definition",
						Detail:   fmt.Sprintf("A local value named %q was already defined at %s. Local value names must be unique within a module.", lv.Name, prev.DeclRange),
						Subject:  lv.DeclRange.Ptr(),
					})
					continue
				}
				pl.Locals[lv.Name] = lv
			}
		case "output":
			o, d := decodeOutputBlock(block)
			diags = append(diags, d...)
			if prev, ok := pl.Outputs[o.Name]; ok {
				diags = append(diags, duplicateDiag("output", o.Name, prev.DeclRange, block.DefRange))
				continue
			}
			pl.Outputs[o.Name] = o
		case "module":
			mc, d := decodeModuleBlock(block)
			diags = append(diags, d...)
			if prev, ok := pl.ModuleCalls[mc.Name]; ok {
				diags = append(diags, duplicateDiag("module", mc.Name, prev.DeclRange, block.DefRange))
				continue
			}
			pl.ModuleCalls[mc.Name] = mc
		default:
			nb, d := decodeNodeBlock(block)
			diags = append(diags, d...)
			if nb == nil {
				continue
			}
			if prev, ok := pl.Blocks[nb.Addr]; ok {
				diags = append(diags, duplicateDiag(block.Type, nb.Addr.Name, prev.DeclRange, block.DefRange))
				continue
			}
			pl.Blocks[nb.Addr] = nb
		}
	}
	return diags
}

// improveBlockDiags adds "Did you mean" to HCL's unsupported block type
// errors, which do not know our node kinds.
func (l *Loader) improveBlockDiags(diags hcl.Diagnostics) hcl.Diagnostics {
	known := l.BlockTypes()
	for _, d := range diags {
		if d.Summary == "Unsupported block type" && d.Subject != nil {
			if got := blockTypeFromDetail(d.Detail); got != "" {
				d.Detail = fmt.Sprintf("Blocks of type %q are not expected here.%s Known block types: %s.",
					got, DidYouMean(got, known), joinQuoted(known))
			}
		}
	}
	return diags
}

// BlockTypes lists every accepted top-level block type, sorted.
func (l *Loader) BlockTypes() []string {
	var names []string
	for name := range languageBlocks {
		names = append(names, name)
	}
	for kind := range l.kinds {
		names = append(names, kind)
	}
	sort.Strings(names)
	return names
}

// KnownKind reports whether kind is a registered node kind.
func (l *Loader) KnownKind(kind string) bool { return l.kinds[kind] }

func blockTypeFromDetail(detail string) string {
	var name string
	if _, err := fmt.Sscanf(detail, "Blocks of type %q are not expected here.", &name); err == nil {
		return name
	}
	return ""
}

func joinQuoted(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%q", n)
	}
	return s
}

// Block returns the node block at addr, or nil.
func (p *Pipeline) Block(addr addrs.Block) *NodeBlock { return p.Blocks[addr] }

// BlockNames returns the names of the blocks of one kind, sorted.
func (p *Pipeline) BlockNames(kind string) []string {
	var names []string
	for a := range p.Blocks {
		if a.Kind == kind {
			names = append(names, a.Name)
		}
	}
	sort.Strings(names)
	return names
}

// SortedBlocks returns the node blocks ordered by kind then name.
func (p *Pipeline) SortedBlocks() []*NodeBlock {
	out := make([]*NodeBlock, 0, len(p.Blocks))
	for _, b := range p.Blocks {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Addr.Kind != out[j].Addr.Kind {
			return out[i].Addr.Kind < out[j].Addr.Kind
		}
		return out[i].Addr.Name < out[j].Addr.Name
	})
	return out
}
