"""Reading a file the user named, bounded: regular files only, size-capped before it is read, gzip capped too.

A scenario file or a recorded log is read whole at load time, so a path to ``/dev/zero``,
``/dev/urandom``, a FIFO or a gzip bomb would hang the load or exhaust memory. Here the
file is checked first (``stat``: a regular file, under the cap), opened without blocking
(a FIFO swapped in after the check does not hang the open), checked again on the open
descriptor, and read for at most ``cap + 1`` bytes; a gzip file is decompressed with the same
cap on its output. Every refusal is an ``OSError`` whose ``strerror`` says what is wrong,
which the loaders turn into their own located errors.
"""

from __future__ import annotations

import errno
import os
import stat
import zlib
from pathlib import Path
from typing import IO

GZIP_MAGIC = b"\x1f\x8b"
# A log read whole (replay, the recorded policy): at most this many bytes on disk, and once
# gunzipped. A streaming reader (toolchaos analyze) has no size limit, only regular files; its
# gzip streams are capped by ratio (toolchaos.logs._files.GUNZIP_RATIO).
MAX_LOG_BYTES = 64 * 1024 * 1024
_CHUNK = 1 << 20

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _refuse(code: int, why: str, path: str) -> OSError:
    return OSError(code, why, path)


def _check(mode: int, size: int, cap: int, path: str) -> None:
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise _refuse(errno.EINVAL, f"{kind}, not a regular file", path)
    if size > cap:
        raise _refuse(errno.EFBIG, f"the file is {size:,} bytes; such files are limited to {cap:,}", path)


def checked_path(path: str | Path) -> str:
    """``path`` as a string, refused when it holds a NUL byte (no system call takes one)."""
    p = os.fspath(path)
    if "\x00" in p:
        raise _refuse(errno.EINVAL, "the path contains a NUL byte", p.replace("\x00", "\\0"))
    return p


def read_capped(path: str | Path, cap: int, *, gunzip: bool = False) -> bytes:
    """The bytes of a regular file of at most ``cap`` bytes (gunzipped, also to at most ``cap``, when asked and gzip)."""
    p = checked_path(path)
    st = os.stat(p)  # a symlink loop raises ELOOP here
    _check(st.st_mode, st.st_size, cap, p)
    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        _check(st.st_mode, st.st_size, cap, p)  # the file checked is the file read
        data = _read_at_most(fd, cap + 1)
    finally:
        os.close(fd)
    if len(data) > cap:  # it grew since the check
        raise _refuse(errno.EFBIG, f"the file is more than {cap:,} bytes; such files are limited to {cap:,}", p)
    if gunzip and data[:2] == GZIP_MAGIC:
        return gunzip_capped(data, cap, p)
    return data


def _read_at_most(fd: int, n: int) -> bytes:
    parts: list[bytes] = []
    left = n
    while left > 0:
        chunk = os.read(fd, min(left, _CHUNK))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def gunzip_capped(data: bytes, cap: int, path: str = "<data>") -> bytes:
    """Decompress gzip ``data`` (every member) to at most ``cap`` bytes, else ``OSError``."""
    out: list[bytes] = []
    size = 0
    rest = data
    while rest:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            chunk = d.decompress(rest, cap + 1 - size)
            while not d.eof and len(chunk) and size + len(chunk) <= cap:
                out.append(chunk)
                size += len(chunk)
                chunk = d.decompress(d.unconsumed_tail, cap + 1 - size)
        except zlib.error as exc:
            raise _refuse(errno.EINVAL, f"not a valid gzip file ({exc})", path) from None
        out.append(chunk)
        size += len(chunk)
        if size > cap:
            raise _refuse(errno.EFBIG, f"the file decompresses to more than {cap:,} bytes; such files are limited "
                                       f"to {cap:,}", path)
        if not d.eof:
            raise _refuse(errno.EINVAL, "a truncated gzip file", path)
        rest = d.unused_data
        if rest[:2] != GZIP_MAGIC:  # trailing bytes after the last member, as gzip tolerates zeros
            break
    return b"".join(out)


def open_regular(path: str | Path) -> int:
    """A read-only descriptor of a regular file (any size), for readers that stream."""
    p = checked_path(path)
    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        _check(st.st_mode, 0, 0, p)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_new(path: str | Path) -> IO[bytes]:
    """``path`` opened to be written from scratch, never through a symbolic link planted there.

    An artifacts directory can be shared (CI caches, /tmp): a link named like a trace would make
    the harness overwrite whatever it points to. ``O_NOFOLLOW`` refuses the link itself; the
    refusal is an ``OSError`` that says so.
    """
    p = checked_path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(p, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(p):
            raise _refuse(errno.ELOOP, "a symbolic link is in the way; the harness does not write through links",
                          p) from None
        raise
    return os.fdopen(fd, "wb")
