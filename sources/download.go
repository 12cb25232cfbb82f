package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Blobs is the content-addressed store downloads go to (the cache).
type Blobs interface {
	BlobPath(sha256hex string) (string, bool)
	LockBlob(ctx context.Context, key string) (unlock func(), err error)
	PartialPath(key string) (string, error)
	AddBlob(tmpPath, want string) (path, sha256hex string, err error)
}

// Progress receives download progress (bytes).
type Progress interface {
	Update(done, total int64, unit string)
}

type noProgress struct{}

func (noProgress) Update(int64, int64, string) {}

// httpError is a final answer from a server.
type httpError struct {
	status int
	text   string
}

func (e *httpError) Error() string { return "server answered " + e.text }

// download fetches rawURL into part, resuming with Range across attempts
// and interruptions and retrying with backoff on 5xx, 429, 408, timeouts
// and connection errors.
func (r *Resolver) download(ctx context.Context, rawURL, creds, part string, progress Progress) error {
	return r.withRetry(ctx, "download "+rawURL, func() (bool, error) {
		return r.attempt(ctx, rawURL, creds, part, progress)
	})
}

// withRetry calls try until it succeeds, fails for good (retry false) or
// has failed r.retries+1 times, waiting with exponential backoff between
// attempts.
func (r *Resolver) withRetry(ctx context.Context, what string, try func() (retry bool, err error)) error {
	var lastErr error
	for attempt := 0; attempt <= r.retries; attempt++ {
		if attempt > 0 {
			wait := r.backoff << (attempt - 1)
			r.logf("%s: attempt %d failed (%v); retrying in %s", what, attempt, lastErr, wait)
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		retry, err := try()
		if err == nil {
			return nil
		}
		lastErr = err
		if !retry || ctx.Err() != nil {
			return err
		}
	}
	return fmt.Errorf("giving up after %d attempts: %w", r.retries+1, lastErr)
}

// retryableStatus reports whether an HTTP status is worth another attempt.
func retryableStatus(code int) bool {
	return code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout
}

// attempt downloads the rest of rawURL into part. retry reports whether
// a failure is worth another attempt.
func (r *Resolver) attempt(ctx context.Context, rawURL, creds, part string, progress Progress) (retry bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var have int64
	if info, err := os.Lstat(part); err == nil && info.Mode().IsRegular() {
		have = info.Size()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return false, err
	}
	if err := r.authorize(req, creds); err != nil {
		return false, err
	}
	if have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
	}
	resp, err := r.client.Do(req)
	if err != nil {
		if u := unreachable(req.URL.Host, err); u != nil {
			return false, u
		}
		return isTransient(err), stripURLError(err)
	}
	defer resp.Body.Close()
	var out *os.File
	total := resp.ContentLength
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		out, err = os.OpenFile(part, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW, 0o666)
		if total >= 0 {
			total += have
		}
	case resp.StatusCode == http.StatusOK:
		have = 0 // the server ignored Range: start over
		out, err = CreateNoFollow(part)
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && have > 0:
		return false, nil // the partial file is already complete
	case retryableStatus(resp.StatusCode):
		return true, &httpError{resp.StatusCode, resp.Status}
	default:
		return false, r.statusError(resp, creds)
	}
	if err != nil {
		return false, err
	}
	defer out.Close()
	body := &idleReader{r: resp.Body, timeout: r.idle, cancel: cancel}
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
			progress.Update(done, total, "B")
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			if body.timedOut() {
				return true, fmt.Errorf("no data for %s", r.idle)
			}
			return true, rerr
		}
	}
	if total >= 0 && done != total {
		return true, fmt.Errorf("connection closed after %d of %d bytes", done, total)
	}
	return false, out.Sync()
}

// stripURLError drops the URL from a client error (the caller names the
// source) so that nothing but the source's own address is printed.
func stripURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// UnreachableError is a host that cannot be reached at all: its name does
// not resolve, it refuses the connection, or no route leads to it. It is
// not retried: the network is down, or the host is wrong.
type UnreachableError struct {
	Host string
	Err  error
}

// UnreachablePhrase starts every UnreachableError's message, so that a
// run's summary can tell, from the recorded error text alone, that
// sources failed for want of a network.
const UnreachablePhrase = "cannot reach "

func (e *UnreachableError) Error() string { return UnreachablePhrase + e.Host + ": " + e.Err.Error() }

func (e *UnreachableError) Unwrap() error { return e.Err }

// unreachable returns err as an UnreachableError when it says that host
// cannot be reached at all, else nil.
func unreachable(host string, err error) error {
	var de *net.DNSError
	switch {
	case errors.As(err, &de) && de.IsNotFound,
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return &UnreachableError{Host: host, Err: stripURLError(err)}
	}
	return nil
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

// CreateNoFollow creates the file p for writing after removing whatever
// stood at that name: a link planted there is removed, never followed
// (O_CREATE|O_EXCL|O_NOFOLLOW), so the write stays where p names.
func CreateNoFollow(p string) (*os.File, error) {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o644)
}

// CopyFile copies src to dst, creating dst's directory: a copy, never a
// link, so that damage to one is never damage to the other. dst is
// created anew (CreateNoFollow): a link at its name is replaced, and
// what it pointed to is left alone.
func CopyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o777); err != nil {
		return err
	}
	out, err := CreateNoFollow(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
