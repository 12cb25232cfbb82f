// Package devices discovers the machine's schedulable devices: CPU cores
// and NVIDIA GPUs (from nvidia-smi, honouring CUDA_VISIBLE_DEVICES).
package devices

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// GPU is one NVIDIA GPU.
type GPU struct {
	// ID is what CUDA_VISIBLE_DEVICES should name: the index, or the UUID
	// when the parent's CUDA_VISIBLE_DEVICES used UUIDs.
	ID        string
	Index     string
	UUID      string
	Name      string
	MemoryMiB int
}

// Inventory is what was found.
type Inventory struct {
	CPUs int
	GPUs []GPU
	// Note explains what discovery saw, e.g. that nvidia-smi is missing.
	Note string
}

// Discover lists the CPU cores and the NVIDIA GPUs nvidia-smi reports,
// restricted to (and ordered like) cudaVisible when it is set. A missing
// nvidia-smi means no GPU, not an error.
func Discover(ctx context.Context, cudaVisible string, visibleSet bool) (Inventory, error) {
	inv := Inventory{CPUs: runtime.NumCPU()}
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		inv.Note = "nvidia-smi not found: no GPUs"
		return inv, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader").Output()
	if err != nil {
		return inv, fmt.Errorf("nvidia-smi: %w", err)
	}
	gpus, err := ParseNvidiaSMI(out)
	if err != nil {
		return inv, err
	}
	if visibleSet {
		gpus = FilterVisible(gpus, cudaVisible)
		inv.Note = "restricted by CUDA_VISIBLE_DEVICES=" + cudaVisible
	}
	inv.GPUs = gpus
	return inv, nil
}

// ParseNvidiaSMI reads `nvidia-smi --query-gpu=index,uuid,name,memory.total
// --format=csv,noheader` output.
func ParseNvidiaSMI(out []byte) ([]GPU, error) {
	r := csv.NewReader(bytes.NewReader(out))
	r.TrimLeadingSpace = true
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi output: %w", err)
	}
	var gpus []GPU
	for i, rec := range recs {
		if len(rec) != 4 {
			return nil, fmt.Errorf("nvidia-smi line %d: want index, uuid, name, memory; got %q", i+1, strings.Join(rec, ","))
		}
		mem := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rec[3]), "MiB"))
		m, err := strconv.Atoi(mem)
		if err != nil {
			return nil, fmt.Errorf("nvidia-smi line %d: memory %q", i+1, rec[3])
		}
		idx := strings.TrimSpace(rec[0])
		gpus = append(gpus, GPU{ID: idx, Index: idx, UUID: strings.TrimSpace(rec[1]), Name: strings.TrimSpace(rec[2]), MemoryMiB: m})
	}
	return gpus, nil
}

// FilterVisible keeps the GPUs CUDA_VISIBLE_DEVICES names (by index or
// UUID prefix), in its order; an empty value or -1 hides them all.
func FilterVisible(gpus []GPU, visible string) []GPU {
	var out []GPU
	for _, v := range strings.Split(visible, ",") {
		v = strings.TrimSpace(v)
		if v == "" || v == "-1" {
			break
		}
		for _, g := range gpus {
			if g.Index == v {
				out = append(out, g)
				break
			}
			if strings.HasPrefix(v, "GPU-") && strings.HasPrefix(g.UUID, v) {
				g.ID = g.UUID
				out = append(out, g)
				break
			}
		}
	}
	return out
}
