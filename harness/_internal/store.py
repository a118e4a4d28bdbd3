"""Persistence that survives a process restart: ``tools.store`` and the effect ledger in SQLite.

A run that resumes after a crash must see what the crashed run did: its checkpoint and
idempotency records (``tools.store``) and, for the judge, every side effect that really
happened (the effect ledger). SQLite is the embedded default: one file, no server, in the
standard library, durable per write.

    store = SqliteStore("state.sqlite")           # a MutableMapping: pass it as run(store=...)
    r1 = run(agent, ..., store=store)             # the ledger is store.ledger unless run(ledger=...)
    store.close()                                 # the process "dies" (or just crashes mid-run)
    store = SqliteStore("state.sqlite")           # a new process opens the same file
    r2 = run(agent, ..., store=store)             # counts continue: r2.ledger holds r1's effects

Values are JSON. Containers read from the store are write-through: ``store["ops"]["k"] = v``
and ``store.setdefault("ops", {})[k] = v`` (the way agents keep idempotency records) are
written to disk at once, not only on reassignment. A container assigned into another is
stored as a copy: keep mutating it through the store, not through the original object.

Every write is its own transaction (WAL journal), so a run killed at any point leaves every
completed write on disk. The connection is shared by threads behind a lock.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, MutableMapping
from pathlib import Path
from typing import Any, SupportsIndex

from toolchaos.fake_tools import Effect, EffectLedger

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (ns, key));
CREATE TABLE IF NOT EXISTS effects (id INTEGER PRIMARY KEY AUTOINCREMENT, ledger TEXT NOT NULL, tool TEXT NOT NULL,
    key TEXT NOT NULL, applied INTEGER NOT NULL, status TEXT NOT NULL, seq INTEGER NOT NULL, opened INTEGER NOT NULL,
    replayed INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS opens (ledger TEXT PRIMARY KEY, n INTEGER NOT NULL);
"""


class _Db:
    """One SQLite connection, shared by a store and its ledger."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock = threading.RLock()
        self.conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=30)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(_SCHEMA)
        columns = {row[1] for row in self.conn.execute("PRAGMA table_info(effects)")}
        if "replayed" not in columns:  # a file written before replays were recorded
            self.conn.execute("ALTER TABLE effects ADD COLUMN replayed INTEGER NOT NULL DEFAULT 0")
        self.closed = False

    def execute(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        with self.lock:
            if self.closed:
                raise sqlite3.ProgrammingError(f"the store {self.path} is closed")
            return self.conn.execute(sql, tuple(params)).fetchall()

    def close(self) -> None:
        with self.lock:
            if not self.closed:
                self.closed = True
                self.conn.close()


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    raise TypeError(f"a SqliteStore value must be JSON data, got {type(value).__name__}: {value!r}")


class _Tracked:
    """Mixin: a container inside a store; every change writes its top-level value back."""

    _root: SqliteStore | None
    _top: str

    def _bind(self, root: SqliteStore | None, top: str) -> None:
        object.__setattr__(self, "_root", root)
        object.__setattr__(self, "_top", top)

    def _save(self) -> None:
        if self._root is not None:
            self._root._write(self._top)


def _track(value: Any, root: SqliteStore | None, top: str) -> Any:
    if isinstance(value, dict):
        d = TrackedDict()
        d._bind(root, top)
        for k, v in value.items():
            dict.__setitem__(d, k, _track(v, root, top))
        return d
    if isinstance(value, (list, tuple)):
        lst = TrackedList()
        lst._bind(root, top)
        list.extend(lst, (_track(v, root, top) for v in value))
        return lst
    return value


class TrackedDict(_Tracked, dict):  # type: ignore[type-arg]
    """A dict read from a ``SqliteStore``: changes are written through."""

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, _track(value, self._root, self._top))
        self._save()

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, key)
        self._save()

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return dict.__getitem__(self, key)
        self[key] = default
        return dict.__getitem__(self, key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for k, v in dict(*args, **kwargs).items():
            dict.__setitem__(self, k, _track(v, self._root, self._top))
        self._save()

    def pop(self, key: Any, *default: Any) -> Any:
        had = key in self
        value = dict.pop(self, key, *default)
        if had:
            self._save()
        return value

    def popitem(self) -> tuple[Any, Any]:
        item = dict.popitem(self)
        self._save()
        return item

    def clear(self) -> None:
        dict.clear(self)
        self._save()

    def __ior__(self, other: Any) -> TrackedDict:  # type: ignore[misc]
        self.update(other)
        return self

    def __reduce__(self) -> Any:  # copies and pickles are plain dicts
        return (dict, (dict(self),))


class TrackedList(_Tracked, list):  # type: ignore[type-arg]
    """A list read from a ``SqliteStore``: changes are written through."""

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            list.__setitem__(self, index, [_track(v, self._root, self._top) for v in value])
        else:
            list.__setitem__(self, index, _track(value, self._root, self._top))
        self._save()

    def __delitem__(self, index: Any) -> None:
        list.__delitem__(self, index)
        self._save()

    def append(self, value: Any) -> None:
        list.append(self, _track(value, self._root, self._top))
        self._save()

    def extend(self, values: Iterable[Any]) -> None:
        list.extend(self, [_track(v, self._root, self._top) for v in values])
        self._save()

    def insert(self, index: SupportsIndex, value: Any) -> None:
        list.insert(self, index, _track(value, self._root, self._top))
        self._save()

    def pop(self, index: SupportsIndex = -1) -> Any:
        value = list.pop(self, index)
        self._save()
        return value

    def remove(self, value: Any) -> None:
        list.remove(self, value)
        self._save()

    def clear(self) -> None:
        list.clear(self)
        self._save()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        list.sort(self, *args, **kwargs)
        self._save()

    def reverse(self) -> None:
        list.reverse(self)
        self._save()

    def __iadd__(self, other: Any) -> TrackedList:  # type: ignore[misc]
        self.extend(other)
        return self

    def __reduce__(self) -> Any:
        return (list, (list(self),))


class SqliteStore(MutableMapping[str, Any]):
    """``tools.store`` in a SQLite file: survives a process restart. ``namespace`` separates stores in one file."""

    def __init__(self, path: str | Path, *, namespace: str = "default") -> None:
        self._db = _Db(path)
        self.path = self._db.path
        self.namespace = namespace
        self._cache: dict[str, Any] = {}
        self._ledger: SqliteLedger | None = None

    # -- the mapping ---------------------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        if key in self._cache:
            return self._cache[key]
        rows = self._db.execute("SELECT value FROM kv WHERE ns = ? AND key = ?", (self.namespace, key))
        if not rows:
            raise KeyError(key)
        value = self._cache[key] = _track(json.loads(rows[0][0]), self, key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError(f"SqliteStore keys are strings, got {key!r}")
        tracked = _track(json.loads(_dump(value)), self, key)  # a copy, as it will read back
        with self._db.lock:
            self._cache[key] = tracked
            self._write(key)

    def __delitem__(self, key: str) -> None:
        with self._db.lock:
            if key not in self:
                raise KeyError(key)
            self._cache.pop(key, None)
            self._db.execute("DELETE FROM kv WHERE ns = ? AND key = ?", (self.namespace, key))

    def __contains__(self, key: object) -> bool:
        if key in self._cache:
            return True
        return bool(self._db.execute("SELECT 1 FROM kv WHERE ns = ? AND key = ?", (self.namespace, key)))

    def __iter__(self) -> Iterator[str]:
        rows = self._db.execute("SELECT key FROM kv WHERE ns = ? ORDER BY key", (self.namespace,))
        return iter([str(r[0]) for r in rows])

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM kv WHERE ns = ?", (self.namespace,))[0][0])

    def setdefault(self, key: str, default: Any = None) -> Any:
        with self._db.lock:
            try:
                return self[key]
            except KeyError:
                self[key] = default
                return self[key]

    def _write(self, key: str) -> None:
        with self._db.lock:
            self._db.execute("INSERT OR REPLACE INTO kv (ns, key, value) VALUES (?, ?, ?)",
                             (self.namespace, key, _dump(self._cache[key])))

    # -- the ledger and the file ---------------------------------------------------------

    @property
    def ledger(self) -> SqliteLedger:
        """The effect ledger kept in the same file (``run(store=...)`` uses it by default)."""
        if self._ledger is None:
            self._ledger = SqliteLedger(self._db, name=self.namespace)
        return self._ledger

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r}, namespace={self.namespace!r})"


class SqliteLedger(EffectLedger):
    """An ``EffectLedger`` whose history is a SQLite table: opening it continues the counts.

    Each recorded effect is written (and committed) before ``record`` returns, under the
    same lock as the in-memory list, so the file and the counts agree under concurrent workers.
    ``opened`` tells which opening of the ledger wrote an effect (1 for the first process, 2
    after one restart, ...).
    """

    def __init__(self, path: str | Path | _Db, *, name: str = "default") -> None:
        self._db = path if isinstance(path, _Db) else _Db(path)
        self.name = name
        rows = self._db.execute("SELECT tool, key, applied, status, seq, replayed FROM effects WHERE ledger = ? "
                                "ORDER BY id", (name,))
        super().__init__(Effect(str(t), str(k), bool(a), str(s), int(q), bool(r)) for t, k, a, s, q, r in rows)
        with self._db.lock:
            found = self._db.execute("SELECT n FROM opens WHERE ledger = ?", (name,))
            self.opened = (int(found[0][0]) if found else 0) + 1
            self._db.execute("INSERT OR REPLACE INTO opens (ledger, n) VALUES (?, ?)", (name, self.opened))
        self._lock = threading.Lock()

    def record(self, tool: str, key: str, applied: bool, status: str, seq: int, replayed: bool = False) -> int:
        with self._lock:
            self._db.execute("INSERT INTO effects (ledger, tool, key, applied, status, seq, opened, replayed) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (self.name, tool, key, int(applied), status, seq,
                                                                 self.opened, int(replayed)))
            return super().record(tool, key, applied, status, seq, replayed)

    def close(self) -> None:
        self._db.close()


__all__ = ["SqliteLedger", "SqliteStore", "TrackedDict", "TrackedList"]
