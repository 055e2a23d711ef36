"""One session's private view of a shared store, for hosted deployments (`Store.overlay()`).

A hosted app serves many people from one process. The shared store holds the seed database, attached
read-only, and no one writes to it; every session instead gets an overlay: an in-memory DuckDB database
attached to the shared store's connection, holding that session's own user tables and views that put
them on top of the shared store's tables. One user's upload is therefore visible only through that
user's overlay, cannot touch the seed file, and goes when the session's overlay is collected. Saved
scenarios are the exception, and are shared on purpose: the overlay hands out the store's own shelf.

All sessions share one DuckDB instance (one buffer pool for the seed, no threads per session). An overlay's
in-memory database is attached on its first write (about 150 kB, measured, until rows are added to it); until
then its reads are the shared store's, which hold the same rows, so a session that only reads costs no
catalogue change on the shared connection (most sessions).
"""

from __future__ import annotations

import weakref
from typing import Optional

import duckdb

from engine.seed.records import TABLES
from engine.store import USER_TABLES, Store, StoreError

__all__ = ["SessionOverlay"]


def _attach(base: Store, name: str) -> duckdb.DuckDBPyConnection:
    """Attach an in-memory database `name` to `base`'s connection, with empty user tables shaped like the
    base's and a view per table (the base's table, plus this database's rows for user tables); return a
    connection whose unqualified names resolve there."""
    # the shared connection's catalogue changes only under its lock; this is the only place overlays
    # reach into the base store's internals
    with base._lock:
        con = base._con
        while base._retired:  # overlays collected since the last call: free their memory now
            con.execute(f'DETACH DATABASE IF EXISTS "{base._retired.pop()}"')
        home = con.execute("SELECT current_database()").fetchone()[0]
        con.execute(f"ATTACH ':memory:' AS \"{name}\"")
        for table in TABLES:
            if table in USER_TABLES:
                con.execute(f'CREATE TABLE "{name}".main."user_{table}" AS '
                            f'SELECT * FROM "{home}".main."user_{table}" LIMIT 0')
                con.execute(f'CREATE VIEW "{name}".main."{table}" AS SELECT * FROM "{home}".main."{table}" '
                            f'UNION ALL SELECT * FROM "{name}".main."user_{table}"')
            else:
                con.execute(f'CREATE VIEW "{name}".main."{table}" AS SELECT * FROM "{home}".main."{table}"')
        cur = con.cursor()
    cur.execute(f'USE "{name}"')
    return cur


def _retire(cur: duckdb.DuckDBPyConnection, retired: list[str], name: str) -> None:
    # runs from the garbage collector: no SQL on the shared connection here, only a note for the next attach
    cur.close()
    retired.append(name)


class SessionOverlay(Store):
    """A Store whose reads see the base store's tables plus its own rows, and whose writes stay in memory.

    Every Store query and write method works unchanged: they run on this overlay's connection, where
    `latency_points` means the overlay's view and `user_latency_points` its own table (before the overlay's
    database is attached, reads run on the base, whose tables then hold the same rows: see _reads_base). user_rows() and
    user_counts() are this overlay's rows only. version() equals the base's until a row is added or cleared
    here, and is then unique to this overlay, so caches keyed by version never hand one session's data to
    another while overlays without rows share everything the base has computed.
    """

    def __init__(self, base: Store):
        if isinstance(base, SessionOverlay):
            raise StoreError("an overlay is already one session's view; make overlays of the shared store")
        # Store.__init__ is not run: it would check, and perhaps rebuild, the database file that the base
        # store has open; an overlay borrows the base's connection instead
        self.base = base  #: the shared store under this overlay
        self.path, self.seed_dir, self.user_dir = base.path, base.seed_dir, None
        self.rebuilt_because = base.rebuilt_because
        self._init_handle()
        self.saved_scenarios = base.saved_scenarios  # the one shared write
        self.name = f"overlay_{self._token}"
        self._attached: Optional[duckdb.DuckDBPyConnection] = None
        self._close: Optional[weakref.finalize] = None

    @property
    def _con(self) -> duckdb.DuckDBPyConnection:
        """This overlay's connection. Its in-memory database is attached on the first use that needs it (a
        write, or a read while the base has rows of its own), not when the overlay is made: attaching is a
        dozen catalogue changes on the shared connection, and most sessions never import anything."""
        with self._lock:
            if self._attached is None:
                self._attached = _attach(self.base, self.name)
                self._close = weakref.finalize(self, _retire, self._attached, self.base._retired, self.name)
            return self._attached

    @property
    def attached(self) -> bool:
        """Whether this overlay's in-memory database exists yet (see _con)."""
        return self._attached is not None

    def _reads_base(self) -> bool:
        """True while this overlay's views would return exactly the base's rows: nothing attached yet (so no
        rows of its own) and a base whose only user rows are in memory and were never written."""
        return self._attached is None and self.base.user_dir is None and not self.base._memory_writes

    def overlay(self) -> "Store":
        raise StoreError("an overlay is already one session's view; make overlays of the shared store")

    def close(self) -> None:
        if self._close is not None:
            self._close()

    def _reload_user(self, table: str, force: bool = False) -> None:
        # an overlay has no files; the rows under it may: the base picks up other processes' writes
        self.base._reload_user(table, force)

    def _query(self, sql: str, params: Optional[list], fetch):
        for table in USER_TABLES:
            self._reload_user(table)
        # one connection, pointed at this overlay (a fresh cursor would start in the base's database), so
        # the queries of one session run one at a time; different sessions still run side by side
        with self._lock:
            if self._reads_base():  # the same rows, read without attaching a database for this session
                return self.base._query(sql, params, fetch)
            return fetch(self._con.execute(sql, params or []))

    def version(self) -> tuple:
        return self.base.version() + self._memory_version()
