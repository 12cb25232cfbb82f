package sources

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// hfToken finds a Hugging Face token where huggingface_hub looks: HF_TOKEN,
// HUGGING_FACE_HUB_TOKEN, then the file huggingface-cli login writes.
func (r *Resolver) hfToken() string {
	for _, v := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if t := strings.TrimSpace(r.getenv(v)); t != "" {
			return t
		}
	}
	var files []string
	if p := r.getenv("HF_TOKEN_PATH"); p != "" {
		files = append(files, p)
	}
	if h := r.getenv("HF_HOME"); h != "" {
		files = append(files, filepath.Join(h, "token"))
	}
	if r.home != "" {
		files = append(files, filepath.Join(r.home, ".cache", "huggingface", "token"))
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.TrimSpace(string(b)) != "" {
			return strings.TrimSpace(string(b))
		}
	}
	return ""
}

// kaggleKey finds Kaggle API credentials where the kaggle CLI looks:
// KAGGLE_USERNAME and KAGGLE_KEY, then kaggle.json.
func (r *Resolver) kaggleKey() (user, key string) {
	if u, k := r.getenv("KAGGLE_USERNAME"), r.getenv("KAGGLE_KEY"); u != "" && k != "" {
		return u, k
	}
	var files []string
	if d := r.getenv("KAGGLE_CONFIG_DIR"); d != "" {
		files = append(files, filepath.Join(d, "kaggle.json"))
	}
	if r.home != "" {
		files = append(files, filepath.Join(r.home, ".kaggle", "kaggle.json"), filepath.Join(r.home, ".config", "kaggle", "kaggle.json"))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var c struct{ Username, Key string }
		if json.Unmarshal(b, &c) == nil && c.Username != "" && c.Key != "" {
			return c.Username, c.Key
		}
	}
	return "", ""
}

const (
	hfHelp     = "set HF_TOKEN to a Hugging Face access token (https://huggingface.co/settings/tokens) of an account that accepted the dataset's terms on its Hub page, or run `huggingface-cli login`"
	kaggleHelp = "set KAGGLE_USERNAME and KAGGLE_KEY, or put the kaggle.json from kaggle.com → Settings → API → Create New Token in ~/.kaggle/ (or $KAGGLE_CONFIG_DIR)"
)

// authorize adds the credentials a source needs, to a request that may
// carry them (see mayReceive). A source that declares credentials fails
// here, before any request, when none are set or when its URL is not on
// the host they belong to. A request to a mirror the user has not opted
// in carries none and needs none: the mirror may serve the files freely,
// and statusError explains the opt-in if it refuses. A Hub token is also
// sent to the Hub for sources that do not require one (public
// repositories accept it).
func (r *Resolver) authorize(req *http.Request, creds string) error {
	if creds == CredsNone {
		return nil
	}
	ok, why := r.mayReceive(req.URL, creds)
	if !ok {
		if creds == hfOptional || r.isMirror(req.URL) {
			return nil
		}
		return fmt.Errorf("credentials = %q are not sent: %s", creds, why)
	}
	switch creds {
	case CredsHF:
		t := r.hfToken()
		if t == "" {
			return fmt.Errorf("this source needs Hugging Face credentials: %s", hfHelp)
		}
		req.Header.Set("Authorization", "Bearer "+t)
	case hfOptional:
		if t := r.hfToken(); t != "" {
			req.Header.Set("Authorization", "Bearer "+t)
		}
	case CredsKaggle:
		u, k := r.kaggleKey()
		if u == "" {
			return fmt.Errorf("this source needs Kaggle credentials: %s", kaggleHelp)
		}
		req.SetBasicAuth(u, k)
	}
	return nil
}

// MirrorCredentialsEnv lists the mirrors (their http(s) origins, comma-
// or space-separated) that may receive the Hub token and Kaggle key. It is
// read from the environment only: a pipeline file names a mirror, but
// cannot hand it the user's credentials.
const MirrorCredentialsEnv = "GATEPIPE_MIRROR_CREDENTIALS"

// mayReceive reports whether credentials of kind creds may be sent to u,
// and if not, why. They go only to the host they belong to (the Hub's
// endpoint for "hf", www.kaggle.com for "kaggle"), or to a mirror named in
// $GATEPIPE_MIRROR_CREDENTIALS, and only over https (or plain http to a
// loopback address, where nothing crosses a network).
func (r *Resolver) mayReceive(u *url.URL, creds string) (bool, string) {
	if r.isMirror(u) {
		switch {
		case !r.mirrorOptedIn():
			return false, fmt.Sprintf("the mirror %s is not named in $%s", r.mirror.base, MirrorCredentialsEnv)
		case !secureURL(u):
			return false, fmt.Sprintf("the mirror %s is plain http to a host that is not loopback; credentials go only over https", r.mirror.base)
		}
		return true, ""
	}
	var owners []string
	switch creds {
	case CredsHF, hfOptional:
		if e, err := url.Parse(r.endpoint); err == nil {
			owners = []string{e.Host}
		}
	case CredsKaggle:
		owners = []string{"www.kaggle.com", "kaggle.com"}
	}
	for _, h := range owners {
		if strings.EqualFold(u.Host, h) {
			if !secureURL(u) {
				return false, fmt.Sprintf("%s is plain http; credentials go only over https", redactedPath(u))
			}
			return true, ""
		}
	}
	return false, fmt.Sprintf("they belong to %s, and %s is on %s", strings.Join(owners, " or "), redactedPath(u), u.Host)
}

// isMirror reports whether u is a request to the HTTP mirror.
func (r *Resolver) isMirror(u *url.URL) bool {
	if r.mirror.base == "" {
		return false
	}
	m, err := url.Parse(r.mirror.base)
	return err == nil && strings.EqualFold(m.Scheme, u.Scheme) && strings.EqualFold(m.Host, u.Host)
}

// mirrorOptedIn reports whether $GATEPIPE_MIRROR_CREDENTIALS names the
// mirror's origin.
func (r *Resolver) mirrorOptedIn() bool {
	m, err := url.Parse(r.mirror.base)
	if err != nil || r.mirror.base == "" {
		return false
	}
	for _, s := range strings.FieldsFunc(r.getenv(MirrorCredentialsEnv), func(c rune) bool { return c == ',' || c == ' ' }) {
		o, err := url.Parse(s)
		if err == nil && strings.EqualFold(o.Scheme, m.Scheme) && strings.EqualFold(o.Host, m.Host) {
			return true
		}
	}
	return false
}

// secureURL reports whether a credential may travel to u: https, or http
// to a loopback address.
func secureURL(u *url.URL) bool {
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		if h == "localhost" {
			return true
		}
		ip := net.ParseIP(h)
		return ip != nil && ip.IsLoopback()
	}
	return false
}

// redactedPath is u without its query (which may hold a signature).
func redactedPath(u *url.URL) string {
	v := *u
	v.RawQuery, v.User = "", nil
	return v.String()
}

// keepCredentialsSecure is the HTTP client's redirect policy: Go already
// drops Authorization on a redirect to another domain; this also drops it
// on a redirect to plain http.
func keepCredentialsSecure(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if !secureURL(req.URL) {
		req.Header.Del("Authorization")
	}
	return nil
}

// hfOptional sends a Hub token when one is set, without requiring it.
const hfOptional = "hf?"

// statusError explains a final non-success answer, saying what to set
// when the server wants credentials.
func (r *Resolver) statusError(resp *http.Response, creds string) error {
	e := &httpError{resp.StatusCode, resp.Status}
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return e
	}
	if resp.Request != nil && r.isMirror(resp.Request.URL) && creds != CredsNone {
		if ok, why := r.mayReceive(resp.Request.URL, creds); !ok {
			return fmt.Errorf("%w: the mirror wants credentials, and gatepipe sent none: %s. To send your credentials to this mirror, set %s=%s", e, why, MirrorCredentialsEnv, r.mirror.base)
		}
	}
	switch creds {
	case CredsHF, hfOptional:
		return fmt.Errorf("%w: the repository is gated or private, or the token is not allowed to read it: %s", e, hfHelp)
	case CredsKaggle:
		return fmt.Errorf("%w: Kaggle refused the credentials (for a competition, also accept its rules on kaggle.com): %s", e, kaggleHelp)
	}
	return fmt.Errorf("%w: the server wants credentials; if it is the Hugging Face Hub set credentials = \"hf\" on the source, if Kaggle credentials = \"kaggle\"", e)
}
