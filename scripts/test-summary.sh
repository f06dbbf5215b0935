#!/usr/bin/env bash
# Summarises a `go test -json` stream read from stdin: per-package counts, skipped tests with
# their reasons, and a closing "N passed, N failed, N skipped" line. Exits 1 if anything failed.
set -euo pipefail
python3 -c '
import json, sys, collections
res = {}
out = collections.defaultdict(list)
pkgfail = set()
for line in sys.stdin:
    try:
        ev = json.loads(line)
    except ValueError:
        sys.stdout.write(line); continue
    pkg, test, act = ev.get("Package",""), ev.get("Test"), ev.get("Action")
    if act == "output":
        sys.stdout.write(ev.get("Output",""))
        if test: out[(pkg,test)].append(ev.get("Output",""))
    if test and act in ("pass","fail","skip"):
        res[(pkg,test)] = act
    if not test and act == "fail":
        pkgfail.add(pkg)
def kind(pkg):
    return "integration" if "/test/" in pkg else "unit"
counts = collections.Counter()
for (pkg,test),act in res.items():
    counts[(kind(pkg),act)] += 1
skipped = [(p,t) for (p,t),a in res.items() if a=="skip"]
print("\n==== summary ====")
for k in ("unit","integration"):
    print(f"{k:12s} passed {counts[(k,\"pass\")]:4d}  failed {counts[(k,\"fail\")]:4d}  skipped {counts[(k,\"skip\")]:4d}")
if skipped:
    print("skipped tests and why:")
    for p,t in sorted(skipped):
        why = [l.strip() for l in out[(p,t)] if "SKIP" not in l and l.strip() and not l.startswith("=== ")]
        print(f"  {p.split(\"/\",3)[-1]} {t}: {why[-1] if why else \"\"}")
for p in sorted(pkgfail):
    print(f"FAILED package: {p}")
npass = sum(v for (k,a),v in counts.items() if a=="pass")
nfail = sum(v for (k,a),v in counts.items() if a=="fail") + (1 if pkgfail and not any(a=="fail" for a in res.values()) else 0)
nskip = sum(v for (k,a),v in counts.items() if a=="skip")
print(f"{npass} passed, {nfail} failed, {nskip} skipped")
sys.exit(1 if nfail or pkgfail else 0)
'
