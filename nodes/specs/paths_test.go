package specs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/zclconf/go-cty/cty"
)

// TestEncoderPathsAreAbsolute: relative weights and a python: encoder's
// file, in a pipeline applied as `gatepipe apply .`, reached the torch
// worker relative, and the worker runs in another directory
// (FileNotFoundError in every train node). Both are made absolute, and
// the python: encoder's code is hashed.
func TestEncoderPathsAreAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("w.safetensors", []byte("x"), 0o644)
	os.WriteFile("mymodel.py", []byte("class MyNet: pass\n"), 0o644)
	decl := nodes.Decl{Addr: addrs.AbsInstance{Instance: addrs.Block{Kind: "encoder", Name: "e"}.Instance(addrs.NoKey)}, Dir: "."}
	for _, tc := range []struct {
		attrs map[string]cty.Value
		attr  string
		want  string
	}{
		{map[string]cty.Value{"arch": cty.StringVal("convnet"), "weights": cty.StringVal("w.safetensors")}, "weights", filepath.Join(dir, "w.safetensors")},
		{map[string]cty.Value{"arch": cty.StringVal("python:mymodel.py:MyNet")}, "arch", "python:" + filepath.Join(dir, "mymodel.py") + ":MyNet"},
	} {
		n, diags := Encoder().Decode(encoderConfig(tc.attrs), decl)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		v := n.(node).value
		if got := v.GetAttr(tc.attr).AsString(); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.attr, got, tc.want)
		}
		if strings.HasPrefix(tc.want, "python:") && len(v.GetAttr("code_sha256").AsString()) != 64 {
			t.Errorf("code_sha256 = %q, want the code's SHA-256", v.GetAttr("code_sha256").AsString())
		}
	}
}

// encoderConfig is an encoder block's configuration with attrs set and
// every other attribute null, as hcldec gives it.
func encoderConfig(attrs map[string]cty.Value) cty.Value {
	k := Encoder().(kind)
	vals := map[string]cty.Value{}
	for name, a := range k.attrs {
		vals[name] = cty.NullVal(a.ty)
	}
	for name, v := range attrs {
		vals[name] = v
	}
	return cty.ObjectVal(vals)
}
