package sources

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
)

var commitRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// resolveHF pins a Hub dataset (or model) repository: the revision becomes
// a commit (GET /api/datasets/REPO/revision/REV; /api/models/ for a model)
// and each pattern's directory is listed at that commit
// (GET /api/datasets/REPO/tree/COMMIT/DIR), taking
// every LFS file's published SHA-256 (lfs.oid). Files stored in git
// itself have no published SHA-256; they are downloaded and pinned.
func (r *Resolver) resolveHF(ctx context.Context, ref Ref) (Pin, error) {
	if err := CheckRepo(ref.HF); err != nil {
		return Pin{}, err
	}
	l, err := r.hfListing(ctx, ref)
	if err != nil {
		return Pin{}, err
	}
	entries, err := l.matching()
	if err != nil {
		return Pin{}, err
	}
	pin := Pin{Commit: l.commit}
	for _, e := range entries {
		f, err := l.file(e)
		if err != nil {
			return Pin{}, err
		}
		pin.Files = append(pin.Files, f)
	}
	sort.Slice(pin.Files, func(i, j int) bool { return pin.Files[i].Path < pin.Files[j].Path })
	return pin, nil
}

// hfListing resolves ref's revision to a commit and returns a lister of
// the repository at that commit.
func (r *Resolver) hfListing(ctx context.Context, ref Ref) (*hfLister, error) {
	creds := credsFor(ref)
	commit := ref.revision()
	if !commitRE.MatchString(commit) {
		var info struct {
			SHA string `json:"sha"`
		}
		u := fmt.Sprintf("%s/api/%s/%s/revision/%s", r.endpoint, ref.hubKind(), ref.HF, url.PathEscape(commit))
		if err := r.getJSON(ctx, u, creds, &info); err != nil {
			return nil, fmt.Errorf("hf %s: resolving revision %q: %w", ref.HF, commit, err)
		}
		if !commitRE.MatchString(info.SHA) {
			return nil, fmt.Errorf("hf %s: revision %q resolved to %q, which is not a commit", ref.HF, commit, info.SHA)
		}
		commit = info.SHA
	}
	return &hfLister{r: r, ctx: ctx, ref: ref, creds: creds, commit: commit, listed: map[string][]hfEntry{}}, nil
}

// matching lists the files of the ref's patterns, each once; a pattern
// that matches none is an error.
func (l *hfLister) matching() ([]hfEntry, error) {
	seen := map[string]bool{}
	var out []hfEntry
	for _, pattern := range l.ref.Files {
		entries, err := l.candidates(pattern)
		if err != nil {
			return nil, err
		}
		matched := 0
		for _, e := range entries {
			if e.Type != "file" {
				continue
			}
			if ok, _ := path.Match(pattern, e.Path); !ok {
				continue
			}
			if err := CheckRelPath(e.Path); err != nil {
				return nil, fmt.Errorf("hf %s: the Hub listed %s", l.ref.HF, err)
			}
			matched++
			if !seen[e.Path] {
				seen[e.Path] = true
				out = append(out, e)
			}
		}
		if matched == 0 {
			return nil, fmt.Errorf("hf %s: no file at %s matches %q", l.ref.HF, l.commit[:12], pattern)
		}
	}
	return out, nil
}

// hfEntry is one entry of the Hub's tree listing.
type hfEntry struct {
	Type string `json:"type"` // "file" or "directory"
	Path string `json:"path"`
	Size int64  `json:"size"`
	LFS  *struct {
		OID  string `json:"oid"`
		Size int64  `json:"size"`
	} `json:"lfs"`
}

// hfLister lists a repository's directories at a commit, once each.
type hfLister struct {
	r      *Resolver
	ctx    context.Context
	ref    Ref
	creds  string
	commit string
	listed map[string][]hfEntry
}

func (l *hfLister) list(dir string) ([]hfEntry, error) {
	if entries, ok := l.listed[dir]; ok {
		return entries, nil
	}
	u := fmt.Sprintf("%s/api/%s/%s/tree/%s", l.r.endpoint, l.ref.hubKind(), l.ref.HF, l.commit)
	if dir != "." {
		u += "/" + dir
	}
	var entries []hfEntry
	if err := l.r.getJSON(l.ctx, u, l.creds, &entries); err != nil {
		return nil, fmt.Errorf("hf %s: listing %s at %s: %w", l.ref.HF, dir, l.commit[:12], err)
	}
	l.listed[dir] = entries
	return entries, nil
}

// candidates lists the directory of pattern. A wildcard in the
// directory's last element ("general/*train/*.parquet": the Hub's
// Parquet conversion names a partly converted split partial-train) lists
// the parent and every sub-directory it matches.
func (l *hfLister) candidates(pattern string) ([]hfEntry, error) {
	dir := path.Dir(pattern)
	if !strings.ContainsAny(dir, "*?[") {
		return l.list(dir)
	}
	parent := path.Dir(dir)
	if strings.ContainsAny(parent, "*?[") {
		return nil, fmt.Errorf("hf %s: %q: a wildcard may stand in the file name and its directory, not higher", l.ref.HF, pattern)
	}
	subs, err := l.list(parent)
	if err != nil {
		return nil, err
	}
	var out []hfEntry
	for _, e := range subs {
		if ok, _ := path.Match(dir, e.Path); !ok || e.Type != "directory" {
			continue
		}
		if err := CheckRelPath(e.Path); err != nil {
			return nil, fmt.Errorf("hf %s: the Hub listed %s", l.ref.HF, err)
		}
		entries, err := l.list(e.Path)
		if err != nil {
			return nil, err
		}
		out = append(out, entries...)
	}
	return out, nil
}

// file is a listed file with its URL and SHA-256: the one the Hub
// publishes for LFS files, else taken by downloading it.
func (l *hfLister) file(e hfEntry) (File, error) {
	f := File{Path: e.Path, Size: e.Size,
		URL: fmt.Sprintf("%s/%s/resolve/%s/%s", l.r.endpoint, l.ref.hubPrefix(), l.commit, escapePath(e.Path))}
	if e.LFS != nil && isSHA256(e.LFS.OID) {
		f.SHA256, f.Size, f.Storage = e.LFS.OID, e.LFS.Size, StorageLFS
		return f, nil
	}
	f.Storage = StorageGit
	p, sha, err := l.r.fetch(l.ctx, f, l.creds, nil)
	if err != nil {
		return File{}, err
	}
	f.SHA256 = sha
	if info, err := os.Stat(p); err == nil {
		f.Size = info.Size()
	}
	return f, nil
}

// CheckRepo reports whether repo is a Hub repository id, OWNER/NAME.
func CheckRepo(repo string) error {
	parts := strings.Split(repo, "/")
	ok := len(parts) == 2
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.ContainsAny(p, "?#%\\ ") {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("hf = %q is not a repository id of the form OWNER/NAME", repo)
	}
	return nil
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// getJSON fetches a small JSON document through the mirror.
func (r *Resolver) getJSON(ctx context.Context, raw, creds string, v any) error {
	remote, local, err := r.mirror.locate(raw)
	if err != nil {
		return err
	}
	var data []byte
	if local != "" {
		if data, err = os.ReadFile(local); err != nil {
			return err
		}
	} else if err := r.withRetry(ctx, "GET "+raw, func() (bool, error) {
		var retry bool
		data, retry, err = r.getOnce(ctx, remote, creds)
		return retry, err
	}); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("unexpected answer: %w", err)
	}
	return nil
}

// getOnce reads a small API answer (at most 64 MiB); retry reports
// whether a failure is worth another attempt.
func (r *Resolver) getOnce(ctx context.Context, remote, creds string) (data []byte, retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, remote, nil)
	if err != nil {
		return nil, false, err
	}
	if err := r.authorize(req, creds); err != nil {
		return nil, false, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		if u := unreachable(req.URL.Host, err); u != nil {
			return nil, false, u
		}
		return nil, isTransient(err), stripURLError(err)
	}
	defer resp.Body.Close()
	if retryableStatus(resp.StatusCode) {
		return nil, true, &httpError{resp.StatusCode, resp.Status}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, false, r.statusError(resp, creds)
	}
	data, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return data, isTransient(err), err
}
