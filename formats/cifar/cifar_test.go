package cifar

import (
	"bytes"
	"strings"
	"testing"
)

func record(labels []byte, fill byte) []byte {
	r := append([]byte{}, labels...)
	return append(r, bytes.Repeat([]byte{fill}, Pixels)...)
}

func TestRead(t *testing.T) {
	data := append(record([]byte{3}, 1), record([]byte{7}, 2)...)
	b, err := Read(bytes.NewReader(data), CIFAR10, "data_batch_1.bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Labels) != 2 || b.Labels[0] != 3 || b.Labels[1] != 7 || b.Images[Pixels] != 2 {
		t.Fatalf("labels %v", b.Labels)
	}
	c100, err := Read(bytes.NewReader(record([]byte{19, 99}, 0)), CIFAR100, "train.bin")
	if err != nil || c100.Labels[0] != 99 || c100.Coarse[0] != 19 {
		t.Fatalf("cifar100: %v %v", c100, err)
	}
	_, err = Read(bytes.NewReader(data[:len(data)-5]), CIFAR10, "cut.bin")
	if err == nil || !strings.Contains(err.Error(), "cut.bin: byte 3073: truncated CIFAR record") {
		t.Fatalf("truncated: %v", err)
	}
	_, err = Read(bytes.NewReader(record([]byte{12}, 0)), CIFAR10, "bad.bin")
	if err == nil || !strings.Contains(err.Error(), "label 12 out of range") {
		t.Fatalf("bad label: %v", err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add(record([]byte{3}, 1), false)
	f.Add(record([]byte{1, 50}, 9), true)
	f.Fuzz(func(t *testing.T, data []byte, hundred bool) {
		v := CIFAR10
		if hundred {
			v = CIFAR100
		}
		b, err := Read(bytes.NewReader(data), v, "fuzz")
		if err == nil && len(b.Images) != len(b.Labels)*Pixels {
			t.Fatalf("%d image bytes for %d labels", len(b.Images), len(b.Labels))
		}
	})
}
