"""The wire: unmodified SDK agents under chaos, over respx (see ``toolchaos.wire``)."""

from toolchaos.errors import ApiFaultError, PatchError, UnmatchedRequest
from toolchaos.wire import _compat, _mocker
from toolchaos.wire._apifaults import (
    API_FAULTS,
    ApiFault,
    ApiFaults,
    as_api_fault,
    malformed,
    overloaded,
    rate_limited,
    server_error,
    stream_cut,
    timeout,
    unavailable,
)
from toolchaos.wire._httptools import HttpTool, http_tool
from toolchaos.wire._mocker import DualHTTPCoreMocker, install, uninstall
from toolchaos.wire._run import FAKE_API_KEY, Env, WireRunResult, run, session, takes_env
from toolchaos.wire._server import Request, Wire
from toolchaos.wire._tools import WireTool

# isort: split
# What other packages of toolchaos (serve) need beyond the public names: importable from this facade, not part
# of the API (not in __all__).
from toolchaos.wire._mocker import Chunks as Chunks
from toolchaos.wire._server import ALL_APIS as ALL_APIS
from toolchaos.wire._shapes import json_type as json_type

_compat.patch_pydantic()  # SDK models built lazily inside a run (see _compat)
_compat.import_with_real_datetime("pydantic.v1")  # LangChain's import under virtual time (see _compat)
_mocker.install()  # respx's default mocker now covers httpx2 too (idempotent, import-order proof)

__all__ = [
    "API_FAULTS", "FAKE_API_KEY", "ApiFault", "ApiFaultError", "ApiFaults", "DualHTTPCoreMocker", "Env", "HttpTool",
    "PatchError", "Request", "UnmatchedRequest", "Wire", "WireRunResult", "WireTool", "as_api_fault", "http_tool", "install",
    "malformed", "overloaded", "rate_limited", "run", "server_error", "session", "stream_cut", "takes_env", "timeout",
    "unavailable", "uninstall",
]
