package command

import (
	"math"
	"strconv"
	"strings"

	"github.com/gatepipe/gatepipe/formats/runmeta"
	"github.com/gatepipe/gatepipe/nodes"
)

// RunFile is written by gatepipe next to MetricsFile when an experiment
// finishes (train blocks and external trainers alike): the metadata a
// report shows for the run.
const RunFile = runmeta.File

// DeviceString describes an assignment for run metadata.
func DeviceString(a nodes.Assignment) string {
	s := "cpu x" + strconv.Itoa(max(a.CPUs, 1))
	if len(a.GPUs) > 0 {
		s = "gpu " + strings.Join(a.GPUs, ",") + " + " + s
	}
	return s
}

// WriteRunInfo fills in what env knows (version, node, action, device) and
// writes r to RunFile in env.OutDir.
func WriteRunInfo(env *nodes.Env, r runmeta.Info) error {
	r.Gatepipe, r.Node, r.ActionID, r.Device = env.Version, env.Addr.String(), env.ActionID, DeviceString(env.Devices)
	if r.Gatepipe == "" {
		r.Gatepipe = "dev"
	}
	return runmeta.Write(env.OutDir, r)
}

// experimentSeed returns the experiment config's top-level "seed" when it
// is a whole non-negative number.
func experimentSeed(config any) *uint64 {
	m, ok := config.(map[string]any)
	if !ok {
		return nil
	}
	v, ok := m["seed"].(float64) // encoding/json's number type
	if !ok || v < 0 || v > 1<<53 || v != math.Trunc(v) {
		return nil
	}
	seed := uint64(v)
	return &seed
}
