package engine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/nodes"
)

func TestSlotsServeInPriorityOrderAndBackfill(t *testing.T) {
	s := newSlots(1, Devices{CPUs: 4, GPUs: []string{"0", "1"}})
	ctx := context.Background()
	_, release, _ := s.acquire(ctx, nodes.Resources{CPUs: 1}, 0) // occupy the only slot
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for _, prio := range []int{5, 2, 9, 1} {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			_, rel, err := s.acquire(ctx, nodes.Resources{CPUs: 1}, p)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, p)
			mu.Unlock()
			rel()
		}(prio)
	}
	time.Sleep(50 * time.Millisecond) // let all four queue up
	release()
	wg.Wait()
	want := []int{1, 2, 5, 9}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("grant order %v, want %v", order, want)
		}
	}
}

func TestSlotsGiveDistinctGPUs(t *testing.T) {
	s := newSlots(4, Devices{CPUs: 4, GPUs: []string{"0", "1", "2"}})
	ctx := context.Background()
	a, _, _ := s.acquire(ctx, nodes.Resources{GPUs: 2}, 0)
	b, _, _ := s.acquire(ctx, nodes.Resources{GPUs: 1}, 1)
	seen := map[string]bool{}
	for _, g := range append(a.GPUs, b.GPUs...) {
		if seen[g] {
			t.Fatalf("GPU %s handed out twice: %v %v", g, a.GPUs, b.GPUs)
		}
		seen[g] = true
	}
	if len(seen) != 3 {
		t.Fatalf("assignments %v %v", a.GPUs, b.GPUs)
	}
	if err := s.check(nodes.Resources{GPUs: 4}); err == nil {
		t.Fatal("a request for more GPUs than exist must fail")
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, _, err := s.acquire(cctx, nodes.Resources{GPUs: 1}, 2); err == nil {
		t.Fatal("acquire should give up when its context ends")
	}
	if len(s.waiting) != 0 {
		t.Fatalf("cancelled request left in the queue: %d", len(s.waiting))
	}
}

// TestSlotsShareGPUs: with GPUShare 2, two GPUs take four one-GPU nodes,
// spread evenly (0, 1, 0, 1), and a fifth waits until one ends; a node
// asking for two GPUs gets two distinct ones even on shared GPUs.
func TestSlotsShareGPUs(t *testing.T) {
	s := newSlots(8, Devices{CPUs: 8, GPUs: []string{"0", "1"}, GPUShare: 2})
	ctx := context.Background()
	var got []string
	var releases []func()
	for range 4 {
		a, rel, err := s.acquire(ctx, nodes.Resources{GPUs: 1}, 0)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, a.GPUs...)
		releases = append(releases, rel)
	}
	if want := []string{"0", "1", "0", "1"}; !slices.Equal(got, want) {
		t.Fatalf("shared GPUs handed out as %v, want %v", got, want)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, _, err := s.acquire(cctx, nodes.Resources{GPUs: 1}, 0); err == nil {
		t.Fatal("a fifth node got a GPU already shared by two")
	}
	releases[1]() // GPU 1 has room again
	a, rel, err := s.acquire(ctx, nodes.Resources{GPUs: 1}, 0)
	if err != nil || !slices.Equal(a.GPUs, []string{"1"}) {
		t.Fatalf("after a release: %v %v, want GPU 1", a.GPUs, err)
	}
	rel()
	releases[0]()
	releases[2]()
	releases[3]()
	two, rel2, err := s.acquire(ctx, nodes.Resources{GPUs: 2}, 0)
	if err != nil || len(two.GPUs) != 2 || two.GPUs[0] == two.GPUs[1] {
		t.Fatalf("two GPUs on shared GPUs: %v %v", two.GPUs, err)
	}
	rel2()
	if err := s.check(nodes.Resources{GPUs: 3}); err == nil {
		t.Fatal("sharing must not let a node ask for more GPUs than exist")
	}
}
