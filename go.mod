module github.com/ovsplane/ovsplane

go 1.26.8

require github.com/ovn-kubernetes/libovsdb v0.8.1

require golang.org/x/text v0.22.0 // indirect

tool github.com/ovn-kubernetes/libovsdb/cmd/modelgen
