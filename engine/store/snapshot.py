"""The rows snapshot: the store rows `python -m engine evaluate` reads, kept beside the database as JSON, so a warm
run answers without DuckDB (importing it, opening the store and its ten queries took ~0.1 s of a 0.6 s run; the
snapshot takes ~0.02 s: benchmarks/cli_startup.py).

It holds exactly what Context.from_store and ProfileBook.from_store read (SNAPSHOT_TABLES through `records`, and
the latency points in `latency_records` order), as the store returned them, with the version they were read at:
the database's path and file status (size, times, inode; its write-ahead log's too), the seed tables' hash (the
store's own test of whether its database is current, which it also computes on every open), the status of each
user-rows file, this file's format and a hash of the code that shapes the rows (CODE_FILES). The file,
`<database>.rows.json`, is one line of header (that version and the SHA-256 of the rest) and then the rows, one
JSON object: JSON, so loading it can run no code.

open_rows() uses the snapshot only when its version equals the one worked out now (stat calls and the seed hash;
no DuckDB), its digest matches and every table has the columns of its row model; anything else (missing, stale,
unreadable, truncated, malformed, the wrong shape) opens the Store, reads the rows there (a Store error is raised
as `evaluate` always raised it) and writes the snapshot afresh. So an import of user rows, a rebuild of the
database or an edited seed table refreshes it on the next run. It is written only when nothing changed while the
rows were read (the version before equals the version after), through a temporary file renamed into place, so a
reader never sees part of one; where the directory cannot be written it is skipped without a word. Only
`evaluate` reads it: every other command and the hosted app (Store.hosted, overlays) open the Store as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
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
from engine.store.build import _sql_type

log = logging.getLogger("kneepoint.store")

#: this file's layout; a snapshot of another format is stale
FORMAT = 1
#: the tables Context.from_store and ProfileBook.from_store read through `records` (the catalogue's three included)
SNAPSHOT_TABLES = ("gpus", "mig_profiles", "mig_placements", "models", "model_costs", "gpu_specs",
                   "preprocessing_points", "prices_power")
#: the key of the latency points, in latency_records' order (not records' order)
LATENCY = "latency_records"
#: the Python type of each SQL type a store column has (engine.store.build._sql_type); JSON gives each back as it was
_PY_TYPES = {"BIGINT": int, "DOUBLE": float, "BOOLEAN": bool, "VARCHAR": str}

__all__ = ["RowsSnapshot", "open_rows", "load_snapshot", "refresh_snapshot", "snapshot_path", "current_version"]


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


class RowsSnapshot:
    """The read methods of a Store that Context.from_store and ProfileBook.from_store call (`records`,
    `latency_records`, `catalog`), over rows held in memory: each call gives new {column: value} dicts (None for
    NULL), in the store's order, as Store's do."""

    def __init__(self, tables: dict[str, tuple[list[str], list[list]]]):
        #: {SNAPSHOT_TABLES name or LATENCY: (columns, rows as value lists)}
        self._tables = tables

    def _rows(self, key: str) -> list[dict]:
        columns, rows = self._tables[key]
        return [dict(zip(columns, row)) for row in rows]

    def records(self, name: str) -> list[dict]:
        if name not in SNAPSHOT_TABLES:
            raise StoreError(f"{name!r} is not in the rows snapshot; it holds {', '.join(SNAPSHOT_TABLES)}")
        return self._rows(name)

    def latency_records(self) -> list[dict]:
        """Every latency point (unfiltered: the profile book reads them all), in Store.latency_records' order."""
        return self._rows(LATENCY)

    def catalog(self) -> Catalog:
        return Catalog.from_records(self.records)


def open_rows(path: Optional[Path] = None, seed_dir: Path = SEED_DIR) -> RowsSnapshot:
    """The store rows `evaluate` reads: the snapshot beside the database at `path` (default: where Store() puts
    it) where it is current, else read from the Store and written to the snapshot for the next run."""
    path = Path(path) if path is not None else resolve_db_path()
    return load_snapshot(path, seed_dir) or refresh_snapshot(path, seed_dir)


def load_snapshot(db_path: Path, seed_dir: Path = SEED_DIR) -> Optional[RowsSnapshot]:
    """The snapshot beside `db_path` if it is current and whole; None otherwise (never an error)."""
    try:
        data = snapshot_path(db_path).read_bytes()
        head, _, body = data.partition(b"\n")
        header = json.loads(head)
        if not isinstance(header, dict) or header.get("version") != current_version(db_path, seed_dir):
            return None
        if header.get("sha256") != hashlib.sha256(body).hexdigest():
            return None
        return RowsSnapshot(_checked(json.loads(body)))
    except Exception as e:  # whatever is wrong with the file (or reading it), the store answers
        log.debug("rows snapshot beside %s not used: %s: %s", db_path, type(e).__name__, e)
        return None


def _checked(payload) -> dict[str, tuple[list[str], list[list]]]:
    """The tables of a snapshot's body; ValueError unless each table has its model's columns and rows of as many
    values. (The values' types are checked on writing, and the digest keeps them as written.)"""
    keys = (*SNAPSHOT_TABLES, LATENCY)
    if not isinstance(payload, dict) or sorted(payload) != sorted(keys):
        raise ValueError("not the snapshot's tables")
    out = {}
    for key in keys:
        columns, rows = payload[key]["columns"], payload[key]["rows"]
        n = len(columns)
        if columns != _columns(key) or not isinstance(rows, list) \
                or not all(type(row) is list and len(row) == n for row in rows):
            raise ValueError(f"{key}: not the model's columns, or a row of another length")
        out[key] = (columns, rows)
    return out


def _version_or_none(db_path: Path, seed_dir: Path) -> Optional[dict]:
    try:
        return current_version(db_path, seed_dir)
    except Exception as e:  # the store says what is wrong when it opens; no snapshot is written
        log.debug("no version for the rows snapshot beside %s: %s", db_path, e)
        return None


def _read(store: Store) -> dict[str, tuple[list[str], list[list]]]:
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


def write_snapshot(db_path: Path, version: dict, tables: dict[str, tuple[list[str], list[list]]]) -> bool:
    """Write the snapshot atomically (a temporary file renamed into place); False, and nothing written, where the
    rows are not what a snapshot holds (another table layout, a value JSON would not give back) or the directory
    cannot be written."""
    if not _in_layout(tables):
        log.debug("rows snapshot not written: the store's rows are not in the snapshot's layout")
        return False
    body = json.dumps({key: {"columns": columns, "rows": rows} for key, (columns, rows) in tables.items()},
                      separators=(",", ":")).encode()
    header = json.dumps({"version": version, "sha256": hashlib.sha256(body).hexdigest()}).encode()
    target = snapshot_path(db_path)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "xb") as fh:  # O_EXCL: never through a file or link already there
            fh.write(header + b"\n" + body)
        os.replace(tmp, target)
        return True
    except OSError as e:  # a read-only directory, a full disk: the next run reads the store again
        log.debug("rows snapshot %s not written: %s", target, e)
        return False
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _in_layout(tables: dict[str, tuple[list[str], list[list]]]) -> bool:
    """True if `tables` are the snapshot's, each with its model's columns and every value of its column's type (or
    None): what a reader may then take on the digest's word, without checking each value again."""
    if sorted(tables) != sorted((*SNAPSHOT_TABLES, LATENCY)):
        return False
    for key, (columns, rows) in tables.items():
        kinds = _value_types(key)
        if columns != _columns(key) or any(len(row) != len(kinds) for row in rows):
            return False
        # column by column, the set of the types found (a pass in C over each column) within the types allowed
        if rows and not all(set(map(type, values)) <= set(ok) for values, ok in zip(zip(*rows), kinds)):
            return False
    return True
