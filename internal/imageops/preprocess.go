package imageops

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/gatepipe/gatepipe/internal/safefile"
)

// Preprocess is a model's evaluation transform, as timm and torchvision
// apply it: resize the shorter side (antialiased), centre-crop to Size,
// normalise per channel. Grayscale images are repeated to Channels
// channels first (PIL's convert("RGB")).
type Preprocess struct {
	// Size is the model's input height and width.
	Size [2]int `json:"size"`
	// ResizeTo is the shorter side before the crop; 0 derives it from
	// CropPct as timm does: floor(size / crop_pct).
	ResizeTo int `json:"resize_to,omitempty"`
	// CropPct is timm's crop fraction (0.875 when neither it nor
	// ResizeTo is set).
	CropPct       float64       `json:"crop_pct,omitempty"`
	Interpolation Interpolation `json:"interpolation"`
	Mean          []float32     `json:"mean,omitempty"`
	Std           []float32     `json:"std,omitempty"`
	// Channels the model takes (3 for RGB models; 0 keeps the data's).
	Channels int `json:"channels,omitempty"`
}

// Check reports what makes p unusable.
func (p Preprocess) Check() error {
	if p.Size[0] <= 0 || p.Size[1] <= 0 {
		return fmt.Errorf("preprocess: input size %v must be positive", p.Size)
	}
	if p.CropPct < 0 || p.CropPct > 1 {
		return fmt.Errorf("preprocess: crop_pct %g must be in (0, 1]", p.CropPct)
	}
	if len(p.Mean) != len(p.Std) {
		return fmt.Errorf("preprocess: mean has %d values, std %d", len(p.Mean), len(p.Std))
	}
	for _, s := range p.Std {
		if s <= 0 {
			return fmt.Errorf("preprocess: std %v must be positive", p.Std)
		}
	}
	if p.Channels != 0 && len(p.Mean) != 0 && len(p.Mean) != p.Channels {
		return fmt.Errorf("preprocess: %d means for %d channels", len(p.Mean), p.Channels)
	}
	_, err := ParseInterpolation(string(p.Interpolation))
	return err
}

// resizeTo returns the shorter side the image is resized to before the crop.
func (p Preprocess) resizeTo() int {
	if p.ResizeTo > 0 {
		return p.ResizeTo
	}
	pct := p.CropPct
	if pct == 0 {
		pct = 0.875
	}
	return int(math.Floor(float64(min(p.Size[0], p.Size[1])) / pct))
}

// OutShape is the shape Apply returns for images of c channels.
func (p Preprocess) OutShape(c int) []int {
	if p.Channels > 0 {
		c = p.Channels
	}
	return []int{c, p.Size[0], p.Size[1]}
}

// Apply transforms one image [c, h, w] (values in [0, 1]).
func (p Preprocess) Apply(img []float32, c, h, w int) ([]float32, error) {
	if len(img) != c*h*w {
		return nil, fmt.Errorf("preprocess: image of %d values is not %dx%dx%d", len(img), c, h, w)
	}
	if p.Channels > 0 && c != p.Channels {
		if c != 1 {
			return nil, fmt.Errorf("preprocess: %d-channel images for a %d-channel model", c, p.Channels)
		}
		rep := make([]float32, 0, p.Channels*h*w)
		for range p.Channels {
			rep = append(rep, img...)
		}
		img, c = rep, p.Channels
	}
	interp, err := ParseInterpolation(string(p.Interpolation))
	if err != nil {
		return nil, err
	}
	oh, ow := ShorterSide(h, w, p.resizeTo())
	out := Resize(img, c, h, w, oh, ow, interp)
	out = CenterCrop(out, c, oh, ow, p.Size[0], p.Size[1])
	if len(p.Mean) > 0 {
		if len(p.Mean) != c {
			return nil, fmt.Errorf("preprocess: %d means for %d channels", len(p.Mean), c)
		}
		Normalize(out, p.Mean, p.Std)
	}
	return out, nil
}

// TimmConfig reads the evaluation transform from a timm hub repository's
// config.json (its pretrained_cfg: input_size, interpolation, crop_pct,
// mean, std; older files keep them at the top level), and the
// architecture it names.
func TimmConfig(path string) (Preprocess, string, error) {
	data, err := safefile.ReadFile(path, safefile.MaxConfigBytes)
	if err != nil {
		return Preprocess{}, "", err
	}
	type cfg struct {
		InputSize     []int     `json:"input_size"`
		Interpolation string    `json:"interpolation"`
		CropPct       float64   `json:"crop_pct"`
		Mean          []float32 `json:"mean"`
		Std           []float32 `json:"std"`
	}
	var file struct {
		Architecture  string `json:"architecture"`
		PretrainedCfg *cfg   `json:"pretrained_cfg"`
		cfg
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return Preprocess{}, "", fmt.Errorf("%s: %w", path, err)
	}
	c := file.cfg
	if file.PretrainedCfg != nil {
		c = *file.PretrainedCfg
	}
	if len(c.InputSize) != 3 {
		return Preprocess{}, file.Architecture, fmt.Errorf("%s: input_size %v is not [C, H, W]", path, c.InputSize)
	}
	interp := Interpolation(c.Interpolation)
	if interp == "" {
		interp = Bicubic
	}
	p := Preprocess{Size: [2]int{c.InputSize[1], c.InputSize[2]}, CropPct: c.CropPct, Interpolation: interp,
		Mean: c.Mean, Std: c.Std, Channels: c.InputSize[0]}
	if err := p.Check(); err != nil {
		return Preprocess{}, file.Architecture, fmt.Errorf("%s: %w", path, err)
	}
	return p, file.Architecture, nil
}

// ApplyMask puts a label mask [h, w] through the transform's geometry, so
// that it stays aligned with its image: the shorter side resized by
// nearest neighbour (each output pixel takes the label under its centre),
// then the centre crop (0, background, where the crop is larger).
func (p Preprocess) ApplyMask(mask []int64, h, w int) ([]int64, error) {
	if len(mask) != h*w {
		return nil, fmt.Errorf("preprocess: mask of %d values is not %dx%d", len(mask), h, w)
	}
	oh, ow := ShorterSide(h, w, p.resizeTo())
	resized := make([]int64, oh*ow)
	for y := range oh {
		sy := min(int((float64(y)+0.5)*float64(h)/float64(oh)), h-1)
		for x := range ow {
			sx := min(int((float64(x)+0.5)*float64(w)/float64(ow)), w-1)
			resized[y*ow+x] = mask[sy*w+sx]
		}
	}
	ch, cw := p.Size[0], p.Size[1]
	top := int(math.RoundToEven(float64(oh-ch) / 2))
	left := int(math.RoundToEven(float64(ow-cw) / 2))
	out := make([]int64, ch*cw)
	for y := range ch {
		sy := y + top
		if sy < 0 || sy >= oh {
			continue
		}
		for x := range cw {
			if sx := x + left; sx >= 0 && sx < ow {
				out[y*cw+x] = resized[sy*ow+sx]
			}
		}
	}
	return out, nil
}
