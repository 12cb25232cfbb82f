package sources

import (
	"context"
	"net/url"
	"sync"
)

// Download concurrency: how many files FetchAll fetches at once, and at
// most from one host (a server's per-client limits, Kaggle's and the Hub's
// rate limits, are per host).
const (
	DefaultParallel = 16
	DefaultPerHost  = 8
)

// FetchJob is one pinned file of a source.
type FetchJob struct {
	Ref  Ref
	File File
}

// FetchResult is what fetching a job gave: the blob's path, or why not.
type FetchResult struct {
	Job  FetchJob
	Path string
	Err  error
}

// FetchAll fetches jobs as Fetch does, up to parallel at a time (0:
// DefaultParallel) and DefaultPerHost from one host, and returns their
// results in the jobs' order. A failed file does not stop the others; a
// cancelled ctx stops those not started. done, when set, is called (from
// the fetching goroutines, one at a time) as each job ends.
func (r *Resolver) FetchAll(ctx context.Context, jobs []FetchJob, parallel int, done func(FetchResult)) []FetchResult {
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	out := make([]FetchResult, len(jobs))
	all := make(chan struct{}, parallel)
	var mu sync.Mutex // hosts and done
	hosts := map[string]chan struct{}{}
	hostSlot := func(u string) chan struct{} {
		host := u
		if p, err := url.Parse(u); err == nil && p.Host != "" {
			host = p.Host
		}
		mu.Lock()
		defer mu.Unlock()
		if hosts[host] == nil {
			hosts[host] = make(chan struct{}, DefaultPerHost)
		}
		return hosts[host]
	}
	var wg sync.WaitGroup
	for i, j := range jobs {
		out[i].Job = j
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := hostSlot(j.File.URL)
			select {
			case all <- struct{}{}:
			case <-ctx.Done():
				out[i].Err = ctx.Err()
				return
			}
			defer func() { <-all }()
			select {
			case h <- struct{}{}:
			case <-ctx.Done():
				out[i].Err = ctx.Err()
				return
			}
			defer func() { <-h }()
			out[i].Path, out[i].Err = r.Fetch(ctx, j.Ref, j.File, nil)
			if done != nil {
				mu.Lock()
				done(out[i])
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}
