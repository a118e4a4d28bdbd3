"""Isolation: no real network during a run, and no socket that can hang the harness.

Installed once per process (like virtual time, see ``toolchaos._plumbing.clock``) by patching
``socket.socket.connect``, ``socket.socket.connect_ex``, ``socket.create_connection`` and
``socket.getaddrinfo``. The patches do nothing outside a run. During a run:

- a connect to anything but loopback (127.0.0.0/8, ::1, ``localhost``, Unix sockets) raises
  ``NetworkBlocked``, naming the address. It is a ``HarnessStop`` (a ``BaseException``), so
  an agent's ``except Exception`` retry loop cannot turn it into a silent retry storm, and the
  run ends as a failed scenario (``harness_stop == "network"``). An attempt made in another
  thread, or swallowed, fails the run all the same: the engine collects the attempts.
- a DNS lookup of a name that is not local is refused the same way (a lookup is already real
  network traffic, and can block for seconds in C where no watchdog reaches);
- a loopback socket gets a timeout no longer than the real time left before the run's
  watchdog deadline (plus a quarter second, so the watchdog itself ends the run when it can),
  so a ``recv()`` on a peer that never answers returns ``socket.timeout`` in time, in any
  thread (the watchdog's signal covers the main thread, see ``_watchdog``).

HTTP requests made through httpx are answered or refused earlier, by the wire layer's respx
router (``toolchaos.wire``); this guard is the floor under everything else (raw sockets,
``urllib``, ``requests``, ``aiohttp``, database drivers).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from toolchaos._plumbing import watchdog as _watchdog
from toolchaos.errors import NetworkBlocked

MARGIN = 0.25  # past the deadline: the watchdog ends the run first, as WATCHDOG, when it can


_real_connect: Callable[..., Any] = socket.socket.connect
_real_connect_ex: Callable[..., Any] = socket.socket.connect_ex
_real_create_connection: Callable[..., Any] = socket.create_connection
_real_getaddrinfo: Callable[..., Any] = socket.getaddrinfo

_installed = False
_install_lock = threading.Lock()
_depth = 0  # > 0 while a run is active
_attempts: list[str] = []  # refused attempts of the active run (any thread)
_open = threading.local()  # .on: this thread may reach the network during a run (a cassette being recorded)
_LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def _local_host(host: Any) -> bool:
    if host is None:
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    name = host.strip("[]").split("%", 1)[0].lower().rstrip(".")
    if name in ("", *_LOCAL_NAMES) or name.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or ip.is_unspecified or (mapped is not None and mapped.is_loopback))


def _numeric(host: Any) -> bool:
    try:
        ipaddress.ip_address(str(host).strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    return True


def _describe(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host = address[0]
        return f"connect to [{host}]:{address[1]}" if ":" in str(host) else f"connect to {host}:{address[1]}"
    return f"connect to {address!r}"


def _refuse(what: str) -> NetworkBlocked:
    _attempts.append(what)
    return NetworkBlocked(what)


def _guard(sock: socket.socket, address: Any) -> None:
    family = sock.family
    if family in (socket.AF_INET, socket.AF_INET6):
        host = address[0] if isinstance(address, tuple) and address else address
        if not _local_host(host):
            raise _refuse(_describe(address))
        _bound_timeout(sock)
    elif getattr(socket, "AF_UNIX", None) is not None and family == socket.AF_UNIX:
        _bound_timeout(sock)
    else:  # netlink, bluetooth, packet sockets: nothing a tool double needs
        raise _refuse(f"connect on a socket of family {family!r} to {address!r}")


def _bound_timeout(sock: socket.socket) -> None:
    left = _watchdog.remaining()
    if left is None:
        return
    current = sock.gettimeout()
    if current == 0.0:  # non-blocking (asyncio): the event loop waits, and the watchdog reaches it
        return
    bound = max(left, 0.0) + MARGIN
    if current is None or current > bound:
        sock.settimeout(bound)


def _guarded() -> bool:
    return _depth > 0 and not getattr(_open, "on", False)


@contextlib.contextmanager
def allow_network() -> Iterator[None]:
    """Let this thread reach the network during a run: a recording's call to the real model, asked for by
    the user (``--chaos-record``); everything else in the run stays behind the guard."""
    before = getattr(_open, "on", False)
    _open.on = True
    try:
        yield
    finally:
        _open.on = before


def _connect(self: socket.socket, address: Any) -> None:
    if _guarded():
        _guard(self, address)
    _real_connect(self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    if _guarded():
        _guard(self, address)
    return int(_real_connect_ex(self, address))


def _create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
    if _guarded() and isinstance(address, tuple) and address and not _local_host(address[0]):
        raise _refuse(_describe(address))
    sock: socket.socket = _real_create_connection(address, *args, **kwargs)
    return sock


def _getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if _guarded() and not _local_host(host) and not _numeric(host) and host != _own_name():
        port = args[0] if args else kwargs.get("port")
        raise _refuse(f"DNS lookup of {host!s}" + (f" (port {port})" if port is not None else ""))
    return _real_getaddrinfo(host, *args, **kwargs)


_hostname: str | None = None


def _own_name() -> str:
    global _hostname
    if _hostname is None:
        _hostname = socket.gethostname()
    return _hostname


def install() -> None:
    """Patch the socket module once per process (idempotent); inert outside runs."""
    global _installed
    if _installed:
        return
    with _install_lock:
        if _installed:
            return
        socket.socket.connect = _connect  # type: ignore[method-assign,assignment]
        socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign,assignment]
        socket.create_connection = _create_connection
        socket.getaddrinfo = _getaddrinfo
        _installed = True


def uninstall() -> None:
    global _installed
    with _install_lock:
        if not _installed:
            return
        socket.socket.connect = _real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]
        socket.create_connection = _real_create_connection
        socket.getaddrinfo = _real_getaddrinfo
        _installed = False


def begin() -> int:
    """A run starts: the guard is active until ``end``. Returns the number of attempts so far."""
    global _depth
    _depth += 1
    return len(_attempts)


def end(mark: int) -> list[str]:
    """A run ends: the refused attempts it made (from any of its threads)."""
    global _depth
    _depth = max(0, _depth - 1)
    made = _attempts[mark:]
    if not _depth:
        _attempts.clear()
    return made


def active() -> bool:
    return _depth > 0
