package sources

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// LockFileName is the lock file's name, beside the root pipeline.
const LockFileName = "gatepipe.lock.hcl"

// SmokeLockFileName is the lock file of runs on the smoke fixtures
// (`-mirror smoke`): their pins are the fixtures', which must never stand
// for the real files'.
const SmokeLockFileName = "gatepipe.smoke.lock.hcl"

// SmokeMirror is the mirror value that serves gatepipe's own fixtures of
// the small tier's benchmarks (package smokehub) from the loopback
// interface.
const SmokeMirror = "smoke"

// Lock is the lock file: every pinned source, by Ref.Key. It is safe for
// concurrent use.
type Lock struct {
	path string

	mu      sync.Mutex
	pins    map[string]Pin
	changed bool
}

type lockHCL struct {
	Sources []lockSourceHCL `hcl:"source,block"`
}

type lockSourceHCL struct {
	Key    string        `hcl:"key,label"`
	Commit *string       `hcl:"commit,optional"`
	Files  []lockFileHCL `hcl:"file,block"`
}

type lockFileHCL struct {
	Path    string  `hcl:"path,label"`
	URL     string  `hcl:"url"`
	SHA256  string  `hcl:"sha256"`
	Size    *int64  `hcl:"size,optional"`
	Storage *string `hcl:"storage,optional"`
}

// LoadLock reads the lock file at path; a missing file is an empty lock
// that Save creates.
func LoadLock(path string) (*Lock, hcl.Diagnostics) {
	l := &Lock{path: path, pins: map[string]Pin{}}
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read the lock file", Detail: err.Error()}}
	}
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	var raw lockHCL
	if diags := gohcl.DecodeBody(f.Body, nil, &raw); diags.HasErrors() {
		return nil, diags
	}
	body := f.Body.(*hclsyntax.Body)
	for i, s := range raw.Sources {
		blk := body.Blocks[i]
		if p, ds := checkLockSource(s, blk); ds.HasErrors() {
			diags = append(diags, ds...)
		} else if _, dup := l.pins[s.Key]; dup {
			diags = append(diags, lockDiag(blk.DefRange(), "Source %q is locked twice.", s.Key))
		} else {
			l.pins[s.Key] = p
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return l, nil
}

// checkLockSource validates one source block of the lock file: its key
// names a source as Ref.Key writes it, its commit is a full git hash, and
// each file has a safe path, an http(s) URL, a SHA-256 and a size that is
// not negative. Each error points at the attribute at fault.
func checkLockSource(s lockSourceHCL, blk *hclsyntax.Block) (Pin, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	bad := func(rng hcl.Range, format string, args ...any) {
		diags = append(diags, lockDiag(rng, format, args...))
	}
	attrRange := func(b *hclsyntax.Body, name string, def hcl.Range) hcl.Range {
		if a, ok := b.Attributes[name]; ok {
			return a.Expr.Range()
		}
		return def
	}
	kind, rest, _ := strings.Cut(s.Key, " ")
	switch {
	case (kind == "hf" || kind == "hf-model") && isHFKey(rest):
	case kind == "url" && isHTTPURL(rest):
	default:
		bad(blk.LabelRanges[0], "Source %q is not a source key gatepipe writes (\"hf OWNER/NAME@REVISION PATTERNS\", \"hf-model …\" or \"url http(s)://…\").", s.Key)
	}
	p := Pin{}
	if s.Commit != nil {
		p.Commit = *s.Commit
		if !isGitHash(p.Commit) {
			bad(attrRange(blk.Body, "commit", blk.DefRange()), "commit %q of %q is not a 40-digit lower-case hex git commit.", p.Commit, s.Key)
		}
	}
	first := map[string]hcl.Range{} // each path's first block
	for j, fe := range s.Files {
		fb := blk.Body.Blocks[j]
		if err := CheckRelPath(fe.Path); err != nil {
			bad(fb.LabelRanges[0], "File %s.", err)
		}
		if r, ok := first[fe.Path]; ok {
			// One path would get the other file's bytes, and a file
			// would go missing.
			bad(fb.LabelRanges[0], "file %s is pinned twice in %q (first at line %d): a path holds one file; remove one of the blocks, or run gatepipe lock again.", fe.Path, s.Key, r.Start.Line)
			continue
		}
		first[fe.Path] = fb.LabelRanges[0]
		if !isHTTPURL(fe.URL) {
			bad(attrRange(fb.Body, "url", fb.DefRange()), "url %q of %s is not an http(s) URL.", fe.URL, fe.Path)
		}
		if !isSHA256(fe.SHA256) {
			bad(attrRange(fb.Body, "sha256", fb.DefRange()), "sha256 %q of %s is not 64 lower-case hex digits.", fe.SHA256, fe.Path)
		}
		file := File{Path: fe.Path, URL: fe.URL, SHA256: fe.SHA256}
		if fe.Storage != nil {
			file.Storage = *fe.Storage
			if file.Storage != StorageLFS && file.Storage != StorageGit {
				bad(attrRange(fb.Body, "storage", fb.DefRange()), "storage %q of %s is not %q or %q.", file.Storage, fe.Path, StorageLFS, StorageGit)
			}
		}
		if fe.Size != nil {
			file.Size = *fe.Size
			if file.Size < 0 {
				bad(attrRange(fb.Body, "size", fb.DefRange()), "size %d of %s is negative.", file.Size, fe.Path)
			}
		}
		p.Files = append(p.Files, file)
	}
	return p, diags
}

func lockDiag(rng hcl.Range, format string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid lock file entry",
		Detail: fmt.Sprintf(format, args...) + " Fix the entry, or delete it and run `gatepipe lock` to pin the source again.", Subject: rng.Ptr()}
}

// isHFKey reports whether rest is "OWNER/NAME@REVISION PATTERNS…".
func isHFKey(rest string) bool {
	f := strings.Fields(rest)
	if len(f) < 2 || strings.ContainsRune(rest, 0) {
		return false
	}
	repo, rev, ok := strings.Cut(f[0], "@")
	owner, name, slash := strings.Cut(repo, "/")
	return ok && slash && owner != "" && name != "" && rev != ""
}

func isGitHash(s string) bool {
	return len(s) == 40 && strings.Trim(s, "0123456789abcdef") == ""
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Path is where the lock file lives.
func (l *Lock) Path() string { return l.path }

// Get returns the pin of key.
func (l *Lock) Get(key string) (Pin, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pins[key]
	return p, ok
}

// Set records a pin; Save writes it.
func (l *Lock) Set(key string, p Pin) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pins[key] = p
	l.changed = true
}

// Keys lists the locked sources, sorted.
func (l *Lock) Keys() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.pins))
	for k := range l.pins {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Retain drops every pin whose key keep does not hold (gatepipe lock:
// sources no longer declared).
func (l *Lock) Retain(keep map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.pins {
		if !keep[k] {
			delete(l.pins, k)
			l.changed = true
		}
	}
}

// Changed reports whether Set or Retain changed the lock since it was
// loaded or saved.
func (l *Lock) Changed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Save writes the lock file atomically when it changed.
func (l *Lock) Save() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.changed {
		return nil
	}
	data := l.encode()
	tmp, err := os.CreateTemp(filepath.Dir(l.path), ".gatepipe.lock-*")
	if err != nil {
		return fmt.Errorf("lock file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("lock file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("lock file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("lock file: %w", err)
	}
	_ = os.Chmod(tmp.Name(), 0o644)
	if err := os.Rename(tmp.Name(), l.path); err != nil {
		return fmt.Errorf("lock file: %w", err)
	}
	l.changed = false
	return nil
}

func (l *Lock) encode() []byte {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	body.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte(
		"# gatepipe.lock.hcl: the checksums of the remote sources this pipeline downloads,\n" +
			"# pinned on first download. gatepipe apply and fetch verify them; `gatepipe lock`\n" +
			"# refreshes them on purpose. Commit this file with the pipeline.\n")}})
	keys := make([]string, 0, len(l.pins))
	for k := range l.pins {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := l.pins[k]
		body.AppendNewline()
		sb := body.AppendNewBlock("source", []string{k}).Body()
		if p.Commit != "" {
			sb.SetAttributeValue("commit", cty.StringVal(p.Commit))
		}
		files := append([]File(nil), p.Files...)
		sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
		for _, file := range files {
			fb := sb.AppendNewBlock("file", []string{file.Path}).Body()
			fb.SetAttributeValue("url", cty.StringVal(file.URL))
			fb.SetAttributeValue("sha256", cty.StringVal(file.SHA256))
			if file.Size > 0 {
				fb.SetAttributeValue("size", cty.NumberIntVal(file.Size))
			}
			if file.Storage != "" {
				fb.SetAttributeValue("storage", cty.StringVal(file.Storage))
			}
		}
	}
	return hclwrite.Format(f.Bytes())
}

func isSHA256(s string) bool {
	return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == ""
}
