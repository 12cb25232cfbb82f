package engine

import (
	"errors"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/sources"
)

// Download is one remote source of a planned instance.
type Download struct {
	Addr   string
	Status PlanStatus
	Ref    sources.Ref
	// Pin is the source's pin; Pinned is false when it is not pinned yet
	// (its size and checksum are unknown until apply or fetch resolves
	// it).
	Pin    sources.Pin
	Pinned bool
	// Missing lists the pinned files the blob store does not hold.
	Missing []sources.File
	// Extracts, when set, reports whether the node unpacks the file at
	// a path of the source into a temporary directory as it runs.
	Extracts func(path string) bool
}

// Downloads lists the remote sources of every planned instance whose
// configuration is known, in dependency order, with what the cache lacks.
// Call it after Plan.
func (e *Engine) Downloads() []Download {
	r := e.resolver()
	var out []Download
	for _, v := range e.orderedVertices() {
		for _, in := range v.instances {
			d, ok := in.node.(nodes.Downloader)
			if !ok {
				continue
			}
			for _, ref := range d.Downloads() {
				dl := Download{Addr: in.key(), Status: in.status, Ref: ref}
				if x, ok := in.node.(nodes.Extractor); ok {
					dl.Extracts = func(path string) bool { return x.Extracts(ref, path) }
				}
				pin, err := r.Pinned(ref)
				if err == nil {
					dl.Pin, dl.Pinned = pin, true
					if e.cache != nil {
						for _, f := range pin.Files {
							if !r.Has(f) {
								dl.Missing = append(dl.Missing, f)
							}
						}
					}
				} else if !errors.Is(err, sources.ErrNotPinned) {
					continue
				}
				out = append(out, dl)
			}
		}
	}
	return out
}

// LocalCopy is a local source file that a planned instance copies into
// the blob store; Have says the store holds it already (by its planned
// hash).
type LocalCopy struct {
	Addr string
	nodes.LocalCopy
	Have bool
}

// LocalCopies lists, in dependency order, the local source files of the
// instances that will run. Call it after Plan.
func (e *Engine) LocalCopies() []LocalCopy {
	var out []LocalCopy
	for _, v := range e.orderedVertices() {
		for _, in := range v.instances {
			lc, ok := in.node.(nodes.LocalCopier)
			if !ok || in.status == StatusCached && !in.replace {
				continue
			}
			for _, c := range lc.LocalCopies() {
				have := false
				if c.SHA256 != "" && e.cache != nil {
					_, have = e.cache.BlobPath(c.SHA256)
				}
				out = append(out, LocalCopy{Addr: in.key(), LocalCopy: c, Have: have})
			}
		}
	}
	return out
}
