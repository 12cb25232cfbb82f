package main

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// cacheOpenDiags says that the cache at dir could not be opened (its
// directory cannot be made or written, say), with the cause, and how to
// point gatepipe at another: a diagnostic headed by what failed rather
// than asDiags's bare "Error".
func cacheOpenDiags(dir string, err error) hcl.Diagnostics {
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  "Cannot open the cache",
		Detail: fmt.Sprintf("Opening the cache %s: %v. Make the directory writable, or choose another with -cache-dir, "+
			"GATEPIPE_CACHE_DIR or the gatepipe block's cache_dir.", dir, err),
	}}
}
