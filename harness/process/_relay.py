"""A Unix socket that relays each connection to the run's server on 127.0.0.1 (for a sealed child).

A child in its own network namespace cannot reach the parent's loopback; a Unix socket, being
a file, can be reached from there. ``toolchaos._plumbing.children`` listens on the server's
port inside the child's namespace and forwards each connection to this socket, which passes it
on to the server. The server's URLs are therefore the same on both sides.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path

from toolchaos._plumbing.children import pump


class Relay:
    """Listen on ``path``; each connection is relayed to ``127.0.0.1:port``. ``close()`` stops it."""

    def __init__(self, path: Path, port: int) -> None:
        self.path, self.port = path, port
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(str(path))
        self._sock.listen(64)
        self._closed = False
        threading.Thread(target=self._accept, name="toolchaos-process-relay", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            except OSError:
                conn.close()
                continue
            upstream.settimeout(None)
            threading.Thread(target=_relay, args=(conn, upstream), daemon=True).start()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()


def _relay(a: socket.socket, b: socket.socket) -> None:
    """Both directions until both are done, then both sockets closed."""
    back = threading.Thread(target=pump, args=(b, a), daemon=True)
    back.start()
    pump(a, b)
    back.join()
    a.close()
    b.close()

