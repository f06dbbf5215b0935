#!/usr/bin/env bash
# Generates the Go code of the ovsplaned API from api/proto into OUT (default api/gen):
# protoc from Debian's protobuf-compiler (installed with apt-get when missing and running as
# root), protoc-gen-go and protoc-gen-connect-go at the versions pinned as tools in go.mod.
# Called by `make proto` and by the test that checks the committed code is current.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-api/gen}

if ! command -v protoc >/dev/null 2>&1; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "gen-proto: protoc not found: install Debian's protobuf-compiler (apt-get install protobuf-compiler)" >&2
		exit 3
	fi
	echo "gen-proto: installing protobuf-compiler" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends protobuf-compiler >/dev/null 2>&1 ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends protobuf-compiler >/dev/null; }
fi

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" google.golang.org/protobuf/cmd/protoc-gen-go connectrpc.com/connect/cmd/protoc-gen-connect-go

mkdir -p "$out"
protoc -I api/proto \
	--plugin=protoc-gen-go="$bin/protoc-gen-go" --go_out="$out" --go_opt=paths=source_relative \
	--plugin=protoc-gen-connect-go="$bin/protoc-gen-connect-go" --connect-go_out="$out" --connect-go_opt=paths=source_relative \
	$(cd api/proto && find . -name '*.proto' | sort | sed 's|^\./||')
