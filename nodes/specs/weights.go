package specs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gatepipe/gatepipe/internal/imageops"
	"github.com/gatepipe/gatepipe/internal/safefile"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// hubPrefix marks weights taken from a Hugging Face model repository:
// weights = "hf:timm/vit_base_patch16_224.augreg2_in21k_ft_in1k".
const hubPrefix = "hf:"

// IsHubWeights reports whether an encoder's weights name a Hub model.
func IsHubWeights(w string) bool { return strings.HasPrefix(w, hubPrefix) }

// HubWeightsRef is the source of weights = "hf:OWNER/NAME[@REVISION]":
// the model repository's model.safetensors and config.json (as timm
// publishes them), pinned in the lock file like a dataset's files.
func HubWeightsRef(w string) (sources.Ref, error) {
	repo, rev, _ := strings.Cut(strings.TrimPrefix(w, hubPrefix), "@")
	if err := sources.CheckRepo(repo); err != nil {
		return sources.Ref{}, fmt.Errorf("weights %q: %w", w, err)
	}
	return sources.Ref{HF: repo, Revision: rev, Model: true, Files: []string{"model.safetensors", "config.json"}}, nil
}

// weightsConfig checks the encoder's weights and returns the config.json
// that describes them ("" when there is none to read yet): beside a
// weights file (whose relative path it makes absolute), or a Hub model's,
// when it is pinned and at hand (or, in apply and fetch, pinned and
// fetched now: it is small). torchvision weights have no config.json:
// their transform comes from the table, and their preset fills an empty
// one.
func weightsConfig(v map[string]cty.Value, decl nodes.Decl) (string, *imageops.Preprocess, hcl.Diagnostics) {
	weights := v["weights"].AsString()
	switch {
	case weights == "":
		return "", nil, nil
	case IsTorchvisionWeights(weights):
		tv, err := LookupTorchvision(weights)
		if err != nil {
			return "", nil, hcl.Diagnostics{decl.Errorf("weights", "Unknown torchvision weights", "%s.", err)}
		}
		if v["preset"].AsString() == "" && v["arch"].AsString() == "" {
			v["preset"] = cty.StringVal(tv.Preset)
		}
		return "", &tv.Preprocess, nil
	case IsHubWeights(weights):
		ref, err := HubWeightsRef(weights)
		if err != nil {
			return "", nil, hcl.Diagnostics{decl.Errorf("weights", "Invalid weights", "%s.", err)}
		}
		p, err := hubConfig(decl.Sources, ref)
		if err != nil {
			return "", nil, hcl.Diagnostics{decl.Errorf("weights", "Cannot read the model's config.json", "%s: %s.", weights, err)}
		}
		return p, nil, nil
	}
	// A relative weights path is relative to the encoder's module, and is
	// made absolute: the torch worker runs in another directory.
	if !filepath.IsAbs(weights) {
		weights = filepath.Join(decl.Dir, weights)
	}
	if abs, err := filepath.Abs(weights); err == nil {
		weights = abs
	}
	v["weights"] = cty.StringVal(weights)
	decl.Reads.Add(weights)
	if info, err := os.Stat(weights); err != nil || info.IsDir() {
		why := "does not exist"
		if err == nil {
			why = "is a directory"
		} else if !errors.Is(err, fs.ErrNotExist) {
			why = err.Error()
		}
		return "", nil, hcl.Diagnostics{decl.Errorf("weights", "Weights file not found",
			"%s %s. weights takes a safetensors file (a timm model.safetensors with its config.json beside it, or a torchvision state_dict saved as safetensors) or a Hub model, hf:OWNER/NAME.", weights, why)}
	}
	return filepath.Join(filepath.Dir(weights), "config.json"), nil, nil
}

// hubConfig returns a Hub model's config.json if it can be had without a
// download, or with one where the resolver resolves (apply, fetch); ""
// when the model is not pinned yet (plan, validate).
func hubConfig(r *sources.Resolver, ref sources.Ref) (string, error) {
	if r == nil {
		return "", nil
	}
	pin, err := r.Resolve(context.Background(), ref, nil)
	if errors.Is(err, sources.ErrNotPinned) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, f := range pin.Files {
		if f.Path != "config.json" {
			continue
		}
		// Its size is known from the pin (or the Hugging Face cache's
		// entry): a file no config could be is refused before it is
		// hashed, which takes a minute for a 10 GiB blob.
		if f.Size > safefile.MaxConfigBytes {
			return "", fmt.Errorf("its config.json is %d bytes, more than the %d a model config may have (a damaged cache entry or pin); it is not read", f.Size, safefile.MaxConfigBytes)
		}
		if p, ok := r.Local(f); ok {
			return p, nil
		}
		if r.Offline() {
			// Without it the encoder would run without the model's
			// preprocessing: offline features would differ from online ones.
			var missing []string
			for _, g := range pin.Files {
				if _, ok := r.Local(g); !ok {
					missing = append(missing, fmt.Sprintf("%s (sha256 %s…)", g.Path, g.SHA256[:min(12, len(g.SHA256))]))
				}
			}
			return "", fmt.Errorf("%s neither in gatepipe's cache nor in the Hugging Face cache, and -offline forbids downloading: run `gatepipe fetch` where the network is reachable", strings.Join(missing, " and ")+map[bool]string{true: " is", false: " are"}[len(missing) == 1])
		}
		if !r.Resolving() {
			return "", nil
		}
		return r.Fetch(context.Background(), ref, f, nil)
	}
	return "", fmt.Errorf("the pin of %s has no config.json", ref.Key())
}
