package specs

import (
	"testing"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
)

// TestInstanceNamesTellInstancesApart: a block with for_each or count
// names each instance with its key, so that five encoders of one block
// are five models in a results table, not five rows named alike.
func TestInstanceNamesTellInstancesApart(t *testing.T) {
	for _, tc := range []struct {
		key  addrs.InstanceKey
		want string
	}{
		{addrs.NoKey, "pretrained"},
		{addrs.StringKey("cnn"), "pretrained[cnn]"},
		{addrs.IntKey(2), "pretrained[2]"},
	} {
		decl := nodes.Decl{Addr: addrs.AbsInstance{Instance: addrs.Block{Kind: "encoder", Name: "pretrained"}.Instance(tc.key)}}
		if got := InstanceName(decl); got != tc.want {
			t.Errorf("key %v: %q, want %q", tc.key, got, tc.want)
		}
	}
}
