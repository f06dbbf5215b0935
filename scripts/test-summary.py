#!/usr/bin/env python3
"""Summarise a `go test -json` stream read from stdin.

Echoes the tests' output as it arrives, then prints per-kind counts (unit: everything outside
test/; integration: test/...), the skipped tests with their reasons, failed packages, and a
closing "N passed, N failed, N skipped" line. Exits 1 if any test or package failed.

Each failed test is listed with the last messages it logged (the first line of each, so a
t.Fatalf stays visible even when a helper dumped daemon logs after it): a reader who sees only
the tail of the run still learns why it failed. A test failed by the race detector also gets the
first race report printed while it ran, cut to its access and goroutine headers and the frames in
this module, since "race detected during execution of test" alone does not say where.
"""
import collections
import json
import re
import sys

# A message a test logged: four spaces, then file.go:LINE: at the start of the line. Lines
# indented further are its continuation lines.
LOGGED = re.compile(r"^    \S+\.go:\d+: ")
# How many of a failed test's last messages the summary repeats, and how much of each.
REASONS_PER_TEST = 6
REASON_CHARS = 300
# How many failed tests the summary lists with their messages.
FAILED_LISTED = 20
# How many lines of a race report the summary repeats.
RACE_LINES = 40
MODULE = "github.com/ovsplane/ovsplane/"


def race_report(lines):
    """The first race report in a test's output, cut to what locates it: the access and
    goroutine headers ("Read at", "Previous write at", "Goroutine 7 (running) created at") and
    the frames of this module with the file:line under each. Empty if there is none."""
    out, inside, keep_next = [], False, False
    for l in lines:
        l = l.rstrip("\n")
        if "WARNING: DATA RACE" in l:
            inside = True
            out.append(l.strip())
            continue
        if not inside:
            continue
        if l.strip() == "==================":
            break
        s = l.strip()
        if keep_next:
            out.append("      " + s)
            keep_next = False
        elif s.endswith(":") and not s.startswith("/"):
            out.append("    " + s)
        elif MODULE in s:
            out.append("      " + s.replace(MODULE, ""))
            keep_next = True
    return out[:RACE_LINES]



def main():
    results = {}
    output = collections.defaultdict(list)
    failed_pkgs = set()
    for line in sys.stdin:
        try:
            ev = json.loads(line)
        except ValueError:
            sys.stdout.write(line)
            continue
        pkg, test, action = ev.get("Package", ""), ev.get("Test"), ev.get("Action")
        if action == "output":
            text = ev.get("Output", "")
            sys.stdout.write(text)
            if test:
                output[(pkg, test)].append(text)
        elif test and action in ("pass", "fail", "skip"):
            results[(pkg, test)] = action
        elif not test and action == "fail":
            failed_pkgs.add(pkg)
    sys.stdout.flush()

    def kind(pkg):
        return "integration" if "/test/" in pkg else "unit"

    counts = collections.Counter()
    for (pkg, _), action in results.items():
        counts[(kind(pkg), action)] += 1
    print("\n==== test summary ====")
    for k in ("unit", "integration"):
        print("%-12s passed %4d  failed %4d  skipped %4d" % (
            k, counts[(k, "pass")], counts[(k, "fail")], counts[(k, "skip")]))
    skipped = sorted(key for key, action in results.items() if action == "skip")
    if skipped:
        print("skipped, and why:")
        for pkg, test in skipped:
            # The reason is the first line the test logged with its file:line prefix
            # (t.Skipf's message); continuation lines follow it.
            lines = [l.strip() for l in output[(pkg, test)]
                     if l.startswith("    ") and not l.startswith("        ")]
            reason = lines[-1].split(": ", 1)[-1] if lines else "(no reason given)"
            print("  %s %s: %s" % (pkg.split("/", 3)[-1], test, reason))
    failed_tests = sorted(key for key, action in results.items() if action == "fail")
    if failed_tests:
        print("failed, and their last messages:")
        for pkg, test in failed_tests[:FAILED_LISTED]:
            print("  %s %s" % (pkg.split("/", 3)[-1], test))
            logged = [l.rstrip("\n") for l in output[(pkg, test)] if LOGGED.match(l)]
            # A helper's dump of a log file says only where the dump comes from.
            logged = [l for l in logged if ": lab: tail of " not in l]
            for l in logged[-REASONS_PER_TEST:]:
                print("    %s" % l.strip()[:REASON_CHARS])
            for l in race_report(output[(pkg, test)]):
                print("    %s" % l[:REASON_CHARS])
        if len(failed_tests) > FAILED_LISTED:
            print("  ... and %d more" % (len(failed_tests) - FAILED_LISTED))
    for pkg in sorted(failed_pkgs):
        print("FAILED package: %s" % pkg)
    passed = sum(v for (_, a), v in counts.items() if a == "pass")
    failed = sum(v for (_, a), v in counts.items() if a == "fail")
    if failed_pkgs and failed == 0:
        failed = len(failed_pkgs)  # a package that failed to build or panicked outside a test
    skipped_n = sum(v for (_, a), v in counts.items() if a == "skip")
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped_n))
    return 1 if failed or failed_pkgs else 0


if __name__ == "__main__":
    sys.exit(main())
