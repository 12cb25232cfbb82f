package engine

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/gatepipe/gatepipe/nodes"
)

// slots hands out parallelism and device slots. A node asks for them only
// after its dependencies are done and releases them when it returns.
// Free slots go to the waiting request with the lowest priority value
// that fits (so a node waiting for two GPUs does not hold up one that needs
// a single CPU), which makes start order follow plan order rather than
// goroutine scheduling.
type slots struct {
	mu       sync.Mutex
	running  int
	limit    int
	cpusFree int
	cpusAll  int
	// gpuUsers counts the nodes on each GPU, at most gpuShare.
	gpuUsers []int
	gpuShare int
	gpuIDs   []string
	waiting  []*slotRequest
}

type slotRequest struct {
	prio  int
	cpus  int
	gpus  int
	grant chan nodes.Assignment
	taken []int
	done  bool
}

func newSlots(par int, dev Devices) *slots {
	return &slots{limit: par, cpusFree: dev.CPUs, cpusAll: dev.CPUs, gpuIDs: dev.GPUs,
		gpuUsers: make([]int, len(dev.GPUs)), gpuShare: max(dev.GPUShare, 1)}
}

// check reports a request that can never be satisfied.
func (s *slots) check(r nodes.Resources) error {
	if r.GPUs > len(s.gpuIDs) {
		return fmt.Errorf("needs %d GPU(s) but %d are configured (see the devices setting)", r.GPUs, len(s.gpuIDs))
	}
	return nil
}

// acquire blocks until the request is granted, returning the assignment
// and the function that releases it. CPU requests above the machine's
// count are capped at the count. Lower prio values are served first.
func (s *slots) acquire(ctx context.Context, r nodes.Resources, prio int) (nodes.Assignment, func(), error) {
	if err := s.check(r); err != nil {
		return nodes.Assignment{}, nil, err
	}
	req := &slotRequest{prio: prio, cpus: min(max(r.CPUs, 0), s.cpusAll), gpus: r.GPUs, grant: make(chan nodes.Assignment, 1)}
	s.mu.Lock()
	s.waiting = append(s.waiting, req)
	sort.SliceStable(s.waiting, func(i, j int) bool { return s.waiting[i].prio < s.waiting[j].prio })
	s.dispatchLocked()
	s.mu.Unlock()
	select {
	case a := <-req.grant:
		var once sync.Once
		return a, func() { once.Do(func() { s.release(req) }) }, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if req.done { // granted while we were cancelled: give it back
			s.releaseLocked(req)
		} else {
			s.removeLocked(req)
		}
		return nodes.Assignment{}, nil, ctx.Err()
	}
}

func (s *slots) dispatchLocked() {
	for i := 0; i < len(s.waiting) && s.running < s.limit; {
		req := s.waiting[i]
		if s.cpusFree < req.cpus || s.freeGPUs() < req.gpus {
			i++
			continue
		}
		s.running++
		s.cpusFree -= req.cpus
		a := nodes.Assignment{CPUs: max(req.cpus, 1)}
		for _, g := range s.leastUsedGPUs(req.gpus) {
			s.gpuUsers[g]++
			req.taken = append(req.taken, g)
			a.GPUs = append(a.GPUs, s.gpuIDs[g])
		}
		req.done = true
		req.grant <- a
		s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
	}
}

func (s *slots) removeLocked(req *slotRequest) {
	for i, w := range s.waiting {
		if w == req {
			s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
			return
		}
	}
}

// freeGPUs counts the GPUs with room for one more node.
func (s *slots) freeGPUs() int {
	n := 0
	for _, u := range s.gpuUsers {
		if u < s.gpuShare {
			n++
		}
	}
	return n
}

// leastUsedGPUs returns n distinct GPUs with room, the least used first
// (ties: the lower index), so shared GPUs fill evenly.
func (s *slots) leastUsedGPUs(n int) []int {
	var free []int
	for g, u := range s.gpuUsers {
		if u < s.gpuShare {
			free = append(free, g)
		}
	}
	sort.SliceStable(free, func(i, j int) bool { return s.gpuUsers[free[i]] < s.gpuUsers[free[j]] })
	return free[:min(n, len(free))]
}

func (s *slots) release(req *slotRequest) {
	s.mu.Lock()
	s.releaseLocked(req)
	s.mu.Unlock()
}

func (s *slots) releaseLocked(req *slotRequest) {
	s.running--
	s.cpusFree += req.cpus
	for _, g := range req.taken {
		s.gpuUsers[g]--
	}
	s.dispatchLocked()
}
