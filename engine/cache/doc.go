// Package cache is gatepipe's on-disk, content-addressed artifact store,
// after the design of the Go build cache.
//
// An ActionID is the hash of a complete description of one node run (kind,
// kind version, evaluated configuration, input output IDs, fingerprinted
// files). An OutputID is the hash of the output's manifest, which lists
// every output file with its size and SHA-256 plus the node's output value.
//
// Layout under the cache root:
//
//	actions/ab/<actionid>        index entry: "v1 <action> <output> <unixnano>\n"
//	                             followed by a copy of the output's manifest
//	objects/cd/<outputid>.json   manifest (its SHA-256 is the output ID)
//	objects/cd/<outputid>/       the output files
//	blobs/ef/<sha256>            downloaded files, keyed by their SHA-256
//	partial/                     interrupted downloads, resumed later
//	resume/<key>/                checkpoints of interrupted training, by node
//	locks/                       per-action lock files
//	tmp/                         work directories of running nodes
//	runs/                        run records
//
// Writes go to a temporary name, are fsynced and renamed, data before
// index, so a reader sees a complete entry or none. Any mismatch (missing
// file, wrong size, manifest hash) makes Get report a miss, never an error.
// The package imports only the standard library and a file lock.
package cache
