package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/sources"
)

// listDeadline bounds the questions plan asks servers about the sizes of
// sources not pinned yet: a plan stays quick when the network is slow.
const listDeadline = 15 * time.Second

// listing is what a server said of a source not pinned yet.
type listing struct {
	sources.Listed
	err error
}

// listUnpinned asks, side by side and within listDeadline, how large each
// source not pinned yet of the instances that will run is (the Hub's tree
// listing, or an HTTP HEAD), by the source's key. Offline, or without a
// resolver, it asks nothing. Once a host is unreachable its other sources
// are not asked.
func listUnpinned(ctx context.Context, r *sources.Resolver, dls []engine.Download) map[string]listing {
	out := map[string]listing{}
	if r == nil || r.Offline() {
		return out
	}
	var refs []sources.Ref
	for _, d := range dls {
		if d.Status == engine.StatusCached || d.Pinned {
			continue
		}
		if _, ok := out[d.Ref.Key()]; !ok {
			out[d.Ref.Key()] = listing{}
			refs = append(refs, d.Ref)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, listDeadline)
	defer cancel()
	var mu sync.Mutex
	down := map[string]error{} // hosts found unreachable
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, ref := range refs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			host := "hf"
			if ref.HF == "" {
				if u, err := url.Parse(ref.URL); err == nil {
					host = u.Host
				}
			}
			mu.Lock()
			err := down[host]
			mu.Unlock()
			var l sources.Listed
			if err == nil {
				l, err = r.Size(ctx, ref)
			}
			mu.Lock()
			defer mu.Unlock()
			var unreachable *sources.UnreachableError
			if errors.As(err, &unreachable) {
				down[host] = err
			}
			out[ref.Key()] = listing{Listed: l, err: err}
		}()
	}
	wg.Wait()
	return out
}

// diskPlan is what an apply adds to the cache's disk, as far as plan can
// tell before it runs.
type diskPlan struct {
	// downloads are the files to fetch: pinned ones the cache lacks, and
	// sources not pinned yet at their listed sizes (listed of it).
	downloads, listed int64
	// copies are the local source files copied into the blob store.
	copies int64
	// unknown counts sources whose size nobody could tell.
	unknown int
	// scratch is what datasets unpack into temporary directories while
	// they run (archives they cannot read in place), all of them;
	// largestScratch one dataset's most.
	scratch, largestScratch int64
	// stores are the example stores' sizes; storesUnknown counts stores
	// of unknown size.
	stores        int64
	storesUnknown int
}

// planDisk adds up the downloads, the local files copied into the cache,
// the unpacked archives and the stores of the instances that will run.
func planDisk(dls []engine.Download, listings map[string]listing, stores []engine.Store, locals []engine.LocalCopy) diskPlan {
	var p diskPlan
	seen := map[string]bool{}
	scratch := map[string]int64{} // by instance
	for _, c := range locals {
		key := "local " + c.SHA256
		if c.SHA256 == "" {
			key = "path " + c.Path
		}
		if !c.Have && !seen[key] {
			seen[key] = true
			p.copies += c.Size
		}
		if c.Extracts {
			p.scratch += c.Size
			scratch[c.Addr] += c.Size
		}
	}
	for _, d := range dls {
		if d.Status == engine.StatusCached {
			continue
		}
		files := d.Pin.Files
		if !d.Pinned {
			l := listings[d.Ref.Key()]
			if !seen["ref "+d.Ref.Key()] {
				seen["ref "+d.Ref.Key()] = true
				if l.err != nil || l.Files == 0 {
					p.unknown++
				} else {
					p.downloads += l.Bytes
					p.listed += l.Bytes
					p.unknown += min(l.Unsized, 1)
				}
			}
			files = l.Entries
		}
		for _, f := range d.Missing {
			if !seen[f.SHA256] {
				seen[f.SHA256] = true
				p.downloads += f.Size
			}
		}
		if d.Extracts != nil {
			for _, f := range files {
				if d.Extracts(f.Path) {
					p.scratch += f.Size
					scratch[d.Addr] += f.Size
				}
			}
		}
	}
	for _, n := range scratch {
		p.largestScratch = max(p.largestScratch, n)
	}
	for _, st := range stores {
		if st.Estimate.Known && st.Estimate.Bytes > 0 {
			p.stores += st.Estimate.Bytes
		} else if st.Estimate.Shape != nil || st.Estimate.Known {
			p.storesUnknown++
		}
	}
	return p
}

// peak is the most the apply adds to the disk at once: every download,
// local copy and store, and the unpacked archives of the dataset that unpacks most
// (a dataset's are removed once its store is written). most is the bound
// where every dataset's archives are unpacked at once.
func (p diskPlan) peak() (about, most int64) {
	return p.downloads + p.copies + p.largestScratch + p.stores, p.downloads + p.copies + p.scratch + p.stores
}

// print writes the disk's budget and warns when free space (of the cache
// at dir) is short of the peak.
func (p diskPlan) print(w io.Writer, dir string) {
	about, most := p.peak()
	if most == 0 && p.unknown+p.storesUnknown == 0 {
		return
	}
	free, haveFree := freeBytes(dir)
	fmt.Fprintf(w, "\nDisk (the cache, %s", dir)
	if haveFree {
		fmt.Fprintf(w, ": %s free", humanBytes(free))
	}
	fmt.Fprintln(w, "):")
	dl := humanBytes(p.downloads)
	if p.listed > 0 {
		dl += fmt.Sprintf(" (%s of it as servers list sources not pinned yet)", humanBytes(p.listed))
	}
	if p.unknown > 0 {
		dl += fmt.Sprintf(", plus %d source(s) of unknown size", p.unknown)
	}
	fmt.Fprintf(w, "  downloads  %s, kept in the cache\n", dl)
	if p.copies > 0 {
		fmt.Fprintf(w, "  local      %s, local source files copied into the cache\n", humanBytes(p.copies))
	}
	if p.scratch > 0 {
		fmt.Fprintf(w, "  unpacked   %s, archives their datasets extract (removed once the store is written; kept by format \"raw\"), %s of it by one dataset\n", humanBytes(p.scratch), humanBytes(p.largestScratch))
	}
	st := humanBytes(p.stores)
	if p.storesUnknown > 0 {
		st += fmt.Sprintf(", plus %d store(s) of unknown size", p.storesUnknown)
	}
	fmt.Fprintf(w, "  stores     %s\n", st)
	fmt.Fprintf(w, "  peak       about %s", humanBytes(about))
	if most > about {
		fmt.Fprintf(w, " (%s if every archive is unpacked at once)", humanBytes(most))
	}
	if p.unknown+p.storesUnknown > 0 {
		fmt.Fprint(w, ", more: some sizes are unknown")
	}
	fmt.Fprintln(w)
	if haveFree && about > free {
		fmt.Fprintf(w, "  Warning: the apply needs about %s but the cache's disk has %s free: point -cache-dir at a larger disk, or shrink the stores (image_size, max_train)\n",
			humanBytes(about), humanBytes(free))
	}
}
