"""respx for both HTTP stacks: classic ``httpx``/``httpcore`` and ``httpx2``/``httpcore2``.

Current SDKs (``openai`` >= 3, ``anthropic`` >= 2) send through ``httpx2``/``httpcore2``;
respx 0.23 patches only classic ``httpcore``, so on its own it intercepts nothing they
send and they would try the real network. ``DualHTTPCoreMocker`` is a respx ``Mocker``
(a subclass of respx's own ``HTTPCoreMocker``) whose patch targets are the classic
connection classes *and* their ``httpcore2`` twins. respx still does the routing, the
side effects, the call recording, pass-through and ``assert_all_mocked``/``assert_all_called``;
this module only converts at the edges:

- requests: the ``httpcore2.Request`` has the same attribute names as ``httpcore``'s,
  so it becomes an ``httpx.Request`` the same way (with the parsed URL cached);
- responses: routes return classic ``httpx.Response``; for an ``httpcore2`` target it
  becomes an ``httpcore2.Response`` (which target is which is decided once, when the
  method is patched, not per request: ``httpcore2`` rewrites its classes' ``__module__``,
  so names are not a reliable test at run time);
- errors: an ``httpx`` exception raised by a route (``httpx.ReadTimeout``) becomes the
  ``httpcore2`` one, which ``httpx2``'s transport maps to ``httpx2.ReadTimeout`` exactly as
  for a real socket, so the SDKs' retry and timeout logic sees its own types; the same
  holds for an exception raised part-way through a streamed body.

``install()`` makes it respx's ``DEFAULT_MOCKER``, so ``respx.mock``, ``respx.mock(...)``,
the ``respx_mock`` fixture and the harness's own routers all cover both stacks. respx
reads the default when a router starts, and patches *class* methods, so neither the
order of imports (``import openai`` before or after this module) nor clients built
before the mock started matter.

While a harness run serves the wire (``escape_unmatched``), a request no route answers
raises ``UnmatchedRequest``, a ``BaseException``: the anthropic SDK wraps any
``Exception`` from the transport into ``APIConnectionError`` and retries it, which would
hide the URL behind backoff; a ``BaseException`` ends the run with the URL in its message.
Unless it comes from a thread that is not the run's (``set_refusal``): that one gets a
connection error, as if offline, and the run is not failed by it.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, ClassVar, NoReturn

import httpx
import respx.mocks
from respx.mocks import HTTPCoreMocker
from respx.models import AllMockedAssertionError, PassThrough
from respx.patterns import parse_url
from toolchaos.errors import UnmatchedRequest

HAS_HTTPX2 = importlib.util.find_spec("httpcore2") is not None

HTTPCORE2_TARGETS = [
    "httpcore2._sync.connection.HTTPConnection",
    "httpcore2._sync.connection_pool.ConnectionPool",
    "httpcore2._sync.http_proxy.HTTPProxy",
    "httpcore2._async.connection.AsyncHTTPConnection",
    "httpcore2._async.connection_pool.AsyncConnectionPool",
    "httpcore2._async.http_proxy.AsyncHTTPProxy",
]


class Body(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body of one chunk, readable sync and async.

    Not an ``httpx.ByteStream`` on purpose: respx pre-reads those (a copy per request),
    and there is nothing to pre-read here.
    """

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __iter__(self) -> Iterator[bytes]:
        yield self.data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.data

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


class Chunks(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A streamed body (server-sent events) that may fail part-way with an ``httpx`` error.

    ``fail`` is raised after the chunks, as a socket error surfaces mid-body; ``before_fail``
    runs first (the harness advances the virtual clock there for a read timeout).
    """

    __slots__ = ("before_fail", "chunks", "fail")
    may_fail = True

    def __init__(self, chunks: list[bytes], fail: BaseException | None = None,
                 before_fail: Callable[[], None] | None = None) -> None:
        self.chunks = chunks
        self.fail = fail
        self.before_fail = before_fail

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks
        self._raise()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk
        self._raise()

    def _raise(self) -> None:
        if self.fail is not None:
            if self.before_fail is not None:
                self.before_fail()
            raise self.fail

    def close(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


_exc_map: dict[type[BaseException], Callable[[str], BaseException] | None] = {}


def to_httpx2_exception(exc: BaseException) -> BaseException:
    """The ``httpcore2`` (else ``httpx2``) twin of an ``httpx`` exception; others unchanged."""
    if not isinstance(exc, httpx.HTTPError):
        return exc
    kind = type(exc)
    if kind not in _exc_map:
        import httpcore2
        import httpx2

        target: Any = None
        for klass in kind.__mro__:
            if klass.__module__.split(".")[0] != "httpx":
                continue
            cand = getattr(httpcore2, klass.__name__, None)
            if isinstance(cand, type) and issubclass(cand, Exception):
                target = cand
                break
            cand = getattr(httpx2, klass.__name__, None)
            if isinstance(cand, type) and issubclass(cand, httpx2.RequestError):
                target = cand
                break
        _exc_map[kind] = target
    factory = _exc_map[kind]
    return exc if factory is None else factory(str(exc))


class _V2Stream:
    """A streamed body for an ``httpcore2`` target: ``httpx`` errors raised mid-body become ``httpcore2`` ones."""

    __slots__ = ("_stream",)

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._stream
        except httpx.HTTPError as exc:
            raise to_httpx2_exception(exc) from exc

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            if hasattr(self._stream, "__aiter__"):
                async for chunk in self._stream:
                    yield chunk
            else:  # a sync body served to an async client
                for chunk in self._stream:
                    yield chunk
        except httpx.HTTPError as exc:
            raise to_httpx2_exception(exc) from exc

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()

    async def aclose(self) -> None:
        aclose = getattr(self._stream, "aclose", None)
        if aclose is not None:
            await aclose()


_url_cache: dict[tuple[Any, ...], httpx.URL] = {}
_URL_CACHE_MAX = 4096


def _url(core_url: Any) -> httpx.URL:
    key = (core_url.scheme, core_url.host, core_url.port, core_url.target)
    url = _url_cache.get(key)
    if url is None:
        if len(_url_cache) >= _URL_CACHE_MAX:
            _url_cache.clear()
        url = _url_cache[key] = parse_url(key)
    return url


def _headers(raw: Any) -> Any:
    """``httpx.Headers`` from an httpcore request's headers (already validated bytes pairs), built
    without re-normalising each one; anything unexpected takes httpx's own path."""
    try:
        items = [(k, k.lower(), v) for k, v in raw]
    except (TypeError, ValueError, AttributeError):  # pragma: no cover - not bytes pairs
        return raw
    if not all(type(k) is bytes and type(v) is bytes for k, _, v in items):  # pragma: no cover
        return raw
    headers = httpx.Headers()
    headers._list = items
    return headers


def _request_body(stream: Any) -> bytes | None:
    """The body of an already-buffered request stream, without iterating it (the common case)."""
    data = getattr(stream, "_stream", None)
    return data if isinstance(data, bytes) else None


MOCKER_NAME = "httpcore+httpcore2"


def _forget_a_stale_registration(name: str) -> None:
    """respx refuses a second ``Mocker`` class under one name, and this module can be imported
    again in one process (pytester's in-process runs restore ``sys.modules``, ``importlib.reload``):
    drop the class an earlier import of this very module registered, whose module is gone."""
    registry = getattr(respx.mocks.Mocker, "_Mocker__registry", None)  # respx's own, private
    if not isinstance(registry, dict):
        return
    old = registry.get(name)
    if old is not None and old.__module__ == __name__ and not old.routers:
        del registry[name]


_forget_a_stale_registration(MOCKER_NAME)


class DualHTTPCoreMocker(HTTPCoreMocker):
    """respx's ``HTTPCoreMocker`` over both ``httpcore`` and ``httpcore2`` (see the module docstring)."""

    name = MOCKER_NAME
    targets: ClassVar[list[str]] = list(HTTPCoreMocker.targets) + (HTTPCORE2_TARGETS if HAS_HTTPX2 else [])
    target_methods: ClassVar[list[str]] = list(HTTPCoreMocker.target_methods)
    escape_unmatched: ClassVar[int] = 0  # > 0 while harness runs serve the wire (a count: runs may nest)

    @classmethod
    def mock(cls, spec: Any) -> Any:
        if spec.__name__ not in cls.target_methods:
            return spec  # pragma: no cover - respx's own guard against mocking a mock
        v2 = str(getattr(spec, "__module__", "")).startswith("httpcore2")
        params = list(inspect.signature(spec).parameters)
        if params[:2] != ["self", "request"]:  # pragma: no cover - an unknown httpcore: respx's generic path
            return super().mock(spec)  # type: ignore[no-untyped-call]

        def handle(self: Any, request: Any) -> Any:
            req = cls._convert_request(request)
            try:
                response = cls.handler(req)  # type: ignore[no-untyped-call]
            except PassThrough:
                return spec(self, request)
            except (AllMockedAssertionError, httpx.HTTPError) as exc:
                cls._reraise(req, exc, v2)
            return cls._convert_response(response, v2)

        async def ahandle(self: Any, request: Any) -> Any:
            req = cls._convert_request(request)
            try:
                response = await cls.async_handler(req)  # type: ignore[no-untyped-call]
            except PassThrough:
                return await spec(self, request)
            except (AllMockedAssertionError, httpx.HTTPError) as exc:
                cls._reraise(req, exc, v2)
            return cls._convert_response(response, v2)

        return ahandle if inspect.iscoroutinefunction(spec) else handle

    @classmethod
    def _reraise(cls, req: httpx.Request, exc: AllMockedAssertionError | httpx.HTTPError, v2: bool) -> NoReturn:
        """Raise, for a failed route call, what the patched method's caller expects (``handle`` and
        ``ahandle`` alike): ``UnmatchedRequest`` while the harness serves, the ``httpcore2`` twin
        of an ``httpx`` error for an ``httpcore2`` target. Only failures come here: the common
        path pays nothing for the sharing.
        """
        if isinstance(exc, AllMockedAssertionError):
            refused = _refusal(req) if cls.escape_unmatched > 0 else None
            if refused is None:
                raise cls._unmatched(req, exc) from None
            exc = httpx.ConnectError(refused, request=req)  # what the thread's client would see offline
        if not v2:
            raise exc  # already what a classic httpx client raises: the same object, cause unchanged
        raise to_httpx2_exception(exc) from exc

    @classmethod
    def _convert_request(cls, request: Any) -> httpx.Request:
        body = _request_body(request.stream)
        if body is None:  # a generator body: buffer it, and leave a re-readable copy for pass-through
            body = b"".join(request.stream) if not hasattr(request.stream, "__aiter__") or hasattr(
                request.stream, "__iter__") else None
            if body is None:  # pragma: no cover - async-only body; respx's own path reads it
                raise TypeError("toolchaos: async-only request bodies are not supported")
        stream = httpx.ByteStream(body)
        request.stream = stream
        method = request.method
        req = httpx.Request(method.decode("ascii") if isinstance(method, bytes) else method, _url(request.url),
                            headers=_headers(request.headers), stream=stream, extensions=request.extensions)
        req._content = body  # what ``req.read()`` would store, without iterating the stream again
        return req

    @classmethod
    def _convert_response(cls, response: httpx.Response, v2: bool) -> Any:
        stream: Any = response.stream
        out: Any
        if v2:
            import httpcore2

            if not isinstance(stream, (Body, httpx.ByteStream)):
                stream = _V2Stream(stream)
            out = httpcore2.Response(response.status_code, content=stream, extensions=response.extensions)
        else:
            import httpcore

            out = httpcore.Response(response.status_code, content=stream, extensions=response.extensions)
        out.headers = response.headers.raw  # already validated by httpx.Headers
        return out

    @classmethod
    def _unmatched(cls, req: httpx.Request, exc: AllMockedAssertionError) -> BaseException:
        if cls.escape_unmatched > 0:
            return UnmatchedRequest(req.method, str(req.url), _unmatched_hint(req))
        return exc


def _no_hint(request: httpx.Request) -> str:
    return ""


# What the active wire serves, for an unmatched request's message. The server module sets it
# when it is imported: the mocker sits below the server and never imports it.
_unmatched_hint: Callable[[httpx.Request], str] = _no_hint


def set_unmatched_hint(hint: Callable[[httpx.Request], str]) -> None:
    global _unmatched_hint
    _unmatched_hint = hint


def _no_refusal(request: httpx.Request) -> str | None:
    return None


# Whether an unmatched request is refused (a connection error in the sending thread) rather than
# failing the run: the server module sets it (requests from threads that are not the run's).
_refusal: Callable[[httpx.Request], str | None] = _no_refusal


def set_refusal(refusal: Callable[[httpx.Request], str | None]) -> None:
    global _refusal
    _refusal = refusal


_previous_default: str | None = None


def install() -> None:
    """Make the dual mocker respx's default (idempotent; done when ``toolchaos.wire`` is imported)."""
    global _previous_default
    if respx.mocks.DEFAULT_MOCKER != DualHTTPCoreMocker.name:
        _previous_default = respx.mocks.DEFAULT_MOCKER
        respx.mocks.DEFAULT_MOCKER = DualHTTPCoreMocker.name


def uninstall() -> None:
    """Give respx its previous default back."""
    global _previous_default
    if _previous_default is not None:
        respx.mocks.DEFAULT_MOCKER = _previous_default
        _previous_default = None


def installed() -> bool:
    return respx.mocks.DEFAULT_MOCKER == DualHTTPCoreMocker.name
