"""Exporters: any store table to CSV or Parquet in the project's own schema.

The columns are exactly the row model's fields (engine/seed/records.py), in order, in the units of the
model (ms, items/s, MB, ...). CSV: UTF-8, header row, empty cell = no value, floats written with
repr() (the shortest text that reads back to the same float), booleans True/False. Parquet: one
typed, nullable-where-optional column per field. Either reads back with engine.io.importers.parse_own
into rows equal to the store's rows. Files are written to a temporary name and renamed into place.

A CSV is opened in spreadsheets, and imported text is anyone's: a text cell that a spreadsheet would run
as a formula (it starts with =, +, -, @, tab or CR, and is not a plain number) is written behind a single
quote (OWASP's advice on CSV injection); numbers are never touched, and parse_own removes exactly that
quote again, so an exported CSV still reads back to the same rows.
"""

from __future__ import annotations

import csv
import io
import os
import types
import typing
import uuid
from enum import Enum
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from engine.errors import KneepointError
from engine.seed.records import TABLES
from engine.seed.reader import neutralise_formula
from engine.io.userfiles import UserFileError, shown
from engine.store import USER_TABLES

__all__ = ["FORMATS", "ExportRequestError", "store_rows", "csv_bytes", "frame_csv_bytes", "parquet_bytes", "export_table", "export_all"]

FORMATS = ("csv", "parquet")


class ExportRequestError(KneepointError):
    """An export asked for a table, format or place that does not exist (the message names the valid ones)."""


def store_rows(store, table: str, user_only: bool = False) -> list:
    """The rows of `table` (seed and user, or only the user's) as validated row models."""
    if table not in TABLES:
        raise ExportRequestError(f"{table!r} is not a table; valid: {', '.join(TABLES)}")
    model = TABLES[table][0]
    frame = store.user_rows(table) if user_only else store.table(table)
    out = []
    for rec in frame.to_dict("records"):
        values = {k: (None if _missing(v) else _plain(v)) for k, v in rec.items()}
        try:
            out.append(model(**values))
        except ValidationError:  # a row stored before a check it fails existed: exported as it is, not lost
            out.append(model.model_construct(**values))
    return out


def _missing(v) -> bool:
    return v is None or (not isinstance(v, str) and bool(pd.isna(v)))


def _plain(v):
    return v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, Enum):
        return str(v.value)
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return neutralise_formula(v)
    return str(v)


def csv_bytes(rows: list, model) -> bytes:
    """Rows of `model` as CSV bytes (header = the model's fields)."""
    cols = list(model.model_fields)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([_cell(getattr(r, c)) for c in cols])
    return buf.getvalue().encode("utf-8")


def frame_csv_bytes(frame: pd.DataFrame) -> bytes:
    """A table (a page's or a report's) as UTF-8 CSV with a header, empty cell = no value; text cells that a
    spreadsheet would run as formulas are quoted, number columns are written as they are."""
    safe = frame.copy()
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]):  # text (object or string dtype), mixed, dates
            safe[column] = safe[column].map(lambda v: neutralise_formula(v) if isinstance(v, str) else v)
    return safe.to_csv(index=False, na_rep="").encode()


def _arrow_schema(model):
    import pyarrow as pa

    kinds = {bool: pa.bool_(), int: pa.int64(), float: pa.float64()}
    fields = []
    for name, info in model.model_fields.items():
        ann, nullable = info.annotation, False
        if typing.get_origin(ann) in (typing.Union, types.UnionType):
            nullable = type(None) in typing.get_args(ann)
            ann = next(a for a in typing.get_args(ann) if a is not type(None))
        typ = next((t for py, t in kinds.items() if ann is py), pa.string())
        fields.append(pa.field(name, typ, nullable=nullable))
    return pa.schema(fields)


def parquet_bytes(rows: list, model) -> bytes:
    """Rows of `model` as a Parquet file (typed columns, nulls for missing optional values)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _arrow_schema(model)
    table = pa.Table.from_pylist([r.model_dump(mode="json", warnings=False) for r in rows], schema=schema)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same directory and a rename, so a reader never
    sees a partly written file and a failure leaves nothing behind. Missing folders are created. A path that
    cannot be written (a directory, a folder that is a file, no permission, a full disk) is a UserFileError
    naming the path and the reason."""
    path = Path(path)
    try:
        is_directory = path.is_dir()
    except OSError as e:  # e.g. a name too long
        raise UserFileError(f"cannot write {shown(path)}: {e.strerror or type(e).__name__}") from None
    if is_directory:
        raise UserFileError(f"cannot write {shown(path)}: it is a directory; give a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise UserFileError(f"cannot write {shown(path)}: a part of the folder {shown(path.parent)} is a file, "
                            "not a folder") from None
    except OSError as e:
        raise UserFileError(f"cannot write {shown(path)}: cannot create the folder {shown(path.parent)} "
                            f"({e.strerror or type(e).__name__})") from None
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as e:
        raise UserFileError(f"cannot write {shown(path)}: {e.strerror or type(e).__name__}") from None
    finally:
        tmp.unlink(missing_ok=True)


def export_table(store, table: str, path: Path | str, fmt: str = "csv", user_only: bool = False) -> int:
    """Write one table to the file `path`; returns the number of rows written."""
    if fmt not in FORMATS:
        raise ExportRequestError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    rows = store_rows(store, table, user_only)
    model = TABLES[table][0]
    write_atomic(Path(path), csv_bytes(rows, model) if fmt == "csv" else parquet_bytes(rows, model))
    return len(rows)


def export_all(store, directory: Path | str, fmt: str = "csv", user_only: bool = False) -> dict[str, int]:
    """Write every table (only those with user rows if `user_only`) to `directory`/<table>.<fmt>."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ExportRequestError(f"{directory} is a file; give a directory to export every table, or --table")
    tables = USER_TABLES if user_only else tuple(TABLES)
    return {t: export_table(store, t, directory / f"{t}.{fmt}", fmt, user_only) for t in tables}


def export_bytes(store, table: str, fmt: str = "csv", user_only: bool = False) -> bytes:
    """One table in the project's own schema, as CSV or Parquet bytes (for a download button)."""
    model = TABLES[table][0]
    rows = store_rows(store, table, user_only=user_only)
    if fmt == "csv":
        return csv_bytes(rows, model)
    if fmt == "parquet":
        return parquet_bytes(rows, model)
    raise ExportRequestError(f"{fmt!r} is not an export format; valid: csv, parquet")
