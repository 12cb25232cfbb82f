package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/gatepipe/gatepipe/nodes"
)

// slots hands out parallelism and device slots. A node acquires them only
// after its dependencies are done and releases them when it returns.
type slots struct {
	mu       sync.Mutex
	changed  chan struct{}
	running  int
	limit    int
	cpusFree int
	cpusAll  int
	gpuFree  []bool
	gpuIDs   []string
}

func newSlots(par int, dev Devices) *slots {
	s := &slots{changed: make(chan struct{}), limit: par, cpusFree: dev.CPUs, cpusAll: dev.CPUs, gpuIDs: dev.GPUs}
	s.gpuFree = make([]bool, len(dev.GPUs))
	for i := range s.gpuFree {
		s.gpuFree[i] = true
	}
	return s
}

// check reports a request that can never be satisfied.
func (s *slots) check(r nodes.Resources) error {
	if r.GPUs > len(s.gpuIDs) {
		return fmt.Errorf("needs %d GPU(s) but %d are configured (see the devices setting)", r.GPUs, len(s.gpuIDs))
	}
	return nil
}

// acquire blocks until the request fits, returning the assignment and the
// function that releases it. CPU requests above the machine's count are
// capped at the count.
func (s *slots) acquire(ctx context.Context, r nodes.Resources) (nodes.Assignment, func(), error) {
	if err := s.check(r); err != nil {
		return nodes.Assignment{}, nil, err
	}
	cpus := min(max(r.CPUs, 0), s.cpusAll)
	for {
		s.mu.Lock()
		if s.running < s.limit && s.cpusFree >= cpus && s.freeGPUs() >= r.GPUs {
			s.running++
			s.cpusFree -= cpus
			a := nodes.Assignment{CPUs: max(cpus, 1)}
			var taken []int
			for i := range s.gpuFree {
				if len(taken) == r.GPUs {
					break
				}
				if s.gpuFree[i] {
					s.gpuFree[i] = false
					taken = append(taken, i)
					a.GPUs = append(a.GPUs, s.gpuIDs[i])
				}
			}
			s.mu.Unlock()
			var once sync.Once
			return a, func() { once.Do(func() { s.release(cpus, taken) }) }, nil
		}
		wait := s.changed
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nodes.Assignment{}, nil, ctx.Err()
		}
	}
}

func (s *slots) freeGPUs() int {
	n := 0
	for _, f := range s.gpuFree {
		if f {
			n++
		}
	}
	return n
}

func (s *slots) release(cpus int, gpus []int) {
	s.mu.Lock()
	s.running--
	s.cpusFree += cpus
	for _, i := range gpus {
		s.gpuFree[i] = true
	}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}
