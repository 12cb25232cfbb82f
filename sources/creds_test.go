package sources

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
)

// recorder is an HTTP transport that answers every request itself and
// records where each went and which credentials it carried: nothing
// leaves the process, so the tests can name real hosts.
type recorder struct {
	mu   sync.Mutex
	seen []seenRequest
	// redirect maps a URL to the Location it answers 302 with.
	redirect map[string]string
	body     []byte
}

type seenRequest struct {
	url, auth string
}

func (rt *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.seen = append(rt.seen, seenRequest{req.URL.String(), req.Header.Get("Authorization")})
	rt.mu.Unlock()
	resp := &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Header: http.Header{}, Request: req,
		Body: io.NopCloser(bytes.NewReader(rt.body)), ContentLength: int64(len(rt.body))}
	if loc, ok := rt.redirect[req.URL.String()]; ok {
		resp.StatusCode, resp.Status = http.StatusFound, "302 Found"
		resp.Header.Set("Location", loc)
		resp.Body, resp.ContentLength = io.NopCloser(strings.NewReader("")), 0
	}
	return resp, nil
}

// TestCredentialsStayWithTheirHost: the Hub token goes only to the Hub's
// endpoint and the Kaggle key only to www.kaggle.com, each over https
// (or http to loopback), or to a mirror the user named in
// $GATEPIPE_MIRROR_CREDENTIALS; never over a redirect to plain http.
func TestCredentialsStayWithTheirHost(t *testing.T) {
	payload := []byte("weights")
	sum := shaOf(payload)
	hfURL := "https://huggingface.co/datasets/o/n/resolve/main/x.bin"
	kgURL := "https://www.kaggle.com/api/v1/datasets/download/o/n"
	const token, kaggleAuth = "Bearer hf_secret", "Basic bWU6a2FnZ2xla2V5" // me:kagglekey
	tests := []struct {
		name     string
		url      string
		creds    string
		mirror   string
		env      map[string]string
		redirect map[string]string
		wantErr  string // "" when the fetch succeeds
		// wantAuth is the Authorization of each request, in order.
		wantAuth []string
	}{
		{name: "hub over https", url: hfURL, creds: CredsHF, wantAuth: []string{token}},
		{name: "kaggle over https", url: kgURL, creds: CredsKaggle, wantAuth: []string{kaggleAuth}},
		{name: "optional hub token to the hub", url: hfURL, creds: hfOptional, wantAuth: []string{token}},
		{name: "http mirror not opted in", url: hfURL, creds: CredsHF, mirror: "http://127.0.0.1:9", wantAuth: []string{""}},
		{name: "kaggle through a mirror not opted in", url: kgURL, creds: CredsKaggle, mirror: "https://mirror.example", wantAuth: []string{""}},
		{name: "https mirror opted in", url: hfURL, creds: CredsHF, mirror: "https://mirror.example",
			env: map[string]string{MirrorCredentialsEnv: "https://other.example, https://mirror.example"}, wantAuth: []string{token}},
		{name: "loopback mirror opted in", url: kgURL, creds: CredsKaggle, mirror: "http://127.0.0.1:9",
			env: map[string]string{MirrorCredentialsEnv: "http://127.0.0.1:9"}, wantAuth: []string{kaggleAuth}},
		{name: "opt-in names another mirror", url: hfURL, creds: CredsHF, mirror: "https://mirror.example",
			env: map[string]string{MirrorCredentialsEnv: "https://other.example"}, wantAuth: []string{""}},
		{name: "opted-in mirror on plain http", url: hfURL, creds: CredsHF, mirror: "http://mirror.example",
			env: map[string]string{MirrorCredentialsEnv: "http://mirror.example"}, wantAuth: []string{""}},
		{name: "hub token declared for another host", url: "https://evil.example/x.bin", creds: CredsHF,
			wantErr: "they belong to huggingface.co"},
		{name: "kaggle key declared for another host", url: "https://kaggle.evil.example/x", creds: CredsKaggle,
			wantErr: "www.kaggle.com or kaggle.com"},
		{name: "optional token to another host", url: "https://evil.example/x.bin", creds: hfOptional, wantAuth: []string{""}},
		{name: "hub endpoint on plain http", url: "http://hub.example/x.bin", creds: CredsHF,
			env: map[string]string{"HF_ENDPOINT": "http://hub.example"}, wantErr: "plain http"},
		{name: "hub endpoint on loopback http", url: "http://127.0.0.1:9/x.bin", creds: CredsHF,
			env: map[string]string{"HF_ENDPOINT": "http://127.0.0.1:9"}, wantAuth: []string{token}},
		{name: "redirect to plain http drops the token", url: hfURL, creds: CredsHF,
			redirect: map[string]string{hfURL: "http://huggingface.co/cdn/x.bin"}, wantAuth: []string{token, ""}},
		{name: "redirect to another domain drops the token", url: hfURL, creds: CredsHF,
			redirect: map[string]string{hfURL: "https://cdn.example/x.bin"}, wantAuth: []string{token, ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"HF_TOKEN": "hf_secret", "KAGGLE_USERNAME": "me", "KAGGLE_KEY": "kagglekey"}
			for k, v := range tc.env {
				env[k] = v
			}
			m, err := ParseMirror(tc.mirror, "")
			if err != nil {
				t.Fatal(err)
			}
			c, err := cache.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			rt := &recorder{body: payload, redirect: tc.redirect}
			r := New(Options{Mirror: m, Blobs: c, Getenv: func(k string) string { return env[k] }, Client: &http.Client{Transport: rt}})
			r.SetRetry(1, 0, 0)
			ref := Ref{URL: tc.url, Name: "x.bin", SHA256: sum, Credentials: tc.creds}
			pin, err := r.Resolve(context.Background(), ref, nil)
			if err == nil {
				_, err = r.Fetch(context.Background(), ref, pin.Files[0], nil)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to say %q", err, tc.wantErr)
				}
				if len(rt.seen) != 0 {
					t.Fatalf("a refused source was requested: %+v", rt.seen)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rt.seen) != len(tc.wantAuth) {
				t.Fatalf("requests = %+v, want %d", rt.seen, len(tc.wantAuth))
			}
			for i, s := range rt.seen {
				if s.auth != tc.wantAuth[i] {
					t.Errorf("request %d to %s carried Authorization %q, want %q", i, s.url, s.auth, tc.wantAuth[i])
				}
			}
		})
	}
}

// failing is a transport whose every request fails with err.
type failing struct {
	err   error
	tries int
}

func (f *failing) RoundTrip(*http.Request) (*http.Response, error) {
	f.tries++
	return nil, f.err
}

// TestUnreachableHostsFailFast: a host whose name does not resolve, or
// that refuses the connection, fails at the first attempt with an
// UnreachableError; a connection reset is still retried.
func TestUnreachableHostsFailFast(t *testing.T) {
	dns := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "huggingface.co", IsNotFound: true}}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}
	for _, tc := range []struct {
		name  string
		err   error
		tries int
		fast  bool
	}{
		{"name does not resolve", dns, 1, true},
		{"connection refused", refused, 1, true},
		{"connection reset", reset, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := cache.Open(t.TempDir())
			tr := &failing{err: tc.err}
			r := New(Options{Blobs: c, Getenv: func(string) string { return "" }, Client: &http.Client{Transport: tr}})
			r.SetRetry(2, time.Millisecond, time.Second)
			_, err := r.Resolve(context.Background(), Ref{HF: "o/n", Files: []string{"*.parquet"}}, nil)
			var u *UnreachableError
			if tr.tries != tc.tries || errors.As(err, &u) != tc.fast {
				t.Fatalf("%d tries, err %v", tr.tries, err)
			}
			if tc.fast && !strings.Contains(err.Error(), UnreachablePhrase+"huggingface.co") {
				t.Fatalf("err %v", err)
			}
		})
	}
}
