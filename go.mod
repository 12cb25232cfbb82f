module github.com/gatepipe/gatepipe

go 1.26.8

require (
	github.com/agext/levenshtein v1.2.3
	github.com/dominikbraun/graph v0.23.0
	github.com/gofrs/flock v0.13.1
	github.com/google/go-cmp v0.7.0
	github.com/hashicorp/hcl/v2 v2.23.0
	github.com/rs/zerolog v1.35.1
	github.com/zclconf/go-cty v1.16.2
	golang.org/x/image v0.24.0
)

require (
	github.com/apparentlymart/go-textseg/v15 v15.0.0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/mitchellh/go-wordwrap v0.0.0-20150314170334-ad45545899c7 // indirect
	golang.org/x/mod v0.17.0 // indirect
	golang.org/x/sync v0.11.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.22.0 // indirect
	golang.org/x/tools v0.21.1-0.20240508182429-e35e4ccd0d2d // indirect
)
