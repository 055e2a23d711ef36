"""Building the profile database: where it lives, the seed hash, and the atomic build from data/seed.

Every seed row is validated (engine.records) before anything is written; the build writes a
temporary file and renames it into place, so a reader never sees a partly built database.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import types
import typing
import uuid
from pathlib import Path
from typing import Optional

import duckdb
import pandas as pd

from engine.catalog import Catalog
from engine.records import TABLES
from engine.seedio import SeedError, read_csv
from engine.errors import KneepointError

log = logging.getLogger("kneepoint.store")

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = ROOT / "data"
SEED_DIR = DATA_DIR / "seed"
DB_NAME = "kneepoint.duckdb"
ENV_DB = "KNEEPOINT_DB"
SCHEMA_VERSION = "1"
#: tables that also hold the user's own rows (imports, profiler output)
USER_TABLES = ("latency_points", "load_points", "preprocessing_points")

__all__ = ["StoreError", "resolve_db_path", "build_database", "load_seed", "seed_hash", "USER_TABLES"]


class StoreError(KneepointError, RuntimeError):
    """The store cannot be opened or built; the message says why."""


# --------------------------------------------------------------------------- location

def _writable(directory: Path) -> bool:
    """True if a file can really be created in `directory` (root ignores mode bits)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".probe-"):
            return True
    except OSError:
        return False


def resolve_db_path(data_dir: Path = DATA_DIR, env: Optional[dict] = None) -> Path:
    """Where the database lives: $KNEEPOINT_DB, else data/, else a temp directory."""
    env = os.environ if env is None else env
    if env.get(ENV_DB):
        return Path(env[ENV_DB]).expanduser()
    if _writable(data_dir):
        return data_dir / DB_NAME
    tmp = Path(tempfile.gettempdir()) / f"kneepoint-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
    tmp.mkdir(parents=True, exist_ok=True)
    log.info("data directory %s is not writable; using %s", data_dir, tmp)
    return tmp / DB_NAME


def seed_hash(seed_dir: Path = SEED_DIR) -> str:
    """Hash of the seed tables and schema version; a change triggers a rebuild."""
    h = hashlib.sha256(SCHEMA_VERSION.encode())
    for name in sorted(TABLES):
        path = seed_dir / f"{name}.csv"
        if not path.exists():
            raise SeedError(f"{name}.csv: missing from {seed_dir}")
        h.update(name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------- build

_SQL_TYPES = {int: "BIGINT", float: "DOUBLE", bool: "BOOLEAN", str: "VARCHAR"}


def _sql_type(annotation) -> str:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    for py, sql in _SQL_TYPES.items():
        if isinstance(annotation, type) and issubclass(annotation, py) and not (py is int and annotation is bool):
            return "BOOLEAN" if annotation is bool else sql
    return "VARCHAR"


def _create_table(con: duckdb.DuckDBPyConnection, name: str, model: type, rows: list) -> None:
    fields = model.model_fields
    cols = ", ".join(f'"{f}" {_sql_type(info.annotation)}' for f, info in fields.items())
    con.execute(f'CREATE TABLE "{name}" ({cols})')
    if not rows:
        return
    frame = pd.DataFrame([r.model_dump(mode="json") for r in rows], columns=list(fields))
    con.register("_rows", frame)
    con.execute(f'INSERT INTO "{name}" SELECT * FROM _rows')
    con.unregister("_rows")


def _check_keys(name: str, key: tuple[str, ...], rows: list) -> None:
    if not key:
        return
    seen: dict[tuple, int] = {}
    for line, r in enumerate(rows, start=2):
        k = tuple(getattr(r, c) for c in key)
        if k in seen:
            raise SeedError(f"{name}.csv: line {line}: duplicate of line {seen[k]} "
                            f"(same {', '.join(key)}: {k})")
        seen[k] = line


def load_seed(seed_dir: Path = SEED_DIR) -> dict[str, list]:
    """Read and validate every seed table; raises SeedError on the first bad row."""
    tables = {}
    for name, (model, key) in TABLES.items():
        path = seed_dir / f"{name}.csv"
        if not path.exists():
            raise SeedError(f"{name}.csv: missing from {seed_dir}")
        rows = read_csv(path, model)
        _check_keys(name, key, rows)
        tables[name] = rows
    # Cross-table check: the catalogue must assemble (every profile has placements).
    try:
        Catalog.from_rows(tables["gpus"], tables["mig_profiles"], tables["mig_placements"])
    except ValueError as e:
        raise SeedError(f"mig_profiles.csv: {e}") from None
    return tables


def build_database(path: Path, seed_dir: Path = SEED_DIR) -> None:
    """Build the DuckDB file at `path` from the seed tables, atomically."""
    tables = load_seed(seed_dir)  # validate everything before writing anything
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        con = duckdb.connect(str(tmp))
        try:
            for name, (model, _key) in TABLES.items():
                _create_table(con, name, model, tables[name])
            con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
            con.execute("INSERT INTO meta VALUES ('seed_hash', ?), ('schema_version', ?)",
                        [seed_hash(seed_dir), SCHEMA_VERSION])
            con.execute("CHECKPOINT")
        finally:
            con.close()
        os.replace(tmp, path)
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            leftover.unlink(missing_ok=True)
