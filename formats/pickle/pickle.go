// Package pickle runs the subset of Python's pickle machine (protocols
// 2-5) that data files use: dicts, lists, tuples, strings, bytes,
// integers, floats, booleans, None, the memo, persistent IDs, and only
// the globals the caller answers for (a pickle can name any Python
// callable: nothing else is ever called). Every length is checked against
// the bytes left before anything is allocated, so a damaged file fails
// quickly with the offset at fault.
package pickle

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
)

// Options answer what a pickle asks of its environment.
type Options struct {
	// Global returns the object a GLOBAL names, or an error refusing it.
	Global func(module, name string) (any, error)
	// PersistentLoad returns the object a persistent ID names (BINPERSID;
	// torch.save names its storages so); nil refuses persistent IDs.
	PersistentLoad func(pid any) (any, error)
}

// Unpickle runs the pickle in data and returns the object it builds.
func Unpickle(data []byte, o Options) (any, error) {
	m := &machine{data: data, memo: map[int]any{}, opts: o}
	v, err := m.run()
	if err != nil {
		return nil, fmt.Errorf("byte %d: %w", m.pos, err)
	}
	return v, nil
}

// Tuple is a Python tuple; List a Python list (a pointer: APPEND mutates
// the list the stack holds); Dict a Python dict with text keys (other
// keys are dropped), Keys in insertion order.
type (
	Tuple []any
	List  struct{ Items []any }
	Dict  struct {
		Items map[string]any
		Keys  []string
		// State is what BUILD gave a dict subclass (an OrderedDict's
		// attributes, as torch's state dicts carry _metadata).
		State any
	}
	mark struct{}
)

// SetState keeps a dict subclass's BUILD state.
func (d *Dict) SetState(state any) error {
	d.State = state
	return nil
}

// Callable is a global the pickle may call (REDUCE).
type Callable interface{ Call(args Tuple) (any, error) }

// Settable receives BUILD's state.
type Settable interface{ SetState(state any) error }

type machine struct {
	data  []byte
	pos   int
	stack []any
	memo  map[int]any
	opts  Options
}

func (m *machine) take(n int) ([]byte, error) {
	if n < 0 || n > len(m.data)-m.pos {
		return nil, fmt.Errorf("%d bytes declared, %d left", n, len(m.data)-m.pos)
	}
	b := m.data[m.pos : m.pos+n]
	m.pos += n
	return b, nil
}

func (m *machine) uint(n int) (int, error) {
	b, err := m.take(n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	if v > uint64(len(m.data)) && n > 2 {
		// A length or memo index beyond the file cannot be right.
		return 0, fmt.Errorf("value %d beyond the file's %d bytes", v, len(m.data))
	}
	return int(v), nil
}

func (m *machine) line() (string, error) {
	i := bytes.IndexByte(m.data[m.pos:], '\n')
	if i < 0 {
		return "", fmt.Errorf("unterminated line")
	}
	s := string(m.data[m.pos : m.pos+i])
	m.pos += i + 1
	return s, nil
}

func (m *machine) pop() (any, error) {
	if len(m.stack) == 0 {
		return nil, fmt.Errorf("stack underflow")
	}
	v := m.stack[len(m.stack)-1]
	m.stack = m.stack[:len(m.stack)-1]
	if _, ok := v.(mark); ok {
		return nil, fmt.Errorf("unexpected mark")
	}
	return v, nil
}

// popMark pops the items above the topmost mark, and the mark.
func (m *machine) popMark() ([]any, error) {
	for i := len(m.stack) - 1; i >= 0; i-- {
		if _, ok := m.stack[i].(mark); ok {
			items := append([]any(nil), m.stack[i+1:]...)
			m.stack = m.stack[:i]
			return items, nil
		}
	}
	return nil, fmt.Errorf("no mark")
}

func (m *machine) popN(n int) (Tuple, error) {
	if len(m.stack) < n {
		return nil, fmt.Errorf("stack underflow")
	}
	t := append(Tuple(nil), m.stack[len(m.stack)-n:]...)
	m.stack = m.stack[:len(m.stack)-n]
	for _, v := range t {
		if _, ok := v.(mark); ok {
			return nil, fmt.Errorf("unexpected mark")
		}
	}
	return t, nil
}

func (m *machine) run() (any, error) {
	for m.pos < len(m.data) {
		op := m.data[m.pos]
		m.pos++
		if err := m.step(op); err != nil {
			if err == errStop {
				return m.pop()
			}
			return nil, err
		}
	}
	return nil, fmt.Errorf("no STOP: the file ends early")
}

var errStop = fmt.Errorf("stop")

// step runs one opcode.
func (m *machine) step(op byte) error {
	switch op {
	case 0x80: // PROTO
		_, err := m.take(1)
		return err
	case 0x95: // FRAME: a length hint
		_, err := m.take(8)
		return err
	case '.':
		return errStop
	case '(':
		m.stack = append(m.stack, mark{})
	case '}':
		m.stack = append(m.stack, &Dict{Items: map[string]any{}})
	case ']':
		m.stack = append(m.stack, &List{})
	case ')':
		m.stack = append(m.stack, Tuple{})
	case 'q', 'r', 0x94, 'h', 'j':
		return m.memoOp(op)
	case 'R', 'b':
		return m.call(op)
	case 'Q': // BINPERSID
		return m.persistentLoad()
	case 't':
		items, err := m.popMark()
		m.stack = append(m.stack, Tuple(items))
		return err
	case 0x85, 0x86, 0x87: // TUPLE1..3
		t, err := m.popN(int(op - 0x84))
		m.stack = append(m.stack, t)
		return err
	case 'a', 'e', 's', 'u':
		return m.fill(op)
	case 'c': // GLOBAL
		module, err := m.line()
		if err != nil {
			return err
		}
		name, err := m.line()
		if err != nil {
			return err
		}
		return m.pushGlobal(module, name)
	case 0x93: // STACK_GLOBAL
		t, err := m.popN(2)
		if err != nil {
			return err
		}
		module, ok1 := t[0].(string)
		name, ok2 := t[1].(string)
		if !ok1 || !ok2 {
			return fmt.Errorf("STACK_GLOBAL of %T, %T", t[0], t[1])
		}
		return m.pushGlobal(module, name)
	default:
		return m.pushValue(op)
	}
	return nil
}

// memoOp stores the top of the stack in the memo, or pushes a memo entry.
func (m *machine) memoOp(op byte) error {
	switch op {
	case 'q', 'r', 0x94: // BINPUT, LONG_BINPUT, MEMOIZE
		if len(m.stack) == 0 {
			return fmt.Errorf("memo of an empty stack")
		}
		i := len(m.memo)
		if op != 0x94 {
			n := 1
			if op == 'r' {
				n = 4
			}
			var err error
			if i, err = m.uint(n); err != nil {
				return err
			}
		}
		m.memo[i] = m.stack[len(m.stack)-1]
	case 'h', 'j': // BINGET, LONG_BINGET
		n := 1
		if op == 'j' {
			n = 4
		}
		i, err := m.uint(n)
		if err != nil {
			return err
		}
		v, ok := m.memo[i]
		if !ok {
			return fmt.Errorf("memo %d is empty", i)
		}
		m.stack = append(m.stack, v)
	}
	return nil
}

// call runs REDUCE (a global called with a tuple) and BUILD (state set
// on the object below it).
func (m *machine) call(op byte) error {
	switch op {
	case 'R': // REDUCE
		args, err := m.pop()
		if err != nil {
			return err
		}
		f, err := m.pop()
		if err != nil {
			return err
		}
		t, ok1 := args.(Tuple)
		c, ok2 := f.(Callable)
		if !ok1 || !ok2 {
			return fmt.Errorf("REDUCE of %T with %T", f, args)
		}
		v, err := c.Call(t)
		m.stack = append(m.stack, v)
		return err
	case 'b': // BUILD
		state, err := m.pop()
		if err != nil {
			return err
		}
		if len(m.stack) == 0 {
			return fmt.Errorf("BUILD without an object")
		}
		s, ok := m.stack[len(m.stack)-1].(Settable)
		if !ok {
			return fmt.Errorf("BUILD of %T", m.stack[len(m.stack)-1])
		}
		return s.SetState(state)
	}
	return nil
}

// pushValue runs an opcode that pushes a value: None, a boolean, an
// integer or a string.
func (m *machine) pushValue(op byte) error {
	switch op {
	case 'N':
		m.stack = append(m.stack, nil)
	case 0x88, 0x89: // NEWTRUE, NEWFALSE
		m.stack = append(m.stack, op == 0x88)
	case 'K', 'M': // BININT1, BININT2
		n := 1
		if op == 'M' {
			n = 2
		}
		v, err := m.uint(n)
		m.stack = append(m.stack, int64(v))
		return err
	case 'G': // BINFLOAT: a big-endian float64
		b, err := m.take(8)
		if err != nil {
			return err
		}
		m.stack = append(m.stack, math.Float64frombits(binary.BigEndian.Uint64(b)))
	case 'J': // BININT
		b, err := m.take(4)
		if err != nil {
			return err
		}
		m.stack = append(m.stack, int64(int32(binary.LittleEndian.Uint32(b))))
	case 0x8a: // LONG1
		n, err := m.uint(1)
		if err != nil {
			return err
		}
		b, err := m.take(n)
		if err != nil {
			return err
		}
		return m.pushLong(b)
	case 'U', 'C', 0x8c: // SHORT_BINSTRING, SHORT_BINBYTES, SHORT_BINUNICODE
		return m.pushText(op, 1)
	case 'T', 'B', 'X': // BINSTRING, BINBYTES, BINUNICODE
		return m.pushText(op, 4)
	case 0x8e, 0x8d: // BINBYTES8, BINUNICODE8
		return m.pushText(op, 8)
	default:
		return fmt.Errorf("pickle opcode 0x%02x is not one a data file uses", op)
	}
	return nil
}

func (m *machine) pushText(op byte, lenBytes int) error {
	n, err := m.uint(lenBytes)
	if err != nil {
		return err
	}
	b, err := m.take(n)
	if err != nil {
		return err
	}
	switch op {
	case 'C', 'B', 0x8e: // bytes
		m.stack = append(m.stack, append([]byte(nil), b...))
	default: // Python 2 str (raw bytes) or unicode (UTF-8)
		m.stack = append(m.stack, string(b))
	}
	return nil
}

func (m *machine) pushLong(b []byte) error {
	if len(b) > 8 {
		return fmt.Errorf("integer of %d bytes", len(b))
	}
	le := make([]byte, len(b))
	for i := range b {
		le[len(b)-1-i] = b[i]
	}
	v := new(big.Int).SetBytes(le)
	if len(b) > 0 && b[len(b)-1]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	m.stack = append(m.stack, v.Int64())
	return nil
}

// fill runs APPEND, APPENDS, SETITEM and SETITEMS.
func (m *machine) fill(op byte) error {
	var items []any
	var err error
	if op == 'a' || op == 's' {
		n := 1
		if op == 's' {
			n = 2
		}
		var t Tuple
		t, err = m.popN(n)
		items = t
	} else {
		items, err = m.popMark()
	}
	if err != nil {
		return err
	}
	if len(m.stack) == 0 {
		return fmt.Errorf("nothing to fill")
	}
	switch c := m.stack[len(m.stack)-1].(type) {
	case *List:
		if op != 'a' && op != 'e' {
			return fmt.Errorf("SETITEM on a list")
		}
		c.Items = append(c.Items, items...)
	case *Dict:
		if op != 's' && op != 'u' || len(items)%2 != 0 {
			return fmt.Errorf("APPEND on a dict")
		}
		for i := 0; i < len(items); i += 2 {
			if k, ok := Text(items[i]); ok {
				if _, had := c.Items[k]; !had {
					c.Keys = append(c.Keys, k)
				}
				c.Items[k] = items[i+1]
			}
		}
	default:
		return fmt.Errorf("filling a %T", c)
	}
	return nil
}

func (m *machine) pushGlobal(module, name string) error {
	if m.opts.Global == nil {
		return fmt.Errorf("the pickle names %s.%s, and no global is allowed", module, name)
	}
	g, err := m.opts.Global(module, name)
	m.stack = append(m.stack, g)
	return err
}

// persistentLoad runs BINPERSID: the persistent ID on the stack becomes
// the object the caller gives for it.
func (m *machine) persistentLoad() error {
	pid, err := m.pop()
	if err != nil {
		return err
	}
	if m.opts.PersistentLoad == nil {
		return fmt.Errorf("the pickle has a persistent ID, which this file type does not use")
	}
	v, err := m.opts.PersistentLoad(pid)
	m.stack = append(m.stack, v)
	return err
}

// Text is a pickled str (Python 2), unicode or bytes as a Go string.
func Text(v any) (string, bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case []byte:
		return string(s), true
	}
	return "", false
}
