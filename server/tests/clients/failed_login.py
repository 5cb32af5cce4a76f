"""Logs in to dfanon-server's PostgreSQL port with a wrong SCRAM proof, then sends a
statement on the same connection anyway, as an attacker who ignores the refusal would.

Usage: python failed_login.py <host> <port> <user> <statement>

Speaks the protocol by hand (a client library stops at the refusal). Prints one JSON
object: {"login": <the refusal's message>, "after": [<what the server answered to the
statement: message types and error texts>]}.
"""

import base64
import json
import os
import socket
import struct
import sys


def message(kind, body):
    return kind + struct.pack("!I", len(body) + 4) + body


def read_message(sock):
    head = b""
    while len(head) < 5:
        chunk = sock.recv(5 - len(head))
        if not chunk:
            return None
        head += chunk
    kind, length = head[:1], struct.unpack("!I", head[1:])[0]
    body = b""
    while len(body) < length - 4:
        chunk = sock.recv(length - 4 - len(body))
        if not chunk:
            return None
        body += chunk
    return kind, body


def error_text(body):
    fields = dict((f[:1], f[1:].decode(errors="replace")) for f in body.split(b"\0") if f)
    return f"{fields.get(b'S', '')} {fields.get(b'C', '')}: {fields.get(b'M', '')}"


def main():
    host, port, user, statement = sys.argv[1:]
    sock = socket.create_connection((host, int(port)), timeout=10)
    params = b"user\0" + user.encode() + b"\0database\0datafusion\0\0"
    body = struct.pack("!I", 196608) + params
    sock.sendall(struct.pack("!I", len(body) + 4) + body)
    kind, body = read_message(sock)
    assert kind == b"R" and struct.unpack("!I", body[:4])[0] == 10, (kind, body)
    nonce = base64.b64encode(os.urandom(18)).decode()
    first = f"n,,n=,r={nonce}".encode()
    sock.sendall(message(b"p", b"SCRAM-SHA-256\0" + struct.pack("!I", len(first)) + first))
    kind, body = read_message(sock)
    assert kind == b"R" and struct.unpack("!I", body[:4])[0] == 11, (kind, body)
    server_first = dict(p.split("=", 1) for p in body[4:].decode().split(","))
    proof = base64.b64encode(os.urandom(32)).decode()
    final = f"c=biws,r={server_first['r']},p={proof}".encode()
    # The wrong proof and the statement in one write: the server reads the statement
    # right after it refused the login.
    sock.sendall(message(b"p", final) + message(b"Q", statement.encode() + b"\0"))
    login = None
    after = []
    try:
        while True:
            reply = read_message(sock)
            if reply is None:
                break
            kind, body = reply
            text = error_text(body) if kind == b"E" else kind.decode()
            if login is None:
                login = text
            else:
                after.append(text)
    except (socket.timeout, ConnectionResetError):
        pass
    # And once more after the refusal was read.
    try:
        sock.sendall(message(b"Q", statement.encode() + b"\0"))
        sock.settimeout(3)
        while True:
            reply = read_message(sock)
            if reply is None:
                break
            kind, body = reply
            after.append(error_text(body) if kind == b"E" else kind.decode())
    except (OSError, socket.timeout):
        pass
    print(json.dumps({"login": login, "after": after}))


if __name__ == "__main__":
    main()
