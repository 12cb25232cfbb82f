package dataset

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/imagedec"
	"github.com/gatepipe/gatepipe/formats/videodec"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
)

// mediaPolicy is how a dataset meets media it cannot or may not decode: a
// damaged image, a decompression bomb, a video ffmpeg chokes on.
type mediaPolicy struct {
	// skipBad skips such an example and counts it (on_bad_example =
	// "skip"); otherwise the node fails naming the file.
	skipBad bool
	// maxPixels bounds the pixels an image may declare (0: PIL's bound,
	// imagedec.DefaultMaxPixels).
	maxPixels int64
	// ffmpegTimeout bounds one video's decoding (0: videodec's default).
	ffmpegTimeout time.Duration
}

// Values of on_bad_example.
const (
	badExampleError = "error"
	badExampleSkip  = "skip"
)

// decodeMedia decodes on_bad_example, max_image_pixels and ffmpeg_timeout.
func (n *Node) decodeMedia(decl nodes.Decl) hcl.Diagnostics {
	cfg := &n.cfg
	var diags hcl.Diagnostics
	if v := cfg.OnBadExample; v != nil {
		switch *v {
		case badExampleError:
		case badExampleSkip:
			n.media.skipBad = true
		default:
			diags = append(diags, decl.Errorf("on_bad_example", "Invalid on_bad_example",
				"on_bad_example is %q (the node fails naming a file it cannot decode, the default) or %q (it skips the file, counts it in the log and in meta.json), not %q.", badExampleError, badExampleSkip, *v))
		}
	}
	if v := cfg.MaxImagePixels; v != nil {
		if *v < 1 {
			diags = append(diags, decl.Errorf("max_image_pixels", "Invalid max_image_pixels", "max_image_pixels must be at least 1 (the default is %d, PIL's decompression-bomb bound).", imagedec.DefaultMaxPixels))
		}
		n.media.maxPixels = *v
	}
	if v := cfg.FFmpegTimeout; v != nil {
		d, err := time.ParseDuration(*v)
		if err != nil || d <= 0 {
			diags = append(diags, decl.Errorf("ffmpeg_timeout", "Invalid ffmpeg_timeout", "ffmpeg_timeout is a positive duration such as \"5m\" or \"90s\", not %q.", *v))
		}
		n.media.ffmpegTimeout = d
	}
	return diags
}

// isBadExample reports whether err is one example's media that cannot or
// may not be decoded (as opposed to a failing disk, a missing ffmpeg or
// a cancelled run, which stop the node whatever on_bad_example says).
func isBadExample(err error) bool {
	return errors.Is(err, imagedec.ErrBadImage) || errors.Is(err, videodec.ErrBadVideo)
}

// sourceName is a file's name as its source gives it: its path under the
// raw directory the sources were fetched and extracted into.
func sourceName(rawDir, p string) string {
	if rel, err := filepath.Rel(rawDir, p); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return p
}

// skippedExample is an example left out under on_bad_example = "skip".
type skippedExample = examplestore.Skipped

// maxSkippedLogged bounds the skipped examples the log names one by one;
// meta.json lists them all.
const maxSkippedLogged = 20

// reportSkipped says in the run's log which examples were skipped and how
// many (meta.json lists them all).
func reportSkipped(env *nodes.Env, skipped []skippedExample) {
	for i, s := range skipped {
		if i == maxSkippedLogged {
			env.Log.Warn().Msgf("... and %d more (meta.json lists every one)", len(skipped)-i)
			break
		}
		env.Log.Warn().Str("split", s.Split).Int64("index", s.Index).Msgf("skipped an example that cannot be decoded: %s", s.Error)
	}
	if len(skipped) > 0 {
		env.Log.Warn().Int("skipped", len(skipped)).Msgf("%d examples skipped (on_bad_example = \"skip\"); the store holds the rest", len(skipped))
	}
}
