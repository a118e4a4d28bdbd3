"""What a process agent takes from its caller's environment: the allowlist and the names passed, nothing else."""

from __future__ import annotations

import pytest
from toolchaos._plumbing.environ import ALLOWED, check_names, inherited, split_names
from toolchaos.errors import UserError

CALLER = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC", "TMPDIR": "/var/tmp",
          "GITHUB_TOKEN": "ghp_secret", "HF_TOKEN": "hf_secret", "SSH_AUTH_SOCK": "/run/agent", "VIRTUAL_ENV": "/venv",
          "PYTHONPATH": "/src", "NODE_OPTIONS": "--require x", "PATHOLOGICAL": "not PATH", "MY_LC_THING": "no"}


def test_only_the_allowlist_is_taken_from_the_caller() -> None:
    assert inherited(environ=CALLER) == {"PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC",
                                         "TMPDIR": "/var/tmp"}
    assert "HOME" not in ALLOWED and "PYTHONPATH" not in ALLOWED  # the launch sets a temporary HOME


def test_names_passed_are_taken_when_the_caller_has_them() -> None:
    env = inherited(("HF_TOKEN", "PYTHONPATH", "UNSET_IN_CALLER"), CALLER)
    assert env["HF_TOKEN"] == "hf_secret" and env["PYTHONPATH"] == "/src"
    assert "UNSET_IN_CALLER" not in env and "GITHUB_TOKEN" not in env


def test_names_are_split_on_commas_and_spaces_in_order_once_each() -> None:
    assert split_names(["A,B", "C  D,", "A"]) == ("A", "B", "C", "D")
    assert split_names([]) == () and split_names([""]) == ()
    assert check_names("ONE") == ("ONE",)  # one name given as text


@pytest.mark.parametrize(("names", "words"), [
    (["A=1"], "'A=1' is not an environment variable name"),
    ([""], "'' is not an environment variable name"),
    (["A B"], "'A B' is not"),
    ([3], "3 is not"),
    (7, "expected a list of environment variable names, got 7"),
])
def test_a_bad_name_is_an_error_naming_the_field(names: object, words: str) -> None:
    with pytest.raises(UserError, match=words) as caught:
        check_names(names, "--pass-env")
    assert caught.value.field == "--pass-env" and str(caught.value).startswith("--pass-env: ")
    if names == ["A=1"]:
        assert "set values with the agent's env:" in str(caught.value)
