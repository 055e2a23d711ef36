"""Read and validate seed/import CSV files into row models, all-or-nothing.

A file is parsed completely before anything is returned; the first bad row
raises SeedError naming the file, the line (1-based, header = line 1), the
field and the bad value (cut to ~100 characters: engine.errors.excerpt). Empty cells mean "no value": None
for optional fields, the field's default otherwise. A text cell longer than MAX_TEXT_CHARS (engine.seed.records)
is refused by its column and line before any row is built.
"""

from __future__ import annotations

import csv
import io
import types
import typing
from pathlib import Path
from typing import Iterable, TypeVar

from pydantic import BaseModel, ValidationError
from engine.errors import KneepointError, error_message, error_path, excerpt
from engine.seed.records import MAX_TEXT_CHARS

R = TypeVar("R", bound=BaseModel)


#: a cell starting with one of these is a formula to a spreadsheet (OWASP "CSV injection": =, +, -, @, tab, CR)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _needs_quote(text: str) -> bool:
    """A text a spreadsheet would run as a formula (a plain number such as '-5' is not one), or such a text
    behind quotes already added, so that restore_formula can tell the two apart."""
    if text.startswith("'"):
        return _needs_quote(text[1:])
    return text.startswith(FORMULA_STARTS) and not _is_number(text)


def neutralise_formula(text: str) -> str:
    """`text` as a CSV cell a spreadsheet shows as text: a single quote before a would-be formula (OWASP)."""
    return "'" + text if _needs_quote(text) else text


def restore_formula(text: str) -> str:
    """The text neutralise_formula was given: exactly one added quote removed, anything else unchanged."""
    return text[1:] if text.startswith("'") and _needs_quote(text[1:]) else text


class SeedError(KneepointError):
    """A row of a seed or import file that does not validate."""


def _optional(model: type[BaseModel], field: str) -> bool:
    ann = model.model_fields[field].annotation
    origin = typing.get_origin(ann)
    return origin in (typing.Union, types.UnionType) and type(None) in typing.get_args(ann)


def rows_from_records(records: Iterable[dict], model: type[R], where: str, start: int = 2,
                      unit: str = "line") -> list[R]:
    """Validate dict records (one per line after the header) into `model` rows.

    Errors name `where`, then `unit` and number (records count from `start`: line 2 is the
    first row under a CSV header; a Parquet importer passes start=1, unit='row').
    """
    fields = model.model_fields
    out: list[R] = []
    for line, rec in enumerate(records, start=start):
        unknown = [k for k in rec if k not in fields]
        if unknown:
            raise SeedError(f"{where}: {unit} {line}: unknown column {excerpt(unknown[0])}; "
                            f"expected: {', '.join(fields)}")
        clean = {}
        for k, v in rec.items():
            if isinstance(v, (str, bytes)) and len(v) > MAX_TEXT_CHARS:
                raise SeedError(f"{where}: {unit} {line}: field {excerpt(k)}: {len(v):,} characters, over the limit of "
                                f"{MAX_TEXT_CHARS:,}")
            if isinstance(v, str) and v.strip() == "":
                if _optional(model, k):
                    clean[k] = None
                elif fields[k].is_required():
                    clean[k] = v  # let validation name the missing value
                continue
            clean[k] = v
        try:
            out.append(model(**clean))
        except ValidationError as e:
            failure = _describe(e.errors(include_url=False)[0], clean)
            raise SeedError(f"{where}: {unit} {line}: {failure}") from None
    return out


def _describe(err: dict, clean: dict) -> str:
    """One pydantic error as 'field X: why (value V)', V cut short; a whole-row check names its own fields."""
    msg = error_message(err)
    if not err["loc"]:
        return msg
    loc = error_path(err)
    return f"field {loc!r}: {msg} (value {excerpt(clean.get(err['loc'][0], ''))})"


def read_csv(source: Path | str | bytes, model: type[R], name: str | None = None,
             restore_formulas: bool = False) -> list[R]:
    """Parse a CSV (a path, or the bytes of an upload) into validated rows. `restore_formulas`: the file is an
    export of this project's, whose text cells may carry the quote neutralise_formula added; remove it."""
    if isinstance(source, bytes):
        text, where = source.decode("utf-8-sig", errors="strict"), name or "upload"
    else:
        path = Path(source)
        text, where = path.read_text(encoding="utf-8-sig"), name or path.name
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise SeedError(f"{where}: the file is empty (no header row)")
    missing = [f for f, info in model.model_fields.items() if info.is_required() and f not in reader.fieldnames]
    if missing:
        raise SeedError(f"{where}: line 1: missing column(s) {', '.join(missing)}")
    records = []
    try:
        for rec in reader:
            if None in rec:  # more cells than header columns
                raise SeedError(f"{where}: line {reader.line_num}: more values than header columns")
            records.append({k: restore_formula(v) for k, v in rec.items()} if restore_formulas else rec)
    except csv.Error as e:  # e.g. a cell over csv's own field size limit: say where it stopped
        raise SeedError(f"{where}: line {reader.line_num + 1}: not a readable CSV file ({e})") from None
    return rows_from_records(records, model, where)
