// Package torchpt reads the tensors of a PyTorch checkpoint written by
// torch.save in its zip format (PyTorch 1.6 and later; torchvision's
// published weights): ARCHIVE/data.pkl, a pickle of the state dict whose
// tensors name their storages by persistent ID, and ARCHIVE/data/KEY, each
// storage's raw little-endian bytes. Only the globals a state dict uses are
// answered (collections.OrderedDict, torch._utils._rebuild_tensor_v2 and
// _rebuild_parameter, torch.*Storage): a checkpoint that names anything
// else (os.system, say) is refused, never run. The result is a
// safetensors.File, so the loaders that read safetensors read it too.
package torchpt

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path"
	"strings"

	"github.com/gatepipe/gatepipe/formats/pickle"
	"github.com/gatepipe/gatepipe/formats/safetensors"
)

// IsCheckpoint reports whether a file that starts with head is a zip
// archive, as torch.save writes one.
func IsCheckpoint(head []byte) bool { return bytes.HasPrefix(head, []byte("PK\x03\x04")) }

// legacyMagic starts a checkpoint in the legacy format of PyTorch < 1.6:
// a protocol-2 pickle of torch's magic number 0x1950a86a20f9469cfc6c.
var legacyMagic = []byte("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19")

// LegacyHeadSize is how many first bytes IsLegacy needs.
const LegacyHeadSize = 14

// IsLegacy reports whether a file that starts with head is a checkpoint
// in the legacy format of PyTorch < 1.6, which is not read.
func IsLegacy(head []byte) bool { return bytes.HasPrefix(head, legacyMagic) }

// ErrLegacy says why a legacy checkpoint is refused and what to do.
var ErrLegacy = errors.New("a torch.save checkpoint in the legacy format of PyTorch < 1.6, which is not read; save it again with a current PyTorch (torch.save(model.state_dict(), path)), or as safetensors")

// ReadFile reads a checkpoint's tensors: a state dict of name -> tensor
// (a dict holding one under "state_dict" or "model" is unwrapped).
func ReadFile(p string) (*safetensors.File, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	out, err := Read(f, info.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return out, nil
}

// Read is ReadFile for an open file of the given size.
func Read(r io.ReaderAt, size int64) (*safetensors.File, error) {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("not a torch.save zip checkpoint (the legacy format of PyTorch < 1.6 is not read; save it again with a current PyTorch, or as safetensors): %w", err)
	}
	var pkl *zip.File
	entries := map[string]*zip.File{}
	for _, f := range z.File {
		entries[f.Name] = f
		if path.Base(f.Name) == "data.pkl" && strings.Count(f.Name, "/") == 1 {
			pkl = f
		}
	}
	if pkl == nil {
		return nil, fmt.Errorf("no ARCHIVE/data.pkl: not a torch.save checkpoint")
	}
	c := &checkpoint{dir: path.Dir(pkl.Name), entries: entries, size: size, storages: map[string]*storage{}}
	data, err := c.read(pkl, 64<<20)
	if err != nil {
		return nil, err
	}
	v, err := pickle.Unpickle(data, pickle.Options{Global: c.global, PersistentLoad: c.persistent})
	if err != nil {
		return nil, fmt.Errorf("data.pkl: %w", err)
	}
	return stateDict(v)
}

// stateDict turns the unpickled object into tensors.
func stateDict(v any) (*safetensors.File, error) {
	d, ok := v.(*pickle.Dict)
	if !ok {
		return nil, fmt.Errorf("the checkpoint holds %T, not a state dict", v)
	}
	for _, k := range []string{"state_dict", "model"} {
		if inner, ok := d.Items[k].(*pickle.Dict); ok && len(d.Items) <= 4 {
			d = inner
			break
		}
	}
	out := &safetensors.File{Tensors: map[string]*safetensors.Tensor{}}
	for _, name := range d.Keys {
		t, ok := d.Items[name].(*tensor)
		if !ok {
			continue // not a tensor (an epoch counter, an optimiser's state)
		}
		st, err := t.contiguous(name)
		if err != nil {
			return nil, err
		}
		out.Tensors[name] = st
	}
	if len(out.Tensors) == 0 {
		return nil, fmt.Errorf("the checkpoint's dict holds no tensor (keys: %s)", strings.Join(d.Keys, ", "))
	}
	return out, nil
}

type checkpoint struct {
	dir      string
	entries  map[string]*zip.File
	size     int64
	storages map[string]*storage
}

// read reads a zip entry of at most limit bytes (and never more than the
// archive could hold uncompressed at a ratio of 1000).
func (c *checkpoint) read(f *zip.File, limit int64) ([]byte, error) {
	if n := int64(f.UncompressedSize64); n > limit || n > 1000*c.size+1<<20 || f.UncompressedSize64 > math.MaxInt32*4 {
		return nil, fmt.Errorf("%s declares %d bytes, more than it can hold", f.Name, f.UncompressedSize64)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, int64(f.UncompressedSize64)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	if uint64(len(data)) != f.UncompressedSize64 {
		return nil, fmt.Errorf("%s: %d bytes, the archive says %d", f.Name, len(data), f.UncompressedSize64)
	}
	return data, nil
}

// storageType is a torch.*Storage global: the element type.
type storageType struct {
	dtype safetensors.DType
	size  int
}

var storageTypes = map[string]storageType{
	"FloatStorage":    {safetensors.F32, 4},
	"HalfStorage":     {safetensors.F16, 2},
	"BFloat16Storage": {safetensors.BF16, 2},
	"DoubleStorage":   {safetensors.F64, 8},
	"LongStorage":     {safetensors.I64, 8},
	"IntStorage":      {safetensors.I32, 4},
}

// global answers the globals a state dict's pickle names, and nothing else.
func (c *checkpoint) global(module, name string) (any, error) {
	switch module + "." + name {
	case "collections.OrderedDict":
		return orderedDict{}, nil
	case "torch._utils._rebuild_tensor_v2":
		return rebuildTensor{}, nil
	case "torch._utils._rebuild_parameter":
		return rebuildParameter{}, nil
	}
	if st, ok := storageTypes[name]; ok && module == "torch" {
		return st, nil
	}
	return nil, fmt.Errorf("the checkpoint names %s.%s, which a state dict of tensors does not use: refused (a pickle can run any Python callable)", module, name)
}

type storage struct {
	typ  storageType
	data []byte
}

// persistent loads ('storage', type, key, location, numel): the bytes of
// ARCHIVE/data/KEY.
func (c *checkpoint) persistent(pid any) (any, error) {
	t, ok := pid.(pickle.Tuple)
	if !ok || len(t) != 5 {
		return nil, fmt.Errorf("persistent ID %v is not a storage", pid)
	}
	kind, _ := pickle.Text(t[0])
	typ, ok1 := t[1].(storageType)
	key, ok2 := pickle.Text(t[2])
	numel, ok3 := t[4].(int64)
	if kind != "storage" || !ok1 || !ok2 || !ok3 || numel < 0 || strings.ContainsAny(key, "/\\") {
		return nil, fmt.Errorf("persistent ID %v is not a storage", pid)
	}
	if s, ok := c.storages[key]; ok {
		return s, nil
	}
	f, ok := c.entries[c.dir+"/data/"+key]
	if !ok {
		return nil, fmt.Errorf("storage %s is not in the archive", key)
	}
	// The byte count in overflow-safe arithmetic: 2^62 floats would wrap
	// to 0 bytes and pass for an empty storage.
	if hi, n := bits.Mul64(uint64(numel), uint64(typ.size)); hi != 0 || n != f.UncompressedSize64 {
		return nil, fmt.Errorf("storage %s: %d elements of %d bytes, the archive holds %d bytes", key, numel, typ.size, f.UncompressedSize64)
	}
	data, err := c.read(f, c.size*1000+1<<20)
	if err != nil {
		return nil, err
	}
	s := &storage{typ: typ, data: data}
	c.storages[key] = s
	return s, nil
}

type orderedDict struct{}

func (orderedDict) Call(pickle.Tuple) (any, error) { return &pickle.Dict{Items: map[string]any{}}, nil }

// tensor is a view of a storage.
type tensor struct {
	s       *storage
	offset  int
	shape   []int
	strides []int
}

type rebuildTensor struct{}

// Call is _rebuild_tensor_v2(storage, storage_offset, size, stride,
// requires_grad, backward_hooks[, metadata]).
func (rebuildTensor) Call(args pickle.Tuple) (any, error) {
	if len(args) < 4 {
		return nil, fmt.Errorf("_rebuild_tensor_v2 with %d arguments", len(args))
	}
	s, ok := args[0].(*storage)
	off, ok2 := args[1].(int64)
	if !ok || !ok2 || off < 0 {
		return nil, fmt.Errorf("_rebuild_tensor_v2 of %T at %v", args[0], args[1])
	}
	shape, err := ints(args[2])
	if err != nil {
		return nil, fmt.Errorf("tensor size: %w", err)
	}
	strides, err := ints(args[3])
	if err != nil || len(strides) != len(shape) {
		return nil, fmt.Errorf("tensor stride %v for size %v", args[3], shape)
	}
	elems := len(s.data) / s.typ.size
	// A saved tensor has no more elements than its storage (no broadcast
	// views), and the last element it reaches lies in the storage. Every
	// product is checked against the storage before it is formed, so no
	// size, stride or offset can overflow past the checks.
	count := 1
	for _, n := range shape {
		if n == 0 {
			count = 0
			break
		}
		if count > elems/n {
			return nil, fmt.Errorf("tensor of size %v has more elements than its storage of %d", shape, elems)
		}
		count *= n
	}
	if count == 0 {
		return &tensor{s: s, shape: shape, strides: strides}, nil
	}
	beyond := fmt.Errorf("tensor of size %v, stride %v at offset %d reaches beyond its storage of %d elements", shape, strides, off, elems)
	if off >= int64(elems) {
		return nil, beyond
	}
	last := int(off)
	for i, n := range shape {
		if strides[i] > 0 && n-1 > (elems-1-last)/strides[i] {
			return nil, beyond
		}
		last += (n - 1) * strides[i]
	}
	return &tensor{s: s, offset: int(off), shape: shape, strides: strides}, nil
}

type rebuildParameter struct{}

// Call is _rebuild_parameter(data, requires_grad, backward_hooks): the
// tensor itself.
func (rebuildParameter) Call(args pickle.Tuple) (any, error) {
	if len(args) < 1 {
		return nil, fmt.Errorf("_rebuild_parameter without arguments")
	}
	t, ok := args[0].(*tensor)
	if !ok {
		return nil, fmt.Errorf("_rebuild_parameter of %T", args[0])
	}
	return t, nil
}

func ints(v any) ([]int, error) {
	t, ok := v.(pickle.Tuple)
	if !ok {
		return nil, fmt.Errorf("%T is not a tuple", v)
	}
	out := make([]int, len(t))
	for i, x := range t {
		n, ok := x.(int64)
		if !ok || n < 0 || n > 1<<40 {
			return nil, fmt.Errorf("%v is not a size", t)
		}
		out[i] = int(n)
	}
	return out, nil
}

// rowMajor reports whether the view's elements lie in row-major order,
// one after another.
func (t *tensor) rowMajor() bool {
	want := 1
	for i := len(t.shape) - 1; i >= 0; i-- {
		if t.shape[i] != 1 && t.strides[i] != want {
			return false
		}
		want *= t.shape[i]
	}
	return true
}

// contiguous copies the view into a row-major tensor (storage bytes are
// little-endian, as safetensors' are).
func (t *tensor) contiguous(name string) (*safetensors.Tensor, error) {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	es := t.s.typ.size
	if t.rowMajor() {
		out := append([]byte(nil), t.s.data[t.offset*es:(t.offset+n)*es]...)
		return &safetensors.Tensor{Name: name, DType: t.s.typ.dtype, Shape: append([]int(nil), t.shape...), Data: out}, nil
	}
	out := make([]byte, 0, n*es)
	idx := make([]int, len(t.shape))
	for range n {
		at := t.offset
		for i, x := range idx {
			at += x * t.strides[i]
		}
		out = append(out, t.s.data[at*es:(at+1)*es]...)
		for i := len(idx) - 1; i >= 0; i-- {
			if idx[i]++; idx[i] < t.shape[i] {
				break
			}
			idx[i] = 0
		}
	}
	return &safetensors.Tensor{Name: name, DType: t.s.typ.dtype, Shape: append([]int(nil), t.shape...), Data: out}, nil
}
