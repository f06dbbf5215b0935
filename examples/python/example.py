#!/usr/bin/python3
"""Plugs a vhost-user port into a bridge through ovsplaned's API, waits until ovs-vswitchd has
it, reads the state back, shows an error, and cleans up. Run it against a daemon:

    /usr/bin/python3 examples/python/example.py --socket /var/lib/ovsplane/ovsplaned.sock

Uses bridge br-py and port vm1-eth0 (--bridge, --port to change them). It prints one line per
step; test/apiclients runs it against a live daemon and checks them.
"""

import argparse
import sys

from ovsplane_client import DEFAULT_SOCKET, APIError, SwitchClient


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", default=DEFAULT_SOCKET, help="ovsplaned's API socket (api.listen)")
    ap.add_argument("--bridge", default="br-py")
    ap.add_argument("--port", default="vm1-eth0")
    args = ap.parse_args()
    c = SwitchClient(args.socket)
    br, port = args.bridge, args.port

    h = c.call("Health")
    print("health: version %s, mode %s, api %s" % (h.get("version"), h.get("mode"), h.get("apiVersion")))

    b = c.call("ApplyBridge", {"bridge": {"name": br, "datapath_type": "netdev"}})
    print("bridge %s: %s" % (br, b["bridge"]["status"]["state"]))

    p = c.call("ApplyPort", {"bridge": br, "port": {
        "name": port, "tag": 100,
        "external_ids": {"vm-id": "3f6c2a51-8e0d-4b7a-9c11-0d2e4f6a8b90"},
        "interfaces": [{"name": port, "type": "dpdkvhostuserclient",
                        "options": {"vhost-server-path": "/var/run/vm1/eth0.sock"},
                        "mtu_request": 9000}],
    }})
    print("port %s: %s" % (port, p["port"]["status"]["state"]))

    keys = ["port/" + port, "interface/" + port]
    w = c.call("WaitReady", {"keys": keys}, timeout=30)
    print("ready: " + " ".join("%s=%s" % (s["key"], s["state"]) for s in w["statuses"]))

    got = c.call("GetPort", {"name": port})["port"]
    iface = got["interfaces"][0]
    print("get: %s on %s tag %d ofport %d vm-id %s" % (
        got["spec"]["name"], got["bridge"], got["spec"]["tag"], iface.get("ofport", 0),
        got["spec"]["externalIds"]["vm-id"]))

    for msg in c.watch(timeout=30):
        keys_seen = sorted(s["key"] for s in msg.get("statuses", []))
        print("watch snapshot: %s" % " ".join(keys_seen))
        break

    try:
        c.call("GetPort", {"name": port + "-missing"})
        print("error: none (unexpected)")
    except APIError as e:
        print("error: %s" % e.code)

    try:
        c.call("ApplyPort", {"bridge": br, "port": {"name": "bad", "tag": 5000,
                                                     "interfaces": [{"name": "bad"}]}})
        print("bad tag: accepted (unexpected)")
    except APIError as e:
        print("bad tag: %s" % e.code)

    c.call("DeletePort", {"name": port})
    c.call("DeleteBridge", {"name": br})
    left = [s["key"] for s in c.call("ListStatus").get("statuses", [])
            if s["key"] in ("bridge/" + br, "port/" + port)]
    print("deleted: %s" % ("yes" if not left else "no, still " + " ".join(left)))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except APIError as e:
        print("ovsplaned: %s" % e, file=sys.stderr)
        sys.exit(1)
