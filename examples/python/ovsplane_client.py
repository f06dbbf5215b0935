"""A client of ovsplaned's API (ovsplane.v1.SwitchService) in plain Python 3.

It speaks the Connect protocol's JSON form over HTTP/1.1, which every ovsplaned listener serves
beside gRPC: a unary call is a POST of the request message as JSON to
/ovsplane.v1.SwitchService/METHOD, the answer is the response message as JSON, and a failed call
is a non-200 status with {"code": ..., "message": ...}. Only the standard library is used
(Debian's /usr/bin/python3 is enough: no pip, no generated code). Messages are dicts following
the protobuf JSON mapping of api/proto/ovsplane/v1/switch.proto (request fields in snake_case or
lowerCamelCase, responses in lowerCamelCase, enums by name, absent fields empty).

    from ovsplane_client import SwitchClient, APIError
    c = SwitchClient("/var/lib/ovsplane/ovsplaned.sock")
    c.call("ApplyBridge", {"bridge": {"name": "br0", "datapath_type": "netdev"}})
    for msg in c.watch():       # Watch, a server stream
        print(msg)

docs/api.md documents every call; examples/python/README.md says how to run this.
"""

import http.client
import json
import socket
import struct

SERVICE = "ovsplane.v1.SwitchService"
DEFAULT_SOCKET = "/var/lib/ovsplane/ovsplaned.sock"

# The largest message this client accepts from the daemon (the daemon refuses requests over
# 4 MiB; answers such as ListStatus on a big switch can be larger).
MAX_MESSAGE = 64 << 20

# Connect's end-of-stream flag on a streamed message.
_END_STREAM = 0x02


class APIError(Exception):
    """A call the daemon (or the transport) failed: code is Connect's code name
    ("not_found", "invalid_argument", "unavailable", ...), message the daemon's text, which
    names the object and, where there is one, the fix."""

    def __init__(self, code, message):
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message


class _UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTP/1.1 connection over a unix socket."""

    def __init__(self, path, timeout):
        super().__init__("ovsplaned", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self._path)
        except OSError:
            s.close()
            raise
        self.sock = s


class SwitchClient:
    """Calls ovsplaned's SwitchService at a unix socket path.

    timeout bounds each unary call in seconds; it is also sent as Connect-Timeout-Ms, so the
    daemon gives up at the same time (WaitReady then fails with deadline_exceeded)."""

    def __init__(self, socket_path=DEFAULT_SOCKET, timeout=30.0):
        if not socket_path:
            raise ValueError("socket_path is empty: give the daemon's api.listen unix path")
        self.socket_path = socket_path
        self.timeout = timeout

    def _post(self, method, content_type, body, timeout):
        conn = _UnixHTTPConnection(self.socket_path, timeout)
        headers = {
            "Content-Type": content_type,
            "Connect-Protocol-Version": "1",
        }
        if timeout is not None:
            headers["Connect-Timeout-Ms"] = str(int(timeout * 1000))
        try:
            conn.request("POST", "/%s/%s" % (SERVICE, method), body=body, headers=headers)
            return conn, conn.getresponse()
        except OSError as e:
            conn.close()
            raise APIError("unavailable", "cannot reach ovsplaned at unix:%s: %s" % (self.socket_path, e)) from e

    def call(self, method, request=None, timeout=None):
        """Calls the unary method (e.g. "ApplyPort") with request (a dict) and returns the
        response as a dict. Raises APIError on failure."""
        if timeout is None:
            timeout = self.timeout
        body = json.dumps(request or {}).encode()
        conn, resp = self._post(method, "application/json", body, timeout)
        try:
            data = resp.read(MAX_MESSAGE + 1)
        finally:
            conn.close()
        if len(data) > MAX_MESSAGE:
            raise APIError("resource_exhausted", "%s: answer larger than %d bytes" % (method, MAX_MESSAGE))
        try:
            msg = json.loads(data) if data else {}
        except ValueError as e:
            raise APIError("internal", "%s: HTTP %d, not JSON: %r" % (method, resp.status, data[:200])) from e
        if resp.status != 200:
            raise APIError(msg.get("code", "unknown"), msg.get("message", "HTTP %d" % resp.status))
        return msg

    def watch(self, request=None, timeout=None):
        """Calls Watch and yields each message of the stream as a dict: first the snapshot
        ({"snapshot": true, "statuses": [...]}), then the objects that changed. The stream ends
        when the daemon stops; a failure (e.g. resource_exhausted for a reader too slow) raises
        APIError. timeout (seconds, default none) bounds the whole stream."""
        body = json.dumps(request or {}).encode()
        conn, resp = self._post("Watch", "application/connect+json",
                                struct.pack(">BI", 0, len(body)) + body, timeout)
        try:
            if resp.status != 200:
                data = resp.read(MAX_MESSAGE)
                msg = json.loads(data) if data else {}
                raise APIError(msg.get("code", "unknown"), msg.get("message", "HTTP %d" % resp.status))
            while True:
                head = resp.read(5)
                if len(head) < 5:
                    raise APIError("unavailable", "Watch: stream cut after %d header bytes" % len(head))
                flags, size = struct.unpack(">BI", head)
                if size > MAX_MESSAGE:
                    raise APIError("resource_exhausted", "Watch: message of %d bytes" % size)
                data = resp.read(size)
                if len(data) < size:
                    raise APIError("unavailable", "Watch: stream cut inside a message")
                msg = json.loads(data) if data else {}
                if flags & _END_STREAM:
                    err = msg.get("error")
                    if err:
                        raise APIError(err.get("code", "unknown"), err.get("message", ""))
                    return
                yield msg
        finally:
            conn.close()
