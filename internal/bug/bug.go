// Package bug turns a panic, which is always a bug in gatepipe and never
// the user's fault, into an error that says so and carries the stack.
package bug

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
)

// Marker starts the message of every internal error, so that one that
// crossed a process boundary as text is still recognised.
const Marker = "internal error (a bug in gatepipe; please report it with this message)"

// Error is a recovered panic.
type Error struct {
	Value any
	Stack []byte
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: panic: %v\n%s", Marker, e.Value, e.Stack)
}

// Recover, deferred, turns a panic into an *Error stored in *err.
func Recover(err *error) {
	if r := recover(); r != nil {
		*err = &Error{Value: r, Stack: debug.Stack()}
	}
}

// Is reports whether err is, or reports as text, an internal error.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e) || (err != nil && IsMessage(err.Error()))
}

// IsMessage reports whether an error message is an internal error's.
func IsMessage(msg string) bool { return strings.Contains(msg, Marker) }
