package sources

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Options configure a Resolver.
type Options struct {
	// Lock holds the pins; nil keeps them in memory only.
	Lock *Lock
	// Mirror maps remote URLs (zero: none).
	Mirror Mirror
	// Offline refuses every network access and every local mirror read:
	// sources must be pinned and their files in the blob store.
	Offline bool
	// NoResolve resolves sources from declared checksums and the lock
	// only, without downloading (plan, validate).
	NoResolve bool
	// Blobs is where files are stored.
	Blobs Blobs
	// Getenv and Home locate credentials (defaults: os.Getenv and the
	// user's home directory).
	Getenv func(string) string
	Home   string
	// Endpoint is the Hugging Face Hub (default $HF_ENDPOINT or
	// https://huggingface.co).
	Endpoint string
	// Logf receives warnings (retries, cache entries not used); Infof
	// what is worth knowing (where a source was found).
	Logf, Infof func(format string, args ...any)
	// Client overrides the HTTP client (tests).
	Client *http.Client
	// HFCache is a Hugging Face Hub cache read in place (zero: the one
	// FindHFCache finds with Getenv and Home, if any).
	HFCache HFCache
}

// Resolver resolves refs to pins and downloads pinned files into the blob
// store. It is safe for concurrent use.
type Resolver struct {
	lock      *Lock
	mirror    Mirror
	offline   bool
	noResolve bool
	blobs     Blobs
	getenv    func(string) string
	home      string
	endpoint  string
	logf      func(format string, args ...any)
	infof     func(format string, args ...any)
	client    *http.Client
	retries   int
	backoff   time.Duration
	idle      time.Duration
	hfcache   HFCache

	hfMu   sync.Mutex
	hfPins map[string]hfPinResult // offline pins read from the HF cache, by Ref.Key
	warned sync.Map               // warnOnce's keys
}

// ErrOffline marks what offline mode refused.
var ErrOffline = errors.New("offline")

// ErrNotPinned is returned by Pinned-only resolution for a source that
// has no checksum yet.
var ErrNotPinned = errors.New("not pinned yet")

// New returns a resolver.
func New(o Options) *Resolver {
	r := &Resolver{lock: o.Lock, mirror: o.Mirror, offline: o.Offline, noResolve: o.NoResolve, blobs: o.Blobs,
		getenv: o.Getenv, home: o.Home, endpoint: o.Endpoint, logf: o.Logf, client: o.Client,
		retries: 6, backoff: 250 * time.Millisecond, idle: 60 * time.Second}
	if r.getenv == nil {
		r.getenv = os.Getenv
	}
	if r.home == "" && o.Getenv == nil {
		r.home, _ = os.UserHomeDir()
	}
	if r.endpoint == "" {
		r.endpoint = r.getenv("HF_ENDPOINT")
	}
	if r.endpoint == "" {
		r.endpoint = "https://huggingface.co"
	}
	r.endpoint = strings.TrimRight(r.endpoint, "/")
	if r.logf == nil {
		r.logf = func(string, ...any) {}
	}
	if r.infof = o.Infof; r.infof == nil {
		r.infof = func(string, ...any) {}
	}
	r.hfcache = o.HFCache
	if r.hfcache.IsZero() {
		r.hfcache = FindHFCache(r.getenv, r.home)
	}
	r.hfPins = map[string]hfPinResult{}
	if r.lock == nil {
		r.lock = &Lock{pins: map[string]Pin{}}
	}
	if r.client == nil {
		r.client = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			ResponseHeaderTimeout: 30 * time.Second,
			TLSHandshakeTimeout:   15 * time.Second,
		}}
	}
	if r.client.CheckRedirect == nil {
		c := *r.client
		c.CheckRedirect = keepCredentialsSecure
		r.client = &c
	}
	return r
}

// SetRetry changes the retry policy (tests).
func (r *Resolver) SetRetry(retries int, backoff, idle time.Duration) {
	r.retries, r.backoff, r.idle = retries, backoff, idle
}

// Lock is the resolver's lock.
func (r *Resolver) Lock() *Lock { return r.lock }

// Resolving reports whether the resolver may use the network to pin and
// fetch (apply, fetch), not only the lock and the caches (plan, validate,
// offline).
func (r *Resolver) Resolving() bool { return !r.offline && !r.noResolve }

// Local returns a pinned file's local path when it is at hand without a
// download: in the blob store, or in the Hugging Face cache (verified).
func (r *Resolver) Local(f File) (string, bool) {
	if f.SHA256 == "" {
		return "", false
	}
	if r.blobs != nil {
		if p, ok := r.blobs.BlobPath(f.SHA256); ok {
			return p, true
		}
	}
	return r.fromHFCache(f)
}

// Offline reports whether the network is refused.
func (r *Resolver) Offline() bool { return r.offline }

// Pinned resolves ref without the network: from its declared checksum or
// the lock.
func (r *Resolver) Pinned(ref Ref) (Pin, error) {
	if ref.HF == "" && ref.SHA256 != "" {
		return Pin{Files: []File{{Path: ref.Name, URL: ref.URL, SHA256: ref.SHA256}}}, nil
	}
	if p, ok := r.lock.Get(ref.Key()); ok {
		return p, nil
	}
	if r.offline && ref.HF != "" {
		if p, err := r.pinFromHFCache(ref); err == nil {
			return p, nil
		}
	}
	return Pin{}, ErrNotPinned
}

// Resolve returns ref's pin, resolving it when it is not pinned yet: a
// URL without a checksum is downloaded and its SHA-256 recorded; a Hub
// repository's revision is resolved to a commit and its files listed
// with their published SHA-256. New pins go into the lock.
func (r *Resolver) Resolve(ctx context.Context, ref Ref, progress Progress) (Pin, error) {
	if p, err := r.Pinned(ref); err == nil {
		return p, nil
	}
	if r.offline {
		why := ""
		if ref.HF != "" {
			_, err := r.pinFromHFCache(ref)
			why = "; " + err.Error()
		}
		return Pin{}, fmt.Errorf("%w: %s is not in the lock file %s%s; run `gatepipe fetch` where the network is reachable", ErrOffline, ref.Key(), r.lock.Path(), why)
	}
	if r.noResolve {
		return Pin{}, ErrNotPinned
	}
	var p Pin
	var err error
	if ref.HF != "" {
		p, err = r.resolveHF(ctx, ref)
	} else {
		p, err = r.pinURL(ctx, ref, progress)
	}
	if err != nil {
		return Pin{}, err
	}
	r.lock.Set(ref.Key(), p)
	if r.lock.path != "" {
		// Saved at once: a process spawned for a later node reads the
		// lock to compute the same action IDs.
		if err := r.lock.Save(); err != nil {
			return Pin{}, err
		}
	}
	return p, nil
}

// pinURL downloads a URL with no known checksum and pins what came.
func (r *Resolver) pinURL(ctx context.Context, ref Ref, progress Progress) (Pin, error) {
	f := File{Path: ref.Name, URL: ref.URL}
	path, sha, err := r.fetch(ctx, f, ref.Credentials, progress)
	if err != nil {
		return Pin{}, err
	}
	if ref.SHA256Prefix != "" && !strings.HasPrefix(sha, ref.SHA256Prefix) {
		return Pin{}, fmt.Errorf("source %s: its SHA-256 is %s, but its publisher names it by the prefix %s: the download is not the published file, and it is not pinned", ref.URL, sha, ref.SHA256Prefix)
	}
	f.SHA256 = sha
	if info, err := os.Stat(path); err == nil {
		f.Size = info.Size()
	}
	return Pin{Files: []File{f}}, nil
}

// Fetch returns the blob of a pinned file, downloading it (through the
// mirror, with ref's credentials) unless the store has it.
func (r *Resolver) Fetch(ctx context.Context, ref Ref, f File, progress Progress) (string, error) {
	if f.SHA256 == "" {
		return "", fmt.Errorf("%s: no checksum to verify it against", f.URL)
	}
	p, _, err := r.fetch(ctx, f, credsFor(ref), progress)
	return p, err
}

// Has reports whether a pinned file is at hand: in the blob store, or in
// the Hugging Face cache under its name (verified when fetched).
func (r *Resolver) Has(f File) bool {
	if f.SHA256 == "" {
		return false
	}
	if _, ok := r.blobs.BlobPath(f.SHA256); ok {
		return true
	}
	return r.inHFCache(f)
}

func credsFor(ref Ref) string {
	if ref.HF != "" && ref.Credentials == CredsNone {
		return hfOptional
	}
	return ref.Credentials
}

// fetch stores f in the blob store and returns its path and SHA-256.
func (r *Resolver) fetch(ctx context.Context, f File, creds string, progress Progress) (string, string, error) {
	if progress == nil {
		progress = noProgress{}
	}
	if f.SHA256 != "" {
		if p, ok := r.blobs.BlobPath(f.SHA256); ok {
			return p, f.SHA256, nil
		}
		if p, ok := r.fromHFCache(f); ok {
			return p, f.SHA256, nil
		}
	}
	if r.offline {
		return "", "", fmt.Errorf("%w: %s (sha256 %s) is not in the cache; run `gatepipe fetch` where the network is reachable, or point the cache at one that has it", ErrOffline, f.URL, f.SHA256)
	}
	key := f.SHA256
	if key == "" {
		h := sha256.Sum256([]byte(f.URL))
		key = "url-" + hex.EncodeToString(h[:])
	}
	unlock, err := r.blobs.LockBlob(ctx, key)
	if err != nil {
		return "", "", err
	}
	defer unlock()
	if f.SHA256 != "" {
		if p, ok := r.blobs.BlobPath(f.SHA256); ok {
			return p, f.SHA256, nil
		}
	}
	part, err := r.blobs.PartialPath(key)
	if err != nil {
		return "", "", err
	}
	remote, local, err := r.mirror.locate(f.URL)
	if err != nil {
		return "", "", fmt.Errorf("download %s: %w", f.URL, err)
	}
	via := ""
	if !r.mirror.IsZero() {
		via = " (mirror " + r.mirror.String() + ")"
	}
	if local != "" {
		err = CopyFile(local, part)
	} else {
		err = r.download(ctx, remote, creds, part, progress)
	}
	if err != nil {
		if local != "" {
			os.Remove(part)
		}
		return "", "", fmt.Errorf("download %s%s: %w", f.URL, via, err)
	}
	// AddBlob verifies the file; a wrong one is removed, so it is neither
	// resumed nor cached.
	p, got, err := r.blobs.AddBlob(part, f.SHA256)
	var ce interface{ GotSHA256() string }
	if errors.As(err, &ce) {
		return "", "", &ChecksumError{URL: f.URL, Want: f.SHA256, Got: ce.GotSHA256()}
	}
	return p, got, err
}

// ChecksumError is a download whose content is not the pinned one.
type ChecksumError struct {
	URL, Want, Got string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("source %s: checksum mismatch: expected sha256 %s, got %s; the file is not cached. If the file changed upstream on purpose, update sha256 in the configuration or run `gatepipe lock` to pin it again", e.URL, e.Want, e.Got)
}

// Mirror is the resolver's mirror.
func (r *Resolver) Mirror() Mirror { return r.mirror }
