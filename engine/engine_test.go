package engine_test

import (
	"context"
	"github.com/gatepipe/gatepipe/internal/bug"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/nodetest"
	"github.com/gatepipe/gatepipe/pipelines"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

type harness struct {
	t     *testing.T
	kind  *nodetest.Kind
	reg   *nodes.Registry
	cache *cache.Cache
	dir   string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	k := nodetest.New()
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, kind: k, reg: nodes.NewRegistry(k), cache: c, dir: t.TempDir()}
}

func (h *harness) write(files map[string]string) {
	for name, src := range files {
		p := filepath.Join(h.dir, name)
		os.MkdirAll(filepath.Dir(p), 0o777)
		if err := os.WriteFile(p, []byte(src), 0o666); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *harness) engine(opts engine.Options, vars map[string]pipelines.VarValue) (*engine.Engine, error) {
	h.t.Helper()
	l := pipelines.NewLoader(nil, h.reg.Names())
	mod, diags := l.LoadConfig(h.dir)
	if diags.HasErrors() {
		return nil, diags
	}
	vals, diags := pipelines.RootVariableValues(mod.Pipeline, vars)
	if diags.HasErrors() {
		return nil, diags
	}
	e, diags := engine.New(h.reg, nil, h.cache, mod, vals, zerolog.Nop(), opts)
	if diags.HasErrors() {
		return nil, diags
	}
	return e, nil
}

func (h *harness) plan(opts engine.Options) map[string]engine.PlanStatus {
	h.t.Helper()
	e, err := h.engine(opts, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	p, diags := e.Plan(context.Background())
	if diags.HasErrors() {
		h.t.Fatal(diags)
	}
	got := map[string]engine.PlanStatus{}
	for _, in := range p.Instances {
		got[in.Addr] = in.Status
	}
	return got
}

func (h *harness) apply(opts engine.Options) (*engine.RunRecord, *engine.Engine) {
	h.t.Helper()
	e, err := h.engine(opts, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, diags := e.Plan(context.Background()); diags.HasErrors() {
		h.t.Fatal(diags)
	}
	rec, err := e.Apply(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return rec, e
}

func statuses(rec *engine.RunRecord) map[string]engine.RunStatus {
	m := map[string]engine.RunStatus{}
	for _, n := range rec.Nodes {
		m[n.Addr] = n.Status
	}
	return m
}

const chain = `
variable "v" { default = "x" }
step "a" { value = var.v }
step "b" { value = "${step.a.value}-b" }
step "c" { value = "${step.b.value}-c" }
step "other" { value = "unrelated" }
output "final" { value = step.c.value }
`

func TestApplyCachesAndRerunsExactlyChangedNodes(t *testing.T) {
	h := newHarness(t)
	h.write(map[string]string{"main.hcl": chain})

	plan := h.plan(engine.Options{})
	want := map[string]engine.PlanStatus{"step.a": engine.StatusWillRun, "step.b": engine.StatusBlocked, "step.c": engine.StatusBlocked, "step.other": engine.StatusWillRun}
	for k, v := range want {
		if plan[k] != v {
			t.Errorf("plan %s = %q, want %q", k, plan[k], v)
		}
	}
	rec, e := h.apply(engine.Options{})
	if rec.Failed() || rec.Counts["ran"] != 4 {
		t.Fatalf("first apply: %+v", rec.Counts)
	}
	if got := e.Outputs()["final"]; got != cty.StringVal("x-b-c") {
		t.Fatalf("output final = %#v", got)
	}

	// Unchanged: everything cached, nothing runs.
	for k, st := range h.plan(engine.Options{}) {
		if st != engine.StatusCached {
			t.Errorf("second plan %s = %q, want cached", k, st)
		}
	}
	rec, _ = h.apply(engine.Options{})
	if rec.Counts["cached"] != 4 || h.kind.Total.Load() != 4 {
		t.Fatalf("second apply ran something: %+v, total runs %d", rec.Counts, h.kind.Total.Load())
	}

	// Change b: b and c re-run, a and other stay cached.
	h.write(map[string]string{"main.hcl": strings.Replace(chain, `"${step.a.value}-b"`, `"${step.a.value}-B"`, 1)})
	rec, e = h.apply(engine.Options{})
	got := statuses(rec)
	wantRun := map[string]engine.RunStatus{"step.a": engine.RunCached, "step.b": engine.RunRan, "step.c": engine.RunRan, "step.other": engine.RunCached}
	for k, v := range wantRun {
		if got[k] != v {
			t.Errorf("after edit %s = %q, want %q", k, got[k], v)
		}
	}
	if got := e.Outputs()["final"]; got != cty.StringVal("x-B-c") {
		t.Fatalf("output final = %#v", got)
	}
}

func TestFailureSkipsDependentsOnly(t *testing.T) {
	h := newHarness(t)
	h.write(map[string]string{"main.hcl": `
step "bad" { fail = true }
step "down" { value = step.bad.value }
step "downdown" { value = step.down.value }
step "fine" { value = "ok" }
`})
	rec, _ := h.apply(engine.Options{})
	got := statuses(rec)
	want := map[string]engine.RunStatus{"step.bad": engine.RunFailed, "step.down": engine.RunSkipped, "step.downdown": engine.RunSkipped, "step.fine": engine.RunRan}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, n := range rec.Nodes {
		if n.Addr == "step.downdown" && !strings.Contains(n.Error, "step.bad") {
			t.Errorf("skip reason %q should name the root cause step.bad", n.Error)
		}
	}
}

// TestPanicIsAnInternalErrorOfItsNode: a node that panics fails as an
// internal error naming the bug; the other nodes still run.
func TestPanicIsAnInternalErrorOfItsNode(t *testing.T) {
	h := newHarness(t)
	h.write(map[string]string{"main.hcl": `
step "buggy" { panic = true }
step "fine" { value = "ok" }
`})
	rec, _ := h.apply(engine.Options{})
	got := statuses(rec)
	if got["step.buggy"] != engine.RunFailed || got["step.fine"] != engine.RunRan {
		t.Fatalf("statuses %v", got)
	}
	for _, n := range rec.Nodes {
		if n.Addr == "step.buggy" && (!bug.IsMessage(n.Error) || !strings.Contains(n.Error, "step panicked on purpose")) {
			t.Errorf("error %q should be an internal error carrying the panic", n.Error)
		}
	}
}

func TestForEachCountAndModules(t *testing.T) {
	h := newHarness(t)
	h.write(map[string]string{
		"main.hcl": `
locals { models = { cnn = "c", vit = "v" } }
step "train" {
  for_each = local.models
  value    = "${each.key}=${each.value}"
}
step "rep" {
  count = 2
  value = "r${count.index}"
}
module "sub" {
  source = "./sub"
  prefix = join(",", [for k, v in step.train : v.value])
}
step "all" { value = module.sub.result }
`,
		"sub/sub.hcl": `
variable "prefix" { type = string }
step "inner" { value = "${var.prefix};inner" }
output "result" { value = step.inner.value }
`,
	})
	rec, e := h.apply(engine.Options{})
	if rec.Failed() {
		t.Fatalf("apply failed: %+v", rec)
	}
	got := statuses(rec)
	for _, addr := range []string{`step.train["cnn"]`, `step.train["vit"]`, `step.rep[0]`, `step.rep[1]`, `module.sub.step.inner`, `step.all`} {
		if got[addr] != engine.RunRan {
			t.Errorf("%s = %q, want ran", addr, got[addr])
		}
	}
	_ = e
	rec, _ = h.apply(engine.Options{})
	if rec.Counts["cached"] != 6 {
		t.Fatalf("second apply: %+v", rec.Counts)
	}
}

func TestReplaceForcesOneNode(t *testing.T) {
	h := newHarness(t)
	h.write(map[string]string{"main.hcl": chain})
	h.apply(engine.Options{})
	addr, err := addrs.ParseInstance("step.a")
	if err != nil {
		t.Fatal(err)
	}
	if p := h.plan(engine.Options{Replace: []addrs.AbsInstance{addr}}); p["step.a"] != engine.StatusWillRun || p["step.b"] != engine.StatusBlocked {
		t.Fatalf("plan with replace: %v", p)
	}
	rec, _ := h.apply(engine.Options{Replace: []addrs.AbsInstance{addr}})
	got := statuses(rec)
	// a re-runs; it produces the same output, so b and c stay cached.
	if got["step.a"] != engine.RunRan || got["step.b"] != engine.RunCached || got["step.c"] != engine.RunCached {
		t.Fatalf("statuses after replace: %v", got)
	}
}

func TestParallelismBound(t *testing.T) {
	h := newHarness(t)
	var b strings.Builder
	for i := 0; i < 6; i++ {
		b.WriteString("step \"s" + string(rune('a'+i)) + "\" {\n  sleep_ms = 100\n  value = \"" + string(rune('a'+i)) + "\"\n}\n")
	}
	h.write(map[string]string{"main.hcl": b.String()})
	rec, _ := h.apply(engine.Options{Parallelism: 2, Devices: engine.Devices{CPUs: 8}})
	// With 2 slots and 6 nodes of 100 ms, at most 2 overlap at any time.
	type iv struct{ s, e int64 }
	var ivs []iv
	for _, n := range rec.Nodes {
		s := n.Start.UnixMicro()
		ivs = append(ivs, iv{s, s + int64(n.DurationMS*1000)})
	}
	for _, a := range ivs {
		overlap := 0
		for _, b := range ivs {
			if b.s <= a.s && a.s < b.e {
				overlap++
			}
		}
		if overlap > 2 {
			t.Fatalf("%d nodes running at once with parallelism 2", overlap)
		}
	}
}

func TestDiagnostics(t *testing.T) {
	tests := map[string]struct {
		src  string
		want string
	}{
		"cycle":            {`step "a" { value = step.b.value }` + "\n" + `step "b" { value = step.a.value }`, "step.a -> step.b -> step.a"},
		"undeclared block": {`step "a" { value = step.aa.value }`, `Did you mean "a"?`},
		"bad attribute":    {`step "a" {}` + "\n" + `step "b" { value = step.a.valeu }`, `Did you mean "value"?`},
		"each outside":     {`step "a" { value = each.key }`, "for_each"},
		"unknown for_each": {`step "a" {}` + "\n" + `step "b" {` + "\n" + `for_each = toset([step.a.value])` + "\n}", "known only after apply"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.write(map[string]string{"main.hcl": tc.src})
			e, err := h.engine(engine.Options{}, nil)
			if err == nil {
				_, diags := e.Plan(context.Background())
				if diags.HasErrors() {
					err = diags
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestCountOnANodeBeingNull: a node's value is never null, so `x != null`
// on it is known at plan time and can decide a count. The counted block
// runs after the node, but its action ID does not hash the node's output:
// the node only decides that the instance exists (vertex.metaOnly), so
// plan knows it and a changed node does not re-run it.
func TestCountOnANodeBeingNull(t *testing.T) {
	h := newHarness(t)
	h.write(map[string]string{"main.hcl": `
step "a" { value = "x" }
locals {
  on = step.a != null
}
step "b" {
  count = local.on ? 1 : 0
  value = "b"
}
step "c" {
  count = step.a == null ? 1 : 0
  value = "c"
}
`})
	plan := h.plan(engine.Options{})
	if plan["step.b[0]"] != engine.StatusWillRun || len(plan) != 2 {
		t.Fatalf("plan %v: want step.a and step.b[0]", plan)
	}
	rec, _ := h.apply(engine.Options{})
	if rec.Failed() || rec.Counts["ran"] != 2 {
		t.Fatalf("apply: %+v %v", rec.Counts, rec.Errors)
	}
	src, _ := os.ReadFile(filepath.Join(h.dir, "main.hcl"))
	h.write(map[string]string{"main.hcl": strings.Replace(string(src), `step "a" { value = "x" }`, `step "a" { value = "y" }`, 1)})
	if plan := h.plan(engine.Options{}); plan["step.a"] != engine.StatusWillRun || plan["step.b[0]"] != engine.StatusCached {
		t.Fatalf("plan after step.a changed %v: want step.a to run and step.b[0] cached", plan)
	}
}
