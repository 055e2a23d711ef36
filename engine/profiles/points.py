"""The latency points a ProfileBook reads, as plain rows grouped by series (DESIGN.md section 5).

The store hands the book its latency_points and models tables as {column: value} dicts (NULL: None,
Store.latency_records / Store.records), so answering a question never needs pandas: `python -m engine
evaluate` starts without it. Pages that want the tables as DataFrames build them (`frame`).
"""

from __future__ import annotations

from typing import Mapping, Optional

from engine.errors import KneepointError
from engine.rows import missing

#: the precision a curve is read at when none is asked for: the first of these the series has
PRECISION_PREFERENCE = ("fp16", "amp", "int8", "bf16", "tf32", "fp32")


class ProfileError(KneepointError):
    """A profile question that has no answer; the message says why and what exists."""


class PointRows:
    """The latency points of every series, in the store's series order, with the lookups the book makes."""

    def __init__(self, records: list[dict]):
        self.records = records
        self.columns: tuple[str, ...] = tuple(records[0]) if records else ()
        self.by_series: dict[tuple, list[dict]] = {}  # (model, sku, partition) -> its rows, in table order
        for r in records:
            self.by_series.setdefault((r["model"], r["sku"], r["partition"]), []).append(r)
        self.model_names: frozenset[str] = frozenset(r["model"] for r in records)

    def series(self, model: str, sku: str, partition: str) -> list[dict]:
        """The points of one (model, GPU, partition), in the table's order (empty if none)."""
        return self.by_series.get((model, sku, partition), [])

    def of_model(self, model: str) -> list[dict]:
        return [r for key, rows in self.by_series.items() if key[0] == model for r in rows]

    def partitions(self, model: str, sku: str) -> set[str]:
        return {key[2] for key in self.by_series if key[0] == model and key[1] == sku}

    def skus(self, model: str) -> list[str]:
        return sorted({key[1] for key in self.by_series if key[0] == model})

    def precisions(self, model: str) -> list[str]:
        return sorted({r["precision"] for r in self.of_model(model)})

    def model_lengths(self, model: str) -> list[float]:
        """Every input length profiled for `model` on any GPU, sorted (empty for fixed-size inputs)."""
        return lengths_of(self.of_model(model))

    def fixed_input(self, model: str) -> bool:
        """Whether every point of `model` has no input length (a fixed-size input)."""
        return all(missing(r["input_len"]) for r in self.of_model(model))


def lengths_of(rows: list[dict]) -> list[float]:
    """The distinct input lengths among `rows`, sorted."""
    return sorted({float(r["input_len"]) for r in rows if not missing(r["input_len"])})


def only(rows: list[dict], precision: str, framework: str) -> list[dict]:
    return [r for r in rows if r["precision"] == precision and r["framework"] == framework]


def at_length(rows: list[dict], input_len: Optional[float]) -> list[dict]:
    """The rows at one input length (None: the rows without one)."""
    if input_len is None:
        return [r for r in rows if missing(r["input_len"])]
    return [r for r in rows if r["input_len"] == input_len]


def pick(rows: list[dict], precision: Optional[str], framework: Optional[str], where: str) -> tuple[str, str]:
    """(precision, framework) of the series a curve is read from: the asked ones, else a batch sweep before a
    lone point (it can be interpolated and fitted), then PRECISION_PREFERENCE, then the most points; ties go
    to the first (precision, framework) in sorted order."""
    if precision is not None:
        have = {r["precision"] for r in rows}
        if precision not in have:
            raise ProfileError(f"no {precision} points for {where}; precisions: {', '.join(sorted(have))}")
        rows = [r for r in rows if r["precision"] == precision]
    if framework is not None:
        have = {r["framework"] for r in rows}
        if framework not in have:
            raise ProfileError(f"no {framework} points for {where}; frameworks: {', '.join(sorted(have))}")
        rows = [r for r in rows if r["framework"] == framework]
    sizes: dict[tuple[str, str], int] = {}
    for r in rows:
        sizes[(r["precision"], r["framework"])] = sizes.get((r["precision"], r["framework"]), 0) + 1

    def rank(item):
        (prec, _), n = item
        pref = PRECISION_PREFERENCE.index(prec) if prec in PRECISION_PREFERENCE else 99
        return (n < 2, pref, -n)
    (prec, fw), _ = min(sorted(sizes.items()), key=rank)  # min keeps the first of equals: the sorted order
    return str(prec), str(fw)


def models_by_name(records: list[dict]) -> dict[str, dict]:
    """The models table keyed by name."""
    return {r["name"]: r for r in records}


def model_value(models: Mapping[str, dict], model: str, column: str, default=None):
    """One column of a model's row (None and NaN read as `default`)."""
    value = models.get(model, {}).get(column)
    return default if missing(value) else value
