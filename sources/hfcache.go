package sources

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
)

// HFCache is a Hugging Face Hub cache as huggingface_hub lays it out, read
// in place and never written by apply:
//
//	ROOT/datasets--OWNER--NAME/refs/main                 the commit "main" names
//	ROOT/datasets--OWNER--NAME/snapshots/COMMIT/PATH     -> ../../blobs/ETAG
//	ROOT/datasets--OWNER--NAME/blobs/ETAG                the file (ETAG.incomplete while downloading)
//
// models--OWNER--NAME for model repositories. An LFS file's ETAG is its
// SHA-256; another file's, its git blob hash (SHA-1 of "blob SIZE\0" and
// the content).
type HFCache struct {
	Root string
}

// FindHFCache returns the cache huggingface_hub uses with this
// environment: $HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE, $HF_HOME/hub,
// $XDG_CACHE_HOME/huggingface/hub, then ~/.cache/huggingface/hub; the
// zero HFCache when that directory does not exist.
func FindHFCache(getenv func(string) string, home string) HFCache {
	root := HFCacheRoot(getenv, home)
	if root == "" {
		return HFCache{}
	}
	if info, err := os.Stat(root); err != nil || !info.IsDir() {
		return HFCache{}
	}
	return HFCache{Root: root}
}

// HFCacheRoot is where huggingface_hub keeps its cache with this
// environment, whether or not it exists yet.
func HFCacheRoot(getenv func(string) string, home string) string {
	var root string
	switch {
	case getenv("HF_HUB_CACHE") != "":
		root = getenv("HF_HUB_CACHE")
	case getenv("HUGGINGFACE_HUB_CACHE") != "":
		root = getenv("HUGGINGFACE_HUB_CACHE")
	case getenv("HF_HOME") != "":
		root = filepath.Join(getenv("HF_HOME"), "hub")
	case getenv("XDG_CACHE_HOME") != "":
		root = filepath.Join(getenv("XDG_CACHE_HOME"), "huggingface", "hub")
	case home != "":
		root = filepath.Join(home, ".cache", "huggingface", "hub")
	}
	return root
}

// IsZero reports whether there is no cache.
func (c HFCache) IsZero() bool { return c.Root == "" }

// repoDir is where the cache keeps a repository; kind is "datasets" or
// "models".
func (c HFCache) repoDir(kind, repo string) string {
	return filepath.Join(c.Root, kind+"--"+strings.ReplaceAll(repo, "/", "--"))
}

// Commit returns the commit a revision names in the cache: refs/REVISION,
// or the revision itself when it is a commit the cache has a snapshot of.
func (c HFCache) Commit(kind, repo, revision string) (string, bool) {
	if c.IsZero() || CheckRepo(repo) != nil {
		return "", false
	}
	dir := c.repoDir(kind, repo)
	if commitRE.MatchString(revision) {
		_, err := os.Stat(filepath.Join(dir, "snapshots", revision))
		return revision, err == nil
	}
	if CheckRelPath(revision) != nil {
		return "", false
	}
	data, err := os.ReadFile(filepath.Join(dir, "refs", filepath.FromSlash(revision)))
	if commit := strings.TrimSpace(string(data)); err == nil && commitRE.MatchString(commit) {
		return commit, true
	}
	return "", false
}

// hfCached is one file of a snapshot.
type hfCached struct {
	Path string // in the repository
	Blob string // the file to read
	Etag string // the blob's name: SHA-256 (LFS) or git blob SHA-1; "" for a copied file
	Size int64
}

// Lookup finds one file of a snapshot; false when the cache lacks it (or
// holds a link to a blob that is still being written).
func (c HFCache) Lookup(kind, repo, commit, p string) (hfCached, bool) {
	if c.IsZero() || CheckRepo(repo) != nil || !commitRE.MatchString(commit) || CheckRelPath(p) != nil {
		return hfCached{}, false
	}
	dir := c.repoDir(kind, repo)
	f, damage := c.entry(dir, filepath.Join(dir, "snapshots", commit, filepath.FromSlash(p)), p)
	return f, damage == ""
}

// entry reads a snapshot entry: a link into repoDir/blobs (huggingface_hub
// on Linux and macOS) or a copy (where links are not available). damage
// says why an entry cannot be used: a link that leaves the repository's
// blobs or loops, a blob that is missing, not a regular file, or still
// being written (huggingface_hub links a blob only once it is whole).
func (c HFCache) entry(repoDir, link, p string) (f hfCached, damage string) {
	f = hfCached{Path: p, Blob: link}
	if target, err := os.Readlink(link); err == nil {
		blob := filepath.Clean(filepath.Join(filepath.Dir(link), target))
		if filepath.Dir(blob) != filepath.Join(repoDir, "blobs") {
			return hfCached{}, fmt.Sprintf("its link points to %s, outside the repository's blobs", target)
		}
		if strings.HasSuffix(blob, ".incomplete") {
			return hfCached{}, fmt.Sprintf("its link points to %s, a blob still being written", target)
		}
		f.Blob, f.Etag = blob, filepath.Base(blob)
	}
	info, err := os.Stat(f.Blob)
	switch {
	case err != nil:
		return hfCached{}, fmt.Sprintf("its blob cannot be read (%v)", err)
	case !info.Mode().IsRegular():
		return hfCached{}, fmt.Sprintf("its blob %s is not a regular file (%s)", f.Blob, info.Mode().Type())
	}
	f.Size = info.Size()
	return f, ""
}

// Files lists a snapshot's files whose repository paths match one of the
// patterns (path.Match, as the Hub's listing is matched). A matching entry
// that cannot be used is an error naming it: pinning without it would
// build a dataset with files missing.
func (c HFCache) Files(kind, repo, commit string, patterns []string) ([]hfCached, error) {
	if c.IsZero() || CheckRepo(repo) != nil || !commitRE.MatchString(commit) {
		return nil, nil
	}
	dir := c.repoDir(kind, repo)
	snap := filepath.Join(dir, "snapshots", commit)
	var out []hfCached
	err := filepath.WalkDir(snap, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(snap, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		for _, pat := range patterns {
			if ok, _ := path.Match(pat, rel); ok {
				f, damage := c.entry(dir, p, rel)
				if damage != "" {
					return fmt.Errorf("the Hugging Face cache's %s of %s is damaged: %s; delete %s (or download it again with huggingface_hub)", rel, repo, damage, p)
				}
				out = append(out, f)
				break
			}
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

// hashBoth returns a file's SHA-256 and git blob SHA-1.
func hashBoth(p string) (sha256hex, gitSHA1 string, err error) {
	f, err := os.Open(p)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", "", err
	}
	s2, s1 := sha256.New(), sha1.New()
	fmt.Fprintf(s1, "blob %d\x00", info.Size())
	if _, err := io.Copy(io.MultiWriter(s2, s1), f); err != nil {
		return "", "", err
	}
	return hex.EncodeToString(s2.Sum(nil)), hex.EncodeToString(s1.Sum(nil)), nil
}

// hubFile reads a Hub download URL of this resolver's endpoint: the
// repository kind ("datasets" or "models"), repository, commit and path.
func (r *Resolver) hubFile(raw string) (kind, repo, commit, p string, ok bool) {
	rest, found := strings.CutPrefix(raw, r.endpoint+"/")
	if !found {
		return "", "", "", "", false
	}
	kind = "models"
	if s, isDataset := strings.CutPrefix(rest, "datasets/"); isDataset {
		kind, rest = "datasets", s
	}
	parts := strings.SplitN(rest, "/", 5) // OWNER NAME resolve COMMIT PATH
	if len(parts) != 5 || parts[2] != "resolve" || !commitRE.MatchString(parts[3]) {
		return "", "", "", "", false
	}
	p, err := url.PathUnescape(parts[4])
	if err != nil {
		return "", "", "", "", false
	}
	return kind, parts[0] + "/" + parts[1], parts[3], p, true
}

// hfPinResult is a memoised pinFromHFCache.
type hfPinResult struct {
	pin Pin
	err error
}

// pinFromHFCache pins a Hub dataset or model source from the Hugging Face cache
// (offline: the Hub cannot list the repository): the commit the revision
// names there and the snapshot's files that match each pattern, an LFS
// file's SHA-256 taken from its blob's name (checked when it is fetched),
// another file's hashed and checked against its git blob hash. The pin is
// not written to the lock file: a snapshot may hold only some of the
// repository's files.
func (r *Resolver) pinFromHFCache(ref Ref) (Pin, error) {
	r.hfMu.Lock()
	defer r.hfMu.Unlock()
	if res, ok := r.hfPins[ref.Key()]; ok {
		return res.pin, res.err
	}
	pin, err := r.readHFCachePin(ref)
	r.hfPins[ref.Key()] = hfPinResult{pin, err}
	return pin, err
}

func (r *Resolver) readHFCachePin(ref Ref) (Pin, error) {
	if r.hfcache.IsZero() {
		return Pin{}, fmt.Errorf("no Hugging Face cache was found (looked at $HF_HUB_CACHE, $HF_HOME/hub and ~/.cache/huggingface/hub)")
	}
	kind := ref.hubKind()
	commit, ok := r.hfcache.Commit(kind, ref.HF, ref.revision())
	if !ok {
		return Pin{}, fmt.Errorf("the Hugging Face cache %s has no revision %q of %s %s%s", r.hfcache.Root, ref.revision(), strings.TrimSuffix(kind, "s"), ref.HF, r.hfcache.closest(kind, ref.HF))
	}
	pin := Pin{Commit: commit}
	for _, pattern := range ref.Files {
		files, err := r.hfcache.Files(kind, ref.HF, commit, []string{pattern})
		if err != nil {
			return Pin{}, err
		}
		if len(files) == 0 {
			return Pin{}, fmt.Errorf("the Hugging Face cache %s holds no file of %s at %s matching %q", r.hfcache.Root, ref.HF, commit[:12], pattern)
		}
		for _, e := range files {
			f := File{Path: e.Path, Size: e.Size, URL: fmt.Sprintf("%s/%s/resolve/%s/%s", r.endpoint, ref.hubPrefix(), commit, escapePath(e.Path))}
			if isSHA256(e.Etag) {
				f.SHA256, f.Storage = e.Etag, StorageLFS
			} else {
				f.Storage = StorageGit
				if e.Etag != "" && e.Size > lfsThreshold {
					// Not hashed: the Hub keeps a file this big in LFS,
					// under its SHA-256 (a copy, with no blob name, may
					// be either).
					return Pin{}, fmt.Errorf("the Hugging Face cache's %s of %s is %d bytes under a git blob name (%s), but the Hub stores files over %d bytes in LFS, named by their SHA-256: the cache entry is damaged (delete %s and download it again)", e.Path, ref.HF, e.Size, e.Etag, lfsThreshold, e.Blob)
				}
				s256, s1, err := hashBoth(e.Blob)
				if err != nil {
					return Pin{}, err
				}
				if e.Etag != "" && e.Etag != s1 {
					return Pin{}, fmt.Errorf("the Hugging Face cache's %s of %s has git blob hash %s, but its blob is named %s: the cache entry is damaged (delete %s and download it again)", e.Path, ref.HF, s1, e.Etag, e.Blob)
				}
				f.SHA256 = s256
			}
			pin.Files = append(pin.Files, f)
		}
	}
	sort.Slice(pin.Files, func(i, j int) bool { return pin.Files[i].Path < pin.Files[j].Path })
	pin.Files = slices.CompactFunc(pin.Files, func(a, b File) bool { return a.Path == b.Path })
	r.infof("pinned %s from the Hugging Face cache %s (commit %s, %d files); offline, it is not written to the lock file", ref.Key(), r.hfcache.Root, commit[:12], len(pin.Files))
	return pin, nil
}

// closest names the cached repositories of a kind whose names are
// closest to repo, as ", closest in the cache: …" ("" when none is).
func (c HFCache) closest(kind, repo string) string {
	entries, err := os.ReadDir(c.Root)
	if err != nil {
		return ""
	}
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), kind+"--")
		if !ok || !e.IsDir() {
			continue
		}
		name = strings.Replace(name, "--", "/", 1)
		cands = append(cands, cand{name, levenshtein.Distance(strings.ToLower(repo), strings.ToLower(name), nil)})
	}
	if len(cands) == 0 {
		return ""
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].d < cands[j].d })
	var names []string
	for _, c := range cands[:min(3, len(cands))] {
		names = append(names, c.name)
	}
	return "; closest in the cache: " + strings.Join(names, ", ")
}

// fromHFCache returns the Hugging Face cache's copy of a pinned Hub file
// when it has one that matches the pin. A copy that does not match (a
// blob named for another hash, or whose content changed) is not used: a
// warning names it, and the file is fetched as if the cache lacked it.
func (r *Resolver) fromHFCache(f File) (string, bool) {
	e, ok := r.hfCacheEntry(f)
	if !ok {
		return "", false
	}
	if err := r.verifyExternal(e.Blob, f.SHA256); err != nil {
		r.warnOnce(f.URL, "the Hugging Face cache's copy of %s is not used: %v", f.URL, err)
		return "", false
	}
	return e.Blob, true
}

// inHFCache reports whether the Hugging Face cache holds a pinned file
// under its name (its content is checked when it is fetched).
func (r *Resolver) inHFCache(f File) bool {
	_, ok := r.hfCacheEntry(f)
	return ok
}

func (r *Resolver) hfCacheEntry(f File) (hfCached, bool) {
	kind, repo, commit, p, ok := r.hubFile(f.URL)
	if !ok {
		return hfCached{}, false
	}
	e, ok := r.hfcache.Lookup(kind, repo, commit, p)
	if !ok {
		return hfCached{}, false
	}
	switch {
	case isSHA256(e.Etag) && e.Etag != f.SHA256:
		r.warnOnce(f.URL, "the Hugging Face cache's copy of %s is not used: its blob is named %s, the pin says sha256 %s", f.URL, e.Etag, f.SHA256)
		return hfCached{}, false
	case f.Size > 0 && e.Size != f.Size:
		r.warnOnce(f.URL, "the Hugging Face cache's copy of %s is not used: %d bytes, the pin says %d", f.URL, e.Size, f.Size)
		return hfCached{}, false
	}
	return e, true
}

// ExternalVerifier checks a file outside the blob store against a
// SHA-256, hashing it only when it changed since it last matched (the
// engine's cache implements it with its stamps).
type ExternalVerifier interface {
	VerifyExternal(path, sha256hex string) error
}

// VerifyLocal reports whether the local file at p still has SHA-256 sum
// (a source whose checksum the pipeline declares), hashing it only when
// its stamp changed since it last matched.
func (r *Resolver) VerifyLocal(p, sum string) error { return r.verifyExternal(p, sum) }

func (r *Resolver) verifyExternal(p, sum string) error {
	if v, ok := r.blobs.(ExternalVerifier); ok {
		return v.VerifyExternal(p, sum)
	}
	got, _, err := hashBoth(p)
	if err != nil {
		return err
	}
	if got != sum {
		return fmt.Errorf("%s has SHA-256 %s, want %s", p, got, sum)
	}
	return nil
}

// FileSHA256 returns a file's SHA-256, hex.
func FileSHA256(p string) (string, error) {
	s, _, err := hashBoth(p)
	return s, err
}

// lfsThreshold: the Hub keeps files over 10 MiB in LFS, so a file whose
// storage the pin does not record is taken as LFS above it.
const lfsThreshold = 10 << 20

// Store adds a fetched Hub file to the cache as huggingface_hub would
// have: blobs/ETAG (a copy, written as ETAG.incomplete and renamed),
// snapshots/COMMIT/PATH a relative link to it, refs/REVISION the commit.
// ETAG is the SHA-256 of an LFS file, the git blob hash of another. A blob
// already there under its name is kept; so that Python tools find what
// gatepipe fetched.
func (c HFCache) Store(ref Ref, commit string, f File, src string) error {
	if c.IsZero() || CheckRepo(ref.HF) != nil || !commitRE.MatchString(commit) || CheckRelPath(f.Path) != nil {
		return fmt.Errorf("%s: cannot be stored in the Hugging Face cache", f.URL)
	}
	lfs := f.Storage == StorageLFS || f.Storage == "" && f.Size > lfsThreshold
	etag := f.SHA256
	if !lfs {
		_, sha1hex, err := hashBoth(src)
		if err != nil {
			return err
		}
		etag = sha1hex
	}
	dir := c.repoDir(ref.hubKind(), ref.HF)
	blob := filepath.Join(dir, "blobs", etag)
	if _, err := os.Stat(blob); err != nil {
		if err := CopyFile(src, blob+".incomplete"); err != nil {
			os.Remove(blob + ".incomplete")
			return err
		}
		if err := os.Rename(blob+".incomplete", blob); err != nil {
			return err
		}
	}
	link := filepath.Join(dir, "snapshots", commit, filepath.FromSlash(f.Path))
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(link), blob)
	if err != nil {
		return err
	}
	if target, err := os.Readlink(link); err != nil || target != rel {
		os.Remove(link)
		if err := os.Symlink(rel, link); err != nil {
			return err
		}
	}
	if ref.revision() != commit && CheckRelPath(ref.revision()) == nil {
		refFile := filepath.Join(dir, "refs", filepath.FromSlash(ref.revision()))
		if err := os.MkdirAll(filepath.Dir(refFile), 0o755); err != nil {
			return err
		}
		return os.WriteFile(refFile, []byte(commit), 0o644)
	}
	return nil
}

// warnOnce logs a warning about key the first time only: plan, fetch and
// apply look at the same cache entry several times.
func (r *Resolver) warnOnce(key, format string, args ...any) {
	if _, seen := r.warned.LoadOrStore(key, true); !seen {
		r.logf(format, args...)
	}
}
