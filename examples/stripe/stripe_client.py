#!/usr/bin/python3
"""A stripe endpoint client using only Python's standard library.

The protocol is documented in docs/stripe.md ("Endpoints for applications") and in the Go
package stripe/endpoint. Every message is a 4-byte big-endian length of the rest, a type byte
and the type's fields. Over unix and TCP sockets the messages follow each other; over UDP one
datagram is one message.

As a program it registers one application, sends the --send messages to the peer application,
prints the next --receive messages it gets (one per line, as UTF-8 text), deregisters and exits
0; a refusal is printed on stderr with its code and exits 1.

    stripe_client.py --unix /run/ovsplane/stripe.sock --name demo --service 7 \\
        --port 1000 --peer-node 2 --peer-port 2000 --send hello --receive 1
"""

import argparse
import socket
import struct
import sys

REGISTER, REGISTERED, SEND, DELIVER, DEREGISTER, OK, ERROR = range(1, 8)
CODES = {1: "MALFORMED", 2: "TOO_LARGE", 3: "UNKNOWN_APP", 4: "ALREADY_REGISTERED",
         5: "TOO_MANY_APPS", 6: "UNKNOWN_PEER", 7: "INVALID", 8: "QUEUE_FULL",
         9: "SEND_FAILED", 10: "UNEXPECTED", 11: "NOT_RUNNING"}
MAX_WIRE = 4 + 9 + (1 << 20)


class EndpointError(Exception):
    """A request the endpoint refused."""

    def __init__(self, code, text):
        super().__init__("%s: %s" % (CODES.get(code, code), text))
        self.code = code


class Client:
    """One connection to the endpoint (not thread-safe)."""

    def __init__(self, sock, datagram):
        self.sock = sock
        self.datagram = datagram
        self.tag = 0
        self.pending = []
        self.buf = b""

    @classmethod
    def connect(cls, unix=None, tcp=None, udp=None, timeout=30):
        if unix:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(timeout)
            s.connect(unix)
            return cls(s, False)
        host, port = (tcp or udp).rsplit(":", 1)
        kind = socket.SOCK_STREAM if tcp else socket.SOCK_DGRAM
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, kind)
        s.settimeout(timeout)
        s.connect((host.strip("[]"), int(port)))
        return cls(s, udp is not None)

    def _write(self, mtype, body):
        self.sock.sendall(struct.pack(">IB", len(body) + 1, mtype) + body)

    def _read_exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError("the endpoint closed the connection")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _read(self):
        if self.datagram:
            b = self.sock.recv(MAX_WIRE + 1)
        else:
            head = self._read_exact(4)
            (n,) = struct.unpack(">I", head)
            if n == 0 or n > MAX_WIRE - 4:
                raise ValueError("length prefix %d from the endpoint" % n)
            b = head + self._read_exact(n)
        (n, mtype) = struct.unpack(">IB", b[:5])
        if n != len(b) - 4:
            raise ValueError("length prefix %d with %d bytes" % (n, len(b) - 4))
        return mtype, b[5:]

    def _reply(self, tag):
        while True:
            mtype, body = self._read()
            if mtype in (REGISTERED, OK, ERROR) and struct.unpack(">I", body[:4])[0] == tag:
                if mtype == ERROR:
                    (code,) = struct.unpack(">H", body[4:6])
                    raise EndpointError(code, body[6:].decode("utf-8", "replace"))
                return body[4:]
            self.pending.append((mtype, body))

    def register(self, name, service, port, peer_node, peer_port, rate=0):
        """Registers an application and returns its id."""
        self.tag += 1
        n = name.encode()
        self._write(REGISTER, struct.pack(">IHHIHQB", self.tag, service, port, peer_node,
                                          peer_port, rate, len(n)) + n)
        return struct.unpack(">I", self._reply(self.tag))[0]

    def deregister(self, app):
        self.tag += 1
        self._write(DEREGISTER, struct.pack(">II", self.tag, app))
        self._reply(self.tag)

    def send(self, app, payload, tag=0):
        """Sends payload; a refusal arrives later through next() as an EndpointError."""
        self._write(SEND, struct.pack(">II", tag, app) + payload)

    def next(self):
        """Returns (app id, payload) of the next delivery."""
        mtype, body = self.pending.pop(0) if self.pending else self._read()
        if mtype == ERROR:
            (code,) = struct.unpack(">H", body[4:6])
            raise EndpointError(code, body[6:].decode("utf-8", "replace"))
        if mtype != DELIVER:
            raise ValueError("unexpected message type %d" % mtype)
        return struct.unpack(">I", body[:4])[0], body[4:]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--unix")
    where.add_argument("--tcp", help="HOST:PORT")
    where.add_argument("--udp", help="HOST:PORT")
    p.add_argument("--name", required=True)
    p.add_argument("--service", type=int, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--peer-node", type=int, required=True)
    p.add_argument("--peer-port", type=int, required=True)
    p.add_argument("--rate", type=int, default=0, help="demanded bytes/s, 0 for none")
    p.add_argument("--send", nargs="*", default=[])
    p.add_argument("--receive", type=int, default=0)
    a = p.parse_args()
    c = Client.connect(unix=a.unix, tcp=a.tcp, udp=a.udp)
    try:
        app = c.register(a.name, a.service, a.port, a.peer_node, a.peer_port, a.rate)
        print("registered %d" % app, file=sys.stderr)
        for i, text in enumerate(a.send):
            c.send(app, text.encode(), tag=i + 1)
        for _ in range(a.receive):
            _, payload = c.next()
            print(payload.decode("utf-8", "replace"), flush=True)
        c.deregister(app)
    except EndpointError as e:
        print("stripe endpoint refused: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
