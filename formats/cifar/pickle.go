package cifar

import (
	"fmt"
	"io"

	"github.com/gatepipe/gatepipe/formats/pickle"
)

// The Python versions of CIFAR-10 and CIFAR-100 (cifar-10-python.tar.gz,
// cifar-100-python.tar.gz, the archives torchvision downloads) hold each
// batch as a pickled dict: "data" a uint8 numpy array [N, 3072] (rows
// channel-major like the binary version), "labels" (CIFAR-10) or
// "fine_labels" and "coarse_labels" (CIFAR-100) lists of ints. The meta
// files ("batches.meta", "meta") hold the class names. The authors pickled
// them with Python 2 (str keys and data); files pickled again by Python 3
// (bytes through _codecs.encode) read the same. Package pickle runs the
// pickle machine; findClass allows only the globals these files use.

// IsPickle reports whether a file starting with head is a pickle of
// protocol 2 or later (the binary batches start with a label byte < 100).
func IsPickle(head []byte) bool {
	return len(head) >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5
}

// ReadPickle decodes one batch file of the Python version.
func ReadPickle(r io.Reader, v Variant, name string) (*Batch, error) {
	d, err := loadDict(r, name)
	if err != nil {
		return nil, err
	}
	data, shape, err := d.array("data")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(shape) != 2 || shape[1] != Pixels || len(data) != shape[0]*Pixels {
		return nil, fmt.Errorf("%s: data has shape %v (%d bytes), want [N, %d] uint8", name, shape, len(data), Pixels)
	}
	n := shape[0]
	b := &Batch{Images: data}
	labelKey, maxLabel := "labels", int64(9)
	if v == CIFAR100 {
		labelKey, maxLabel = "fine_labels", 99
		if b.Coarse, err = d.ints("coarse_labels", n, 19); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if b.Labels, err = d.ints(labelKey, n, maxLabel); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return b, nil
}

// ReadPickleNames reads a list of class names (key "label_names" of
// CIFAR-10's batches.meta, "fine_label_names" or "coarse_label_names" of
// CIFAR-100's meta).
func ReadPickleNames(r io.Reader, key, name string) ([]string, error) {
	d, err := loadDict(r, name)
	if err != nil {
		return nil, err
	}
	l, ok := d.get(key).(*pickle.List)
	if !ok {
		return nil, fmt.Errorf("%s: no list %q (keys: %v)", name, key, d.keys())
	}
	out := make([]string, len(l.Items))
	for i, v := range l.Items {
		s, ok := pickle.Text(v)
		if !ok {
			return nil, fmt.Errorf("%s: %s[%d] is %T, not a string", name, key, i, v)
		}
		out[i] = s
	}
	return out, nil
}

// pyDict is an unpickled dict with its keys as Go strings.
type pyDict map[string]any

func (d pyDict) get(k string) any { return d[k] }

func (d pyDict) keys() []string {
	ks := make([]string, 0, len(d))
	for k := range d {
		ks = append(ks, k)
	}
	return ks
}

func (d pyDict) array(k string) ([]byte, []int, error) {
	a, ok := d[k].(*ndarray)
	if !ok {
		return nil, nil, fmt.Errorf("no numpy array %q (keys: %v)", k, d.keys())
	}
	if a.dtype == nil || a.dtype.kind != "u1" {
		return nil, nil, fmt.Errorf("%q is not a uint8 array", k)
	}
	return a.data, a.shape, nil
}

func (d pyDict) ints(k string, n int, maxValue int64) ([]int64, error) {
	l, ok := d[k].(*pickle.List)
	if !ok {
		return nil, fmt.Errorf("no list %q (keys: %v)", k, d.keys())
	}
	if len(l.Items) != n {
		return nil, fmt.Errorf("%q has %d labels for %d images", k, len(l.Items), n)
	}
	out := make([]int64, n)
	for i, item := range l.Items {
		v, ok := item.(int64)
		if !ok || v < 0 || v > maxValue {
			return nil, fmt.Errorf("%s[%d] = %v is not a label in 0..%d", k, i, item, maxValue)
		}
		out[i] = v
	}
	return out, nil
}

// loadDict unpickles r, which must hold a dict.
func loadDict(r io.Reader, name string) (pyDict, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	v, err := pickle.Unpickle(data, pickle.Options{Global: findClass})
	if err != nil {
		return nil, fmt.Errorf("%s: not a CIFAR pickle: %w", name, err)
	}
	d, ok := v.(*pickle.Dict)
	if !ok {
		return nil, fmt.Errorf("%s: the pickle holds %T, not a dict", name, v)
	}
	return pyDict(d.Items), nil
}

// findClass answers the globals a numpy array's pickle names; anything
// else is refused (a pickle can name any Python callable).
func findClass(module, name string) (any, error) {
	switch module + "." + name {
	case "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct":
		return reconstruct{}, nil
	case "numpy.ndarray":
		return ndarrayClass{}, nil
	case "numpy.dtype":
		return dtypeClass{}, nil
	case "_codecs.encode":
		return latin1Encode{}, nil
	}
	return nil, fmt.Errorf("the pickle names %s.%s, which a CIFAR batch does not use", module, name)
}

type ndarrayClass struct{}

// reconstruct is numpy.core.multiarray._reconstruct(ndarray, (0,), b'b'):
// an empty array that BUILD then fills.
type reconstruct struct{}

func (reconstruct) Call(pickle.Tuple) (any, error) { return &ndarray{}, nil }

// ndarray is a numpy array: its BUILD state is (version, shape, dtype,
// is_fortran, raw bytes).
type ndarray struct {
	shape []int
	dtype *dtype
	data  []byte
}

func (a *ndarray) SetState(state any) error {
	t, ok := state.(pickle.Tuple)
	if !ok || len(t) != 5 {
		return fmt.Errorf("numpy array state is %T, not a 5-tuple", state)
	}
	shape, ok := t[1].(pickle.Tuple)
	if !ok {
		return fmt.Errorf("numpy array shape is %T", t[1])
	}
	for _, d := range shape {
		n, ok := d.(int64)
		if !ok || n < 0 || n > 1<<40 {
			return fmt.Errorf("numpy array shape %v", shape)
		}
		a.shape = append(a.shape, int(n))
	}
	a.dtype, _ = t[2].(*dtype)
	if fortran, _ := t[3].(bool); fortran && len(a.shape) > 1 {
		return fmt.Errorf("numpy array in Fortran order")
	}
	raw, ok := pickle.Text(t[4])
	if !ok {
		return fmt.Errorf("numpy array data is %T, not bytes", t[4])
	}
	a.data = []byte(raw)
	return nil
}

type dtypeClass struct{}

// dtype is numpy.dtype("u1", 0, 1); its BUILD state (byte order and
// such) does not matter for one-byte values.
type dtype struct{ kind string }

func (dtypeClass) Call(args pickle.Tuple) (any, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("numpy.dtype without arguments")
	}
	k, _ := pickle.Text(args[0])
	return &dtype{kind: k}, nil
}

func (*dtype) SetState(any) error { return nil }

// latin1Encode is _codecs.encode(s, "latin1"), which Python 3 pickles
// bytes as at protocol 2: every code point below 256 is one byte.
type latin1Encode struct{}

func (latin1Encode) Call(args pickle.Tuple) (any, error) {
	if len(args) < 1 {
		return nil, fmt.Errorf("_codecs.encode without arguments")
	}
	s, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("_codecs.encode of %T", args[0])
	}
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 255 {
			return nil, fmt.Errorf("_codecs.encode: code point %U is not latin-1", r)
		}
		out = append(out, byte(r))
	}
	return out, nil
}
