module github.com/geoflow/geoflow/.ci/house

go 1.26

require (
	github.com/fzipp/gocyclo v0.6.0
	golang.org/x/tools v0.39.0
)

require (
	golang.org/x/mod v0.30.0 // indirect
	golang.org/x/sync v0.18.0 // indirect
)
