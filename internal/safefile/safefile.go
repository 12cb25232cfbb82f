// Package safefile reads files named in user input without letting the
// name exhaust memory: only regular files, and only up to a size limit
// (so "/dev/zero", a FIFO or a 50 GB file give an error, not a hang).
package safefile

import (
	"fmt"
	"io"
	"os"
)

// Limits on what gatepipe reads from a file named in configuration.
const (
	// MaxConfigBytes bounds a configuration or variables file.
	MaxConfigBytes int64 = 16 << 20
	// MaxFileFuncBytes bounds the file() function's result.
	MaxFileFuncBytes int64 = 16 << 20
	// MaxHashBytes bounds what filesha256() hashes.
	MaxHashBytes int64 = 64 << 30
)

// Open opens name for reading if it is a regular file of at most max
// bytes.
func Open(name string, max int64) (*os.File, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s is not a regular file (%s)", name, Kind(info.Mode()))
	}
	if info.Size() > max {
		f.Close()
		return nil, 0, fmt.Errorf("%s has %d bytes, more than the %d this reads", name, info.Size(), max)
	}
	return f, info.Size(), nil
}

// ReadFile reads a regular file of at most max bytes. A file that grows
// past max while it is read is an error too.
func ReadFile(name string, max int64) ([]byte, error) {
	f, size, err := Open(name, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, 0, size+1)
	data, err = readAllLimited(f, data, max)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}

func readAllLimited(r io.Reader, buf []byte, max int64) ([]byte, error) {
	lr := &io.LimitedReader{R: r, N: max + 1}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, fmt.Errorf("more than %d bytes", max)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Kind names what a file that is not a regular file is, for messages: "a
// directory", "a character device", "a named pipe (FIFO)", ...
func Kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}
