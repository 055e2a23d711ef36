"""The profile store: the only module that talks to DuckDB.

On first use it builds a DuckDB file from data/seed/*.csv (validated row by
row against engine.seed.records), into data/ or, where that is not writable, a
temporary directory; KNEEPOINT_DB overrides the path. The build writes a
temporary file and renames it into place, so a reader never sees a partly
built database. A missing or outdated file (its seed hash differs from the
seed tables on disk) is built with a logged message; a corrupt DuckDB file is
moved aside to `<name>.corrupt-<UTC time>` first; anything at the path that is
not Kneepoint's own database is refused, never deleted (engine.store.build).
User rows are capped per table (MAX_USER_ROWS) and kept in series order.

DuckDB (~0.07 s to import) is imported by the functions that open or query a database, not by this package:
`python -m engine evaluate` reads its rows from the rows snapshot (engine.store.snapshot) when that is current,
and then never loads DuckDB. Every module of this package follows the same rule (the overlay module excepted:
only a hosted app imports it).
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from engine.catalog import Catalog
from engine.seed.records import TABLES
from engine.seed.reader import SeedError
from engine.store.build import (DATA_DIR, DB_NAME, ENV_DB, MAX_USER_ROWS, ROOT, SCHEMA_VERSION, SEED_DIR,  # noqa: F401
                                SERIES_ORDER, USER_TABLES, StoreError, _check_keys, _sql_type, build_database,
                                load_seed, prepare_database, resolve_db_path, seed_hash)
from engine.store.locking import locked
from engine.store.scenarios import (SavedScenario, ScenarioLimitError, ScenarioNameError, ScenarioOwnerError,
                                    ScenarioShelf)

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

__all__ = ["Store", "SeedError", "StoreError", "USER_TABLES", "MAX_USER_ROWS", "ENV_DB", "resolve_db_path",
           "build_database", "seed_hash", "load_seed", "SavedScenario", "ScenarioNameError", "ScenarioShelf",
           "ScenarioLimitError", "ScenarioOwnerError"]


# --------------------------------------------------------------------------- store

def _series_order(table: str) -> str:
    """ORDER BY columns that keep a user table's series contiguous (see SERIES_ORDER)."""
    return ", ".join(f'"{c}" NULLS FIRST' for c in SERIES_ORDER[table])


def _user_dir_of(db_path: Path) -> Path:
    """Where a database's user rows and saved scenarios go: `<db>-user/` beside it."""
    return db_path.with_name(db_path.stem + "-user")


class Store:
    """A handle on the profile database. Thread-safe: each query uses its own cursor.

    The seed database (built from data/seed) is attached read-only as `seed`;
    the user's own rows (imports, profiler output) are kept apart, so a rebuild
    of the seed never loses them: in memory, and, unless `user_dir` is None,
    persisted as one Parquet file per table under `user_dir`. Writes take a
    file lock, re-read the file, and replace it atomically, so two processes
    adding rows at once lose nothing; readers pick up another process's writes
    on their next query. Each table the engine reads is a view over both parts.

    Saved scenarios live in `scenarios_dir` ("default": the same directory as the user rows). A hosted
    deployment opens the shared store with `Store.hosted()` and gives every session its own `overlay()`.
    """

    #: its rows come through a DuckDB connection, which a forked worker or another process must not use: readers
    #: that would defer a read (ProfileBook.from_store) read now
    rows_in_memory = False

    def __init__(self, path: Optional[Path] = None, seed_dir: Path = SEED_DIR,
                 user_dir: Optional[Path] | str = "default", scenarios_dir: Optional[Path] | str = "default"):
        self.path = Path(path) if path is not None else resolve_db_path()
        self.seed_dir = seed_dir
        self.user_dir = (_user_dir_of(self.path) if user_dir == "default"
                         else (Path(user_dir) if user_dir is not None else None))
        self.rebuilt_because: Optional[str] = None
        self._init_handle()
        #: named scenarios saved by users (list, save, get, rename, delete), beside the user rows by default
        self.saved_scenarios = ScenarioShelf(self.user_dir if scenarios_dir == "default" else scenarios_dir)
        #: overlays that have gone, whose in-memory databases are detached at the next overlay() (not from the GC)
        self._retired: list[str] = []
        self._con = self._open()
        # close the DuckDB connection when the handle goes away or at exit (not at an arbitrary later GC)
        weakref.finalize(self, self._con.close)

    @classmethod
    def hosted(cls, path: Optional[Path] = None, seed_dir: Path = SEED_DIR) -> "Store":
        """The store a hosted deployment shares between sessions: the seed tables read-only and no user rows
        (each session imports into its own overlay()); saved scenarios, the one thing sessions share, are
        kept beside the database (a temporary directory when the application directory is read-only)."""
        path = Path(path) if path is not None else resolve_db_path()
        return cls(path, seed_dir, user_dir=None, scenarios_dir=_user_dir_of(path))

    def _init_handle(self) -> None:
        """State every handle has, a store or an overlay of one."""
        self._lock = threading.RLock()
        self._loaded_mtime: dict[str, float] = {}
        # rows kept only in memory (no user_dir) have no file time to version them: count the writes instead,
        # tagged with a token of this handle, so two handles' versions are equal only while both have none
        self._memory_writes = 0
        self._token = uuid.uuid4().hex[:12]
        self._seed_memo: tuple[tuple, str] = ((), "")  # (the seed files' stats, their seed_hash): _seed_version
        #: the most user rows a table may hold after a write (add_many refuses more); a command may lift it
        self.max_user_rows = MAX_USER_ROWS

    def overlay(self) -> "Store":
        """A private view for one session: this store's tables plus the rows added through the view, kept in
        an in-memory database attached beside the seed, seen by no other view and gone with the view. Writes
        never reach this store or its files; saved scenarios are this store's (shared). See SessionOverlay."""
        from engine.store.overlay import SessionOverlay

        return SessionOverlay(self)

    def _open(self) -> duckdb.DuckDBPyConnection:
        import duckdb  # lazy: see the module docstring

        con = duckdb.connect(":memory:")
        try:
            # replaces only Kneepoint's own file; refuses (StoreError) anything else found at the path; leaves
            # the database attached to `con` as `seed`, read-only
            self.rebuilt_because = prepare_database(self.path, self.seed_dir, con)
        except duckdb.Error as e:
            con.close()
            raise StoreError(f"cannot open the profile database {self.path}: {e}") from None
        except BaseException:
            con.close()
            raise
        for name, (model, _key) in TABLES.items():
            if name in USER_TABLES:
                cols = ", ".join(f'"{f}" {_sql_type(i.annotation)}' for f, i in model.model_fields.items())
                con.execute(f'CREATE TABLE "user_{name}" ({cols})')
                con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM seed."{name}" '
                            f'UNION ALL SELECT * FROM "user_{name}"')
            else:
                con.execute(f'CREATE VIEW "{name}" AS SELECT * FROM seed."{name}"')
        self._con = con
        for name in USER_TABLES:
            self._reload_user(name)
        return con

    def _user_file(self, table: str) -> Optional[Path]:
        return None if self.user_dir is None else self.user_dir / f"{table}.parquet"

    def _reload_user(self, table: str, force: bool = False) -> None:
        """Load the user's rows of `table` from disk if the file changed since last load."""
        path = self._user_file(table)
        if path is None:
            return
        mtime = path.stat().st_mtime if path.exists() else 0.0
        if not force and self._loaded_mtime.get(table) == mtime:
            return
        import duckdb  # lazy: see the module docstring

        with self._lock:
            self._con.execute(f'DELETE FROM "user_{table}"')
            if mtime:
                try:
                    self._con.execute(f'INSERT INTO "user_{table}" SELECT * FROM read_parquet(?) '
                                      f'ORDER BY {_series_order(table)}', [str(path)])
                except duckdb.Error as e:
                    raise StoreError(f"the user table {path} cannot be read ({e}); move it away to start "
                                     "afresh") from None
            self._loaded_mtime[table] = mtime

    def close(self) -> None:
        self._con.close()

    # -- writes: user rows only, all-or-nothing --------------------------------

    @contextlib.contextmanager
    def _file_lock(self):
        if self.user_dir is None:
            yield
            return
        with locked(self.user_dir):  # O_NOFOLLOW, never truncated: see engine.store.locking
            yield

    def add_rows(self, table: str, rows: list) -> int:
        """Add validated rows to the user's part of `table`, all or nothing (see add_many)."""
        return self.add_many({table: rows})[table]

    def add_many(self, rows_by_table: dict[str, list]) -> dict[str, int]:
        """Add validated rows to the user's part of several tables in one all-or-nothing step.

        Rejects everything if a row repeats the key of a row already in the store (seed or
        user) or of another row for the same table, or if a table would hold more than
        `max_user_rows` user rows (MAX_USER_ROWS unless a command lifted it); if writing any table
        fails, no table changes. Returns the number of rows added per table.
        """
        import duckdb  # lazy: see the module docstring
        import pandas as pd  # heavy (~0.3 s): only writes and DataFrame reads load it, never `evaluate`

        frames = {}
        for table, rows in rows_by_table.items():
            if table not in USER_TABLES:
                raise StoreError(f"rows cannot be added to {table!r}; importable tables: {', '.join(USER_TABLES)}")
            model, key = TABLES[table]
            bad = [r for r in rows if not isinstance(r, model)]
            if bad:
                raise StoreError(f"{table} takes {model.__name__} rows, got {type(bad[0]).__name__}")
            if len(rows) > self.max_user_rows:  # refused before any work; the count with stored rows follows
                self._refuse_overflow(table, len(rows))
            if rows:
                _check_keys(table, key, rows)
                frames[table] = pd.DataFrame([r.model_dump(mode="json") for r in rows], columns=list(model.model_fields))
        counts = {t: len(rows) for t, rows in rows_by_table.items()}
        if not frames:
            return counts
        with self._file_lock(), self._lock:
            con = self._con
            for table, frame in frames.items():
                self._reload_user(table)  # another process may have written since
                con.register(f"_new_{table}", frame)
            try:
                for table in frames:
                    self._refuse_overflow(table, len(frames[table]))
                    self._refuse_clash(table)
                written: list[str] = []
                con.execute("BEGIN TRANSACTION")
                try:
                    for table in frames:
                        con.execute(f'INSERT INTO "user_{table}" SELECT * FROM "_new_{table}"')
                    for table in frames:
                        self._persist(table)
                        written.append(table)
                    con.execute("COMMIT")
                    self._note_memory_write()
                except (duckdb.Error, OSError) as e:
                    con.execute("ROLLBACK")
                    for table in written:  # put back the files already replaced
                        self._persist(table)
                    raise StoreError(f"{', '.join(frames)}: the rows could not be written ({e}); "
                                     "nothing was added") from None
            finally:
                for table in frames:
                    con.unregister(f"_new_{table}")
            if self.user_dir is not None:
                for table in frames:  # read back in series order (the new rows were appended at the end)
                    self._reload_user(table, force=True)
        return counts

    def _refuse_clash(self, table: str) -> None:
        """Raise if a staged row (view _new_<table>) repeats the key of a row in the store."""
        key = TABLES[table][1]
        if not key:
            return
        on = " AND ".join(f'e."{c}" IS NOT DISTINCT FROM n."{c}"' for c in key)
        clash = self._con.execute(f'SELECT n.*, e.source AS existing_source FROM "_new_{table}" n '
                                  f'JOIN "{table}" e ON {on} LIMIT 1').df()
        if len(clash):
            k = ", ".join(f"{c}={clash[c][0]}" for c in key)
            raise StoreError(f"{table}: a row with {k} is already in the store "
                             f"(source: {clash['existing_source'][0]}); nothing was added")

    def _refuse_overflow(self, table: str, adding: int) -> None:
        """Raise if adding `adding` rows would leave more than max_user_rows user rows in `table`."""
        have = int(self._con.execute(f'SELECT count(*) FROM "user_{table}"').fetchall()[0][0])
        if have + adding > self.max_user_rows:
            raise StoreError(f"{table}: {adding:,} new rows would make {have + adding:,} of your own, over the limit "
                             f"of {self.max_user_rows:,} user rows per table; nothing was added (remove rows with "
                             "`python -m engine profiles clear-user`, or lift the limit with --max-rows)")

    def _persist(self, table: str) -> None:
        path = self._user_file(table)
        if path is None:
            return
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            quoted = str(tmp).replace("'", "''")
            self._con.execute(f"COPY (SELECT * FROM \"user_{table}\" ORDER BY {_series_order(table)}) "
                              f"TO '{quoted}' (FORMAT parquet)")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        self._loaded_mtime[table] = path.stat().st_mtime

    def clear_user_rows(self, table: str) -> int:
        """Delete every user row of a table; returns how many were removed."""
        if table not in USER_TABLES:
            raise StoreError(f"{table!r} has no user rows; importable tables: {', '.join(USER_TABLES)}")
        with self._file_lock(), self._lock:
            self._reload_user(table)
            n = int(self._con.execute(f'SELECT count(*) FROM "user_{table}"').fetchone()[0])
            self._con.execute(f'DELETE FROM "user_{table}"')
            self._persist(table)
            self._note_memory_write()
        return n

    def _note_memory_write(self) -> None:
        if self.user_dir is None:
            self._memory_writes += 1

    def _memory_version(self) -> tuple:
        return (("memory", self._token, self._memory_writes),) if self._memory_writes else ()

    def _seed_version(self) -> str:
        """seed_hash(self.seed_dir), read and hashed again only when a seed file's size or modification time has
        changed: version() is asked several times in every page run, and hashing every seed table each time was
        ~8 % of a hosted page load. (The database a store has open does not change with the seed files anyway:
        they are read again when a store is opened, by prepare_database, which always hashes them.)"""
        try:
            stats = tuple((name, s.st_size, s.st_mtime_ns, s.st_ino)
                          for name in sorted(TABLES) for s in [(self.seed_dir / f"{name}.csv").stat()])
        except OSError:  # a seed file is missing: seed_hash says which
            return seed_hash(self.seed_dir)
        memo = self._seed_memo  # one tuple, replaced whole: another thread never sees stats without their hash
        if memo[0] != stats:
            memo = self._seed_memo = (stats, seed_hash(self.seed_dir))
        return memo[1]

    def version(self) -> tuple:
        """Changes whenever the data the engine reads changes (seed rebuild or a user write)."""
        for table in USER_TABLES:
            self._reload_user(table)
        return (str(self.path), self._seed_version(), tuple(sorted(self._loaded_mtime.items()))) \
            + self._memory_version()

    def user_rows(self, table: str) -> pd.DataFrame:
        """The user's own rows of `table` (imports, profiler output), without the seed rows."""
        if table not in USER_TABLES:
            raise StoreError(f"{table!r} has no user rows; importable tables: {', '.join(USER_TABLES)}")
        return self._frame(f'SELECT * FROM "user_{table}"')

    def user_counts(self) -> dict[str, int]:
        return {t: int(self._records(f'SELECT count(*) AS n FROM "user_{t}"')[0]["n"]) for t in USER_TABLES}

    # -- queries (parameterised; callers never write SQL) ---------------------

    def _frame(self, sql: str, params: Optional[list] = None) -> pd.DataFrame:
        return self._query(sql, params, _to_frame)

    def _records(self, sql: str, params: Optional[list] = None) -> list[dict]:
        return self._query(sql, params, _to_records)

    def _query(self, sql: str, params: Optional[list], fetch):
        """fetch(the executed cursor) of a query over the current rows (user rows reloaded where they changed)."""
        for table in USER_TABLES:
            self._reload_user(table)
        with self._lock:
            cur = self._con.cursor()
        try:
            return fetch(cur.execute(sql, params or []))
        finally:
            cur.close()

    def table(self, name: str) -> pd.DataFrame:
        return self._frame(_select_all(name))

    def records(self, name: str) -> list[dict]:
        """The rows of table `name` as {column: value} dicts (NULL: None), in the table's order; no pandas."""
        return self._records(_select_all(name))

    def counts(self) -> dict[str, int]:
        return {name: int(self._records(f'SELECT count(*) AS n FROM "{name}"')[0]["n"]) for name in TABLES}

    def latency_points(self, model: Optional[list[str]] = None, sku: Optional[list[str]] = None,
                       partition: Optional[list[str]] = None, kind: Optional[list[str]] = None,
                       precision: Optional[list[str]] = None) -> pd.DataFrame:
        """Latency points filtered by any of the given value lists (None = no filter)."""
        return self._frame(*_latency_query(model, sku, partition, kind, precision))

    def latency_records(self, model: Optional[list[str]] = None, sku: Optional[list[str]] = None,
                        partition: Optional[list[str]] = None, kind: Optional[list[str]] = None,
                        precision: Optional[list[str]] = None) -> list[dict]:
        """latency_points as {column: value} dicts (NULL: None), in the same order; no pandas."""
        return self._records(*_latency_query(model, sku, partition, kind, precision))

    def distinct(self, table: str, column: str) -> list[str]:
        if table not in TABLES or column not in TABLES[table][0].model_fields:
            raise StoreError(f"no column {column!r} in table {table!r}")
        return [r["v"] for r in self._records(f'SELECT DISTINCT "{column}" AS v FROM "{table}" ORDER BY 1')
                if r["v"] is not None]

    def cost_models(self) -> list[str]:
        """The models the estimator has operator-cost tables for (model_costs' distinct models), sorted; without
        reading the cost rows themselves (ProfileBook reads those only when it first estimates)."""
        return self.distinct("model_costs", "model")

    def catalog(self) -> Catalog:
        return Catalog.from_records(self.records)


def _to_frame(result) -> pd.DataFrame:
    return result.df()  # DuckDB imports pandas itself, on the first DataFrame asked for


def _to_records(result) -> list[dict]:
    names = [d[0] for d in result.description]
    return [dict(zip(names, row)) for row in result.fetchall()]


def _select_all(name: str) -> str:
    if name not in TABLES:
        raise StoreError(f"{name!r} is not a table; valid: {', '.join(TABLES)}")
    return f'SELECT * FROM "{name}"'


def _latency_query(model, sku, partition, kind, precision) -> tuple[str, list]:
    """(SQL, parameters) of the latency points filtered by any of the given value lists (None = no filter), in
    series order."""
    where, params = [], []
    for col, values in (("model", model), ("sku", sku), ("partition", partition), ("kind", kind),
                        ("precision", precision)):
        if values:
            where.append(f'"{col}" IN ({", ".join("?" for _ in values)})')
            params.extend(values)
    sql = "SELECT * FROM latency_points"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql + " ORDER BY model, sku, partition, precision, framework, input_len NULLS FIRST, batch", params
