package dataset

import (
	"context"
	"runtime"
	"sync"

	"github.com/gatepipe/gatepipe/nodes"
	"golang.org/x/sync/errgroup"
)

// decodeEach calls decode(ctx, k) for k < n on as many goroutines as
// there are cores, reporting progress as what; the first error cancels
// the others and is returned.
func decodeEach(ctx context.Context, n int, progress nodes.Progress, what string, decode func(ctx context.Context, k int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	var mu sync.Mutex
	done := 0
	for k := range n {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := decode(ctx, k); err != nil {
				return err
			}
			mu.Lock()
			done++
			if done%16 == 0 || done == n {
				progress.Update(int64(done), int64(n), what)
			}
			mu.Unlock()
			return nil
		})
	}
	return g.Wait()
}
