package trainnode

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/train"
)

// The files a train node keeps in its resume directory: the training
// state after the last checkpointed iteration, and the log up to it.
const (
	stateFile   = "train_state.safetensors"
	logCopyFile = "log.jsonl"
	// autoCheckpointGap is the least time between two checkpoints when
	// the recipe leaves checkpoint_every unset: short runs write none.
	autoCheckpointGap = time.Minute
)

// Resumes: a train node checkpoints into its resume directory.
func (n *Node) Resumes() bool { return true }

// resumer builds the train.Resume of one run: it reads a checkpoint this
// configuration wrote (a damaged one, or one another configuration of the
// block wrote, is reported and removed: the run starts over), restores
// the log up to it into logPath, and saves new ones as every asks (nil:
// at validations, at most once a minute; 0: never).
func (n *Node) resumer(env *nodes.Env, logPath string) train.Resume {
	if env.ResumeDir == "" {
		return train.Resume{}
	}
	statePath := filepath.Join(env.ResumeDir, stateFile)
	copyPath := filepath.Join(env.ResumeDir, logCopyFile)
	r := train.Resume{
		Refused: func(err error) {
			env.Log.Warn().Err(err).Str("checkpoint", statePath).Msg("the checkpoint does not fit this model; training starts over")
		},
		Resumed: func(it, total int) {
			env.Log.Info().Msgf("resumed at iteration %d of %d", it, total)
			env.Progress.Update(int64(it), int64(total), "iterations")
		},
	}
	if st, err := n.readCheckpoint(env, statePath); err != nil {
		env.Log.Warn().Msg(err.Error())
		os.Remove(statePath)
	} else if st != nil {
		if err := copyLogUpTo(copyPath, logPath, st.Iteration); err != nil {
			env.Log.Warn().Err(err).Msg("the log before the checkpoint could not be restored")
		}
		r.From = st
	}
	r.Save = func(st *train.State) error {
		// The log first: a kill between the two leaves a log that runs
		// ahead of the state, which copyLogUpTo trims.
		if err := copyFileAtomic(logPath, copyPath); err != nil {
			return err
		}
		return train.WriteStateFile(statePath, st, map[string]string{"action": env.ActionID})
	}
	switch {
	case n.checkpointEvery == nil:
		last := time.Now()
		r.Due = func(it int) bool {
			if it%n.recipe.ValidateEvery != 0 || time.Since(last) < autoCheckpointGap {
				return false
			}
			last = time.Now()
			return true
		}
	default:
		r.Every = *n.checkpointEvery
	}
	return r
}

// readCheckpoint reads the state at path: nil when there is none, an
// error (to warn about) when it is damaged or belongs to another
// configuration.
func (n *Node) readCheckpoint(env *nodes.Env, path string) (*train.State, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	st, meta, err := train.ReadStateFile(path)
	if err != nil {
		return nil, &checkpointError{why: "is damaged (" + err.Error() + ")"}
	}
	if meta["action"] != env.ActionID {
		return nil, &checkpointError{why: "was written by another configuration of this block (action " + short(meta["action"]) + ", now " + short(env.ActionID) + ")",
			iteration: st.Iteration}
	}
	return st, nil
}

type checkpointError struct {
	why       string
	iteration int
}

func (e *checkpointError) Error() string {
	at := ""
	if e.iteration > 0 {
		at = " at iteration " + strconv.Itoa(e.iteration)
	}
	return "the checkpoint" + at + " " + e.why + ": not used, training starts over"
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	if id == "" {
		return "unknown"
	}
	return id
}

// copyLogUpTo writes to dst the lines of src whose iteration is at most
// last.
func copyLogUpTo(src, dst string, last int) error {
	in, err := os.Open(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e struct {
			Iteration int `json:"iteration"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Iteration > last {
			continue
		}
		out.Write(append(sc.Bytes(), '\n'))
	}
	if err := sc.Err(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyFileAtomic copies src to dst through a temporary file and a rename.
func copyFileAtomic(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
