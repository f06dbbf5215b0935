#!/usr/bin/env bash
# Runs every Go fuzz target of the repository, one after the other, each for $FUZZTIME
# (default 10s; a duration like 5m or a count like 1000x) in its own package:
#
#   go test -run '^$' -fuzz '^FuzzName$' -fuzztime $FUZZTIME ./pkg
#
# Targets are discovered, not listed: every `func FuzzXxx(f *testing.F)` in a *_test.go file
# under the repository (new ones are picked up as they land). FUZZ_TARGETS, a regular
# expression, keeps only the targets whose name or package/name matches
# (FUZZ_TARGETS=FuzzAPIRequest, FUZZ_TARGETS=vswitchd/). FUZZ_PARALLEL sets -parallel (default:
# GOMAXPROCS). No -race: the race detector makes fuzzing ~10x slower.
#
# Every target runs even when an earlier one failed; the script exits 1 if any failed and
# prints, for each crash, the file the fuzzer wrote (PKG/testdata/fuzz/FuzzName/HASH) and the
# command that replays it. Commit that file next to the fix: it becomes a seed that plain
# `go test` runs from then on.
set -uo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
GO="${GO:-go}"
FUZZTIME="${FUZZTIME:-10s}"
FUZZ_TARGETS="${FUZZ_TARGETS:-.}"

# go test's own -timeout must outlast the fuzzing: FUZZTIME plus 10 minutes for building,
# the seed corpus and minimizing a crasher; none for counts (1000x).
case "$FUZZTIME" in
*s) timeout=$((${FUZZTIME%s} + 600))s ;;
*m) timeout=$((${FUZZTIME%m} * 60 + 600))s ;;
*h) timeout=$((${FUZZTIME%h} * 3600 + 600))s ;;
*) timeout=0 ;;
esac
if ! [[ "$FUZZTIME" =~ ^[0-9]+([smh]|x)$ ]]; then
	echo "fuzz: FUZZTIME=$FUZZTIME: want a whole number of s, m or h, or a count like 1000x" >&2
	exit 2
fi

# pkg<TAB>name for every fuzz target, sorted by package then name.
targets=$(grep -rIE --include='*_test.go' --exclude-dir=testdata --exclude-dir=.git \
	'^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
	sed -E 's#^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1\t\2#; s#^\./[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#.\t\1#' |
	sort -u)
if [ -z "$targets" ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi

parallel=()
if [ -n "${FUZZ_PARALLEL:-}" ]; then
	parallel=(-parallel "$FUZZ_PARALLEL")
fi

start=$(date +%s)
ran=0
failed=()
crashers=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT
while IFS=$'\t' read -r pkg name; do
	if ! [[ "$name" =~ $FUZZ_TARGETS || "$pkg/$name" =~ $FUZZ_TARGETS ]]; then
		continue
	fi
	ran=$((ran + 1))
	echo "=== fuzz $pkg $name ($FUZZTIME)"
	t0=$(date +%s)
	"$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -timeout "$timeout" "${parallel[@]}" "./$pkg" 2>&1 | tee "$log"
	status=${PIPESTATUS[0]}
	if [ "$status" -eq 0 ]; then
		echo "--- ok   $pkg $name ($(($(date +%s) - t0))s)"
		continue
	fi
	failed+=("$pkg $name")
	echo "--- FAIL $pkg $name ($(($(date +%s) - t0))s)"
	# "Failing input written to testdata/fuzz/FuzzName/HASH" (relative to the package).
	while read -r rel; do
		crashers+=("$pkg/$rel  (replay: go test -run '^$name/$(basename "$rel")\$' ./$pkg)")
	done < <(sed -nE 's#^.*Failing input written to (testdata/fuzz/[^ ]+).*$#\1#p' "$log")
done <<<"$targets"

echo
echo "fuzz: $ran target(s) in $(($(date +%s) - start))s, ${#failed[@]} failed"
if [ "$ran" -eq 0 ]; then
	echo "fuzz: no target matches FUZZ_TARGETS=$FUZZ_TARGETS" >&2
	exit 1
fi
if [ "${#failed[@]}" -gt 0 ]; then
	for f in "${failed[@]}"; do
		echo "FAIL: $f"
	done
	for c in "${crashers[@]}"; do
		echo "crasher: $c"
	done
	exit 1
fi
