"""A child's private temporary folders: the machine's shared ones empty, but for what the child needs.

Each test plants a folder of "another run" in the shared temporary folder, starts a real child
(a Python script on ``sys.executable``) that reports what it sees, and reads the report.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from chaos_samples import needs_private_temp
from toolchaos._plumbing import children

SCRATCH = f"scratch-of-a-child-{uuid.uuid4().hex}"  # what a child writes in its temporary folder (xdist: one per worker)

# What the child sees: each path of its stdin (which names them to no one else) exists or not, the
# temporary folder's entries, where it is, and whether unmounting its temporary folder (as root in
# its namespace: a locked mount) showed anything.
LOOK = r"""
import ctypes, json, os, sys, tempfile
seen = {p: os.path.exists(p) for p in sys.stdin.read().split()}
before = sorted(os.listdir(tempfile.gettempdir()))
ctypes.CDLL(None, use_errno=True).umount2(tempfile.gettempdir().encode(), 2)  # MNT_DETACH
after = sorted(os.listdir(tempfile.gettempdir()))
with open(os.path.join(tempfile.gettempdir(), os.environ["SCRATCH"]), "w") as f:
    f.write("mine")
config = os.environ.get("AGENT_CONFIG")
print(json.dumps({"seen": seen, "listed": before, "after_umount": after, "cwd": os.getcwd(),
                  "config": open(config).read() if config else None}))
"""


@pytest.fixture
def runs() -> Iterator[tuple[Path, Path]]:
    """This run's folder and another run's, side by side in the shared temporary folder, a file in each."""
    mine = Path(tempfile.mkdtemp(prefix="toolchaos-agent-"))
    theirs = Path(tempfile.mkdtemp(prefix="toolchaos-agent-"))
    for folder in (mine, theirs):
        (folder / "config.toml").write_text("a run's file")
    yield mine, theirs
    shutil.rmtree(mine, ignore_errors=True)
    shutil.rmtree(theirs, ignore_errors=True)


def _look(*paths: Path, private: tuple[Path, ...], cwd: Path | str | None = None,
          env: dict[str, str] | None = None) -> tuple[children.Child, dict[str, object]]:
    child = children.start([sys.executable, "-c", LOOK], env={"PATH": os.defpath, "SCRATCH": SCRATCH, **(env or {})},
                           cwd=cwd, stdin=" ".join(map(str, paths)).encode(), seal_network=True, private_tmp=private)
    assert child.wait(timeout=20) == 0, child.stderr
    return child, json.loads(child.stdout)


def test_a_private_child_sees_its_own_folder_and_not_another_runs(runs: tuple[Path, Path], tmp_path: Path) -> None:
    needs_private_temp()
    mine, theirs = runs
    named = Path(tempfile.mkdtemp(prefix="named-by-env-"))  # a folder of the temporary folder its environment names
    link = Path(tempfile.gettempdir()) / f"link-{named.name}"  # and one it names through a link
    link.symlink_to(named)
    try:
        (named / "config.toml").write_text("model = 'm'")
        child, seen = _look(mine / "config.toml", theirs / "config.toml", theirs, private=(mine,), cwd=tmp_path,
                            env={"AGENT_CONFIG": str(link / "config.toml")})
        assert child.private_tmp and child.private_note == ""
        assert seen["seen"] == {str(mine / "config.toml"): True, str(theirs / "config.toml"): False,
                                str(theirs): False}
        assert mine.name in seen["listed"] and theirs.name not in seen["listed"]  # type: ignore[operator]
        assert seen["after_umount"] == seen["listed"], "its mounts are locked: unmounting shows nothing more"
        assert seen["cwd"] == str(tmp_path) and seen["config"] == "model = 'm'"
        assert not (Path(tempfile.gettempdir()) / SCRATCH).exists(), "what it writes there is its own"
    finally:
        link.unlink()
        shutil.rmtree(named, ignore_errors=True)


def test_without_private_tmp_a_child_sees_the_shared_folders(runs: tuple[Path, Path]) -> None:
    if not children.sealing_available():
        pytest.skip("no user namespaces here")
    theirs = runs[1]
    child = children.start([sys.executable, "-c", LOOK], env={"PATH": os.defpath, "SCRATCH": SCRATCH},
                           stdin=str(theirs).encode(),
                           seal_network=True)
    try:
        assert child.wait(timeout=20) == 0, child.stderr
        assert json.loads(child.stdout)["seen"] == {str(theirs): True}
        assert not child.private_tmp and child.private_note == ""
    finally:
        (Path(tempfile.gettempdir()) / SCRATCH).unlink(missing_ok=True)


def test_mounts_that_fail_leave_the_folders_shared_and_say_why(runs: tuple[Path, Path],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    needs_private_temp()
    mine, theirs = runs

    def refused(source: object, target: str, *args: object) -> None:
        raise OSError(errno.EPERM, f"mount on {target}: Operation not permitted")

    monkeypatch.setattr(children, "_mount", refused)  # the keeper is a fork: it calls this one
    try:
        child, seen = _look(mine / "config.toml", theirs / "config.toml", private=(mine,))
    finally:
        (Path(tempfile.gettempdir()) / SCRATCH).unlink(missing_ok=True)
    assert not child.private_tmp
    assert child.private_note.startswith("the temporary folders stay shared: ") and "not permitted" in child.private_note
    assert seen["seen"] == {str(mine / "config.toml"): True, str(theirs / "config.toml"): True}  # it ran all the same


def test_a_temporary_folder_that_is_the_working_directory_stays_shared(runs: tuple[Path, Path]) -> None:
    needs_private_temp()
    mine, theirs = runs
    temp = Path(tempfile.gettempdir())
    try:
        child, seen = _look(theirs / "config.toml", private=(mine,), cwd=temp)
    finally:
        (temp / SCRATCH).unlink(missing_ok=True)
    assert not child.private_tmp and f"{temp} stays shared: it is the child's working directory" in child.private_note
    assert seen["seen"] == {str(theirs / "config.toml"): True} and seen["cwd"] == str(temp)


def test_without_namespaces_a_child_asked_for_private_folders_says_it_has_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(children, "_available", False)
    child = children.start(["true"], private_tmp=())
    assert child.wait(timeout=10) == 0
    assert not child.private_tmp and child.private_note.startswith("no user namespaces here")


def test_the_plan_keeps_the_entries_the_command_names(runs: tuple[Path, Path], tmp_path: Path) -> None:
    mine, theirs = runs
    temp = os.path.realpath(tempfile.gettempdir())
    plan = children._private_plan([], ["python", f"--config={theirs}/c.toml", "agent.py", "not-there"],
                                  {"PATH": f"/usr/bin{os.pathsep}{tmp_path}/bin", "HOME": "/elsewhere"}, mine)
    kept = {entry: kind for entry, kind, _ in plan.keep}
    top = os.path.join(temp, os.path.relpath(os.path.realpath(tmp_path), temp).split(os.sep)[0])
    # its working directory (and the script in it), the --flag=value, the folder on PATH: each entry once; and the
    # caller's own working directory, entered again once the folders are in place (a checkout under /tmp, say)
    ours = children._entry_below(os.path.realpath(os.getcwd()), [temp])
    assert kept == {str(mine): "dir", str(theirs): "dir", top: "dir", **({ours: "dir"} if ours else {})}, kept
    assert temp in [folder for folder, _ in plan.hide] and plan.cwd == os.getcwd() and plan.notes == ()
    assert children._entry_below(temp, [temp]) is None  # the folder itself is hidden, not kept


def test_a_shared_folder_inside_a_kept_one_stays_hidden(runs: tuple[Path, Path], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    needs_private_temp()
    mine = runs[0]
    shared = tmp_path / "shared"  # a temporary folder of its own (TMPDIR) inside the kept working directory
    (shared / "toolchaos-agent-other").mkdir(parents=True)
    monkeypatch.setattr(children, "SHARED_TEMP", (*children.SHARED_TEMP, str(shared)))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "work").mkdir()
    try:
        child, seen = _look(shared / "toolchaos-agent-other", shared, tmp_path / "work", private=(mine,), cwd="work")
    finally:
        (Path(tempfile.gettempdir()) / SCRATCH).unlink(missing_ok=True)
    assert child.private_tmp, child.private_note
    assert seen["seen"] == {str(shared / "toolchaos-agent-other"): False, str(shared): True, str(tmp_path / "work"): True}
    assert seen["cwd"] == str(tmp_path / "work")  # a relative working directory, from the caller's


def test_a_kernel_without_mount_namespaces_starts_the_child_with_shared_folders(runs: tuple[Path, Path],
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    if not children.sealing_available():
        pytest.skip("no user namespaces here")
    mine, theirs = runs
    real = children._enter_namespaces

    def no_mounts(*, seal_network: bool, mounts: bool = False) -> None:
        if mounts:  # as unshare(2) refuses the flags: nothing changed
            raise OSError(errno.EINVAL, "unshare: Invalid argument")
        real(seal_network=seal_network)

    monkeypatch.setattr(children, "_enter_namespaces", no_mounts)  # the keeper is a fork: it calls this one
    try:
        child, seen = _look(mine / "config.toml", theirs / "config.toml", private=(mine,))
    finally:
        (Path(tempfile.gettempdir()) / SCRATCH).unlink(missing_ok=True)
    assert child.sealed and not child.private_tmp
    assert child.private_note == ("the temporary folders stay shared: no mount namespace here "
                                  "([Errno 22] unshare: Invalid argument)")
    assert seen["seen"] == {str(mine / "config.toml"): True, str(theirs / "config.toml"): True}
