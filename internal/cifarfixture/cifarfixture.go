// Package cifarfixture writes CIFAR's Python version as its authors
// pickled it with Python 2 (protocol 2, str keys, the numpy array's bytes
// as one string), for tests of readers of cifar-10-python.tar.gz and
// cifar-100-python.tar.gz, the archives torchvision downloads.
package cifarfixture

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"slices"
)

// Py2Batch writes a batch the way the authors' Python 2 cPickle did
// (protocol 2, str keys, the array's bytes as a BINSTRING): "data" an
// [n, 3072] uint8 array, then each label list.
func Py2Batch(pixels []byte, n int, labels map[string][]int) []byte {
	var b bytes.Buffer
	str := func(s string) { writeStr(&b, s) }
	integer := func(v int) {
		b.WriteByte('J')
		binary.Write(&b, binary.LittleEndian, int32(v))
	}
	b.WriteString("\x80\x02}(") // PROTO 2, EMPTY_DICT, MARK
	str("data")
	b.WriteString("cnumpy.core.multiarray\n_reconstruct\n")
	b.WriteString("cnumpy\nndarray\n")
	integer(0)
	b.WriteByte(0x85) // TUPLE1
	str("b")
	b.WriteString("\x87R(") // TUPLE3, REDUCE, MARK
	integer(1)
	integer(n)
	integer(3 * 32 * 32)
	b.WriteByte(0x86) // TUPLE2
	b.WriteString("cnumpy\ndtype\n")
	str("u1")
	integer(0)
	integer(1)
	b.WriteString("\x87R(") // dtype("u1", 0, 1), MARK
	integer(3)
	str("|")
	b.WriteString("NNN")
	integer(-1)
	integer(-1)
	integer(0)
	b.WriteString("tb\x89") // TUPLE, BUILD, NEWFALSE
	str(string(pixels))
	b.WriteString("tb") // the array's state, BUILD
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		str(k)
		b.WriteString("](") // EMPTY_LIST, MARK
		for _, v := range labels[k] {
			integer(v)
		}
		b.WriteByte('e') // APPENDS
	}
	b.WriteString("u.") // SETITEMS, STOP
	return b.Bytes()
}

// Py2Names writes a meta file: a dict whose key (label_names,
// fine_label_names or coarse_label_names) lists the class names.
func Py2Names(key string, names []string) []byte {
	var b bytes.Buffer
	b.WriteString("\x80\x02}(")
	writeStr(&b, key)
	b.WriteString("](")
	for _, n := range names {
		writeStr(&b, n)
	}
	b.WriteString("eu.")
	return b.Bytes()
}

func writeStr(b *bytes.Buffer, s string) {
	if len(s) < 256 {
		b.WriteByte('U')
		b.WriteByte(byte(len(s)))
	} else {
		b.WriteByte('T')
		binary.Write(b, binary.LittleEndian, int32(len(s)))
	}
	b.WriteString(s)
}

// Tarball100 is cifar-100-python.tar.gz holding the given train and test
// batches and a meta file naming the 100 fine classes.
func Tarball100(train, test []byte, fineNames []string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"cifar-100-python/train", train},
		{"cifar-100-python/test", test},
		{"cifar-100-python/meta", Py2Names("fine_label_names", fineNames)},
	} {
		// Writing to memory does not fail.
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg})
		tw.Write(f.data)
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}
