#!/usr/bin/env bash
# Runs govulncheck on every package against an offline vulnerability database built from the
# pinned golang.org/x/vulndb module (its data/osv directory, indexed by the module's own
# cmd/indexdb), so the check needs only the Go module proxy and gives the same answer for the
# same pins. Exits non-zero when govulncheck finds a reachable advisory (its exit status 3) or
# the database cannot be built.
#
# Environment: VULNDB_VERSION and GOVULNCHECK_VERSION (set by the Makefile), VULNDB_DIR (where the
# built database is kept; default: a directory per version under the Go build cache's parent).
set -euo pipefail
: "${VULNDB_VERSION:?set VULNDB_VERSION (the Makefile pins it)}"
: "${GOVULNCHECK_VERSION:?set GOVULNCHECK_VERSION (the Makefile pins it)}"
GO=${GO:-go}
root=$(pwd) # the module to check: the current directory (make runs it from the root)
cache=$(dirname "$($GO env GOCACHE)")
db=${VULNDB_DIR:-$cache/ovsplane-vulndb/$VULNDB_VERSION}

if [ ! -s "$db/index/modules.json" ]; then
	echo "vulncheck: building the offline database from golang.org/x/vulndb@$VULNDB_VERSION"
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	# Outside any module, so the project's go.mod is neither read nor changed.
	src=$(cd "$work" && GOFLAGS=-mod=mod $GO mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
	mkdir -p "$(dirname "$db")"
	rm -rf "$db.tmp"
	(cd "$work" && GOFLAGS=-mod=mod $GO run "golang.org/x/vulndb/cmd/indexdb@$VULNDB_VERSION" \
		-vulns "$src/data/osv" -out "$db.tmp")
	rm -rf "$db" && mv "$db.tmp" "$db"
fi
echo "vulncheck: $(find "$db/ID" -name "*.json" | wc -l) advisories in $db (vulndb $VULNDB_VERSION)"
cd "$root"
$GO run "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION" -db "file://$db" ./...
