//go:build !linux

// Package procattr gives the process attributes gatepipe starts its
// children with: their own process group, so that cancelling reaches
// their children too.
package procattr

import "syscall"

// Child returns the attributes for a child process. Outside Linux there
// is no parent-death signal: a killed apply may leave its children.
func Child() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
