#!/usr/bin/env bash
# Generates Go code from protobuf definitions with protoc from Debian's protobuf-compiler
# (installed with apt-get when missing and running as root) and the generators pinned as tools
# in go.mod:
#   gen-proto.sh [OUT]            the ovsplaned API, api/proto into OUT (default api/gen),
#                                 with protoc-gen-go and protoc-gen-connect-go;
#   gen-proto.sh --plugins [OUT]  the plugin contract, plugins/api/proto into OUT (default
#                                 plugins/api/gen), with protoc-gen-go and protoc-gen-go-grpc.
# Called by `make proto` and by the tests that check the committed code is current.
set -euo pipefail
cd "$(dirname "$0")/.."
target=api
if [ "${1:-}" = "--plugins" ]; then
	target=plugins
	shift
fi
out=${1:-api/gen}
[ "$target" = plugins ] && out=${1:-plugins/api/gen}

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
mkdir -p "$out"
if [ "$target" = plugins ]; then
	go build -o "$bin/" google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc
	protoc -I plugins/api/proto \
		--plugin=protoc-gen-go="$bin/protoc-gen-go" --go_out="$out" --go_opt=paths=source_relative \
		--plugin=protoc-gen-go-grpc="$bin/protoc-gen-go-grpc" --go-grpc_out="$out" --go-grpc_opt=paths=source_relative \
		$(cd plugins/api/proto && find . -name '*.proto' | sort | sed 's|^\./||')
	exit 0
fi

go build -o "$bin/" google.golang.org/protobuf/cmd/protoc-gen-go connectrpc.com/connect/cmd/protoc-gen-connect-go
protoc -I api/proto \
	--plugin=protoc-gen-go="$bin/protoc-gen-go" --go_out="$out" --go_opt=paths=source_relative \
	--plugin=protoc-gen-connect-go="$bin/protoc-gen-connect-go" --connect-go_out="$out" --connect-go_opt=paths=source_relative \
	$(cd api/proto && find . -name '*.proto' | sort | sed 's|^\./||')
