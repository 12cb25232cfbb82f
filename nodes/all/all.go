// Package all builds the registry of every built-in node kind.
package all

import (
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/command"
	"github.com/gatepipe/gatepipe/nodes/dataset"
	"github.com/gatepipe/gatepipe/nodes/episodesnode"
	"github.com/gatepipe/gatepipe/nodes/features"
	"github.com/gatepipe/gatepipe/nodes/predict"
	"github.com/gatepipe/gatepipe/nodes/probenode"
	"github.com/gatepipe/gatepipe/nodes/reportnode"
	"github.com/gatepipe/gatepipe/nodes/results"
	"github.com/gatepipe/gatepipe/nodes/search"
	"github.com/gatepipe/gatepipe/nodes/specs"
	"github.com/gatepipe/gatepipe/nodes/trainnode"
	"github.com/gatepipe/gatepipe/nodes/transfernode"
	"github.com/gatepipe/gatepipe/stdlib"
)

// Registry returns a new registry holding every built-in kind.
func Registry() *nodes.Registry {
	return nodes.NewRegistry(
		command.Kind{},
		dataset.Kind{},
		features.Kind{},
		search.Kind{Stdlib: stdlib.FS()},
		predict.Kind{Stdlib: stdlib.FS()},
		reportnode.Kind{Stdlib: stdlib.FS()},
		results.Kind{},
		specs.Encoder(), specs.Adapter(), specs.Recipe(), specs.Benchmark(),
		trainnode.Kind{},
		probenode.Kind{}, episodesnode.Kind{}, transfernode.Kind{},
	)
}
