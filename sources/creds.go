package sources

import (
	"encoding/json"
	"fmt"
	"net/http"
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

// authorize adds the credentials a source needs. A source that declares
// credentials fails here, before any request, when none are set. A Hub
// token is also sent to Hub sources that do not require one (public
// repositories accept it).
func (r *Resolver) authorize(req *http.Request, creds string) error {
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

// hfOptional sends a Hub token when one is set, without requiring it.
const hfOptional = "hf?"

// statusError explains a final non-success answer, saying what to set
// when the server wants credentials.
func (r *Resolver) statusError(resp *http.Response, creds string) error {
	e := &httpError{resp.StatusCode, resp.Status}
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return e
	}
	switch creds {
	case CredsHF, hfOptional:
		return fmt.Errorf("%w: the repository is gated or private, or the token is not allowed to read it: %s", e, hfHelp)
	case CredsKaggle:
		return fmt.Errorf("%w: Kaggle refused the credentials (for a competition, also accept its rules on kaggle.com): %s", e, kaggleHelp)
	}
	return fmt.Errorf("%w: the server wants credentials; if it is the Hugging Face Hub set credentials = \"hf\" on the source, if Kaggle credentials = \"kaggle\"", e)
}
