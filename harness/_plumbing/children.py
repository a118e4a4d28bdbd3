"""Child processes: started in their own process group (and PID namespace), ended with all they started.

The one place in toolchaos that starts and ends child processes. A child is a command
(``start``) run with a given argv, environment, working directory and stdin bytes; its
stdout and stderr are captured into bounded buffers; it is waited for in real time and
ended, with everything it started, by ``end``::

    child = children.start(["node", "agent.js"], env={...}, cwd="work", stdin=b"task",
                           seal_network=True, forward={8765: "/run/server.sock"})
    code = child.wait(timeout=5.0)       # exit code (-N: killed by signal N), None if still running
    ended = child.end(grace=0.5)         # Ended(returncode=..., signal=..., killed=True/False)
    child.stdout, child.stderr           # bytes, each capped (a marker says how much was cut)

``fork_call(fn)`` is the same for a Python function instead of a command: the caller is
forked (nothing is imported or started again, so it costs a fork, not an interpreter
start), ``fn(fd)`` runs in the child, and what it writes to ``fd`` arrives in
``child.stdout``; its own stdout and stderr stay the caller's. In the PID namespace ``fn``
runs as PID 1, so when it returns (or dies) everything it started dies with it.

How a child is contained, where the platform allows it (Linux with unprivileged user
namespaces; ``sealing_available()`` says so):

- it runs in a new user namespace (mapped to the caller's own uid and gid) with a new PID
  namespace, whose first process (a small init forked from the keeper, below) starts the
  command. When that init ends, the kernel kills every process left in the namespace:
  a double fork, ``setsid``, ``start_new_session=True`` or a daemon cannot outlive the child;
- ``end`` sends SIGTERM to the child's process group, and the init passes it on to every
  process in the namespace (also those that left the group), then SIGKILL after the grace;
- with ``seal_network=True`` the child also gets a new network namespace with only
  loopback up: no socket, resolver, subprocess or C library call can reach another host.
  ``forward={port: unix_socket_path}`` listens on ``127.0.0.1:port`` inside that namespace
  and relays each connection to a Unix socket the parent listens on (Unix sockets are
  files, which cross network namespaces), so a sealed child can still reach the harness's
  own server;
- with ``private_tmp=paths`` the child also gets a mount namespace in which the machine's
  shared temporary folders (``tempfile.gettempdir()``, ``/tmp``, ``/var/tmp``, ``/dev/shm``)
  are fresh and empty, but for the entries of theirs that hold a path it needs: those
  ``paths``, its working directory, the forwarded sockets, and the existing paths its argv and
  environment name (bound back at the same place). So another run's relay socket in the same
  temporary folder is not there for it. It also gets a ``/proc`` of its own PID namespace, and
  its mounts are locked (a further user namespace), so not even a child running as root in
  its namespace can unmount them. ``Child.private_tmp`` says whether it got them, and
  ``Child.private_note`` what is missing (the child runs with the shared folders then).

The process tree: the caller, then a *keeper* (forked from the caller, in the new user and
network namespaces, outside the PID namespace), then the *init* (PID 1 of the new
namespace, relaying the forwarded ports), then the command. The keeper's process group is
the child's; the caller waits for the keeper, and the init reports the command's own exit
status on a pipe. If the keeper is killed, the kernel kills the init (its parent-death
signal), and with it the namespace.

``fork_call`` in a process with a single thread (glibc, x86-64) skips the keeper: one
``clone(2)`` makes the caller's copy PID 1 of new user, PID and network namespaces at once,
and the caller waits for it directly (see "one fork", at the end). Each fork of a large
process copies its page tables and tears them down again: one copy instead of two is most
of an isolated run's cost. Anywhere else (another thread alive, another C library or
architecture, a kernel that refuses the flags on clone) it forks twice, as above.

Where namespaces are not available (macOS, a kernel or container that forbids unprivileged
user namespaces), the command runs in its own process group only, and ``forward`` listens
in the caller's own network. Then a process that leaves the group (``setsid``,
``start_new_session=True``) is not ended by ``end``, and the network is not sealed: the
in-process socket guard (``toolchaos._plumbing.isolation``) is all that stands between an
in-process agent and the network, and a command can reach any host. (The command then
leads a session of its own, so ``end`` reaches whatever it starts in that session.)
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Child", "Ended", "fork_call", "sealing_available", "start"]

CAP = 1 << 20  # bytes kept of each of stdout and stderr by default
_DRAIN = 0.2  # real seconds to drain output after the child ended (a leftover may hold the pipe)

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_BIND, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x1000, 0x4000, 0x40000
_MNT_DETACH = 2
SHARED_TEMP = ("/tmp", "/var/tmp", "/dev/shm")  # with tempfile.gettempdir(): what a private child sees empty
_PR_SET_PDEATHSIG = 1
_SIOCSIFFLAGS = 0x8914
_IFF_UP, _IFF_LOOPBACK, _IFF_RUNNING = 0x1, 0x8, 0x40

_libc: ctypes.CDLL | None
_held: ctypes.PyDLL | None  # the same C library, called with the GIL held (a clone must copy a held GIL)
try:
    _libc = ctypes.CDLL(None, use_errno=True)  # loaded here: a forked child must not load libraries
    _held = ctypes.PyDLL(None, use_errno=True)
except OSError:  # pragma: no cover - platforms without a C library handle
    _libc = _held = None


@dataclass(frozen=True, slots=True)
class Ended:
    """How a child ended: its exit code, or the signal that killed it; ``killed`` when ``end`` had to SIGKILL it."""

    returncode: int | None
    signal: int | None
    killed: bool

    @property
    def code(self) -> int:
        """The exit code, or ``-N`` for a death by signal N (as ``subprocess`` reports it)."""
        return self.returncode if self.returncode is not None else -(self.signal or 0)


class _Capped:
    """The first ``cap`` bytes of a stream, and how many were cut after them."""

    def __init__(self, cap: int) -> None:
        self.cap, self.data, self.cut = cap, bytearray(), 0

    def add(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.cut += max(0, len(chunk) - max(room, 0))

    def value(self) -> bytes:
        if not self.cut:
            return bytes(self.data)
        return bytes(self.data) + f"\n[toolchaos: {self.cut} more bytes cut]\n".encode()


# --- can this platform seal a child? -----------------------------------------------------

_available: bool | None = None
_probe_lock = threading.Lock()


def sealing_available() -> bool:
    """Whether children get their own PID and network namespaces here (probed once per process)."""
    global _available
    if _available is None:
        with _probe_lock:
            if _available is None:
                _available = _probe()
    return _available


def _probe() -> bool:
    """Fork a process that sets up the namespaces a child would get, and see whether it managed."""
    if _libc is None or not hasattr(os, "fork") or not Path("/proc/self/uid_map").exists():
        return False
    pid = _fork()
    if pid == 0:  # pragma: no cover - the forked probe (coverage does not follow it)
        code = 1
        try:
            _enter_namespaces(seal_network=True)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _fork() -> int:
    # Python 3.12+ warns that forking a threaded process may deadlock the child. Ours never
    # takes a lock another thread could hold: it runs a few system calls, then exec or exit.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def _write(path: str, text: str) -> None:  # pragma: no cover - runs in a forked child
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())  # one write: the kernel parses a map from a single write
    finally:
        os.close(fd)


def _enter_namespaces(*, seal_network: bool, mounts: bool = False) -> None:  # pragma: no cover - in a fork
    """Move this (single-threaded, forked) process into new user and network (and, ``mounts``, mount) namespaces.

    Its children go into a new PID namespace (the first becomes its PID 1).
    """
    flags = _CLONE_NEWUSER | _CLONE_NEWPID | (_CLONE_NEWNET if seal_network else 0) | (_CLONE_NEWNS if mounts else 0)
    _new_user_namespace(flags)
    if seal_network:
        _loopback_up()


def _new_user_namespace(flags: int) -> None:  # pragma: no cover - runs in a forked child
    """``unshare(flags)`` (a new user namespace among them), mapped to this process's own uid and gid."""
    assert _libc is not None
    uid, gid = os.getuid(), os.getgid()  # read before: inside, they read as the overflow id until mapped
    if _libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare: {os.strerror(err)}")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def _loopback_up() -> None:  # pragma: no cover - runs in a forked child
    """A new network namespace has loopback down: bring it up, nothing else exists."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", _IFF_UP | _IFF_LOOPBACK | _IFF_RUNNING))


# --- private temporary folders ---------------------------------------------------------------
#
# Every run's relay socket lives in the shared temporary folder, and a child runs as the same
# user: without a mount namespace it can list the folder and connect to another run's socket.
# With one, the keeper mounts a fresh tmpfs over each shared temporary folder and binds back
# the entries of theirs the child needs (its own run's folder, its working directory, what its
# command and environment name), each opened before the tmpfs covers it; what to hide and
# what to keep is decided in the caller, before the fork, so the keeper only mounts. The init,
# PID 1 of the new PID namespace, then mounts a /proc of that namespace (the machine's
# processes, and their /proc/PID/root, out of sight) and enters one more user and mount
# namespace: the kernel locks mounts copied into a namespace of a less privileged user
# namespace, so a command running as root in its namespace cannot unmount the tmpfs to see
# what it covers.


@dataclass(frozen=True)
class _Private:
    """A child's private temporary folders, planned in the caller (see above)."""

    hide: tuple[tuple[str, int], ...]  # (folder, its permission bits): a fresh tmpfs each, outer folders first
    keep: tuple[tuple[str, str, str], ...]  # (entry of a hidden folder, "dir", "file" or "link", a link's target)
    cwd: str  # the caller's working directory, entered again once the folders are in place (a relative cwd's base)
    notes: tuple[str, ...]  # shared folders left visible, and why


def _private_plan(paths: Sequence[str | os.PathLike[str]], argv: Sequence[str], env: Mapping[str, str],
                  cwd: str | os.PathLike[str] | None) -> _Private:
    """Which folders a private child sees empty, and which of their entries it keeps (see above)."""
    ours = os.getcwd()
    here = os.path.realpath(os.path.join(ours, os.fspath(cwd)) if cwd is not None else ours)  # where it runs
    roots: list[str] = []
    for folder in (tempfile.gettempdir(), *SHARED_TEMP):
        real = os.path.realpath(folder)
        if real != "/" and real not in roots and os.path.isdir(real):
            roots.append(real)
    notes = tuple(f"{r} stays shared: it is the child's working directory" for r in roots if r == here)
    roots = sorted((r for r in roots if r != here), key=len)
    wanted = [*(os.fspath(p) for p in paths), ours, here, *_named_paths(argv, env, here, roots)]
    keep: dict[str, tuple[str, str]] = {}
    for path in wanted:
        for candidate in dict.fromkeys((os.path.normpath(path), os.path.realpath(path))):
            entry = _entry_below(candidate, roots)
            if entry is not None and entry not in keep and os.path.lexists(entry):
                keep[entry] = _kind(entry)
    return _Private(tuple((r, os.stat(r).st_mode & 0o7777) for r in roots),
                    tuple((entry, *kind) for entry, kind in keep.items()), ours, notes)


def _kind(entry: str) -> tuple[str, str]:
    if os.path.islink(entry):  # a link is made again: a mount would follow it
        return "link", os.readlink(entry)
    return ("dir" if os.path.isdir(entry) else "file"), ""


def _named_paths(argv: Sequence[str], env: Mapping[str, str], cwd: str, roots: Sequence[str]) -> list[str]:
    """The paths under ``roots`` that the command line (its items, a ``--flag=value``'s value) and environment name."""
    texts = [*argv, *(a.partition("=")[2] for a in argv if "=" in a)]
    candidates = [os.path.join(cwd, t) for t in texts if t and "\0" not in t]
    candidates += [part for value in env.values() for part in value.split(os.pathsep) if part.startswith("/")]
    prefixes = tuple(r.rstrip("/") + "/" for r in roots)
    return [c for c in candidates if c.startswith(prefixes)]


def _entry_below(path: str, roots: Sequence[str]) -> str | None:
    """The entry of the innermost of ``roots`` that holds ``path`` (``None``: in none of them, or one of them)."""
    for root in sorted(roots, key=len, reverse=True):
        if path.startswith(root.rstrip("/") + "/"):
            return os.path.join(root, os.path.relpath(path, root).split(os.sep, 1)[0])
    return None


def _mount(source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:  # pragma: no cover - runs in a forked child
    assert _libc is not None
    if _libc.mount(None if source is None else source.encode(), target.encode(),
                   None if fstype is None else fstype.encode(), flags,
                   None if data is None else data.encode()) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {fstype or source} on {target}: {os.strerror(err)}")


def _make_private(plan: _Private) -> str:  # pragma: no cover - runs in the keeper
    """Hide the plan's folders, bind back its entries; "" when done, else why not (then nothing is hidden)."""
    assert _libc is not None
    mounted: list[str] = []
    fds: list[int] = []
    try:
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing mounted here reaches the caller's namespace
        fds = [os.open(entry, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC) for entry, _, _ in plan.keep]
        for folder, mode in plan.hide:  # outer folders first, each with its entries back before the next
            os.makedirs(folder, exist_ok=True)  # a folder inside one hidden (or kept) before it
            _mount("tmpfs", folder, "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode={mode:o}")
            mounted.append(folder)
            for (entry, kind, target), fd in zip(plan.keep, fds):
                if os.path.dirname(entry) == folder:
                    _bind_back(entry, kind, target, fd)
        os.chdir(plan.cwd)  # through the new mounts: the old working directory would lead past them
        return ""
    except OSError as exc:
        for folder in reversed(mounted):
            _libc.umount2(folder.encode(), _MNT_DETACH)
        with contextlib.suppress(OSError):
            os.chdir(plan.cwd)
        return f"the temporary folders stay shared: {exc}"
    finally:
        for fd in fds:
            os.close(fd)


def _bind_back(entry: str, kind: str, target: str, fd: int) -> None:  # pragma: no cover - runs in the keeper
    """Put ``entry`` back where the tmpfs covered it: the same folder or file (``fd``, opened before), or link."""
    if kind == "link":
        os.symlink(target, entry)
        return
    if kind == "dir":
        os.makedirs(entry, exist_ok=True)
    else:
        os.close(os.open(entry, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
    _mount(f"/proc/self/fd/{fd}", entry, None, _MS_BIND | _MS_REC)


def _enter_private(seal_network: bool, plan: _Private) -> str:  # pragma: no cover - runs in the keeper
    """Enter the namespaces with a mount namespace, and make the plan's folders private: "", or why they are not.

    A kernel that refuses the mount namespace alone gets the others without it (the folders stay shared).
    """
    outside = os.readlink("/proc/self/ns/user")
    try:
        _enter_namespaces(seal_network=seal_network, mounts=True)
    except OSError as exc:
        if os.readlink("/proc/self/ns/user") != outside:  # in, but not set up: no second try from there
            raise
        _enter_namespaces(seal_network=seal_network)
        return f"the temporary folders stay shared: no mount namespace here ({exc})"
    return _make_private(plan)


def _lock_mounts() -> tuple[bool, str]:  # pragma: no cover - runs in the init
    """A /proc of this PID namespace, then the mounts locked (see above): whether they are, and what is missing."""
    missing = []
    try:
        _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    except OSError as exc:
        missing.append(f"it sees the machine's /proc ({exc})")
    try:
        _new_user_namespace(_CLONE_NEWUSER | _CLONE_NEWNS)
    except OSError as exc:  # hidden still, but a command running as root in its namespace could unmount them
        return False, "; ".join([*missing, f"its mounts could not be locked ({exc})"])
    return True, "; ".join(missing)


# --- forwarding loopback ports to Unix sockets ---------------------------------------------


def _listen(forward: Mapping[int, str | os.PathLike[str]]) -> list[tuple[socket.socket, str]]:
    out = []
    for port, path in forward.items():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", int(port)))
        s.listen(64)
        out.append((s, os.fspath(path)))
    return out


def _serve_forwards(listeners: list[tuple[socket.socket, str]]) -> None:
    for sock, path in listeners:
        threading.Thread(target=_accept_loop, args=(sock, path), name="toolchaos-forward", daemon=True).start()


def _accept_loop(listener: socket.socket, path: str) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            conn.close()
            upstream.close()
            continue
        for a, b in ((conn, upstream), (upstream, conn)):
            threading.Thread(target=pump, args=(a, b), name="toolchaos-pump", daemon=True).start()


def pump(src: socket.socket, dst: socket.socket) -> None:
    """Copy ``src`` to ``dst`` until ``src`` ends, then half-close both (the other direction may go on)."""
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:  # half-close: the other direction may still be talking
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)
        with contextlib.suppress(OSError):
            src.shutdown(socket.SHUT_RD)


# --- the child ----------------------------------------------------------------------------


class Child:
    """A started child process (see the module docstring). Thread-safe; ``end`` is idempotent.

    A command's output is drained by a thread of its own, so it never blocks on a full pipe
    while the caller does something else; a forked function's channel is drained by whoever
    waits for it (``wait``, ``end``), which keeps a thread start off the per-run path.
    """

    def __init__(self, pid: int, sealed: bool, out_fd: int, err_fd: int | None, in_fd: int | None, stdin: bytes,
                 status_fd: int | None, status_head: bytes, cap: int, popen: subprocess.Popen[bytes] | None,
                 listeners: list[tuple[socket.socket, str]], background: bool = True) -> None:
        self.pid = pid  # the process the caller waits for: the keeper, or the command itself
        self.sealed = sealed  # in its own PID (and, when asked, network) namespace
        self.private_tmp = False  # asked (start(private_tmp=...)) and got private temporary folders
        self.private_note = ""  # asked: what it did not get, and why
        self._out, self._err = _Capped(cap), _Capped(cap)
        self._popen = popen
        self._listeners = listeners
        self._lock = threading.Lock()
        self._pump_lock = threading.Lock()
        self._done = threading.Event()
        self._status_fd = status_fd
        self._status_buf = bytearray(status_head)
        self._status: tuple[str, int] | None = None  # the init's report: ("X", code) or ("K", signal)
        self._wait_status: int | None = None
        self._killed = False
        self._ended: Ended | None = None
        self._sel = selectors.DefaultSelector()
        self._sinks: dict[int, Callable[[bytes], None]] = {out_fd: self._out.add}
        if err_fd is not None:
            self._sinks[err_fd] = self._err.add
        if status_fd is not None:
            self._sinks[status_fd] = self._status_buf.extend
        for fd in self._sinks:
            os.set_blocking(fd, False)
            self._sel.register(fd, selectors.EVENT_READ)
        self._feed = _Feed(self._sel, in_fd, stdin)
        self._exit_fd = _pidfd(pid)
        if self._exit_fd is not None:
            self._sel.register(self._exit_fd, selectors.EVENT_READ)
        self._drain_until: float | None = None  # once the child has ended: how long its output may still come
        self._reader: threading.Thread | None = None
        if background:
            self._reader = threading.Thread(target=self._pump, args=(None, None), name=f"toolchaos-child-{pid}",
                                            daemon=True)
            self._reader.start()

    # -- what the caller reads

    @property
    def stdout(self) -> bytes:
        with self._lock:
            return self._out.value()

    @property
    def stderr(self) -> bytes:
        with self._lock:
            return self._err.value()

    @property
    def stdout_size(self) -> int:
        """Bytes received on stdout so far, those kept and those cut (it grows while the child writes)."""
        with self._lock:
            return len(self._out.data) + self._out.cut

    @property
    def ended(self) -> Ended | None:
        """How the child ended, once it has (``None`` while it runs)."""
        if not self._wait_done(0):
            return None
        return self._outcome()

    def running(self) -> bool:
        return not self._wait_done(0)

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait up to ``timeout`` real seconds; the exit code (``-N``: killed by signal N), or ``None`` if still running."""
        if not self._wait_done(timeout):
            return None
        return self._outcome().code

    def wait_for(self, ready: Callable[[bytes], bool], timeout: float | None = None) -> bool:
        """Wait until ``ready(stdout so far)`` holds or the child ends, up to ``timeout`` real seconds; whether either did.

        For a forked function that says it is done before it has exited: the caller goes
        on while the child's process tears down (reap it later with ``wait`` or ``end``).
        Only for a child without a reader thread (``fork_call``).
        """
        assert self._reader is None, "wait_for drains the output itself"
        until = None if timeout is None else time.monotonic() + timeout

        def stop() -> bool:
            with self._lock:
                return ready(bytes(self._out.data))

        with self._pump_lock:
            self._pump(until, stop)
        return self._done.is_set() or stop()

    def kill(self) -> None:
        """SIGKILL the child and everything it started, without waiting (reap it with ``wait`` or ``end``)."""
        if not self._done.is_set():
            self._killed = True
            self._signal(signal.SIGKILL)

    def end(self, grace: float = 0.5) -> Ended:
        """End the child and everything it started: SIGTERM, then SIGKILL after ``grace`` real seconds; reaped."""
        if not self._wait_done(0):
            self._signal(signal.SIGTERM)
            if not self._wait_done(max(0.0, grace)):
                self._killed = True
                self._signal(signal.SIGKILL)
                self._wait_done(None)
        if self._reader is not None:
            self._reader.join()
        return self._outcome()

    # -- how

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def _outcome(self) -> Ended:
        with self._lock:
            if self._ended is None:
                self._ended = self._decide()
            return self._ended

    def _decide(self) -> Ended:
        killed = self._killed
        if self._status is not None:  # the init saw the command end: its own status
            kind, value = self._status
            return Ended(value, None, killed) if kind == "X" else Ended(None, value, killed)
        status = self._wait_status or 0
        if os.WIFSIGNALED(status):
            return Ended(None, os.WTERMSIG(status), killed)
        return Ended(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else None, None, killed)

    def _wait_done(self, timeout: float | None) -> bool:
        if self._done.is_set():
            return True
        if self._reader is not None:
            return self._done.wait(timeout)
        until = None if timeout is None else time.monotonic() + timeout
        if not self._pump_lock.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            return self._done.is_set()
        try:
            self._pump(until)
        finally:
            self._pump_lock.release()
        return self._done.is_set()

    def _pump(self, until: float | None, stop: Callable[[], bool] | None = None) -> None:
        """Drain the output, feed stdin and reap, until the child has ended, ``until`` (monotonic) passes or ``stop()``."""
        try:
            while not self._done.is_set():
                if self._step(until):
                    self._finish()
                    return
                if (until is not None and time.monotonic() >= until) or (stop is not None and stop()):
                    return
        except BaseException:
            self._finish()
            raise

    def _step(self, until: float | None) -> bool:
        """One round of the loop; True when the child has ended and its output is drained."""
        if self._drain_until is None and self._reap():
            self._drain_until = time.monotonic() + _DRAIN
            self._feed.close()
            if self._exit_fd is not None:
                self._sel.unregister(self._exit_fd)
                os.close(self._exit_fd)
                self._exit_fd = None
        if self._drain_until is not None and (not self._sinks or time.monotonic() >= self._drain_until):
            return True
        if self._drain_until is None and not self._sinks and self._feed.fd is None and self._exit_fd is None:
            if until is None:
                self._reap(block=True)  # every pipe closed: nothing left but the exit
            else:  # no pidfd on this platform: poll the exit
                time.sleep(min(0.002, max(0.0, until - time.monotonic())))
            return False
        timeout = None if self._exit_fd is not None and self._drain_until is None else 0.02
        if until is not None:
            left = max(0.0, until - time.monotonic())
            timeout = left if timeout is None else min(timeout, left)
        for key, _ in self._sel.select(timeout):
            fd = int(key.fd)
            if fd == self._feed.fd:
                self._feed.write()
            elif fd in self._sinks:
                self._take(fd)
        return False

    def _finish(self) -> None:
        self._feed.close()
        for fd in [*self._sinks, *([] if self._exit_fd is None else [self._exit_fd])]:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._sinks.clear()
        self._exit_fd = None
        self._sel.close()
        self._reap(block=True)
        self._status = _parse_status(bytes(self._status_buf)) if self._status_fd is not None else None
        for s, _ in self._listeners:
            s.close()
        self._done.set()

    def _take(self, fd: int) -> None:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            with self._lock:
                self._sinks[fd](chunk)
            return
        self._sel.unregister(fd)
        os.close(fd)
        del self._sinks[fd]

    def _reap(self, block: bool = False) -> bool:
        """Reap the process the caller waits for; without a PID namespace, kill what it left in its group first."""
        if self._wait_status is not None:
            return True
        try:  # WNOWAIT: its pid stays taken, so the group's id cannot be reused while we kill the rest
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT | (0 if block else os.WNOHANG))
        except ChildProcessError:
            info = None
        if info is None and not block:
            return False
        if not self.sealed:
            self._signal(signal.SIGKILL)
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:  # pragma: no cover - reaped by someone else (a SIGCHLD handler)
            status = 0
        self._wait_status = status
        if self._popen is not None:  # we reaped it: the Popen object must not try again
            self._popen.returncode = os.waitstatus_to_exitcode(status)
        return True


class _Feed:
    """Stdin bytes written as the child reads them, then closed."""

    def __init__(self, sel: selectors.BaseSelector, fd: int | None, data: bytes) -> None:
        self.sel, self.fd, self.pending = sel, fd, memoryview(data)
        if fd is not None:
            os.set_blocking(fd, False)
            if data:
                sel.register(fd, selectors.EVENT_WRITE)
            else:
                self.close()

    def write(self) -> None:
        assert self.fd is not None
        try:
            n = os.write(self.fd, self.pending[:65536])
        except BlockingIOError:
            return
        except OSError:  # the child closed its stdin: it read what it wanted
            n = len(self.pending)
        self.pending = self.pending[n:]
        if not self.pending:
            self.close()

    def close(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            self.sel.unregister(self.fd)
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = None


def _pidfd(pid: int) -> int | None:
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


def _parse_status(data: bytes) -> tuple[str, int] | None:
    for line in data.decode(errors="replace").splitlines():
        if line[:1] in ("X", "K") and line[1:].lstrip("-").isdigit():
            return line[0], int(line[1:])
    return None


# --- starting -----------------------------------------------------------------------------


def start(argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
          stdin: bytes = b"", seal_network: bool = False, forward: Mapping[int, str | os.PathLike[str]] | None = None,
          cap: int = CAP, private_tmp: Sequence[str | os.PathLike[str]] | None = None) -> Child:
    """Start ``argv`` as a contained child (see the module docstring); ``OSError`` when it cannot start.

    ``env``: the whole environment (default: the caller's). ``stdin``: bytes fed to it, then
    closed. ``seal_network``: loopback only, where ``sealing_available()``. ``forward``:
    loopback ports that relay to Unix sockets of the caller. ``cap``: bytes kept of each of
    stdout and stderr. ``private_tmp``: the shared temporary folders private, where
    ``sealing_available()``, but for these paths and those the command needs (``Child.private_tmp``,
    ``Child.private_note`` say how it went).
    """
    argv = [os.fspath(a) for a in argv]
    if not argv:
        raise ValueError("start: an empty command")
    environ = dict(os.environ if env is None else env)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r, in_w = os.pipe()
    try:
        if sealing_available():
            plan = (None if private_tmp is None else
                    _private_plan([*private_tmp, *(forward or {}).values()], argv, environ, cwd))
            return _start_sealed(argv, environ, cwd, (in_r, out_w, err_w), (in_w, out_r, err_r), stdin,
                                 seal_network, dict(forward or {}), cap, plan)
        child = _start_plain(argv, environ, cwd, (in_r, out_w, err_w), (in_w, out_r, err_r), stdin,
                             dict(forward or {}), cap)
        if private_tmp is not None:
            child.private_note = "no user namespaces here: the child shares the machine's temporary folders"
        return child
    except BaseException:
        for fd in (in_w, out_r, err_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        raise
    finally:
        for fd in (in_r, out_w, err_w):
            with contextlib.suppress(OSError):
                os.close(fd)


def _start_plain(argv: list[str], env: dict[str, str], cwd: str | os.PathLike[str] | None,
                 child_fds: tuple[int, int, int], our_fds: tuple[int, int, int], stdin: bytes,
                 forward: dict[int, str | os.PathLike[str]], cap: int) -> Child:
    listeners = _listen(forward)
    try:
        popen = subprocess.Popen(argv, stdin=child_fds[0], stdout=child_fds[1], stderr=child_fds[2], env=env,
                                 cwd=cwd, start_new_session=True, close_fds=True)
    except BaseException:
        for s, _ in listeners:
            s.close()
        raise
    _serve_forwards(listeners)
    return Child(popen.pid, False, our_fds[1], our_fds[2], our_fds[0], stdin, None, b"", cap, popen, listeners)


def _start_sealed(argv: list[str], env: dict[str, str], cwd: str | os.PathLike[str] | None,
                  child_fds: tuple[int, int, int], our_fds: tuple[int, int, int], stdin: bytes, seal_network: bool,
                  forward: dict[int, str | os.PathLike[str]], cap: int, plan: _Private | None) -> Child:
    status_r, status_w = os.pipe()
    try:
        pid = _fork()
        if pid == 0:  # pragma: no cover - the keeper (coverage does not follow a fork)
            os.close(status_r)
            for fd in our_fds:
                os.close(fd)
            _keeper(argv, env, cwd, child_fds, status_w, seal_network, forward, plan)
        with contextlib.suppress(OSError):  # both sides set the group: no window where end() misses it
            os.setpgid(pid, pid)
    finally:
        os.close(status_w)
    try:
        started, rest = _await_start(status_r, pid)
    except BaseException:
        os.close(status_r)
        raise
    child = Child(pid, True, our_fds[1], our_fds[2], our_fds[0], stdin, status_r, rest, cap, None, [])
    child.private_tmp, child.private_note = started[1:2] == "P", started[2:]
    return child


def _await_start(status_r: int, pid: int) -> tuple[str, bytes]:
    """Block until the init reports the command started (``S``), or raise the error it reports (``E``).

    Returns that line (``SP`` or ``SN`` and a note for a child that asked for private temporary
    folders: ``_private_status``), and what the pipe held after it (the command may already have ended).
    """
    buf = b""
    while b"\n" not in buf:
        chunk = os.read(status_r, 4096)
        if not chunk:  # pragma: no cover - the keeper died before it could report
            os.waitpid(pid, 0)
            raise OSError(errno.ECHILD, "the child ended before its command started")
        buf += chunk
    line, _, rest = buf.partition(b"\n")
    if line.startswith(b"E"):
        os.waitpid(pid, 0)
        code, message, filename = [*line[1:].decode(errors="replace").split("\t"), "", ""][:3]
        number = int(code) if code.isdigit() else errno.EINVAL
        raise OSError(number, message, filename) if filename else OSError(number, message)
    return line.decode(errors="replace"), rest


def _report(fd: int, line: str) -> None:  # pragma: no cover - runs in a forked child
    with contextlib.suppress(OSError):
        os.write(fd, line.encode(errors="replace") + b"\n")


def _report_end(fd: int, pid: int) -> None:  # pragma: no cover - runs in a forked child
    """Wait for ``pid`` and report how it ended: ``K<signal>`` or ``X<exit code>``."""
    _, status = os.waitpid(pid, 0)
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    _report(fd, f"K{sig}" if sig is not None else f"X{os.waitstatus_to_exitcode(status)}")


def _keeper(argv: list[str], env: dict[str, str], cwd: str | os.PathLike[str] | None,
            child_fds: tuple[int, int, int], status_w: int, seal_network: bool,
            forward: dict[int, str | os.PathLike[str]],
            plan: _Private | None) -> None:  # pragma: no cover - runs in the keeper
    """In the keeper: enter the namespaces (and make the planned folders private), fork the init, wait for it.

    The keeper cannot start threads (after ``unshare(CLONE_NEWPID)`` the kernel refuses
    them), so the forwarded ports are served by the init.
    """
    code = 0
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, [])  # the forking thread's mask is not the command's
        os.setpgid(0, 0)
        private = None if plan is None else (plan, _enter_private(seal_network, plan))
        if plan is None:
            _enter_namespaces(seal_network=seal_network)
        init = _fork()
        if init == 0:
            _init(argv, env, cwd, child_fds, status_w, forward, private)
        for fd in (*child_fds, status_w):
            os.close(fd)
        # The caller's SIGTERM is for the command: the init passes it on to the namespace.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        os.waitpid(init, 0)
    except BaseException as exc:
        _report(status_w, f"E{getattr(exc, 'errno', None) or errno.EINVAL}\t{getattr(exc, 'strerror', None) or exc}\t")
        code = 1
    finally:
        os._exit(code)


def _init(argv: list[str], env: dict[str, str], cwd: str | os.PathLike[str] | None,
          child_fds: tuple[int, int, int], status_w: int,
          forward: dict[int, str | os.PathLike[str]],
          private: tuple[_Private, str] | None) -> None:  # pragma: no cover - runs in the init
    """PID 1 of the namespace: serve the forwarded ports, start the command, pass SIGTERM on, report its end.

    ``private``: the keeper's plan of private folders, and why they are not private ("": they are).
    """
    code = 0
    try:
        assert _libc is not None
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # the keeper killed: the namespace dies
        signal.signal(signal.SIGTERM, _pass_on)
        signal.signal(signal.SIGINT, _pass_on)
        started = "S" if private is None else _private_status(*private)  # before a thread: it may unshare
        try:
            _serve_forwards(_listen(forward))
            popen = subprocess.Popen(argv, stdin=child_fds[0], stdout=child_fds[1], stderr=child_fds[2], env=env,
                                     cwd=cwd, close_fds=True)
        except OSError as exc:
            _report(status_w, f"E{exc.errno or errno.EINVAL}\t{exc.strerror or exc}\t{exc.filename or ''}")
            return
        for fd in child_fds:
            os.close(fd)
        _report(status_w, started)
        _report_end(status_w, popen.pid)
    except BaseException as exc:
        _report(status_w, f"E{errno.EINVAL}\t{exc}\t")
        code = 1
    finally:
        os._exit(code)  # PID 1 ends: the kernel kills what is left in the namespace


def _private_status(plan: _Private, failed: str) -> str:  # pragma: no cover - runs in the init
    """The start line of a child with private folders: ``SP`` (all private) or ``SN`` (not all), and a note."""
    if failed:
        return "SN" + failed
    locked, missing = _lock_mounts()
    note = "; ".join([*plan.notes, *([missing] if missing else [])]).replace("\n", " ")
    return ("SP" if locked and not plan.notes else "SN") + note


def _pass_on(signum: int, frame: object) -> None:  # pragma: no cover - runs in the init
    if os.getpid() == 1:  # only ever as PID 1 of its own namespace: kill(-1) there means "the namespace"
        with contextlib.suppress(OSError):
            os.kill(-1, signum)


# --- forking a function -------------------------------------------------------------------


def fork_call(fn: Callable[[int], object], *, seal_network: bool = False, cap: int = CAP) -> Child:
    """Run ``fn(fd)`` in a forked, contained child; what it writes to ``fd`` is ``child.stdout`` (capped).

    The child ends when ``fn`` returns (exit 0), raises (exit 1) or dies; ``end`` ends it and
    everything it started as for a command. With namespaces, ``fn`` runs as PID 1 of its own
    namespace (see the module docstring): signals it sends itself without a handler are ignored.
    """
    out_r, out_w = os.pipe()
    sealed = sealing_available()
    if sealed:
        tid = _one_fork_tid()
        if tid is not None:
            try:
                return _clone_call(fn, out_r, out_w, seal_network, cap, tid)
            except OSError:  # the kernel refused the flags on clone: two forks, from now on
                _one_fork_refused()
    status_r, status_w = os.pipe()
    try:
        pid = _fork()
        if pid == 0:  # pragma: no cover - the forked child (coverage does not follow a fork)
            os.close(out_r)
            os.close(status_r)
            if sealed:
                _fork_keeper(fn, out_w, status_w, seal_network)
            _run_fn(fn, out_w, status_w)
        with contextlib.suppress(OSError):  # both sides set the group: no window where end() misses it
            os.setpgid(pid, pid)
    except BaseException:
        os.close(out_r)
        os.close(status_r)
        raise
    finally:
        os.close(out_w)
        os.close(status_w)
    return Child(pid, sealed, out_r, None, None, b"", status_r, b"", cap, None, [], background=False)


def _fork_keeper(fn: Callable[[int], object], out_w: int, status_w: int,
                 seal_network: bool) -> None:  # pragma: no cover - runs in the keeper
    code = 0
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.setpgid(0, 0)
        _enter_namespaces(seal_network=seal_network)
        pid = _fork()
        if pid == 0:
            assert _libc is not None
            _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # the keeper killed: the namespace dies
            if os.getppid() == 1:  # pragma: no cover - the keeper died before the prctl
                os._exit(1)
            _run_fn(fn, out_w, status_w)
        os.close(out_w)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the caller's SIGTERM is for fn's process
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _report_end(status_w, pid)
    except BaseException as exc:
        _report(status_w, f"E{getattr(exc, 'errno', None) or errno.EINVAL}\t{exc}\t")
        code = 1
    finally:
        os._exit(code)


def _run_fn(fn: Callable[[int], object], out_w: int, status_w: int) -> None:  # pragma: no cover - in the child
    code = 1
    try:
        os.close(status_w)
        if not os.getpid() == 1:
            os.setpgid(0, 0)
        fn(out_w)
        code = 0
    finally:
        os._exit(code)  # never back into the caller's code: this process is a copy of it


# --- one fork: clone(2) straight into the new namespaces ----------------------------------
#
# A process cannot give itself a new PID namespace (only its children get one), so the
# portable way in above forks twice: the keeper enters the namespaces, and forks again for
# PID 1. Each fork of the whole harness process copies its page tables, and each copy is
# torn down again at exit: most of an isolated run's cost. clone(2) with the namespace flags
# makes the first child PID 1 of a new user, PID and network namespace in one copy (an
# unprivileged process may ask, since the new user namespace grants the rights for the
# others). Python has no clone(), so it is called as os.fork() calls fork(): the
# interpreter's own before/after-fork steps around it, the GIL held throughout.
#
# What glibc's fork() adds around its own clone is for other threads (it takes malloc's,
# stdio's and the loader's locks so that the child does not inherit one held by a thread that
# is not copied), for C libraries' pthread_atfork handlers, and for the thread id it caches
# (pthread_kill reads it: the watchdog signals the child's main thread). So this path is taken
# only where none of that can be missed: one OS thread in the whole process (no other thread
# can hold a lock, and none can start while the GIL is held here), glibc on x86-64, and the
# cached thread id found where glibc keeps it (checked against the kernel's every time), which
# the kernel then writes in the child (CLONE_CHILD_SETTID), as glibc's own fork asks it to.
# Anywhere else, the two forks above.

_CLONE_CHILD_SETTID, _CLONE_CHILD_CLEARTID = 0x01000000, 0x00200000
_SYS_CLONE_X86_64 = 56
_TID_OFFSET_X86_64 = 0x2D0  # struct pthread's tid in glibc on x86-64 (after its 704-byte TCB header)
_one_fork: bool | None = None  # None: not tried yet in this process


def _one_fork_tid() -> int | None:
    """The address of glibc's cached thread id of this thread when one fork can contain a child here, else None."""
    global _one_fork
    if _one_fork is False or _held is None or _libc is None:
        return None
    if _one_fork is None:
        _one_fork = _one_fork_possible()
        if not _one_fork:
            return None
    try:
        if len(os.listdir("/proc/self/task")) != 1:
            return None
    except OSError:
        return None
    address = int(_libc.pthread_self()) + _TID_OFFSET_X86_64
    if ctypes.c_int.from_address(address).value != threading.get_native_id():
        return None
    return address


def _one_fork_refused() -> None:
    global _one_fork
    _one_fork = False


def _one_fork_possible() -> bool:
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):  # pragma: no cover - not glibc
        libc = ""
    if os.uname().machine != "x86_64" or not libc.startswith("glibc "):
        return False
    assert _libc is not None and _held is not None
    _libc.pthread_self.restype = ctypes.c_void_p
    _held.syscall.restype = ctypes.c_long
    _held.syscall.argtypes = [ctypes.c_long, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.c_ulong]
    return True


def _clone(flags: int, tid_address: int) -> int:
    """fork(), into the namespaces ``flags`` name: 0 in the child, its pid in the caller; ``OSError`` if refused."""
    assert _held is not None
    sys.audit("os.fork")
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = int(_held.syscall(_SYS_CLONE_X86_64, flags | _CLONE_CHILD_SETTID | _CLONE_CHILD_CLEARTID | signal.SIGCHLD,
                            None, None, tid_address, 0))
    if pid == 0:  # pragma: no cover - the child (coverage does not follow a fork)
        api.PyOS_AfterFork_Child()
        return 0
    err = ctypes.get_errno()
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(err, f"clone: {os.strerror(err)}")
    return pid


def _clone_call(fn: Callable[[int], object], out_r: int, out_w: int, seal_network: bool, cap: int,
                tid_address: int) -> Child:
    uid, gid = os.getuid(), os.getgid()  # read here: in the child they read as the overflow id until mapped
    flags = _CLONE_NEWUSER | _CLONE_NEWPID | (_CLONE_NEWNET if seal_network else 0)
    pid = _clone(flags, tid_address)  # OSError when refused: the caller forks twice, with the same pipes
    if pid == 0:  # pragma: no cover - PID 1 of the new namespace
        os.close(out_r)
        _contained(fn, out_w, uid, gid, seal_network)
    with contextlib.suppress(OSError):  # both sides set the group: no window where end() misses it
        os.setpgid(pid, pid)
    os.close(out_w)
    return Child(pid, True, out_r, None, None, b"", None, b"", cap, None, [], background=False)


def _contained(fn: Callable[[int], object], out_w: int, uid: int, gid: int,
               seal_network: bool) -> None:  # pragma: no cover - runs in the cloned child
    """In the cloned child, PID 1 of its namespace: map the ids, bring loopback up, run ``fn``; never return.

    When it ends, the kernel kills whatever it started in the namespace.
    """
    code = 1
    try:
        assert _libc is not None
        # The caller killed: this run dies with it (there is no keeper between them any more).
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])  # the forking thread's mask is not the agent's
        os.setpgid(0, 0)
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
        if seal_network:
            _loopback_up()
        fn(out_w)
        code = 0
    finally:
        os._exit(code)  # never back into the caller's code: this process is a copy of it
