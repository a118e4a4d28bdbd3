"""Child processes: started contained, output capped, ended with everything they started."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from toolchaos._plumbing import children

GRACE = 0.3
SLACK = 1.0  # real seconds past the grace a loaded CI machine may take to kill and reap
needs_ns = pytest.mark.skipif(not children.sealing_available(), reason="no unprivileged namespaces here")


@pytest.fixture(params=["sealed", "plain"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test runs with namespaces (where available) and with the process-group fallback."""
    if request.param == "sealed" and not children.sealing_available():
        pytest.skip("no unprivileged namespaces here")
    if request.param == "plain":
        monkeypatch.setattr(children, "_available", False)
    return str(request.param)


def _alive(token: str) -> list[int]:
    """Pids of processes whose command line holds ``token`` (they are ours: nobody else knows it)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                state = (entry / "stat").read_text().split(") ", 1)[1][:1]
            except OSError:
                continue
            if token.encode() in cmdline and state != "Z":
                out.append(int(entry.name))
    return out


def _gone(token: str, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while _alive(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _ended_within(child: children.Child, seconds: float) -> children.Ended:
    t0 = time.monotonic()
    ended = child.end(grace=GRACE)
    assert time.monotonic() - t0 < seconds, "end() took longer than the grace allows"
    return ended


def _py(code: str) -> list[str]:
    return [sys.executable, "-I", "-S", "-c", code]


def test_runs_a_command_with_stdin_env_cwd_and_exit_code(mode: str, tmp_path: Path) -> None:
    child = children.start(["sh", "-c", 'cat; echo "$GREETING"; pwd; echo oops >&2; exit 3'], stdin=b"task\n",
                           env={"GREETING": "hello", "PATH": os.environ["PATH"]}, cwd=tmp_path)
    assert child.wait(timeout=10) == 3
    assert child.stdout == f"task\nhello\n{tmp_path}\n".encode()
    assert child.stderr == b"oops\n"
    assert child.ended == children.Ended(3, None, False)
    assert child.sealed is (mode == "sealed")


def test_a_command_that_cannot_start_is_an_os_error(mode: str) -> None:
    with pytest.raises(FileNotFoundError, match="no-such-command-here"):
        children.start(["no-such-command-here"])
    with pytest.raises(ValueError, match="empty command"):
        children.start([])


def test_wait_times_out_in_real_time_and_a_signal_death_is_reported(mode: str) -> None:
    child = children.start(["sleep", "30"])
    t0 = time.monotonic()
    assert child.wait(timeout=0.1) is None
    assert 0.1 <= time.monotonic() - t0 < 1.0
    assert child.running() and child.ended is None
    ended = _ended_within(child, GRACE + SLACK)
    assert ended == children.Ended(None, 15, False) and ended.code == -15
    segv = children.start(["sh", "-c", "kill -SEGV $$"])
    assert segv.wait(timeout=10) == -11


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace(mode: str) -> None:
    token = uuid.uuid4().hex
    child = children.start(_py(f"import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                               f"print('ready', flush=True); time.sleep(30)  # {token}"))
    _until(lambda: child.stdout == b"ready\n")
    ended = _ended_within(child, GRACE + SLACK)
    assert ended.killed and ended.signal == 9
    assert _gone(token)


def test_a_spinning_child_is_ended(mode: str) -> None:
    child = children.start(["sh", "-c", "while :; do :; done"])
    time.sleep(0.05)
    assert not _ended_within(child, GRACE + SLACK).killed  # a spin in sh still takes SIGTERM


@pytest.mark.parametrize("how", ["setsid", "double-fork", "new-session"])
def test_what_a_child_started_ends_with_it(mode: str, how: str) -> None:
    token = uuid.uuid4().hex
    script = {
        "setsid": f"setsid sh -c 'trap \"\" TERM; sleep 300 # {token}' & sleep 30",
        "double-fork": f"(sh -c 'trap \"\" TERM; sleep 300 # {token}' &) ; sleep 30",
        "new-session": "",
    }[how]
    if how == "new-session":
        argv = _py(f"import subprocess, time; subprocess.Popen(['sh', '-c', 'trap \"\" TERM; sleep 300 # {token}'], "
                   f"start_new_session=True); time.sleep(30)")
    else:
        argv = ["sh", "-c", script]
    child = children.start(argv)
    _until(lambda: bool(_alive(token)))
    _ended_within(child, GRACE + SLACK)
    if mode == "sealed":
        assert _gone(token), "a process that left the group outlived its child"
    else:  # documented: without a PID namespace, a process that left the group is not reached
        for pid in _alive(token):
            os.kill(pid, 9)


def test_a_child_that_exits_takes_its_group_with_it(mode: str) -> None:
    token = uuid.uuid4().hex
    child = children.start(["sh", "-c", f"sh -c 'sleep 300 # {token}' & echo started"])
    assert child.wait(timeout=10) == 0
    assert _gone(token)


def test_output_is_capped_with_a_marker(mode: str) -> None:
    child = children.start(_py("import sys; sys.stdout.write('x' * 3_000_000); sys.stderr.write('e' * 10)"), cap=1000)
    assert child.wait(timeout=10) == 0
    assert child.stdout.startswith(b"x" * 1000)
    assert child.stdout.endswith(b"\n[toolchaos: 2999000 more bytes cut]\n")
    assert child.stderr == b"e" * 10


def test_stdin_larger_than_a_pipe_is_fed_whole(mode: str) -> None:
    data = b"y" * 1_000_000
    child = children.start(_py("import sys; print(len(sys.stdin.buffer.read()))"), stdin=data)
    assert child.wait(timeout=10) == 0
    assert child.stdout == b"1000000\n"


def test_end_after_exit_and_twice_is_harmless(mode: str) -> None:
    child = children.start(["true"])
    assert child.wait(timeout=10) == 0
    assert child.end() == child.end() == children.Ended(0, None, False)


# --- the sealed network -------------------------------------------------------------------


@needs_ns
@pytest.mark.parametrize("code", [
    "import socket; socket.create_connection(('10.255.255.1', 80), timeout=2)",
    "import _socket; s = _socket.socket(); s.settimeout(2); s.connect(('93.184.216.34', 80))",
    "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('8.8.8.8', 53))",
    "import socket; socket.gethostbyname('example.com')",
    "import socket; socket.getaddrinfo('example.com', 443)",
])
def test_a_sealed_child_reaches_no_other_host(code: str) -> None:
    child = children.start(_py(code), seal_network=True)
    assert child.wait(timeout=10) == 1, child.stderr
    assert any(why in child.stderr for why in (b"unreachable", b"name resolution", b"not known")), child.stderr


@needs_ns
def test_a_sealed_child_has_loopback() -> None:
    code = ("import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
            "c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.sendall(b'ok'); print(a.recv(2))")
    child = children.start(_py(code), seal_network=True)
    assert child.wait(timeout=10) == 0, child.stderr
    assert child.stdout == b"b'ok'\n"


@pytest.fixture
def unix_server(tmp_path: Path) -> Iterator[str]:
    """A Unix socket in the parent that answers each connection with what it got, upper-cased."""
    path = str(tmp_path / "server.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(conn.recv(100).upper())

    threading.Thread(target=serve, daemon=True).start()
    yield path
    server.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_forwarded_port_reaches_the_parent(mode: str, unix_server: str) -> None:
    port = _free_port()
    code = (f"import socket; c = socket.create_connection(('127.0.0.1', {port}), timeout=5); c.sendall(b'ping'); "
            f"print(c.recv(100))")
    child = children.start(_py(code), seal_network=True, forward={port: unix_server})
    assert child.wait(timeout=10) == 0, child.stderr
    assert child.stdout == b"b'PING'\n"
    assert child.sealed is (mode == "sealed")


def test_a_forwarded_port_in_use_is_an_os_error(mode: str, unix_server: str) -> None:
    if mode == "sealed":
        pytest.skip("a sealed child has a network of its own: every port is free there")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(OSError):
            children.start(["true"], forward={taken.getsockname()[1]: unix_server})


def _until(condition: object, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the child did not get there in time"
        time.sleep(0.01)


def test_without_pidfd_the_exit_is_polled(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(children, "_pidfd", lambda pid: None)
    child = children.start(["sh", "-c", "echo out; exit 4"])
    assert child.wait(timeout=10) == 4 and child.stdout == b"out\n"
    forked = children.fork_call(lambda fd: os.write(fd, b"hi"))
    assert forked.wait(timeout=10) == 0 and forked.stdout == b"hi"


def test_stdin_the_child_never_reads_is_dropped(mode: str) -> None:
    child = children.start(["true"], stdin=b"z" * 2_000_000)
    assert child.wait(timeout=10) == 0


def test_a_forwarded_port_whose_server_is_gone_closes_the_connection(mode: str, tmp_path: Path) -> None:
    port = _free_port()
    code = (f"import socket; c = socket.create_connection(('127.0.0.1', {port}), timeout=5); "
            f"print(c.recv(100))")
    child = children.start(_py(code), seal_network=True, forward={port: str(tmp_path / "nobody.sock")})
    assert child.wait(timeout=10) == 0, child.stderr
    assert child.stdout == b"b''\n"


def test_a_command_that_cannot_start_closes_its_forwarded_ports(mode: str, unix_server: str) -> None:
    port = _free_port()
    with pytest.raises(FileNotFoundError):
        children.start(["no-such-command-here"], forward={port: unix_server})
    with socket.socket() as s:  # the port is free again
        s.bind(("127.0.0.1", port))


def test_fork_call_reports_how_the_function_ended(mode: str) -> None:
    def fails(fd: int) -> None:
        raise RuntimeError("in the child")

    assert children.fork_call(fails).wait(timeout=10) == 1
    assert children.fork_call(lambda fd: os._exit(7)).wait(timeout=10) == 7
    spin = children.fork_call(lambda fd: [None for _ in iter(int, 1)])
    assert spin.wait(timeout=0.05) is None and spin.stdout_size == 0
    spin.kill()
    assert spin.end().killed
