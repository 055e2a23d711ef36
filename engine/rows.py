"""Store tables as plain rows: {column: value} dicts with None for a missing value.

The engine's evaluate path reads the store's tables this way (Store.records, Store.latency_records), so it
never imports pandas (~0.3 s); functions that also take a DataFrame (pages, tests) turn it into rows with
`as_records`, and pages that want a DataFrame build one with `frame`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    import pandas as pd


def missing(value) -> bool:
    """A NULL of the store (None), or NaN where the rows came from a DataFrame."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def as_records(rows) -> list[dict]:
    """Rows as {column: value} dicts with None for every missing value: a DataFrame's records (NaN for a
    missing number, turned into None), or rows already (returned as they are, not copied)."""
    if hasattr(rows, "to_dict"):
        return [{k: (None if missing(v) else v) for k, v in r.items()} for r in rows.to_dict("records")]
    return rows if isinstance(rows, list) else list(rows)


def frame(records: list[dict], columns: Iterable[str]) -> pd.DataFrame:
    """The rows as a DataFrame with the given columns, None read as a missing value (NaN in a numeric column)."""
    import pandas as pd  # heavy (~0.3 s to import): only the pages and reports that want a DataFrame load it

    return pd.DataFrame.from_records(records, columns=list(columns))
