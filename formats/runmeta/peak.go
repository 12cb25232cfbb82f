package runmeta

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// PeakRSS returns the calling process's peak resident memory in bytes, or
// 0 when it cannot tell. On Linux it reads VmHWM from /proc/self/status:
// getrusage's ru_maxrss carries over the parent's high-water mark through
// fork and exec, so an isolated node started by a large apply process
// would report the apply's memory, not its own.
func PeakRSS() int64 {
	if data, err := os.ReadFile("/proc/self/status"); err == nil {
		if v, ok := parseVmHWM(data); ok {
			return v
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		return ru.Maxrss * 1024 // kilobytes on Linux
	}
	return 0
}

// parseVmHWM finds "VmHWM:  1234 kB" in a /proc status file.
func parseVmHWM(status []byte) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		return kb * 1024, err == nil
	}
	return 0, false
}
