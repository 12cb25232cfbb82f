package dag

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func build(edges ...string) *Graph {
	g := New()
	for _, e := range edges {
		a, b, ok := strings.Cut(e, "->")
		if !ok {
			g.Add(e)
			continue
		}
		g.Connect(a, b) // a depends on b
	}
	return g
}

func TestOrderStable(t *testing.T) {
	tests := map[string]struct {
		g    *Graph
		want []string
	}{
		"chain":                       {build("c->b", "b->a"), []string{"a", "b", "c"}},
		"diamond":                     {build("d->b", "d->c", "b->a", "c->a"), []string{"a", "b", "c", "d"}},
		"insertion order breaks ties": {build("z", "y", "x"), []string{"z", "y", "x"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for range 20 { // map iteration must not leak into the order
				got, err := tc.g.Order()
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Fatalf("wrong order (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestCycles(t *testing.T) {
	g := build("a->b", "b->c", "c->a", "x->x", "p->q")
	got := g.Cycles()
	want := [][]string{{"a", "b", "c"}, {"x"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("wrong cycles (-want +got):\n%s", diff)
	}
	if _, err := g.Order(); err == nil {
		t.Fatal("Order on a cyclic graph should fail")
	}
}

func TestWalkSkipsDependentsOfFailure(t *testing.T) {
	// b fails: c and d (downstream) skip with cause b; x is unrelated.
	g := build("b->a", "c->b", "d->c", "x")
	for range 50 { // timing dependent, so repeat
		res := g.Walk(context.Background(), WalkOptions{}, func(_ context.Context, k string) error {
			if k == "b" {
				return errors.New("boom")
			}
			return nil
		})
		want := map[string]Status{"a": Succeeded, "b": Failed, "c": Skipped, "d": Skipped, "x": Succeeded}
		for k, st := range want {
			if res[k].Status != st {
				t.Fatalf("%s: status %v, want %v", k, res[k].Status, st)
			}
		}
		if res["d"].Cause != "b" {
			t.Fatalf("d skipped because of %q, want b", res["d"].Cause)
		}
	}
}

func TestWalkRespectsDependencies(t *testing.T) {
	g := New()
	for i := 0; i < 200; i++ {
		g.Add(fmt.Sprint(i))
		if i > 0 {
			g.Connect(fmt.Sprint(i), fmt.Sprint(i/2))
		}
	}
	var mu sync.Mutex
	done := map[string]bool{}
	res := g.Walk(context.Background(), WalkOptions{}, func(_ context.Context, k string) error {
		mu.Lock()
		defer mu.Unlock()
		for _, dep := range g.DependenciesOf(k) {
			if !done[dep] {
				return fmt.Errorf("%s ran before its dependency %s", k, dep)
			}
		}
		done[k] = true
		return nil
	})
	for k, r := range res {
		if r.Status != Succeeded {
			t.Fatalf("%s: %v %v", k, r.Status, r.Err)
		}
	}
}

func TestWalkFailFast(t *testing.T) {
	// a fails; b is independent but starts after a fails (it depends on s,
	// which waits for a's failure), so fail-fast must not run it.
	g := build("b->s")
	g.Add("a")
	aFailed := make(chan struct{})
	var ran atomic.Int32
	res := g.Walk(context.Background(), WalkOptions{FailFast: true}, func(ctx context.Context, k string) error {
		switch k {
		case "a":
			defer close(aFailed)
			return errors.New("boom")
		case "s":
			<-aFailed
			<-ctx.Done()
			return ctx.Err()
		case "b":
			ran.Add(1)
		}
		return nil
	})
	if ran.Load() != 0 {
		t.Fatal("b ran after a failure with FailFast")
	}
	if res["a"].Status != Failed || res["b"].Status != NotRun || res["s"].Status != NotRun {
		t.Fatalf("statuses: a=%v s=%v b=%v", res["a"].Status, res["s"].Status, res["b"].Status)
	}
}

func TestDOT(t *testing.T) {
	var sb strings.Builder
	if err := build("b->a").DOT(&sb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), `"a" -> "b"`) {
		t.Fatalf("DOT output lacks edge a -> b:\n%s", sb.String())
	}
}
