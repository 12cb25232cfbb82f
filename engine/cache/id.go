package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
)

// ID is a SHA-256 hash naming an action or an output.
type ID [32]byte

// ActionID identifies a repeatable computation.
type ActionID = ID

// OutputID identifies the content a computation produced.
type OutputID = ID

// String returns the ID in lower-case hex.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// Short returns the first 12 hex digits, for display.
func (id ID) Short() string { return id.String()[:12] }

// IsZero reports whether id is unset.
func (id ID) IsZero() bool { return id == ID{} }

// ParseID parses a hex ID.
func ParseID(s string) (ID, error) {
	var id ID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("invalid cache ID %q", s)
	}
	copy(id[:], b)
	return id, nil
}

// Hasher accumulates the description of an action. When debug output is
// set, every byte written is also copied there, to show why a key changed.
type Hasher struct {
	h     hash.Hash
	debug io.Writer
}

// NewHasher starts a hash whose input begins with name, so hashes of
// different purposes never collide.
func NewHasher(name string, debug io.Writer) *Hasher {
	h := &Hasher{h: sha256.New(), debug: debug}
	if debug != nil {
		fmt.Fprintf(debug, "HASH[%s]\n", name)
	}
	fmt.Fprintf(h, "gatepipe %s\x00", name)
	return h
}

// Write adds p to the hash.
func (h *Hasher) Write(p []byte) (int, error) {
	if h.debug != nil {
		fmt.Fprintf(h.debug, "HASH[+] %q\n", p)
	}
	return h.h.Write(p)
}

// Sum returns the ID.
func (h *Hasher) Sum() ID {
	var id ID
	h.h.Sum(id[:0])
	if h.debug != nil {
		fmt.Fprintf(h.debug, "HASH => %s\n", id)
	}
	return id
}

// FileSHA256 returns the SHA-256 and size of a file.
func FileSHA256(path string) (ID, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return ID{}, 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return ID{}, 0, err
	}
	var id ID
	h.Sum(id[:0])
	return id, n, nil
}
