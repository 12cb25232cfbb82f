package addrs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

func TestParseInstanceRoundTrip(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    AbsInstance
		wantErr bool
	}{
		"plain":         {in: "dataset.fashion", want: AbsInstance{Instance: Block{"dataset", "fashion"}.Instance(NoKey)}},
		"string key":    {in: `train.x["cnn"]`, want: AbsInstance{Instance: Block{"train", "x"}.Instance(StringKey("cnn"))}},
		"int key":       {in: `command.c[3]`, want: AbsInstance{Instance: Block{"command", "c"}.Instance(IntKey(3))}},
		"module":        {in: `module.tier.benchmark.b`, want: AbsInstance{Module: RootModule.Child("tier"), Instance: Block{"benchmark", "b"}.Instance(NoKey)}},
		"nested module": {in: `module.a.module.b.dataset.d["k"]`, want: AbsInstance{Module: RootModule.Child("a").Child("b"), Instance: Block{"dataset", "d"}.Instance(StringKey("k"))}},
		"bare kind":     {in: "dataset", wantErr: true},
		"module only":   {in: "module.a", wantErr: true},
		"negative":      {in: "command.c[-1]", wantErr: true},
		"too long":      {in: "a.b.c.d", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseInstance(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseInstance(%q) = %v, want error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("wrong result (-want +got):\n%s", diff)
			}
			if got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}

func TestParseRef(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    string
		kind    RefKind
		wantErr bool
	}{
		"var":           {in: "var.lr", want: "var.lr", kind: RefVariable},
		"local":         {in: "local.x[0]", want: "local.x", kind: RefLocal},
		"block":         {in: "dataset.fashion.path", want: "dataset.fashion", kind: RefBlock},
		"module output": {in: "module.tier.names", want: "module.tier.names", kind: RefModuleOutput},
		"each":          {in: "each.value.lr", want: "each.value", kind: RefEach},
		"count":         {in: "count.index", want: "count.index", kind: RefCount},
		"bare root":     {in: "var", wantErr: true},
		"module no out": {in: "module.tier", wantErr: true},
		"index second":  {in: `var["x"]`, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tr, diags := hclsyntax.ParseTraversalAbs([]byte(tc.in), "t", hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			ref, diags := ParseRef(tr)
			if tc.wantErr {
				if !diags.HasErrors() {
					t.Fatalf("want error, got %v", ref)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if ref.String() != tc.want || ref.Kind != tc.kind {
				t.Errorf("got %s (kind %d), want %s (kind %d)", ref, ref.Kind, tc.want, tc.kind)
			}
		})
	}
}

func TestModulePathParent(t *testing.T) {
	p := RootModule.Child("a").Child("b")
	parent, call, ok := p.Parent()
	if !ok || call != "b" || parent != RootModule.Child("a") {
		t.Fatalf("Parent() = %q %q %v", parent, call, ok)
	}
	parent, call, ok = parent.Parent()
	if !ok || call != "a" || parent != RootModule {
		t.Fatalf("Parent() = %q %q %v", parent, call, ok)
	}
	if _, _, ok := RootModule.Parent(); ok {
		t.Fatal("root has no parent")
	}
}
