package addrs

import "strings"

// ModulePath is the chain of module call names from the root module, e.g.
// ["tier", "inner"] for module.tier.module.inner. The root is nil.
// It is stored as a string to stay comparable.
type ModulePath string

// RootModule is the path of the root module.
const RootModule ModulePath = ""

// Child returns the path of the module call name inside m.
func (m ModulePath) Child(name string) ModulePath {
	if m == RootModule {
		return ModulePath("module." + name)
	}
	return ModulePath(string(m) + ".module." + name)
}

// IsRoot reports whether m is the root module.
func (m ModulePath) IsRoot() bool { return m == RootModule }

// String returns the path in traversal syntax ("" for the root).
func (m ModulePath) String() string { return string(m) }

// Prefix returns the path followed by a dot, or "" for the root, ready to be
// prepended to a module-relative address.
func (m ModulePath) Prefix() string {
	if m == RootModule {
		return ""
	}
	return string(m) + "."
}

// Parent returns the calling module's path and the call name, or ok=false
// for the root.
func (m ModulePath) Parent() (parent ModulePath, call string, ok bool) {
	if m == RootModule {
		return RootModule, "", false
	}
	s := string(m)
	i := strings.LastIndex(s, "module.")
	call = s[i+len("module."):]
	if i == 0 {
		return RootModule, call, true
	}
	return ModulePath(s[:i-1]), call, true
}

// Block names a node block: its kind (dataset, command, train, ...) and name.
type Block struct {
	Kind string
	Name string
}

// String returns kind.name.
func (b Block) String() string { return b.Kind + "." + b.Name }

// Instance returns the instance of b with key k.
func (b Block) Instance(k InstanceKey) Instance { return Instance{Block: b, Key: k} }

// Instance names one instance of a node block.
type Instance struct {
	Block Block
	Key   InstanceKey
}

// String returns kind.name or kind.name[key].
func (i Instance) String() string { return i.Block.String() + keyString(i.Key) }

// AbsInstance is an Instance inside a module.
type AbsInstance struct {
	Module   ModulePath
	Instance Instance
}

// String returns the full address, e.g. module.tier.train.x["cnn"].
func (a AbsInstance) String() string { return a.Module.Prefix() + a.Instance.String() }

// AbsBlock is a Block inside a module.
type AbsBlock struct {
	Module ModulePath
	Block  Block
}

// String returns the full address of the block.
func (a AbsBlock) String() string { return a.Module.Prefix() + a.Block.String() }
