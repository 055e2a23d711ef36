"""Importers, all-or-nothing: the project's own CSV/Parquet schema, Triton perf_analyzer and Model Analyzer CSVs.

Parsers (`parse_own`, and `parse_perf_analyzer` / `parse_model_analyzer` from engine.io.triton) are
pure functions from a path or the bytes of an upload, plus the fields the user gives, to row lists; they
read the whole file before returning anything. The `import_*` functions also check every row against the
hardware catalogue (`sku` is a catalogue GPU or 'CPU'; `partition` is 'full', 'mps:N' with N in 1..100,
or a MIG profile of that GPU) and then add all rows with one `Store.add_many` call: a bad row, a key
already in the store, or a failed write adds nothing. Every failure is one ImportFailed whose message
names the file, the line (CSV, header = line 1) or row (Parquet, first = row 1), and the field.

Limits (files are anyone's): a Parquet file is refused before any cell is read when its data would pass
MAX_PARQUET_DATA_BYTES decompressed or expanded; no text cell may pass engine.seed.records.MAX_TEXT_CHARS (by
column and line/row); numbers must be finite and within engine.seed.records' bounds and cross-field checks. A
model name the catalogue does not know is imported, with a warning naming the closest known names.

Units: the own schema is in the units of engine/seed/records.py (ms, items/s); perf_analyzer reports
microseconds (converted to ms); Model Analyzer reports ms.
"""

from __future__ import annotations

import csv
import difflib
import math
import re
import types
import typing
from pathlib import Path
from typing import Optional

from engine.hosting import UploadLimits
from engine.seed.records import MAX_TEXT_CHARS, TABLES
from engine.seed.reader import SeedError, read_csv, rows_from_records
from engine.errors import ECHO_CHARS, excerpt
from engine.io.import_common import ImportFailed, ImportResult, Source, decode, read_bytes
from engine.io.triton import parse_model_analyzer, parse_perf_analyzer
from engine.store import USER_TABLES, StoreError

__all__ = ["ImportFailed", "ImportResult", "parse_own", "import_file", "import_perf_analyzer",
           "import_model_analyzer", "import_upload", "check_upload_limits", "placement_error", "check_rows",
           "read_bytes", "decode", "known_models", "model_warnings"]


def _optional(model, name: str) -> bool:
    ann = model.model_fields[name].annotation
    return typing.get_origin(ann) in (typing.Union, types.UnionType) and type(None) in typing.get_args(ann)


# --------------------------------------------------------------------------- own schema

def _table_for(table: Optional[str], where: str) -> str:
    if table is None:
        stem = Path(where).stem
        table = stem if stem in TABLES else "latency_points"
    if table not in USER_TABLES:
        raise ImportFailed(f"{where}: table {excerpt(table)} does not take imported rows; importable: {', '.join(USER_TABLES)}")
    return table


def _fmt_for(fmt: Optional[str], where: str) -> str:
    fmt = fmt or ("parquet" if where.lower().endswith((".parquet", ".pq")) else "csv")
    if fmt not in ("csv", "parquet"):
        raise ImportFailed(f"{where}: format {excerpt(fmt)} is not csv or parquet")
    return fmt


def parse_own(source: Source, table: str, fmt: str = "csv", name: Optional[str] = None) -> list:
    """Rows of `table` from a file in the project's own schema (the exporter's output), validated.

    CSV: header = the row model's fields (optional columns may be left out), empty cell = no value.
    Parquet: the same columns; nulls and NaN in optional fields = no value.
    """
    data, where = read_bytes(source, name)
    model = TABLES[table][0]
    failure = None
    try:
        if fmt == "csv":
            decode(data, where)
            rows = read_csv(data, model, name=where, restore_formulas=True)
        else:
            rows = rows_from_records(_parquet_records(data, model, where), model, where, start=1, unit="row")
    except SeedError as e:
        failure = str(e)
    except csv.Error as e:
        failure = f"{where}: not a readable CSV file ({e})"
    if failure:  # raised outside the handler: no chain to pydantic's error and the frames it holds
        raise ImportFailed(failure)
    if not rows:
        raise ImportFailed(f"{where}: no rows under the header")
    return rows


#: the most data a Parquet file may hold once read: 50,000 rows (the hosted row limit) of the widest seed table
#: take ~30 MB; a 10 kB file can decompress, or expand a dictionary, to gigabytes
MAX_PARQUET_DATA_BYTES = 64 * 2**20
#: the bytes a number, flag or null in a Parquet cell is counted as, read into memory
_CELL_BYTES = 8


def _parquet_records(data: bytes, model, where: str) -> list[dict]:
    """The rows of a Parquet file as dicts, read only after its size, columns and text lengths pass the limits:
    the decompressed size from the footer, then every text column's lengths from its dictionary, before any
    cell is expanded into a Python value."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not data:
        raise ImportFailed(f"{where}: the file is empty")
    failure = None
    try:
        footer = pq.ParquetFile(pa.BufferReader(data))
        _check_parquet_footer(footer.metadata, where)
        text_columns = _check_parquet_columns(footer.schema_arrow, model, where)
        table = pq.ParquetFile(pa.BufferReader(data), read_dictionary=text_columns).read()
    except (pa.ArrowException, OSError) as e:
        failure = f"{where}: not a readable Parquet file ({excerpt(str(e))})"
    if failure:
        raise ImportFailed(failure)
    _check_parquet_cells(table, text_columns, where)
    return _clean_records(table.to_pylist(), model)


def _check_parquet_footer(metadata, where: str) -> None:
    """Refuse a file whose data, decompressed, passes MAX_PARQUET_DATA_BYTES (a compression bomb), unread."""
    groups = [metadata.row_group(i) for i in range(metadata.num_row_groups)]
    chunks = sum(g.column(c).total_uncompressed_size for g in groups for c in range(g.num_columns))
    size = max(chunks, sum(g.total_byte_size for g in groups))
    if size > MAX_PARQUET_DATA_BYTES:
        raise ImportFailed(f"{where}: the file holds {size / 2**20:,.1f} MB of data once decompressed, over the "
                           f"limit of {MAX_PARQUET_DATA_BYTES // 2**20} MB")


def _check_parquet_columns(schema, model, where: str) -> list[str]:
    """Column names and types against the row model, from the footer; returns the text columns."""
    import pyarrow as pa

    fields = model.model_fields
    unknown = [c for c in schema.names if c not in fields]
    if unknown:
        raise ImportFailed(f"{where}: unknown column {excerpt(unknown[0])}; expected: {', '.join(fields)}")
    missing = [f for f, info in fields.items() if info.is_required() and f not in schema.names]
    if missing:
        raise ImportFailed(f"{where}: missing column(s) {', '.join(missing)}")
    text = []
    for column in schema:
        kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            text.append(column.name)
        elif not (pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind)
                  or pa.types.is_null(kind)):
            raise ImportFailed(f"{where}: column {column.name!r} holds {str(kind)[:ECHO_CHARS]}; "
                               "expected text, numbers or true/false")
    return text


def _check_parquet_cells(table, text_columns: list[str], where: str) -> None:
    """Every text cell within MAX_TEXT_CHARS (by column and row) and the whole table within
    MAX_PARQUET_DATA_BYTES, measured on the dictionaries before any cell is expanded."""
    import pyarrow.compute as pc

    total = _CELL_BYTES * table.num_rows * (table.num_columns - len(text_columns))
    for name in text_columns:
        first_row = 1
        for chunk in table.column(name).chunks:
            chars, size = _text_lengths(chunk)
            longest = pc.max(chars).as_py() or 0
            if longest > MAX_TEXT_CHARS:
                row = first_row + pc.index(pc.greater(chars, MAX_TEXT_CHARS), True).as_py()
                raise ImportFailed(f"{where}: row {row}: field {name!r}: {longest:,} characters, over the limit of "
                                   f"{MAX_TEXT_CHARS:,}")
            total += (pc.sum(size).as_py() or 0) + _CELL_BYTES * len(chunk)
            first_row += len(chunk)
    if total > MAX_PARQUET_DATA_BYTES:
        raise ImportFailed(f"{where}: the file holds {total / 2**20:,.1f} MB of data once read, over the limit of "
                           f"{MAX_PARQUET_DATA_BYTES // 2**20} MB")


def _text_lengths(chunk):
    """Characters and bytes of every cell of a text column chunk; a dictionary chunk is measured on its
    dictionary and the lengths taken per row, so no cell is expanded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(chunk.type):
        return (pc.take(pc.utf8_length(chunk.dictionary), chunk.indices),
                pc.take(pc.binary_length(chunk.dictionary), chunk.indices))
    return pc.utf8_length(chunk), pc.binary_length(chunk)


def _clean_records(records: list[dict], model) -> list[dict]:
    """Parquet's missing values as the row model takes them: NaN is no value; a null where the field has a
    default (note, measured_on) is left out, so the default applies."""
    fields = model.model_fields
    out = []
    for rec in records:
        clean = {}
        for k, v in rec.items():
            if isinstance(v, float) and math.isnan(v):
                v = None
            if v is None and not _optional(model, k) and not fields[k].is_required():
                continue
            clean[k] = v
        out.append(clean)
    return out


# --------------------------------------------------------------------------- catalogue checks

def placement_error(catalog, sku: str, partition: str) -> Optional[str]:
    """Why (sku, partition) is not a place a model can run, or None if it is."""
    if sku == "CPU":
        return None if partition == "full" else \
            f"field 'partition': {excerpt(partition)} is not valid on CPU; valid: full"
    if sku not in catalog.skus:
        return f"field 'sku': {excerpt(sku)} is not a GPU in the catalogue; valid: {', '.join(catalog.skus)}, CPU"
    m = re.fullmatch(r"mps:(\d+)", partition)
    profiles = [p.name for p in catalog.gpu(sku).profiles]
    if partition == "full" or (m and 1 <= int(m.group(1)) <= 100) or partition in profiles:
        return None
    valid = ["full", "mps:1..mps:100"] + profiles
    return f"field 'partition': {excerpt(partition)} is not a partition of {sku}; valid: {', '.join(valid)}"


def check_rows(catalog, table: str, rows: list, where: str, start: int = 2, unit: str = "line") -> None:
    """Every row's sku/partition is in the catalogue and no two rows share the table's key."""
    model, key = TABLES[table]
    placed = "sku" in model.model_fields and "partition" in model.model_fields
    seen: dict[tuple, int] = {}
    for i, r in enumerate(rows, start=start):
        msg = placement_error(catalog, r.sku, r.partition) if placed else None
        if msg:
            raise ImportFailed(f"{where}: {unit} {i}: {msg}")
        if key:
            k = tuple(getattr(r, c) for c in key)
            if k in seen:
                raise ImportFailed(f"{where}: {unit} {i}: duplicate of {unit} {seen[k]} (same {', '.join(key)})")
            seen[k] = i


def check_given(catalog, sku: str, partition: str, where: str) -> None:
    """The GPU and partition the user gave for a whole file."""
    msg = placement_error(catalog, sku, partition)
    if msg:
        raise ImportFailed(f"{where}: {msg}")


# --------------------------------------------------------------------------- into the store

#: the most unknown model names one import warns about, one line each (a file may name thousands)
MAX_MODEL_WARNINGS = 5
#: how alike (difflib ratio) a known model name must be to be offered as the one meant
CLOSE_NAME_CUTOFF = 0.6


def known_models(store) -> set[str]:
    """Model names the app knows: the catalogue's models table and every model with stored points (earlier
    imports included, so a second file for one's own model does not warn again)."""
    names = set(store.table("models")["name"])
    for table in ("latency_points", "load_points"):
        names |= set(store.distinct(table, "model"))
    return names


def model_warnings(known: set[str], rows: dict[str, list]) -> list[str]:
    """One warning per model name in `rows` that is not in `known`, with the closest known names (a typo
    would otherwise quietly become a new model), at most MAX_MODEL_WARNINGS lines."""
    new = sorted({r.model for table_rows in rows.values() for r in table_rows if hasattr(r, "model")} - known)
    warnings = []
    for name in new[:MAX_MODEL_WARNINGS]:
        close = difflib.get_close_matches(name[:ECHO_CHARS], sorted(known), n=3, cutoff=CLOSE_NAME_CUTOFF)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        warnings.append(f"model {excerpt(name)} is not in the model catalogue, so it was imported as a new model; "
                        f"{hint}(a misspelt name makes a separate model)")
    if len(new) > MAX_MODEL_WARNINGS:
        warnings.append(f"... and {len(new) - MAX_MODEL_WARNINGS:,} more model names not in the catalogue")
    return warnings


def _commit(store, result: ImportResult) -> ImportResult:
    result.warnings += model_warnings(known_models(store), result.rows)
    failure = None
    try:
        store.add_many(result.rows)
    except (StoreError, SeedError) as e:
        failure = f"{result.where}: {e}"
    if failure:
        raise ImportFailed(failure)
    return result


def import_file(store, source: Source, table: Optional[str] = None, fmt: Optional[str] = None,
                name: Optional[str] = None) -> ImportResult:
    """Import a file in the project's own schema (CSV or Parquet) into `table`.

    `table` defaults to the file's stem when that is an importable table (load_points.csv), else
    latency_points; `fmt` defaults from the suffix (.parquet/.pq, else csv).
    """
    data, where = read_bytes(source, name)
    table, fmt = _table_for(table, where), _fmt_for(fmt, where)
    rows = parse_own(data, table, fmt, name=where)
    start, unit = (2, "line") if fmt == "csv" else (1, "row")
    check_rows(store.catalog(), table, rows, where, start, unit)
    return _commit(store, ImportResult(where, {table: rows}))


def import_perf_analyzer(store, source: Source, *, name: Optional[str] = None, **given) -> ImportResult:
    """Import a perf_analyzer CSV (see engine.io.triton.parse_perf_analyzer for `given`)."""
    data, where = read_bytes(source, name)
    check_given(store.catalog(), given.get("gpu", ""), given.get("partition", ""), where)
    return _commit(store, parse_perf_analyzer(data, name=where, **given))


def import_model_analyzer(store, source: Source, *, name: Optional[str] = None, **given) -> ImportResult:
    """Import a Model Analyzer metrics-model-inference.csv (see engine.io.triton.parse_model_analyzer)."""
    data, where = read_bytes(source, name)
    check_given(store.catalog(), given.get("gpu", ""), given.get("partition", ""), where)
    return _commit(store, parse_model_analyzer(data, name=where, **given))


#: the formats an upload can be in, with the label a page shows
IMPORT_FORMATS = {
    "csv": "Kneepoint CSV",
    "parquet": "Kneepoint Parquet",
    "perf-analyzer": "Triton perf_analyzer CSV",
    "model-analyzer": "Triton Model Analyzer metrics-model-inference.csv",
}


def _data_rows(data: bytes, fmt: str, limit: int) -> Optional[int]:
    """Data rows of an upload, counted without parsing it: Parquet from its footer (None if it has no readable
    footer: the parser will say why), text as lines under the header, the records only when the lines are over
    `limit` (a quoted field may hold a line break)."""
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows
        except (pa.ArrowException, OSError):
            return None
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1) - 1
    if lines <= limit:
        return lines
    text = data.decode("utf-8-sig", errors="replace")
    return sum(1 for rec in csv.reader(text.splitlines(keepends=True)) if rec) - 1


def check_upload_limits(data: bytes, fmt: str, name: str, limits: UploadLimits) -> None:
    """Refuse an upload over the size or row limit (engine.hosting) before anything parses it."""
    if len(data) > limits.max_bytes:
        size = math.ceil(len(data) / 2**20 * 10) / 10  # rounded up: a file just over 1 MB must not read "1.0 MB"
        raise ImportFailed(f"{name}: the file is {size:.1f} MB, over the upload limit of {limits.max_mb} MB "
                           "(split it, or ask whoever runs this app to raise KNEEPOINT_MAX_UPLOAD_MB)")
    rows = _data_rows(data, fmt, limits.max_rows)
    if rows is not None and rows > limits.max_rows:
        raise ImportFailed(f"{name}: the file has {rows:,} rows, over the upload limit of {limits.max_rows:,} rows "
                           "(split it, or ask whoever runs this app to raise KNEEPOINT_MAX_UPLOAD_ROWS)")


def import_upload(store, fmt: str, data: bytes, name: str, given: dict,
                  limits: Optional[UploadLimits] = None) -> ImportResult:
    """Import uploaded bytes in one of IMPORT_FORMATS; `given` holds the fields the format needs. A file over
    `limits` (default: engine.hosting's) is refused before it is parsed."""
    check_upload_limits(data, fmt, name, limits or UploadLimits())
    if fmt == "perf-analyzer":
        return import_perf_analyzer(store, data, name=name, **given)
    if fmt == "model-analyzer":
        return import_model_analyzer(store, data, name=name, **given)
    if fmt in ("csv", "parquet"):
        return import_file(store, data, table=given.get("table"), fmt=fmt, name=name)
    raise ImportFailed(f"{name}: {excerpt(fmt)} is not an import format; valid: {', '.join(IMPORT_FORMATS)}")
