package sources

import (
	"context"
	"fmt"
	"net/http"
	"os"
)

// Listed is what a source not pinned yet holds, as its server states it
// before anything is downloaded.
type Listed struct {
	Files int
	// Bytes is their size; Unsized counts files whose server gave none.
	Bytes   int64
	Unsized int
	// Entries are the files, each with its path and size (no checksum).
	Entries []File
}

// Size asks how large ref is without downloading or pinning it: a Hub
// repository's tree listing (the files its patterns match at its
// revision, with their LFS sizes), or a URL's Content-Length (HTTP HEAD).
// Nothing is written to the lock. ctx bounds the questions; offline it
// fails at once.
func (r *Resolver) Size(ctx context.Context, ref Ref) (Listed, error) {
	if r.offline {
		return Listed{}, ErrOffline
	}
	if ref.HF != "" {
		l, err := r.hfListing(ctx, ref)
		if err != nil {
			return Listed{}, err
		}
		entries, err := l.matching()
		if err != nil {
			return Listed{}, err
		}
		var out Listed
		for _, e := range entries {
			size := e.Size
			if e.LFS != nil {
				size = e.LFS.Size
			}
			out.Files++
			out.Bytes += size
			out.Entries = append(out.Entries, File{Path: e.Path, Size: size})
		}
		return out, nil
	}
	n, err := r.headSize(ctx, ref)
	if err != nil {
		return Listed{}, fmt.Errorf("%s: %w", ref.URL, err)
	}
	if n < 0 {
		return Listed{Files: 1, Unsized: 1, Entries: []File{{Path: ref.Name, URL: ref.URL}}}, nil
	}
	return Listed{Files: 1, Bytes: n, Entries: []File{{Path: ref.Name, URL: ref.URL, Size: n}}}, nil
}

// headSize is a URL's Content-Length from a HEAD request (through the
// mirror, with ref's credentials); -1 when the server states none.
func (r *Resolver) headSize(ctx context.Context, ref Ref) (int64, error) {
	remote, local, err := r.mirror.locate(ref.URL)
	if err != nil {
		return 0, err
	}
	if local != "" {
		info, err := os.Stat(local)
		if err != nil {
			return 0, err
		}
		return info.Size(), nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, remote, nil)
	if err != nil {
		return 0, err
	}
	creds := credsFor(ref)
	if err := r.authorize(req, creds); err != nil {
		return 0, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		if u := unreachable(req.URL.Host, err); u != nil {
			return 0, u
		}
		return 0, stripURLError(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, r.statusError(resp, creds)
	}
	return resp.ContentLength, nil
}
