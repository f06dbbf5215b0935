#!/usr/bin/env bash
# Samples every running ovsplaned's memory every 2 s until interrupted, one line per daemon:
# VmRSS from /proc/PID/status and the Go runtime's go_memstats_* gauges (MB) and go_goroutines
# from the daemon's metrics endpoint (its --metrics-address, read from its command line).
# Used beside `make bench-scale` to see what the RSS is made of while the build runs
# (docs/benchmarks.md, "Scale without a memory limit"):
#
#   scripts/memsample.sh /tmp/memsample.log & make bench-scale; kill %1
set -uo pipefail
out=${1:-/dev/stdout}
[ "$out" = /dev/stdout ] || : >"$out"
while :; do
	for pid in $(pgrep -x ovsplaned); do
		addr=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -o -- '--metrics-address [^ ]*' | awk '{print $2}')
		rss=$(awk '/VmRSS/{print $2}' "/proc/$pid/status" 2>/dev/null)
		[ -n "$rss" ] || continue
		m=""
		if [ -n "$addr" ]; then
			m=$(curl -s --max-time 1 "http://$addr/metrics" |
				awk '/^go_memstats_(heap_inuse|heap_idle|heap_released|stack_inuse|alloc|next_gc)_bytes |^go_goroutines / {
					if ($1 == "go_goroutines") printf "%s=%d ", $1, $2; else printf "%s=%.1f ", $1, $2 / 1048576 }')
		fi
		echo "$(date +%T) pid=$pid rssMB=$((rss / 1024)) $m" >>"$out"
	done
	sleep 2
done
