// Package procattr gives the process attributes gatepipe starts its
// children with: their own process group, so that cancelling reaches
// their children too, and, on Linux, death with their parent, so that a
// killed apply leaves no orphan running.
package procattr

import "syscall"

// Child returns the attributes for a child process. Pdeathsig is sent
// when the thread that started the child exits; Go keeps its threads for
// the life of the process, so in practice when gatepipe dies.
func Child() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
