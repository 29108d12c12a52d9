"""A TCP proxy in front of the S3 server, for object-store fault tests (issue 32). Modes:

- ``pass``: bytes relayed both ways;
- ``slowdown``: every HTTP request (headers and ``Content-Length`` body read) is answered with
  S3's ``503 SlowDown`` error, then the connection is closed;
- ``stall``: requests are read and never answered (a server that hangs).

Changing the mode closes every open connection, so clients reconnect into the new mode (a
request in flight sees its connection reset). Counts the requests each faulty mode answered or
swallowed. Listens on a free loopback port; threads only, stopped by ``close()``."""

from __future__ import annotations

import socket
import threading
from collections import Counter

SLOWDOWN_BODY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
                 b"<Message>Please reduce your request rate.</Message></Error>")
SLOWDOWN = (b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(SLOWDOWN_BODY)) + SLOWDOWN_BODY


class FaultProxy:
    """Proxy to ``127.0.0.1:upstream_port``; ``endpoint`` is its own address."""

    def __init__(self, upstream_port: int):
        self.upstream = ("127.0.0.1", upstream_port)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.mode = "pass"
        self.faults: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True, name="s3-proxy").start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_mode(self, mode: str) -> None:
        assert mode in ("pass", "slowdown", "stall"), mode
        with self._lock:
            self.mode = mode
            for s in list(self._open):
                _shut(s)
            self._open.clear()

    def close(self) -> None:
        self._closed = True
        self.set_mode("pass")
        _shut(self.listener)

    def _track(self, *socks: socket.socket) -> str:
        with self._lock:
            self._open.update(socks)
            return self.mode

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        mode = self._track(client)
        try:
            if mode == "pass":
                try:
                    upstream = socket.create_connection(self.upstream, timeout=5)
                except OSError:
                    return
                upstream.settimeout(None)
                self._track(upstream)
                t = threading.Thread(target=_relay, args=(upstream, client), daemon=True)
                t.start()
                _relay(client, upstream)
                t.join()
            elif mode == "slowdown":
                if _read_request(client):
                    with self._lock:
                        self.faults["slowdown"] += 1
                    client.sendall(SLOWDOWN)
            else:
                if _read_request(client):
                    with self._lock:
                        self.faults["stall"] += 1
                while client.recv(65536):
                    pass
        except OSError:
            pass
        finally:
            _shut(client)


def _read_request(s: socket.socket) -> bool:
    """Reads one request's headers and ``Content-Length`` body; False if the peer went away."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            return False
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip() or 0)
    left = length - len(body)
    while left > 0:
        chunk = s.recv(min(left, 1 << 20))
        if not chunk:
            return False
        left -= len(chunk)
    return True


def _relay(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        _shut(dst)


def _shut(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass
