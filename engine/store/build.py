"""Building the profile database: where it lives, the seed hash, and the atomic build from data/seed.

Every seed row is validated (engine.seed.records) before anything is written; the build writes a
temporary file and renames it into place, so a reader never sees a partly built database.
DuckDB is imported by the functions that use it (see engine.store).
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
import types
import typing
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from engine.catalog import Catalog
from engine.seed.records import TABLES
from engine.seed.reader import SeedError, read_csv
from engine.errors import KneepointError

if TYPE_CHECKING:
    import logging

    import duckdb


def store_log() -> logging.Logger:
    """The store's logger, "kneepoint.store". `logging` is imported with the first message rather than with the
    store: the store is the engine's only user of it, and a warm `evaluate`, which logs nothing, spent ~2 ms of its
    start-up importing it."""
    import logging  # lazy (standard library): see the docstring

    return logging.getLogger("kneepoint.store")

ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = ROOT / "data"
SEED_DIR = DATA_DIR / "seed"
DB_NAME = "kneepoint.duckdb"
ENV_DB = "KNEEPOINT_DB"
SCHEMA_VERSION = "1"
#: tables that also hold the user's own rows (imports, profiler output)
USER_TABLES = ("latency_points", "load_points", "preprocessing_points")
#: the columns that name one series (one curve) of each user table, then its points; user rows are kept in this
#: order, so a series is contiguous and DuckDB's per-row-group min/max skip the rest on a filtered lookup
SERIES_ORDER = {
    "latency_points": ("model", "sku", "partition", "precision", "framework", "input_len", "batch"),
    "load_points": ("model", "sku", "partition", "precision", "framework", "batch", "load_kind", "load"),
    "preprocessing_points": ("pipeline", "step", "device", "implementation", "input_size"),
}
#: the most user rows a table may hold: the profile book reads every row on each command, and past this a
#: command takes seconds (1,000,000 took minutes); `profiles clear-user` frees room, `--max-rows` lifts it once
MAX_USER_ROWS = 100_000
#: the fallback directory in the shared temporary directory is this user's alone
PRIVATE_DIR_MODE = 0o700
#: every DuckDB database file carries these bytes at this offset (its storage header)
DUCKDB_MAGIC, DUCKDB_MAGIC_OFFSET = b"DUCK", 8

__all__ = ["StoreError", "MAX_USER_ROWS", "SERIES_ORDER", "resolve_db_path", "private_temp_dir", "prepare_database",
           "build_database", "load_seed", "seed_hash", "USER_TABLES"]


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
    """Where the database lives: $KNEEPOINT_DB, else data/, else a private per-user temporary directory."""
    env = os.environ if env is None else env
    if env.get(ENV_DB):
        return Path(env[ENV_DB]).expanduser()
    if _writable(data_dir):
        return data_dir / DB_NAME
    tmp = private_temp_dir()
    store_log().info("data directory %s is not writable; using %s", data_dir, tmp)
    return tmp / DB_NAME


def private_temp_dir(base: Optional[Path] = None) -> Path:
    """`kneepoint-<uid>` in the system temporary directory (or `base`), for a read-only data directory.

    Its name is predictable, so another user may have made it first: it is created with mode 0o700, and an
    existing one is used only if it is a real directory (not a symbolic link) owned by this user that no
    one else can write; otherwise StoreError says why and how to choose another place."""
    path = Path(tempfile.gettempdir() if base is None else base) / f"kneepoint-{os.getuid()}"
    try:
        os.mkdir(path, PRIVATE_DIR_MODE)
    except FileExistsError:
        pass
    except OSError as e:
        raise StoreError(f"the data directory is read-only and the fallback {path} cannot be made "
                         f"({e.strerror or e}); set {ENV_DB} to a file in a writable directory") from None
    problem = _unsafe_dir(path)
    if problem:
        raise StoreError(f"the data directory is read-only and the fallback {path} {problem}; remove it or set "
                         f"{ENV_DB} to a file in a directory you own")
    return path


def _unsafe_dir(path: Path) -> Optional[str]:
    """Why `path` is not a private directory of this user (None if it is)."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if info.st_uid != os.getuid():
        return f"belongs to another user (uid {info.st_uid})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"can be written by other users (mode {stat.S_IMODE(info.st_mode):o})"
    return None


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
    import pandas as pd  # heavy (~0.3 s): only a build loads it, never a start-up that finds the database built

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
    """Build the DuckDB file at `path` from the seed tables, atomically.

    A bad seed row raises SeedError before anything is written; a directory that cannot be written raises
    StoreError naming the setting that chooses another place."""
    import duckdb  # lazy: see the module docstring

    tables = load_seed(seed_dir)  # validate everything before writing anything
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
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
    except (OSError, duckdb.Error) as e:
        raise StoreError(f"cannot build the profile database at {path} ({_first_line(e)}); set {ENV_DB} to a "
                         "file in a writable directory") from None
    finally:
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            leftover.unlink(missing_ok=True)


# --------------------------------------------------------------------------- an existing file

def _first_line(error: Exception) -> str:
    """An OS or DuckDB error in one line (DuckDB adds context on further lines)."""
    text = getattr(error, "strerror", None) or str(error)
    return (text.splitlines() or [type(error).__name__])[0][:200]


def prepare_database(path: Path, seed_dir: Path = SEED_DIR,
                     con: Optional[duckdb.DuckDBPyConnection] = None) -> Optional[str]:
    """Make `path` an up-to-date Kneepoint database; returns why it was built, or None if it was reused.

    Only a file that carries Kneepoint's own metadata is ever replaced (rebuilt when its seed hash is stale).
    A DuckDB file that cannot be opened is moved aside to `<name>.corrupt-<UTC time>`, never deleted;
    anything else (a directory, a text file, another program's database) is refused with a StoreError
    naming the KNEEPOINT_DB setting. With `con`, the database is left attached to it, read-only, as `seed`
    (a DuckDB error if the built file cannot be attached): the check reads the file through the connection
    that keeps it, so a start-up opens one DuckDB instance, not two (each costs ~30 ms)."""
    import duckdb  # lazy: see the module docstring

    own = con is None
    con = duckdb.connect(":memory:") if own else con
    try:
        reason = _rebuild_reason(Path(path), seed_dir, con)
        if reason:
            store_log().warning("rebuilding the profile database at %s: %s", path, reason)
            build_database(Path(path), seed_dir)
            if not own:
                _attach(con, Path(path))
    finally:
        if own:
            con.close()
    return reason


def _attach(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    con.execute("ATTACH ? AS seed (READ_ONLY)", [str(path)])


def _refuse(path: Path, what: str) -> StoreError:
    return StoreError(f"{ENV_DB}: {path} {what}; Kneepoint builds its database only where no file is, or "
                      f"replaces its own: set {ENV_DB} to another path")


def _rebuild_reason(path: Path, seed_dir: Path, con: duckdb.DuckDBPyConnection) -> Optional[str]:
    """Why the file at `path` must be built (None: it is current, and left attached to `con` as `seed`); raises
    StoreError for a file not Kneepoint's."""
    import duckdb  # lazy: see the module docstring

    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "the database file does not exist yet"
    except OSError as e:
        raise StoreError(f"{ENV_DB}: {path} cannot be read ({_first_line(e)})") from None
    if stat.S_ISDIR(info.st_mode):
        raise StoreError(f"{ENV_DB}: {path} is a directory; give the path of a database file, such as "
                         f"{path / DB_NAME}")
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(path, "is not a plain file")
    if not _has_duckdb_magic(path):
        raise _refuse(path, "is not a DuckDB database")
    try:
        _attach(con, path)
    except duckdb.Error as e:
        if any(m in str(e).lower() for m in _LOCK_MESSAGES):  # another program is writing it: leave it alone
            raise StoreError(f"{ENV_DB}: {path} is in use by another program ({_first_line(e)})") from None
        aside = _move_aside(path)
        return f"the file was not a readable DuckDB database ({type(e).__name__}); it was moved to {aside.name}"
    try:
        row = con.execute("SELECT value FROM seed.meta WHERE key = 'seed_hash'").fetchone()
    except duckdb.Error:
        row = None
    current = row is not None and row[0] == seed_hash(seed_dir)
    if not current:
        con.execute("DETACH seed")
    if row is None:
        raise _refuse(path, "is a DuckDB database without Kneepoint's metadata (another program's?)")
    return None if current else "the seed tables have changed since it was built"


#: how DuckDB says another process holds the file's write lock
_LOCK_MESSAGES = ("could not set lock", "conflicting lock")


def _has_duckdb_magic(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(DUCKDB_MAGIC_OFFSET + len(DUCKDB_MAGIC))
    except OSError as e:
        raise StoreError(f"{ENV_DB}: {path} cannot be read ({_first_line(e)})") from None
    return head[DUCKDB_MAGIC_OFFSET:] == DUCKDB_MAGIC


def _move_aside(path: Path) -> Path:
    """Rename a corrupt database (and its write-ahead log) to `<name>.corrupt-<UTC time>`; returns the new path."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while aside.exists() or aside.is_symlink():
        n += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    wal = path.with_name(path.name + ".wal")
    try:
        os.rename(path, aside)
        if wal.exists():
            os.rename(wal, aside.with_name(aside.name + ".wal"))
    except OSError as e:
        raise StoreError(f"{ENV_DB}: {path} is corrupt and cannot be moved aside ({_first_line(e)}); move it "
                         f"away or set {ENV_DB} to another path") from None
    store_log().warning("moved the unreadable profile database %s to %s", path, aside)
    return aside
