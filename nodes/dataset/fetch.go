package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/nodes"
)

// fetcher downloads sources into the blob store.
type fetcher struct {
	client   *http.Client
	retries  int
	backoff  time.Duration
	idle     time.Duration
	progress nodes.Progress
	blobs    nodes.BlobStore
	log      func(format string, args ...any)
}

func newFetcher(env *nodes.Env) *fetcher {
	return &fetcher{
		client: &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			ResponseHeaderTimeout: 30 * time.Second,
			TLSHandshakeTimeout:   15 * time.Second,
		}},
		retries:  6,
		backoff:  250 * time.Millisecond,
		idle:     60 * time.Second,
		progress: env.Progress,
		blobs:    env.Blobs,
		log:      func(f string, a ...any) { env.Log.Warn().Msgf(f, a...) },
	}
}

// fetch makes the source's bytes available as a blob and returns its path
// and SHA-256. A blob already in the store is used with no network access.
func (f *fetcher) fetch(ctx context.Context, s *source) (string, string, error) {
	if s.SHA256 != "" {
		if p, ok := f.blobs.BlobPath(s.SHA256); ok {
			return p, s.SHA256, nil
		}
	}
	switch s.scheme {
	case "http", "https":
		return f.fetchHTTP(ctx, s)
	default:
		return f.fetchLocal(ctx, s)
	}
}

// lock takes the blob lock for key and, once held, looks for the blob
// again: another node or process may have stored it meanwhile.
func (f *fetcher) lock(ctx context.Context, key, sha string) (unlock func(), path string, err error) {
	unlock, err = f.blobs.LockBlob(ctx, key)
	if err != nil {
		return nil, "", err
	}
	if sha != "" {
		if p, ok := f.blobs.BlobPath(sha); ok {
			return unlock, p, nil
		}
	}
	return unlock, "", nil
}

func (f *fetcher) fetchLocal(ctx context.Context, s *source) (string, string, error) {
	sum, _, err := cache.FileSHA256(s.localPath)
	if err != nil {
		return "", "", fmt.Errorf("source %s: %w", s.URL, err)
	}
	got := sum.String()
	if s.SHA256 != "" && got != s.SHA256 {
		return "", "", checksumError(s, got)
	}
	key := "local-" + got
	unlock, p, err := f.lock(ctx, key, got)
	if err != nil {
		return "", "", err
	}
	defer unlock()
	if p != "" {
		return p, got, nil
	}
	part, err := f.blobs.PartialPath(key)
	if err != nil {
		return "", "", err
	}
	if err := copyFile(s.localPath, part); err != nil {
		os.Remove(part)
		return "", "", fmt.Errorf("source %s: %w", s.URL, err)
	}
	// AddBlob hashes the copy: the source may have changed while it was
	// copied.
	p, _, err = f.blobs.AddBlob(part, got)
	var ce *cache.ChecksumError
	if errors.As(err, &ce) {
		return "", "", fmt.Errorf("source %s changed while it was being read", s.URL)
	}
	return p, got, err
}

func checksumError(s *source, got string) error {
	return fmt.Errorf("source %s: checksum mismatch: expected sha256 %s, got %s; the file is not cached. Check the URL, or update sha256 if the file changed upstream", s.URL, s.SHA256, got)
}

// fetchHTTP downloads with resume (HTTP Range) across attempts and
// interruptions, retrying with backoff on 5xx, 429, timeouts and
// connection errors, then verifies the checksum.
func (f *fetcher) fetchHTTP(ctx context.Context, s *source) (string, string, error) {
	key := s.SHA256
	if key == "" {
		h := sha256.Sum256([]byte(s.URL))
		key = "url-" + hex.EncodeToString(h[:])
	}
	unlock, p, err := f.lock(ctx, key, s.SHA256)
	if err != nil {
		return "", "", err
	}
	defer unlock()
	if p != "" {
		return p, s.SHA256, nil
	}
	part, err := f.blobs.PartialPath(key)
	if err != nil {
		return "", "", err
	}
	var lastErr error
	for attempt := 0; attempt <= f.retries; attempt++ {
		if attempt > 0 {
			wait := f.backoff << (attempt - 1)
			f.log("download %s: attempt %d failed (%v); retrying in %s", s.URL, attempt, lastErr, wait)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return "", "", ctx.Err()
			}
		}
		retry, err := f.attempt(ctx, s.URL, part)
		if err == nil {
			lastErr = nil
			break
		}
		lastErr = err
		if !retry || ctx.Err() != nil {
			return "", "", fmt.Errorf("download %s: %w", s.URL, err)
		}
	}
	if lastErr != nil {
		return "", "", fmt.Errorf("download %s: giving up after %d attempts: %w", s.URL, f.retries+1, lastErr)
	}
	// AddBlob verifies the file; a wrong one is removed, so it is neither
	// resumed nor cached.
	p, got, err := f.blobs.AddBlob(part, s.SHA256)
	var ce *cache.ChecksumError
	if errors.As(err, &ce) {
		return "", "", checksumError(s, ce.Got)
	}
	return p, got, err
}

// attempt downloads the rest of url into part. retry reports whether a
// failure is worth another attempt.
func (f *fetcher) attempt(ctx context.Context, rawURL, part string) (retry bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var have int64
	if info, err := os.Stat(part); err == nil {
		have = info.Size()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return false, err
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return isTransient(err), err
	}
	defer resp.Body.Close()
	var out *os.File
	total := resp.ContentLength
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		out, err = os.OpenFile(part, os.O_WRONLY|os.O_APPEND, 0o666)
		if total >= 0 {
			total += have
		}
	case resp.StatusCode == http.StatusOK:
		have = 0 // the server ignored Range: start over
		out, err = os.Create(part)
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && have > 0:
		return false, nil // the partial file is already complete
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout:
		return true, fmt.Errorf("server answered %s", resp.Status)
	default:
		return false, fmt.Errorf("server answered %s", resp.Status)
	}
	if err != nil {
		return false, err
	}
	defer out.Close()
	body := &idleReader{r: resp.Body, timeout: f.idle, cancel: cancel}
	defer body.stop()
	buf := make([]byte, 256<<10)
	done := have
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, werr := out.Write(buf[:n]); werr != nil {
				return false, werr
			}
			done += int64(n)
			f.progress.Update(done, total, "B")
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			if body.timedOut() {
				return true, fmt.Errorf("no data for %s", f.idle)
			}
			return true, rerr
		}
	}
	if total >= 0 && done != total {
		return true, fmt.Errorf("connection closed after %d of %d bytes", done, total)
	}
	return false, out.Sync()
}

func isTransient(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return !strings.Contains(ue.Err.Error(), "unsupported protocol")
	}
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// idleReader cancels a download that delivers no data for timeout.
type idleReader struct {
	r       io.Reader
	timeout time.Duration
	cancel  context.CancelFunc
	timer   *time.Timer
	fired   atomic.Bool
}

func (r *idleReader) Read(p []byte) (int, error) {
	if r.timer == nil {
		r.timer = time.AfterFunc(r.timeout, func() { r.fired.Store(true); r.cancel() })
	} else {
		r.timer.Reset(r.timeout)
	}
	return r.r.Read(p)
}

func (r *idleReader) stop() {
	if r.timer != nil {
		r.timer.Stop()
	}
}

func (r *idleReader) timedOut() bool { return r.fired.Load() }

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o777); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
