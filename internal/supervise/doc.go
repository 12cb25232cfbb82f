// Package supervise runs a command under a supervisor: gatepipe's own
// binary, re-executed, between gatepipe and the command. The supervisor
// is a Linux child subreaper with a parent-death signal, so that when
// gatepipe is killed (kill -9 included) or cancels the command, every
// process the command started goes with it: children, grandchildren that
// ignore SIGTERM, and those that left the process group or double-forked
// (they are re-parented to the supervisor, which finds them in /proc).
//
// A parent-death signal alone reaches only the direct child; a process
// group, only the processes that stay in it.
package supervise
