// Package sources resolves and downloads the remote files a pipeline
// declares: plain URLs, Hugging Face dataset repositories (pinned to a
// commit, files listed by the Hub's tree API with their published LFS
// SHA-256) and Kaggle downloads. It keeps the lock file that pins every
// checksum not declared in the configuration (gatepipe.lock.hcl), maps
// URLs to a mirror, reads credentials from the usual places without ever
// putting them in a cache key, log or record, and can refuse the network
// altogether (offline mode).
package sources
