#!/usr/bin/python3
"""Plug or unplug one VIF with os-vif's OVS plugin, the way Nova does (test/lab/osvif.go).

Reads one JSON object (at most 64 KiB) on stdin, written by lab.OSVIFPlug / lab.OSVIFUnplug:

  {"op": "plug"|"unplug", "ovsdb": "unix:/…/db.sock", "timeout_s": 1..600,
   "backend": "native"|"vsctl" (optional, default native),
   "vif": {"kind": "vhostuser"|"ovs", "id": UUID, "address": MAC, "instance_uuid": UUID,
           "instance_name": str, "bridge": str, "datapath_type": str, "vhost_mode": "server"|
           "client", "socket_path": str, "mtu": int, "network_id": UUID}}

and calls os_vif.plug / os_vif.unplug with the objects Nova builds from a Neutron binding:
VIFVHostUser (plugin "ovs", port profile VIFPortProfileOpenVSwitch) for "vhostuser", VIFOpenVSwitch
with create_port=True for "ovs". os-vif's OVS plugin then writes the Port and Interface rows in one
ovsdbapp transaction over the native OVSDB backend (or one ovs-vsctl command line, the first
found on PATH, with backend "vsctl"), with external_ids iface-id, iface-status,
attached-mac and vm-uuid. The Go side validates every field first; this script checks the shape
again and refuses anything else.

os-vif runs its privileged helpers (set_device_mtu, delete_net_dev) through oslo.privsep, whose
daemon Nova starts with sudo. Here they run in this process instead (set_client_mode(False)): they
only act on a kernel netdev of the port's name, and there is none for a vhost-user port.

Prints one JSON object on stdout: {"ok": true, "port": name} or {"ok": false, "error": text};
exit status 0 on success, 1 on failure, 2 on bad input. Needs Debian's /usr/bin/python3 with
python3-os-vif and python3-ovsdbapp.
"""

import json
import os
import sys

MAX_INPUT = 64 * 1024
KINDS = ("vhostuser", "ovs")
VIF_KEYS = {"kind", "id", "address", "instance_uuid", "instance_name", "bridge", "datapath_type",
            "vhost_mode", "socket_path", "mtu", "network_id"}


# The reply goes to the real stdout; everything else that writes to sys.stdout (oslo.log's
# default handler among them) goes to stderr, so stdout carries exactly one JSON object.
REPLY = sys.stdout
sys.stdout = sys.stderr


def reply(code, obj):
    json.dump(obj, REPLY)
    REPLY.write("\n")
    REPLY.flush()
    sys.stderr.flush()
    # os._exit, not sys.exit: after OVSDB went away, ovsdbapp's connection thread keeps
    # reconnecting and the interpreter's shutdown would wait for it forever.
    os._exit(code)


def fail(code, msg):
    reply(code, {"ok": False, "error": msg})


def read_request():
    data = sys.stdin.buffer.read(MAX_INPUT + 1)
    if len(data) > MAX_INPUT:
        fail(2, "input longer than %d bytes" % MAX_INPUT)
    try:
        req = json.loads(data)
    except ValueError as e:
        fail(2, "input is not JSON: %s" % e)
    if not isinstance(req, dict) or not {"op", "ovsdb", "timeout_s", "vif"} <= set(req) <= {
            "op", "ovsdb", "timeout_s", "vif", "backend"}:
        fail(2, "input must be an object with op, ovsdb, timeout_s, vif and optionally backend")
    if req.setdefault("backend", "native") not in ("native", "vsctl"):
        fail(2, "backend %r: want native or vsctl" % (req["backend"],))
    if req["op"] not in ("plug", "unplug"):
        fail(2, "op %r: want plug or unplug" % (req["op"],))
    if not isinstance(req["ovsdb"], str) or not req["ovsdb"]:
        fail(2, "ovsdb: want a non-empty endpoint string")
    t = req["timeout_s"]
    if not isinstance(t, int) or isinstance(t, bool) or not 1 <= t <= 600:
        fail(2, "timeout_s %r: want an integer in 1..600" % (t,))
    vif = req["vif"]
    if not isinstance(vif, dict) or not set(vif) <= VIF_KEYS:
        fail(2, "vif: want an object with keys among %s" % sorted(VIF_KEYS))
    if vif.get("kind") not in KINDS:
        fail(2, "vif.kind %r: want one of %s" % (vif.get("kind"), KINDS))
    for k in VIF_KEYS - {"mtu"}:
        if not isinstance(vif.get(k, ""), str):
            fail(2, "vif.%s: want a string" % k)
    mtu = vif.get("mtu", 0)
    if not isinstance(mtu, int) or isinstance(mtu, bool) or not 0 <= mtu <= 65535:
        fail(2, "vif.mtu %r: want an integer in 0..65535" % (mtu,))
    return req


def build(v):
    from os_vif import objects

    network = objects.network.Network(id=v["network_id"], bridge=v["bridge"])
    if v.get("mtu"):
        network.mtu = v["mtu"]
    profile = objects.vif.VIFPortProfileOpenVSwitch(interface_id=v["id"])
    if v.get("datapath_type"):
        profile.datapath_type = v["datapath_type"]
    common = dict(id=v["id"], address=v["address"], network=network, plugin="ovs",
                  port_profile=profile, active=True)
    if v["kind"] == "vhostuser":
        vif = objects.vif.VIFVHostUser(mode=v["vhost_mode"], path=v["socket_path"], **common)
        # os-vif names the port itself: "vhu" + the first 11 characters of the port id.
        from vif_plug_ovs import ovs
        vif.vif_name = ovs.OvsPlugin.gen_port_name("vhu", v["id"])
    else:
        profile.create_port = True
        vif = objects.vif.VIFOpenVSwitch(vif_name="tap" + v["id"][:11], bridge_name=v["bridge"],
                                         **common)
    instance = objects.instance_info.InstanceInfo(uuid=v["instance_uuid"],
                                                  name=v["instance_name"],
                                                  project_id="ovsplane-lab")
    return vif, instance


def main():
    req = read_request()
    try:
        from oslo_config import cfg
        from oslo_log import log as logging
        import os_vif
        from vif_plug_ovs import ovs, privsep
    except ImportError as e:
        fail(1, "cannot import os-vif (%s): apt-get install -y python3-os-vif python3-ovsdbapp" % e)

    conf = cfg.CONF
    logging.register_options(conf)
    # The OVS plugin's options, registered before os_vif.initialize() loads the plugin, so the
    # overrides are in place when its constructor reads them (registering them again is a no-op).
    conf.register_opts(ovs.OvsPlugin.CONFIG_OPTS, group="os_vif_ovs")
    conf(args=[], project="ovsplane-osvif", default_config_files=[])
    logging.setup(conf, "ovsplane-osvif")
    conf.set_override("ovsdb_connection", req["ovsdb"], group="os_vif_ovs")
    conf.set_override("ovsdb_interface", req["backend"], group="os_vif_ovs")
    conf.set_override("ovs_vsctl_timeout", req["timeout_s"], group="os_vif_ovs")
    privsep.vif_plug.set_client_mode(False)

    try:
        os_vif.initialize()
        vif, instance = build(req["vif"])
        if req["op"] == "plug":
            os_vif.plug(vif, instance)
        else:
            os_vif.unplug(vif, instance)
    except Exception as e:  # os-vif wraps everything in PlugException/UnplugException
        fail(1, "%s %s: %s: %s" % (req["op"], req["vif"]["id"], type(e).__name__, e))
    reply(0, {"ok": True, "port": vif.vif_name})


if __name__ == "__main__":
    main()
