"""The rows snapshot: the store rows `python -m engine evaluate` reads, kept beside the database as JSON, so a warm
run answers without DuckDB (importing it, opening the store and its ten queries took ~0.1 s of a 0.6 s run;
reading the snapshot and building the Context of the default scenario from it takes ~7 ms in a fresh process, ~18 ms
with format 1, which decoded every table: benchmarks/cli_startup.py times the whole run).

It holds exactly what Context.from_store and ProfileBook.from_store read (SNAPSHOT_TABLES through `records`, the
latency points in `latency_records` order, and `cost_models`), as the store returned them, with the version they
were read at: the database's path and file status (size, times, inode; its write-ahead log's too), the seed tables'
hash (the store's own test of whether its database is current, which it also computes on every open), the status of
each user-rows file, this file's format and a hash of the code that shapes the rows (CODE_FILES). The file,
`<database>.rows.json`, is one line of header (that version and the SHA-256 of the rest) and then the body, in lines:
first the index (each table's columns, in KEYS order, and the sorted list of models that have cost tables, worked
out from the model_costs rows written), then one line per table of KEYS, its rows as a JSON list of value lists.
JSON, so loading it can run no code; a line per table, so each is decoded on its own.

load_snapshot() uses the snapshot only when its version equals the one worked out now (stat calls and the seed
hash; no DuckDB), the digest of the whole body matches and the index gives every table its row model's columns and
a line; anything else (missing, stale, unreadable, truncated, malformed, the wrong shape) opens the Store, reads
the rows there (a Store error is raised as `evaluate` always raised it) and writes the snapshot afresh. So an
import of user rows, a rebuild of the database or an edited seed table refreshes it on the next run. A table's line
is decoded, and its rows' lengths checked, the first time the table is asked for: the default scenario never
estimates, so its run never decodes model_costs (850 kB of the ~1 MB body; ~10 ms to decode and make dicts of).

A table line that is malformed although the digest matched cannot come from write_snapshot (it checks every value
before writing) nor from a file changed since it was opened (its bytes are read once, then hashed); only from a
file someone else wrote with a matching digest. Such a table is read from the Store instead (and the snapshot
written afresh) where the version is still the one the snapshot was opened at, so the rows stay those of one
version; where the store has changed meanwhile (or the fresh rows contradict the cost models already given out),
it raises a StoreError that names the snapshot, never a bare ValueError or KeyError.

The snapshot is written only when nothing changed while the rows were read (the version before equals the version
after), through a temporary file renamed into place, so a reader never sees part of one; where the directory
cannot be written it is skipped without a word. Only `evaluate` reads it: every other command and the hosted app
(Store.hosted, overlays) open the Store as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Optional

import engine.seed.records as records_module
import engine.store as store_module
import engine.store.build as build_module
from engine.catalog import Catalog
from engine.seed.records import TABLES
from engine.store import SCHEMA_VERSION, SEED_DIR, USER_TABLES, Store, StoreError, _user_dir_of, \
    resolve_db_path, seed_hash
from engine.store.build import _sql_type, store_log

#: this file's layout (2: an index line, then one line per table, each decoded when first asked for); a snapshot of
#: another format is stale
FORMAT = 2
#: the tables Context.from_store and ProfileBook.from_store read through `records` (the catalogue's three included)
SNAPSHOT_TABLES = ("gpus", "mig_profiles", "mig_placements", "models", "model_costs", "gpu_specs",
                   "preprocessing_points", "prices_power")
#: the key of the latency points, in latency_records' order (not records' order)
LATENCY = "latency_records"
#: every table the snapshot holds, in the order of their lines after the index
KEYS = (*SNAPSHOT_TABLES, LATENCY)
#: the Python type of each SQL type a store column has (engine.store.build._sql_type); JSON gives each back as it was
_PY_TYPES = {"BIGINT": int, "DOUBLE": float, "BOOLEAN": bool, "VARCHAR": str}

__all__ = ["KEYS", "RowsSnapshot", "open_rows", "load_snapshot", "refresh_snapshot", "snapshot_path",
           "current_version"]

Tables = dict[str, tuple[list[str], list[list]]]  #: {KEYS name: (columns, rows as value lists)}


def snapshot_path(db_path: Path) -> Path:
    """`<database file name>.rows.json` beside the database (never the database's own path)."""
    return db_path.with_name(db_path.name + ".rows.json")


def _columns(key: str) -> list[str]:
    """The columns a table of the snapshot must have: its row model's fields, in order."""
    return list(TABLES["latency_points" if key == LATENCY else key][0].model_fields)


def _value_types(key: str) -> list[tuple[type, type]]:
    """The types a value of each column may have: its SQL type's, or None's (NULL)."""
    fields = TABLES["latency_points" if key == LATENCY else key][0].model_fields.values()
    return [(_PY_TYPES[_sql_type(f.annotation)], type(None)) for f in fields]


def _cost_models(columns: list[str], rows: list[list]) -> list[str]:
    """The models of model_costs rows, sorted, once each, NULL left out: what Store.cost_models gives."""
    i = columns.index("model")
    return sorted({row[i] for row in rows if row[i] is not None})


def _status(path: Path) -> Optional[list[int]]:
    """A file's size, modification and change times (ns), inode and device; None if there is none."""
    try:
        s = os.stat(path)
    except FileNotFoundError:
        return None
    return [s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino, s.st_dev]


#: the code that shapes the rows the store gives (its views, queries and orders; the row models; this file): an edit
#: to any of them makes a snapshot written before it stale, as a new seed table does
CODE_FILES = (Path(store_module.__file__), Path(build_module.__file__), Path(records_module.__file__), Path(__file__))


def _code_hash() -> str:
    h = hashlib.sha256()
    for path in CODE_FILES:
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def current_version(db_path: Path, seed_dir: Path = SEED_DIR) -> dict:
    """What the rows the store would give now depend on, as JSON values (raises OSError or SeedError where a
    file cannot be read or a seed table is missing: the caller then asks the store)."""
    user_dir = _user_dir_of(db_path)
    return {"format": FORMAT, "code": _code_hash(), "schema": SCHEMA_VERSION, "db": str(db_path),
            "db_file": _status(db_path),
            "wal": _status(db_path.with_name(db_path.name + ".wal")), "seed_dir": str(seed_dir),
            "seed_hash": seed_hash(seed_dir), "user_dir": str(user_dir),
            "user_files": {t: _status(user_dir / f"{t}.parquet") for t in USER_TABLES}}


class _Origin:
    """Where a loaded snapshot came from: its file, the database and seed tables it stands for, and the version
    it was current at (what a table that turns out malformed is then read from the Store against)."""

    def __init__(self, path: Path, db_path: Path, seed_dir: Path, version: dict):
        self.path, self.db_path, self.seed_dir, self.version = path, db_path, seed_dir, version


class _Lines:
    """The table lines of a snapshot file's bytes by KEYS name, each cut out only when asked for (splitting the
    ~1 MB body into lines took ~0.5 ms, copying it apart from the header as much; finding where lines start and
    end, ~0.02 ms)."""

    def __init__(self, data: bytes, spans: list[tuple[int, int]]):
        self._data, self._spans = data, dict(zip(KEYS, spans))

    def __getitem__(self, key: str) -> bytes:
        start, end = self._spans[key]
        return self._data[start:end]


def _spans(data: bytes, start: int) -> list[tuple[int, int]]:
    """(start, end) of each line of `data` from offset `start` on, newlines left out."""
    spans = []
    while (end := data.find(b"\n", start)) >= 0:
        spans.append((start, end))
        start = end + 1
    spans.append((start, len(data)))
    return spans


class RowsSnapshot:
    """The read methods of a Store that Context.from_store and ProfileBook.from_store call (`records`,
    `latency_records`, `cost_models`, `catalog`), over rows held in memory: each call gives new {column: value}
    dicts (None for NULL), in the store's order, as Store's do. A loaded snapshot holds each table as its line of
    JSON and decodes it the first time it is asked for (`decoded` says which are)."""

    #: its rows are bytes and lists in this process, so a reader may ask for them later, in a forked worker too
    #: (ProfileBook.from_store then defers the estimator's tables)
    rows_in_memory = True

    def __init__(self, tables: Tables, cost_models: Optional[list[str]] = None, *,
                 lines: Optional[_Lines] = None, origin: Optional[_Origin] = None):
        """`tables`: the tables decoded already; `lines`: the others, as the snapshot's lines (digest checked),
        with `origin`, the file they were read from; `cost_models`: worked out from model_costs if not given."""
        self._tables = dict(tables)
        self._lines = lines
        self._origin = origin
        self._cost_models = list(cost_models) if cost_models is not None else _cost_models(*tables["model_costs"])

    @property
    def decoded(self) -> frozenset[str]:
        """The tables (KEYS names) decoded so far."""
        return frozenset(self._tables)

    def _table(self, key: str) -> tuple[list[str], list[list]]:
        if key not in self._tables:
            try:
                self._tables[key] = _decoded(key, self._lines[key], self._cost_models)
            except (ValueError, TypeError, RecursionError) as e:  # malformed, though the digest matched
                self._tables[key] = self._from_store(key, e)
        return self._tables[key]

    def _from_store(self, key: str, error: Exception) -> tuple[list[str], list[list]]:
        """Table `key` read from the Store, where its line in the snapshot is malformed: only while the version is
        still the one the snapshot was opened at (so every table given out is of one version), the snapshot then
        written afresh; a StoreError naming the snapshot otherwise."""
        origin = self._origin
        where = f"the rows snapshot {origin.path}" if origin else "the rows snapshot"
        what = f"{where}: its {key} rows cannot be read ({type(error).__name__}: {error})"
        store_log().warning("%s; reading them from the store", what)
        if origin is None or _version_or_none(origin.db_path, origin.seed_dir) != origin.version:
            raise StoreError(f"{what}, and the store has changed since the snapshot was opened: run the command "
                             "again (the next run reads the store and writes the snapshot afresh)") from None
        fresh = refresh_snapshot(origin.db_path, origin.seed_dir)
        if _version_or_none(origin.db_path, origin.seed_dir) != origin.version:
            raise StoreError(f"{what}, and the store changed while they were read again: run the command "
                             "again") from None
        if fresh.cost_models() != self._cost_models:
            raise StoreError(f"{what}; its list of the models with cost tables is not the store's: run the "
                             "command again (the snapshot has been written afresh)") from None
        return fresh._table(key)

    def _rows(self, key: str) -> list[dict]:
        columns, rows = self._table(key)
        return [dict(zip(columns, row)) for row in rows]

    def records(self, name: str) -> list[dict]:
        if name not in SNAPSHOT_TABLES:
            raise StoreError(f"{name!r} is not in the rows snapshot; it holds {', '.join(SNAPSHOT_TABLES)}")
        return self._rows(name)

    def latency_records(self) -> list[dict]:
        """Every latency point (unfiltered: the profile book reads them all), in Store.latency_records' order."""
        return self._rows(LATENCY)

    def cost_models(self) -> list[str]:
        """The models with cost tables, sorted, as Store.cost_models (kept apart: model_costs is not decoded)."""
        return list(self._cost_models)

    def catalog(self) -> Catalog:
        return Catalog.from_records(self.records)


def open_rows(path: Optional[Path] = None, seed_dir: Path = SEED_DIR) -> RowsSnapshot:
    """The store rows `evaluate` reads: the snapshot beside the database at `path` (default: where Store() puts
    it) where it is current, else read from the Store and written to the snapshot for the next run."""
    path = Path(path) if path is not None else resolve_db_path()
    return load_snapshot(path, seed_dir) or refresh_snapshot(path, seed_dir)


def load_snapshot(db_path: Path, seed_dir: Path = SEED_DIR) -> Optional[RowsSnapshot]:
    """The snapshot beside `db_path` if it is current, whole and indexed as this format's; None otherwise (never an
    error). Its tables are decoded later, each when first asked for."""
    try:
        path = snapshot_path(db_path)
        data = path.read_bytes()
        cut = data.index(b"\n")  # the body, from cut + 1, is read in place (a copy of it was ~0.6 ms)
        header = json.loads(data[:cut])
        version = current_version(db_path, seed_dir)
        if not isinstance(header, dict) or header.get("version") != version:
            return None
        if header.get("sha256") != hashlib.sha256(memoryview(data)[cut + 1:]).hexdigest():
            return None
        (start, end), *lines = _spans(data, cut + 1)
        cost_models = _checked_index(json.loads(data[start:end]), len(lines))
        return RowsSnapshot({}, cost_models, lines=_Lines(data, lines),
                            origin=_Origin(path, db_path, seed_dir, version))
    except Exception as e:  # whatever is wrong with the file (or reading it), the store answers
        store_log().debug("rows snapshot beside %s not used: %s: %s", db_path, type(e).__name__, e)
        return None


def _checked_index(index, n_lines: int) -> list[str]:
    """The cost models of a snapshot's index; ValueError unless it gives each table of KEYS, in order, its model's
    columns, the body has a line for each, and the cost models are names, sorted, once each."""
    if not isinstance(index, dict) or sorted(index) != ["columns", "cost_models"]:
        raise ValueError("not the snapshot's index")
    columns, cost_models = index["columns"], index["cost_models"]
    if not isinstance(columns, dict) or list(columns.items()) != [(key, _columns(key)) for key in KEYS]:
        raise ValueError("not the snapshot's tables, or not their models' columns")
    if n_lines != len(KEYS):
        raise ValueError(f"{n_lines} table lines, not {len(KEYS)}")
    if not isinstance(cost_models, list) or not all(type(m) is str for m in cost_models) \
            or cost_models != sorted(set(cost_models)):
        raise ValueError("the cost models are not names, sorted, once each")
    return cost_models


def _decoded(key: str, line: bytes, cost_models: list[str]) -> tuple[list[str], list[list]]:
    """Table `key` from its line; ValueError unless it is a list of rows each of as many values as its model has
    columns (and, for model_costs, rows of exactly the cost models of the index). The values' types are checked
    on writing, and the digest keeps them as written."""
    columns, rows = _columns(key), json.loads(line)
    n = len(columns)
    if not isinstance(rows, list) or not all(type(row) is list and len(row) == n for row in rows):
        raise ValueError("not a list of rows of the model's columns")
    if key == "model_costs" and _cost_models(columns, rows) != cost_models:
        raise ValueError("not the rows of the index's cost models")
    return columns, rows


def _version_or_none(db_path: Path, seed_dir: Path) -> Optional[dict]:
    try:
        return current_version(db_path, seed_dir)
    except Exception as e:  # the store says what is wrong when it opens; no snapshot is written
        store_log().debug("no version for the rows snapshot beside %s: %s", db_path, e)
        return None


def _read(store: Store) -> Tables:
    """The snapshot's tables, read from the store, columnar."""
    def columnar(key: str, records: list[dict]):
        columns = list(records[0]) if records else _columns(key)
        return columns, [list(r.values()) for r in records]
    tables = {name: columnar(name, store.records(name)) for name in SNAPSHOT_TABLES}
    tables[LATENCY] = columnar(LATENCY, store.latency_records())
    return tables


def refresh_snapshot(db_path: Path, seed_dir: Path = SEED_DIR) -> RowsSnapshot:
    """The rows read from the Store at `db_path`, written to the snapshot if nothing changed while they were read.

    The Store opens as `evaluate` always opened it (building its database if need be, raising StoreError or
    SeedError as it does). Where it had to build its database, the version before differs from the one after;
    the rows are then read once more from the database now built, so the first run already leaves a snapshot."""
    for _attempt in range(2):
        before = _version_or_none(db_path, seed_dir)
        store = Store(db_path, seed_dir)
        try:
            tables, rebuilt = _read(store), store.rebuilt_because is not None
        finally:
            store.close()
        after = _version_or_none(db_path, seed_dir)
        if before is not None and before == after:
            write_snapshot(db_path, after, tables)
            break
        if not rebuilt:  # another process changed something while the rows were read: the next run writes it
            break
    return RowsSnapshot(tables)


def write_snapshot(db_path: Path, version: dict, tables: Tables) -> bool:
    """Write the snapshot atomically (a temporary file renamed into place); False, and nothing written, where the
    rows are not what a snapshot holds (another table layout, a value JSON would not give back) or the directory
    cannot be written."""
    if not _in_layout(tables):
        store_log().debug("rows snapshot not written: the store's rows are not in the snapshot's layout")
        return False
    index = {"columns": {key: tables[key][0] for key in KEYS}, "cost_models": _cost_models(*tables["model_costs"])}
    # compact JSON has no newline (a string's is escaped): each table is one line
    body = b"\n".join(json.dumps(part, separators=(",", ":")).encode()
                      for part in (index, *(tables[key][1] for key in KEYS)))
    header = json.dumps({"version": version, "sha256": hashlib.sha256(body).hexdigest()}).encode()
    target = snapshot_path(db_path)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "xb") as fh:  # O_EXCL: never through a file or link already there
            fh.write(header + b"\n" + body)
        os.replace(tmp, target)
        return True
    except OSError as e:  # a read-only directory, a full disk: the next run reads the store again
        store_log().debug("rows snapshot %s not written: %s", target, e)
        return False
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _in_layout(tables: Tables) -> bool:
    """True if `tables` are the snapshot's, each with its model's columns and every value of its column's type (or
    None): what a reader may then take on the digest's word, without checking each value again."""
    if sorted(tables) != sorted(KEYS):
        return False
    for key, (columns, rows) in tables.items():
        kinds = _value_types(key)
        if columns != _columns(key) or any(len(row) != len(kinds) for row in rows):
            return False
        # column by column, the set of the types found (a pass in C over each column) within the types allowed
        if rows and not all(set(map(type, values)) <= set(ok) for values, ok in zip(zip(*rows), kinds)):
            return False
    return True
