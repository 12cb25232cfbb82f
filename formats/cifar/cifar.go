// Package cifar reads CIFAR-10 and CIFAR-100 in both published versions:
// the binary one (fixed size records of label byte(s) followed by 3x32x32
// pixels, channel-major) and the Python one torchvision downloads
// (pickled dicts holding a numpy array; pickle.go).
package cifar

import (
	"fmt"
	"io"
)

// Variant selects the record layout.
type Variant int

// Layouts.
const (
	CIFAR10  Variant = 10  // <label> <3072 pixels>
	CIFAR100 Variant = 100 // <coarse> <fine> <3072 pixels>
)

// Pixels is the number of bytes of one 3x32x32 image.
const Pixels = 3 * 32 * 32

// Batch holds decoded records.
type Batch struct {
	Images []byte // N*3072, CHW
	Labels []int64
	Coarse []int64 // CIFAR-100 only
}

// Read decodes every record of r. fine selects CIFAR-100's fine label.
func Read(r io.Reader, v Variant, name string) (*Batch, error) {
	labelBytes := 1
	if v == CIFAR100 {
		labelBytes = 2
	}
	rec := labelBytes + Pixels
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: byte 0: empty CIFAR batch", name)
	}
	if len(data)%rec != 0 {
		full := len(data) / rec * rec
		return nil, fmt.Errorf("%s: byte %d: truncated CIFAR record: %d bytes is not a multiple of the %d-byte record size", name, full, len(data), rec)
	}
	n := len(data) / rec
	b := &Batch{Images: make([]byte, 0, n*Pixels), Labels: make([]int64, n)}
	if v == CIFAR100 {
		b.Coarse = make([]int64, n)
	}
	maxLabel := byte(9)
	if v == CIFAR100 {
		maxLabel = 99
	}
	for i := 0; i < n; i++ {
		r := data[i*rec : (i+1)*rec]
		label := r[labelBytes-1]
		if label > maxLabel {
			return nil, fmt.Errorf("%s: byte %d: label %d out of range 0..%d", name, i*rec+labelBytes-1, label, maxLabel)
		}
		b.Labels[i] = int64(label)
		if v == CIFAR100 {
			if r[0] > 19 {
				return nil, fmt.Errorf("%s: byte %d: coarse label %d out of range 0..19", name, i*rec, r[0])
			}
			b.Coarse[i] = int64(r[0])
		}
		b.Images = append(b.Images, r[labelBytes:]...)
	}
	return b, nil
}
