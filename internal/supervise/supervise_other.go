//go:build !linux

package supervise

import (
	"os/exec"

	"github.com/gatepipe/gatepipe/internal/procattr"
)

// Wrap gives cmd its own process group; outside Linux there is no
// supervisor, and a killed apply may leave the command's children.
func Wrap(cmd *exec.Cmd) { cmd.SysProcAttr = procattr.Child() }
