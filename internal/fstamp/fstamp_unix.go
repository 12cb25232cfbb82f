//go:build unix

package fstamp

import (
	"io/fs"
	"syscall"
)

func of(info fs.FileInfo) (Stamp, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return Stamp{}, false
	}
	return Stamp{
		Size:  info.Size(),
		Mtime: info.ModTime().UnixNano(),
		Ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
		Ino:   st.Ino,
		Dev:   uint64(st.Dev),
	}, true
}

func links(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
