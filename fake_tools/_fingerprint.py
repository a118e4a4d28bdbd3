"""Canonical arguments and fingerprints.

A call's fingerprint is its tool name plus its arguments normalised only where the
difference is meaningless: key order, surrounding and repeated whitespace, arguments
the tool declares volatile (fresh request ids, nonces), and omitted defaults. What
changes a result (a page, a cursor, a resource version) is kept. The fingerprint is a
short stable hash (the same in every process, unlike ``hash()``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Mapping
from typing import Any


def _sorted_encoder() -> Callable[[Any], str]:
    """``json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)``.

    Every call and every fingerprint encodes its arguments: the C encoder is called directly,
    without ``JSONEncoder.encode`` and ``iterencode`` around it (two Python calls each time). No
    circular check: an argument that contains itself fails with RecursionError, not ValueError.
    """
    c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if c_make_encoder is None:  # pragma: no cover - CPython always has it
        encoder = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return encoder.encode
    chunks = c_make_encoder(None, str, json.encoder.encode_basestring, None, ":", ",", True, False, True)
    return lambda obj: "".join(chunks(obj, 0))


_dumps = _sorted_encoder()


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, Mapping):
        return {str(k): _norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    return value


def normalise(args: Mapping[str, Any], volatile: Collection[str] = (),
              defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Arguments with meaningless differences removed (see the module docstring)."""
    out: dict[str, Any] = {}
    if defaults:
        for k, v in defaults.items():
            if k not in volatile:
                out[k] = v
    for k, v in args.items():
        if k in volatile:
            continue
        if type(v) is str:
            out[k] = " ".join(v.split())
        elif type(v) in (int, float, bool) or v is None:
            out[k] = v
        else:
            out[k] = _norm(v)
    return out


def canonical(value: Any) -> str:
    """Deterministic compact JSON with sorted keys."""
    return _dumps(value)


def digest(text: str) -> str:
    """A 12-hex-digit stable hash of a text."""
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def fingerprint(tool: str, normalised_args: Mapping[str, Any]) -> str:
    return digest(tool + "\x00" + _dumps(normalised_args))
