package command

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

func decode(t *testing.T, dir, src string) (*Node, hcl.Diagnostics) {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "c.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"self": cty.ObjectVal(map[string]cty.Value{"out_dir": cty.StringVal(OutDirSentinel)})}}
	cfg, diags := hcldec.Decode(f.Body, spec, ctx)
	if diags.HasErrors() {
		return nil, diags
	}
	n, diags := Kind{}.Decode(cfg, nodes.Decl{Body: f.Body, Dir: dir})
	if diags.HasErrors() {
		return nil, diags
	}
	return n.(*Node), nil
}

func runNode(t *testing.T, n *Node, gpus []string) (cty.Value, string, error) {
	out := t.TempDir()
	env := &nodes.Env{Addr: addrs.AbsInstance{Instance: addrs.Block{Kind: "command", Name: "c"}.Instance(addrs.NoKey)},
		OutDir: out, Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 2, GPUs: gpus}}
	v, err := n.Run(context.Background(), env)
	return v, out, err
}

func TestRunWritesOutputsAndSeesEnvironment(t *testing.T) {
	dir := t.TempDir()
	n, diags := decode(t, dir, `
run     = ["sh", "-c", "echo $GREETING $GATEPIPE_CPUS $CUDA_VISIBLE_DEVICES > $1/hello.txt", "sh", self.out_dir]
env     = { GREETING = "hi" }
outputs = { hello = "hello.txt" }
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	v, out, err := runNode(t, n, []string{"3"})
	if err != nil {
		t.Fatal(err)
	}
	p := v.GetAttr("outputs").Index(cty.StringVal("hello")).AsString()
	if p != filepath.Join(out, "hello.txt") {
		t.Fatalf("output path %q", p)
	}
	if b, _ := os.ReadFile(p); string(b) != "hi 2 3\n" {
		t.Fatalf("hello.txt = %q", b)
	}
}

func TestRunFailures(t *testing.T) {
	tests := map[string]struct{ src, want string }{
		"exit code":      {`run = ["sh", "-c", "echo broken pipe >&2; exit 4"]`, "broken pipe"},
		"missing output": {"run = [\"true\"]\noutputs = { x = \"x.txt\" }", `did not write its declared output "x"`},
		"no program":     {`run = ["/nonexistent/program"]`, "failed"},
		"timeout":        {"run = [\"sleep\", \"5\"]\ntimeout = \"100ms\"", "stopped"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n, diags := decode(t, t.TempDir(), tc.src)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if _, _, err := runNode(t, n, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestFingerprintFollowsInputContent(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.py"), []byte("print(1)"), 0o644)
	os.MkdirAll(filepath.Join(dir, "conf"), 0o755)
	os.WriteFile(filepath.Join(dir, "conf", "x.yaml"), []byte("lr: 1"), 0o644)
	n, _ := decode(t, dir, "run = [\"true\"]\ninputs = [\"a.py\", \"conf\"]")
	fp := func() string {
		var b bytes.Buffer
		if err := n.Fingerprint(context.Background(), &b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	first := fp()
	if fp() != first {
		t.Fatal("fingerprint is not stable")
	}
	os.WriteFile(filepath.Join(dir, "conf", "x.yaml"), []byte("lr: 2"), 0o644)
	if fp() == first {
		t.Fatal("editing an input inside a directory did not change the fingerprint")
	}
	n2, _ := decode(t, dir, "run = [\"true\"]\ninputs = [\"*.missing\"]")
	if err := n2.Fingerprint(context.Background(), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "matches no file") {
		t.Fatalf("unmatched pattern: %v", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	for src, want := range map[string]string{
		`run = []`: "Empty command",
		"run = [\"true\"]\noutputs = { x = \"/etc/passwd\" }": "Invalid output path",
		"run = [\"true\"]\ntimeout = \"soon\"":                "Invalid timeout",
	} {
		if _, diags := decode(t, t.TempDir(), src); !diags.HasErrors() || !strings.Contains(diags.Error(), want) {
			t.Errorf("%q: diags %v, want %q", src, diags, want)
		}
	}
}

// TestFullDiskKeepsTheCommandsOwnMessage: when the disk is full, the log
// file cannot be written either (here it leads to /dev/full); the error
// must still carry what the command said, not "exit status 141 (no
// output)" from a SIGPIPE.
func TestFullDiskKeepsTheCommandsOwnMessage(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	n, diags := decode(t, t.TempDir(), `run = ["sh", "-c", "echo starting; echo data > /dev/full; echo 'training: No space left on device' >&2; exit 3"]`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	out := t.TempDir()
	if err := os.Symlink("/dev/full", filepath.Join(out, LogFile)); err != nil {
		t.Fatal(err)
	}
	env := &nodes.Env{Addr: addrs.AbsInstance{Instance: addrs.Block{Kind: "command", Name: "c"}.Instance(addrs.NoKey)},
		OutDir: out, Log: zerolog.Nop(), Progress: nodes.NoProgress{}, Devices: nodes.Assignment{CPUs: 1}}
	_, err := n.Run(context.Background(), env)
	if err == nil {
		t.Fatal("a failing command succeeded")
	}
	for _, want := range []string{"exit status 3", "training: No space left on device", "writing its log failed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
