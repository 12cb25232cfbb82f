// Package fstamp describes a file as stat sees it: size, modification and
// change times, inode and device. Like git's index, gatepipe keeps such a
// stamp of a file it has read or stored and compares it later: any write
// to the file (even of the same size, even with its mtime put back)
// changes its ctime, and replacing it changes its inode, so a file whose
// stamp is unchanged has not been written since.
package fstamp

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// Stamp is what stat says of a file. The zero Stamp describes nothing.
type Stamp struct {
	Size, Mtime, Ctime int64
	Ino, Dev           uint64
}

// String is the stamp's text form, read back by Parse.
func (s Stamp) String() string {
	return fmt.Sprintf("%d %d %d %d %d", s.Size, s.Mtime, s.Ctime, s.Ino, s.Dev)
}

// Parse reads a stamp written by String.
func Parse(line string) (Stamp, bool) {
	f := strings.Fields(line)
	if len(f) != 5 {
		return Stamp{}, false
	}
	var s Stamp
	var errs [5]error
	s.Size, errs[0] = strconv.ParseInt(f[0], 10, 64)
	s.Mtime, errs[1] = strconv.ParseInt(f[1], 10, 64)
	s.Ctime, errs[2] = strconv.ParseInt(f[2], 10, 64)
	s.Ino, errs[3] = strconv.ParseUint(f[3], 10, 64)
	s.Dev, errs[4] = strconv.ParseUint(f[4], 10, 64)
	for _, err := range errs {
		if err != nil {
			return Stamp{}, false
		}
	}
	return s, true
}

// Of returns the stamp of a file from its FileInfo. ok is false where the
// platform gives no change time or inode (then nothing can be trusted
// from a stamp, and callers re-read the file).
func Of(info fs.FileInfo) (s Stamp, ok bool) { return of(info) }

// Links returns the file's hard-link count (1 where unknown).
func Links(info fs.FileInfo) uint64 { return links(info) }
