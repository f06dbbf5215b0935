#!/usr/bin/python3
"""The ovsdbapp arm of BenchmarkChurn (bench/churn_test.go): port churn the way Neutron and os-vif
drive OVSDB.

One process, one ovsdbapp connection (ovsdbapp.schema.open_vswitch.impl_idl.OvsdbIdl over
ovsdbapp.backend.ovs_idl.connection.Connection, all tables registered, as os-vif does), and
--clients threads sharing it. Each request is one port in one transaction:

  create: add_port(bridge, name) + db_set(Interface, name, type=internal), check_error=True,
          then db_list(Interface, [name], ofport, error): the request is done when the port has
          an ofport > 0 and no error.
  delete: del_port(name, bridge, if_exists=False), check_error=True.

ovsdbapp's Open_vSwitch transactions (impl_idl.OvsVsctlTransaction) increment next_cfg and, after
the commit, block until ovs-vswitchd's cur_cfg reaches it, like ovs-vsctl without --no-wait. The
connection runs every transaction, that wait included, on its single connection thread behind a
one-slot queue, so the threads' transactions go one after the other: that is how a Neutron agent or
os-vif behaves too.

Timing starts once the connection has synchronised its replica of the database (a long-running
agent is already connected) and ends when the last thread is done. With --deadline D > 0 no
request starts once D seconds of that timing have passed; those in flight finish, and the phase is
"cut" when some ports were never started. Prints one JSON object on stdout: {"wall_s": float,
"latencies_s": [one per port done], "failed": int, "errors": [first few], "cut": bool,
"done_names": [the ports done, only when cut]}. Exit status 0 even when requests failed; the
caller checks "failed". Needs /usr/bin/python3 with python3-ovsdbapp (Debian 12).
"""

import argparse
import json
import queue
import sys
import threading
import time

from ovsdbapp.backend.ovs_idl import connection
from ovsdbapp.schema.open_vswitch import impl_idl


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", required=True, help="OVSDB endpoint, e.g. unix:/tmp/x/db.sock")
    p.add_argument("--bridge", default="br0")
    p.add_argument("--phase", choices=("create", "delete"), required=True)
    p.add_argument("--names", required=True, help="comma-separated port names")
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--timeout", type=int, default=600,
                   help="ovsdbapp connection timeout in seconds (queueing, commit and the wait "
                        "for ovs-vswitchd; os-vif's ovs_vsctl_timeout defaults to 120)")
    p.add_argument("--deadline", type=float, default=0,
                   help="seconds after the timing starts past which no request starts (0: none)")
    args = p.parse_args()
    if args.deadline < 0 or args.clients < 1:
        p.error("--deadline must be >= 0 and --clients >= 1")
    return args


def create(api, bridge, name):
    with api.transaction(check_error=True) as txn:
        txn.add(api.add_port(bridge, name, may_exist=False))
        txn.add(api.db_set("Interface", name, ("type", "internal")))
    rows = api.db_list("Interface", [name], columns=["ofport", "error"]).execute(check_error=True)
    if len(rows) != 1:
        raise RuntimeError("%d interfaces named %s after the commit" % (len(rows), name))
    ofport, error = rows[0]["ofport"], rows[0]["error"]
    # ovsdbapp returns optional columns as lists: [] when empty, [x] when set.
    if isinstance(ofport, list):
        ofport = ofport[0] if ofport else 0
    if isinstance(error, list):
        error = error[0] if error else ""
    if not ofport or ofport < 1 or error:
        raise RuntimeError("interface %s: ofport %r, error %r" % (name, ofport, error))


def delete(api, bridge, name):
    with api.transaction(check_error=True) as txn:
        txn.add(api.del_port(name, bridge=bridge, if_exists=False))


def main():
    args = parse_args()
    names = [n for n in args.names.split(",") if n]
    idl = connection.OvsdbIdl.from_server(args.db, "Open_vSwitch")
    conn = connection.Connection(idl=idl, timeout=args.timeout)
    api = impl_idl.OvsdbIdl(conn)  # starts the connection and waits for the first sync

    work = queue.Queue()
    for i, name in enumerate(names):
        work.put((i, name))
    latencies = [None] * len(names)
    errors = []
    lock = threading.Lock()
    op = create if args.phase == "create" else delete

    cut = threading.Event()

    def client():
        while True:
            if args.deadline > 0 and time.monotonic() - phase_start >= args.deadline:
                if not work.empty():
                    cut.set()
                return
            try:
                i, name = work.get_nowait()
            except queue.Empty:
                return
            start = time.monotonic()
            try:
                op(api, args.bridge, name)
            except Exception as e:  # report every failure, keep the other requests going
                with lock:
                    errors.append("%s %s: %s: %s" % (args.phase, name, type(e).__name__, e))
                continue
            latencies[i] = time.monotonic() - start

    threads = [threading.Thread(target=client, daemon=True) for _ in range(args.clients)]
    phase_start = time.monotonic()  # read by client() only after the threads start
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - phase_start
    conn.stop(timeout=10)
    out = {"wall_s": wall, "latencies_s": [x for x in latencies if x is not None],
           "failed": len(errors), "errors": errors[:10], "cut": cut.is_set()}
    if cut.is_set():
        out["done_names"] = [n for n, x in zip(names, latencies) if x is not None]
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
