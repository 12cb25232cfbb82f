package cache

import (
	"encoding/json"
	"fmt"
)

// partAction is the action ID a part key is stored under: a hash of the
// key in its own namespace, so it never meets a node's action ID.
func partAction(key string) ActionID {
	h := NewHasher("part", nil)
	fmt.Fprintf(h, "part %s\n", key)
	return h.Sum()
}

// partValue is the value stored with a part: its key, so that listings
// can tell a part from a node's output.
type partValue struct {
	Part  string `json:"part"`
	Label string `json:"label"`
}

// Part returns the directory of the part stored under key, and whether
// an intact one is there. Parts are whole directories a node keeps for
// reuse across configurations of itself (one training seed of several);
// gc treats them as any entry.
func (c *Cache) Part(key string) (string, bool) {
	_, _, dir, err := c.GetOutput(partAction(key))
	return dir, err == nil
}

// StorePart moves dir into the cache as the part key and returns its
// directory there; label says what it is in listings ("train.x seed 1").
func (c *Cache) StorePart(key, label, dir string) (string, error) {
	value, err := json.Marshal(partValue{Part: key, Label: label})
	if err != nil {
		return "", err
	}
	o, err := c.Put(partAction(key), dir, value)
	if err != nil {
		return "", fmt.Errorf("storing part %s: %w", key, err)
	}
	return c.objectDir(o), nil
}

// partLabel returns the label of a stored value that is a part's, and
// whether it is one.
func partLabel(value []byte) (string, bool) {
	var v partValue
	if len(value) == 0 || value[0] != '{' || json.Unmarshal(value, &v) != nil || v.Part == "" {
		return "", false
	}
	return v.Label, true
}
